//! docs/your-model.md followed on a model other than the bundled subject:
//! `tools/guide_model/make.py` builds a tiny model twice, exported from JAX
//! (the production side, arguments named `params['l1.weight']`, scopes
//! `dense_1`/`act`/`dense_2`) and written in MLX (the oracle, recorded with
//! parity_mlx_recorder: `full/l1`, `full/act`, `full/l2`, weights in MLX's
//! `[out, in]` layout). The guide's commands then run on it: `parity points`,
//! `parity oracle index`, a spec using `bind:`, `weight_transforms:` and
//! `checkpoints:`, a passing `parity check`, the injected bug failing it, and
//! `parity bisect` localising the bug to one operation through the mapped
//! checkpoints. Needs PARITY_TENSOR_PYTHON (a Python with jax, mlx, numpy:
//! tools/fixtures/.venv/bin/python; ci/test.sh exports it).

mod common;

use common::{check, copy_dir, parity, repo, stage};
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

const SPEC: &str = r#"version: 1
subject:
  modules:
    tiny: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
weights: [weights.safetensors]
# MLX stores Linear weights [out, in]; the JAX export takes [in, out].
weight_transforms:
  - {match: "(.*)\\.weight", transpose: [1, 0]}
oracle: oracle
# The recorder names tensors after MLX modules; the export's scopes differ.
checkpoints:
  - {oracle: "{case}/l1", point: dense_1}
  - {oracle: "{case}/act", point: act}
cases: [{name: full}]
stages:
  - name: encode
    module: tiny
    function: main
    bind:
      - {arg: x, oracle: "{case}/x"}
      - {match: "params\\['(.*)'\\]", weight: "$1"}
    outputs:
      - {name: y, oracle: "{case}/l2", tolerance: [{max_abs: 1.0e-5}]}
"#;

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs tools/guide_model/make.py into `dir`.
fn make_model(dir: &Path) {
    let python = std::env::var_os("PARITY_TENSOR_PYTHON").expect(
        "PARITY_TENSOR_PYTHON must name a Python with jax, mlx and numpy \
         (e.g. tools/fixtures/.venv/bin/python; ci/test.sh exports it)",
    );
    let run = Command::new(&python)
        .arg(repo().join("tools/guide_model/make.py"))
        .arg(dir)
        .env("JAX_PLATFORMS", "cpu")
        .output()
        .unwrap_or_else(|e| panic!("cannot run PARITY_TENSOR_PYTHON={python:?}: {e}"));
    assert!(run.status.success(), "make.py failed:\n{}", text(&run));
}

/// A fresh copy of the model make.py builds (once per test binary, into
/// CARGO_TARGET_TMPDIR), for a test to write its specs and reports into.
fn model_copy() -> tempfile::TempDir {
    static MODEL: OnceLock<tempfile::TempDir> = OnceLock::new();
    let made = MODEL.get_or_init(|| {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        make_model(dir.path());
        dir
    });
    let copy = tempfile::tempdir().unwrap();
    copy_dir(made.path(), copy.path());
    copy
}

#[test]
fn the_guide_takes_a_second_model_from_export_to_a_bisected_injected_bug() {
    let tmp = model_copy();
    let dir = tmp.path();

    // 1. Where can I cut, and what are the arguments called?
    let points = parity(dir, &["points", "model.mlir", "--function", "main"]);
    let listing = text(&points);
    assert!(points.status.success(), "{listing}");
    for needle in [
        "\"params['l1.weight']\"",
        "\"x\"",
        "dense_1 ",
        "act ",
        "dense_2 ",
    ] {
        assert!(listing.contains(needle), "{needle} not in:\n{listing}");
    }

    // 3. The recorder wrote the store; re-indexing its files gives the same tensors.
    let manifest = std::fs::read_to_string(dir.join("oracle/manifest.json")).unwrap();
    // `--out` inside DIR: the manifest names its files relative to itself.
    let out_manifest = dir.join("oracle/reindexed.json");
    let index = parity(
        dir,
        &[
            "oracle",
            "index",
            dir.join("oracle").to_str().unwrap(),
            "--out",
            out_manifest.to_str().unwrap(),
        ],
    );
    assert!(index.status.success(), "{}", text(&index));
    let names = |json: &str| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["tensors"].as_object().unwrap().keys().cloned().collect()
    };
    let reindexed = std::fs::read_to_string(&out_manifest).unwrap();
    assert_eq!(names(&manifest), names(&reindexed));
    assert_eq!(
        names(&manifest),
        ["full/act", "full/l1", "full/l2", "full/x"]
    );

    // 4. Check: passes, with the transform on record.
    std::fs::write(dir.join("stages.yaml"), SPEC).unwrap();
    let (code, stdout, stderr, record) = check(dir, "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let applied: Vec<&str> = record["provenance"]["weight_transforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["weight"].as_str().unwrap())
        .collect();
    assert_eq!(applied, ["l1.weight", "l2.weight"]);
    assert_eq!(stage(&record, "encode", "isolated")["status"], "pass");

    // Without its transform the square (8x8) first layer is fed [out, in]:
    // every shape check passes (the 8x6 second layer keeps its transform,
    // which the shape check would demand), the numbers are wrong, exit 1.
    let partial = SPEC.replace(r#"match: "(.*)\\.weight""#, r#"match: "l2\\.weight""#);
    std::fs::write(dir.join("untransposed.yaml"), partial).unwrap();
    let (code, stdout, stderr, record) = check(dir, "untransposed.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(
        stage(record.as_ref().unwrap(), "encode", "isolated")["status"],
        "fail"
    );

    // The injected bug: the faulty export fails the same spec...
    let faulty = SPEC.replace("model.mlir", "model_faulty.mlir");
    std::fs::write(dir.join("faulty.yaml"), faulty).unwrap();
    let (code, stdout, stderr, _) = check(dir, "faulty.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // ... and bisect localises it inside dense_2, after the mapped checkpoints pass.
    let out = parity(
        dir,
        &[
            "bisect",
            "faulty.yaml",
            "--json",
            "bisect/bisect.json",
            "--repro-dir",
            "bisect/repro",
        ],
    );
    let said = text(&out);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("bisect/bisect.json"))
            .unwrap_or_else(|e| panic!("no bisect.json ({e}):\n{said}")),
    )
    .unwrap();
    // The passing mapped checkpoints bound the search to the second layer:
    // an op there, or (no checkpoint inside dense_2) the region after `act`.
    let region = &json["region"];
    assert_eq!(region["failing"], "full/l2", "{said}");
    assert!(
        region["passing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "full/act"),
        "{said}"
    );
    let op_list: Vec<&str> = region["op_list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        op_list.iter().any(|o| o.contains("dense_2"))
            && !op_list.iter().any(|o| o.contains("dense_1")),
        "{op_list:?}"
    );
    if let Some(loc) = json["first_divergent_op"]["loc"].as_str() {
        assert!(loc.contains("dense_2"), "{said}");
    }
    let checkpoints = json["checkpoints"].as_array().expect("checkpoints");
    let mapped: Vec<(&str, bool)> = checkpoints
        .iter()
        .filter(|c| c["kind"] == "mapped")
        .map(|c| {
            (
                c["oracle"].as_str().unwrap(),
                c["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        mapped.contains(&("full/act", true)),
        "the mapped `act` checkpoint passes: {mapped:?}\n{json:#}"
    );
}

/// The guide's spec over the store renamed away from the export's scope
/// names, without a `checkpoints:` map (the proposal supplies it).
const RENAMED_SPEC: &str = r#"version: 1
subject:
  modules:
    tiny: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
weights: [weights.safetensors]
weight_transforms:
  - {match: "(.*)\\.weight", transpose: [1, 0]}
oracle: oracle
cases: [{name: full}]
stages:
  - name: encode
    module: tiny
    function: main
    bind:
      - {arg: x, oracle: "{case}/input"}
      - {match: "params\\['(.*)'\\]", weight: "$1"}
    outputs:
      - {name: y, oracle: "{case}/out", tolerance: [{max_abs: 1.0e-5}]}
"#;

/// Renames the recorder's tensors: nothing is named after a scope any more.
fn rename_oracle(dir: &Path) {
    let path = dir.join("oracle/manifest.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let tensors = v["tensors"].as_object_mut().unwrap();
    for (from, to) in [
        ("full/l1", "full/hidden_a"),
        ("full/act", "full/hidden_b"),
        ("full/l2", "full/out"),
        ("full/x", "full/input"),
    ] {
        let entry = tensors.remove(from).unwrap();
        tensors.insert(to.to_string(), entry);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn the_proposed_map_is_the_true_map_and_gives_bisect_its_checkpoints() {
    let tmp = model_copy();
    let dir = tmp.path();
    rename_oracle(dir);
    std::fs::write(dir.join("renamed.yaml"), RENAMED_SPEC).unwrap();
    let propose = |extra: &[&str]| {
        let mut args = vec![
            "points",
            "model.mlir",
            "--propose-map",
            "--spec",
            "renamed.yaml",
            "--stage",
            "encode",
        ];
        args.extend_from_slice(extra);
        let out = parity(dir, &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&propose(&["--json", "-"])).unwrap();
    assert_eq!(json["schema"], "parity.map-proposal/1");
    let entries = json["entries"].as_array().unwrap();
    let status = |oracle: &str| {
        let e = entries.iter().find(|e| e["oracle"] == oracle).unwrap();
        (
            e["status"].as_str().unwrap().to_string(),
            e["point"].as_str().unwrap_or_default().to_string(),
            e["layout"]["kind"].as_str().unwrap_or_default().to_string(),
        )
    };
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    // The true map, found by value: l1 is dense_1's output, act is act's.
    assert_eq!(
        status("{case}/hidden_a"),
        s("matched", "dense_1", "same"),
        "{json:#}"
    );
    assert_eq!(
        status("{case}/hidden_b"),
        s("matched", "act", "same"),
        "{json:#}"
    );
    assert_eq!(status("{case}/out"), s("stage_output", "", ""), "{json:#}");
    assert_eq!(status("{case}/input"), s("stage_input", "", ""), "{json:#}");
    assert_eq!(entries.len(), 4, "{json:#}");

    // Accepted as printed, the YAML block makes the two mapped checkpoints of a bisect.
    let yaml = propose(&[]);
    assert!(
        yaml.contains("checkpoints:\n  - {oracle: \"{case}/hidden_a\", point: dense_1}"),
        "{yaml}"
    );
    let faulty = format!(
        "{}{yaml}",
        RENAMED_SPEC.replace("model.mlir", "model_faulty.mlir")
    );
    std::fs::write(dir.join("faulty.yaml"), faulty).unwrap();
    let out = parity(
        dir,
        &[
            "bisect",
            "faulty.yaml",
            "--json",
            "b.json",
            "--repro-dir",
            "repro",
        ],
    );
    let said = text(&out);
    let b: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("b.json"))
            .unwrap_or_else(|e| panic!("no b.json ({e}):\n{said}")),
    )
    .unwrap();
    assert_eq!(b["region"]["failing"], "full/out", "{said}");
    let mapped: Vec<(&str, bool)> = b["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "mapped")
        .map(|c| {
            (
                c["oracle"].as_str().unwrap(),
                c["passed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        mapped.contains(&("full/hidden_b", true)),
        "{mapped:?}\n{b:#}"
    );
}

#[test]
fn bind_on_a_slice_stage_binds_from_points_and_arguments_by_name() {
    let tmp = model_copy();
    let dir = tmp.path();
    let stages = r#"  - name: second_bound
    module: tiny
    slice: {function: main, from: [act], to: [dense_2]}
    bind:
      - {arg: act, oracle: "{case}/act"}
      - {match: "params\\['(.*)'\\]", weight: "$1"}
    outputs:
      - {name: y, oracle: "{case}/l2", tolerance: [{max_abs: 1.0e-5}]}
  - name: second_listed
    module: tiny
    slice: {function: main, from: [act], to: [dense_2]}
    args: [{oracle: "{case}/act"}, {weight: l2.bias}, {weight: l2.weight}]
    outputs:
      - {name: y, oracle: "{case}/l2", tolerance: [{max_abs: 1.0e-5}]}
"#;
    let head = SPEC.split("stages:\n").next().unwrap();
    let spec = format!("{head}stages:\n{stages}");
    std::fs::write(dir.join("slices.yaml"), &spec).unwrap();
    let (code, stdout, stderr, record) = check(dir, "slices.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let bound = stage(&record, "second_bound", "isolated");
    let listed = stage(&record, "second_listed", "isolated");
    assert_eq!(bound["status"], "pass", "{bound}");
    assert_eq!(bound["outputs"], listed["outputs"]);

    // A `from` point is bound by its name as written in `from`; a typo names the choices.
    let typo = spec.replace("{arg: act, oracle", "{arg: acts, oracle");
    std::fs::write(dir.join("typo.yaml"), &typo).unwrap();
    let (code, stdout, stderr, record) = check(dir, "typo.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let msg = stage(record.as_ref().unwrap(), "second_bound", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    let line = typo.lines().position(|l| l.contains("arg: acts")).unwrap() + 1;
    assert!(
        msg.contains(&format!("typo.yaml:{line}:9: stage `second_bound`"))
            && msg.contains("`arg: acts` names no argument")
            && msg.contains("0: `act`")
            && msg.contains("`params['l2.weight']`"),
        "{msg}"
    );
}

/// One `bind:` list (a YAML anchor) shared by two slices of `main`: each
/// slice ignores the rules for what only the other slice, or only the whole
/// function, takes (the input `x`, the other slice's `from` point, weights
/// it does not read). Before, the first rule for an argument a slice does
/// not take (`x`) made that stage error.
#[test]
fn slices_share_one_bind_list() {
    let tmp = model_copy();
    let dir = tmp.path();
    let stages = r#"  - name: second
    module: tiny
    slice: {function: main, from: [act], to: [dense_2]}
    bind: &shared
      - {arg: x, oracle: "{case}/x"}
      - {arg: dense_1, oracle: "{case}/l1"}
      - {arg: act, oracle: "{case}/act"}
      - {match: "params\\['(.*)'\\]", weight: "$1"}
    outputs:
      - {name: y, oracle: "{case}/l2", tolerance: [{max_abs: 1.0e-5}]}
  - name: activation
    module: tiny
    slice: {function: main, from: [dense_1], to: [act]}
    bind: *shared
    outputs:
      - {name: a, oracle: "{case}/act", tolerance: [{max_abs: 1.0e-5}]}
"#;
    let head = SPEC.split("stages:\n").next().unwrap();
    let spec = format!("{head}stages:\n{stages}");
    std::fs::write(dir.join("shared.yaml"), &spec).unwrap();
    let (code, stdout, stderr, record) = check(dir, "shared.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    for name in ["second", "activation"] {
        let s = stage(&record, name, "isolated");
        assert_eq!(s["status"], "pass", "{s}");
    }
    // A name that is nothing in the function is still a typo.
    let typo = spec.replace("{arg: x, oracle", "{arg: xx, oracle");
    std::fs::write(dir.join("typo.yaml"), &typo).unwrap();
    let (code, stdout, stderr, record) = check(dir, "typo.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let msg = stage(record.as_ref().unwrap(), "activation", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("`arg: xx` names no argument"), "{msg}");
}
