//! `parity points` on real modules: every point it prints is accepted by
//! `resolve_point` on the same normalised module and has the printed type.

mod common;

use common::{parity, repo};
use parity_mlir::Function;
use serde_json::Value;

/// The module normalised as `slice:` stages see it.
fn normalised(rel: &str) -> parity_mlir::Module {
    let compiler = parity_iree::IreeCompiler::load(None)
        .expect("IREE compiler (run `. ci/setup.sh` or set EERIE_PYTHON)");
    parity::run::slices::read_normalised(&compiler, &repo().join(rel))
        .expect("module normalises")
        .0
}

fn points_json(args: &[&str]) -> Value {
    let out = parity(&repo(), args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "parity.points/1");
    v
}

/// Checks one listed value (an SSA point) and returns how many were checked.
fn check_value(f: &Function, v: &Value) {
    let id = f.resolve_point(v["value"].as_str().unwrap()).unwrap();
    assert_eq!(f.values[id].ty.text, v["type"].as_str().unwrap(), "{v}");
}

/// Checks every scope (both spellings) recursively; returns the number checked.
fn check_scopes(f: &Function, scopes: &Value) -> usize {
    let mut n = 0;
    for s in scopes.as_array().unwrap() {
        for spelling in [&s["point"], &s["key"]] {
            let id = f.resolve_point(spelling.as_str().unwrap()).unwrap();
            assert_eq!(f.values[id].name, s["value"].as_str().unwrap(), "{s}");
            assert_eq!(f.values[id].ty.text, s["type"].as_str().unwrap(), "{s}");
        }
        n += 1 + check_scopes(f, &s["children"]);
    }
    n
}

#[test]
fn every_point_of_the_subject_encoder_resolves_with_its_type() {
    let rel = "subject/gemma3n/gemma3n_audio_f32.mlir.gz";
    let v = points_json(&[
        "points",
        rel,
        "--function",
        "audio_encode_c1_b128",
        "--json",
        "-",
    ]);
    let m = normalised(rel);
    let f = m.function("audio_encode_c1_b128").unwrap();
    let listed = &v["functions"][0];
    assert_eq!(listed["name"], "audio_encode_c1_b128");
    assert_eq!(listed["args"].as_array().unwrap().len(), f.args.len());
    assert_eq!(listed["args"][0]["loc_name"], "mel");
    for a in listed["args"]
        .as_array()
        .unwrap()
        .iter()
        .chain(listed["results"].as_array().unwrap())
    {
        check_value(f, a);
    }
    let n = check_scopes(f, &listed["scopes"]);
    assert_eq!(n, f.scope_outputs().len(), "every scope is listed once");
    // Roots include the Keras-style bare top-level name `transpose` and the blocks.
    let roots: Vec<&str> = listed["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["point"].as_str().unwrap())
        .collect();
    for r in [
        "sscp_conv_0",
        "transpose",
        "input_projection",
        "conformer_0",
        "conformer_1",
    ] {
        assert!(roots.contains(&r), "{roots:?}");
    }
    let attention = listed["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["point"] == "conformer_0")
        .and_then(|s| {
            s["children"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["point"] == "conformer_0/attention")
        })
        .expect("conformer_0/attention listed");
    assert_eq!(attention["type"], "tensor<1x32x64xf32>");
    assert_eq!(attention["key"], "conformer_0_attention");

    // The text form shows the same rows, points spelled for YAML.
    let out = parity(
        &repo(),
        &[
            "points",
            rel,
            "--function",
            "audio_encode_c1_b128",
            "--depth",
            "2",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("conformer_0/attention "))
        .unwrap();
    assert!(
        row.contains(attention["value"].as_str().unwrap()) && row.contains("tensor<1x32x64xf32>"),
        "{row}"
    );
    assert!(
        text.contains("\"input_projection/...i,oi->...o\""),
        "{text}"
    );
    assert!(
        !text.contains("conformer_0/attention/rel_shift"),
        "--depth 2 stops at two levels"
    );
}

#[test]
fn every_function_and_value_of_the_basic_example_resolves() {
    let rel = "examples/basic/model.mlir";
    let v = points_json(&["points", rel, "--json", "-"]);
    let m = normalised(rel);
    let names: Vec<&str> = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "layer_norm",
            "strided_conv",
            "scores",
            "masked_softmax",
            "attend",
            "proj_bf16"
        ]
    );
    for name in names {
        let one = points_json(&["points", rel, "--function", name, "--json", "-"]);
        let listed = &one["functions"][0];
        let f = m.function(name).unwrap();
        for a in listed["args"]
            .as_array()
            .unwrap()
            .iter()
            .chain(listed["results"].as_array().unwrap())
        {
            check_value(f, a);
        }
        assert_eq!(check_scopes(f, &listed["scopes"]), f.scope_outputs().len());
    }
}

#[test]
fn missing_module_and_unknown_function_are_input_errors() {
    let out = parity(&repo(), &["points", "no/such.mlir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such.mlir"));
    let out = parity(
        &repo(),
        &["points", "examples/basic/model.mlir", "--function", "nope"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`nope`") && err.contains("masked_softmax"),
        "{err}"
    );
}

/// `--propose-map` on the bundled subject: the stage sscp_conv_0 with only its
/// final output checked; its intermediate oracle tensors are found by value
/// at the scopes they are named after, every other tensor of the case is
/// labelled "no match", the stage's input and output as such.
#[test]
fn the_subject_stage_proposal_finds_its_intermediates_by_value() {
    let sub = repo().join("subject/gemma3n");
    let spec = format!(
        "version: 1
subject:
  modules:
    audio: {{mlir: {}}}
  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]
weights: [{}]
oracle: {}
cases:
  - {{name: full128, vars: {{clips: \"1\", bucket: \"128\"}}}}
stages:
  - name: sscp_conv_0
    module: audio
    function: \"sscp_conv_0_c{{clips}}_b{{bucket}}\"
    args:
      - {{oracle: \"{{case}}/mel\"}}
      - {{weight: \"model.audio_tower.subsample_conv_projection.conv_0.conv.weight\"}}
      - {{weight: \"model.audio_tower.subsample_conv_projection.conv_0.norm.weight\"}}
    outputs:
      - {{name: out, oracle: \"{{case}}/sscp_conv_0\", tolerance: [{{max_abs: 4.98e-05}}, {{rms: 1.24e-05}}]}}
",
        sub.join("gemma3n_audio_f32.mlir.gz").display(),
        sub.join("weights.safetensors").display(),
        repo().join("oracle-dumps/gemma3n").display(),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stages.yaml"), spec).unwrap();
    let out = parity(
        dir.path(),
        &[
            "points",
            "--propose-map",
            "--spec",
            "stages.yaml",
            "--stage",
            "sscp_conv_0",
            "--json",
            "-",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = v["entries"].as_array().unwrap();
    let get = |oracle: &str| entries.iter().find(|e| e["oracle"] == oracle).unwrap();
    for (oracle, point) in [
        ("{case}/sscp_conv_0_convolution", "sscp_conv_0/convolution"),
        (
            "{case}/sscp_conv_0_cumulative_sum",
            "sscp_conv_0/cumulative_sum",
        ),
        ("{case}/sscp_conv_0_mean", "sscp_conv_0/mean"),
        ("{case}/sscp_conv_0_variance", "sscp_conv_0/variance"),
        (
            "{case}/sscp_conv_0_inverse_stddev",
            "sscp_conv_0/inverse_stddev",
        ),
        ("{case}/sscp_conv_0_norm", "sscp_conv_0/norm"),
    ] {
        let e = get(oracle);
        assert_eq!(e["status"], "matched", "{e}");
        assert_eq!(e["point"], point, "{e}");
    }
    assert_eq!(get("{case}/mel")["status"], "stage_input");
    assert_eq!(get("{case}/sscp_conv_0")["status"], "stage_output");
    // A tensor of a later block is no value of this stage.
    assert_eq!(get("{case}/conformer_0_attention")["status"], "no_match");
}

/// `n` nested `scf.execute_region`s in one function (issue 28's shape).
fn nested_regions(n: usize) -> String {
    let mut s = String::from("func.func @main(%a: tensor<f32>) -> tensor<f32> {\n");
    for i in 0..n {
        s += &format!("%r{i} = scf.execute_region -> tensor<f32> {{\n");
    }
    s += "scf.yield %a : tensor<f32>\n";
    for i in (0..n).rev() {
        s += "}\n";
        if i > 0 {
            s += &format!("scf.yield %r{i} : tensor<f32>\n");
        }
    }
    s + "return %r0 : tensor<f32>\n}\n"
}

/// Issue 28: 10,000 nested regions aborted parity with "stack overflow"
/// inside the compiler's parser; now it is exit 2 naming the file and line,
/// and a modest depth still reads.
#[test]
fn ten_thousand_nested_regions_are_a_clean_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("deep.mlir");
    std::fs::write(&deep, nested_regions(10_000)).unwrap();
    let out = parity(dir.path(), &["points", "deep.mlir"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("deep.mlir: line 1001:43") && stderr.contains("more than 1000 deep"),
        "{stderr}"
    );
    std::fs::write(dir.path().join("ok.mlir"), nested_regions(300)).unwrap();
    let out = parity(dir.path(), &["points", "ok.mlir", "--json", "-"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--cuts`: between consecutive top-level scopes, what a `slice:` stage
/// cutting there takes, in the runner's order (its `from` point, then the
/// function arguments it reads, by MLIR name), so `bind:` can be written
/// before any run.
#[test]
fn cuts_list_the_arguments_each_slice_takes() {
    let rel = "subject/gemma3n/gemma3n_audio_f32.mlir.gz";
    let v = points_json(&[
        "points",
        rel,
        "--function",
        "audio_encode_c1_b128",
        "--cuts",
        "--json",
        "-",
    ]);
    let cuts = v["functions"][0]["cuts"].as_array().unwrap();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    // A chain: from the function's arguments, then from each scope to the next.
    assert!(strings(&cuts[0]["from"]).is_empty());
    for pair in cuts.windows(2) {
        assert_eq!(strings(&pair[1]["from"]), strings(&pair[0]["to"]));
    }
    let cut = |to: &str| {
        cuts.iter()
            .find(|c| strings(&c["to"]) == [to])
            .unwrap_or_else(|| panic!("no cut to {to}: {cuts:?}"))
    };
    let w = |name: &str| format!("audio_tower__subsample_conv_projection__{name}__weight");
    assert_eq!(
        strings(&cut("sscp_conv_0")["takes"]),
        ["mel".to_string(), w("conv_0__conv"), w("conv_0__norm")]
    );
    assert_eq!(
        strings(&cut("sscp_conv_1")["takes"]),
        [
            "sscp_conv_0".to_string(),
            w("conv_1__conv"),
            w("conv_1__norm")
        ]
    );
    // The text says the same, points spelled as a `slice:` takes them.
    let out = parity(
        &repo(),
        &[
            "points",
            rel,
            "--function",
            "audio_encode_c1_b128",
            "--cuts",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "    from: [sscp_conv_0], to: [sscp_conv_1]\n      takes: \"sscp_conv_0\", \"{}\", \"{}\"\n",
            w("conv_1__conv"),
            w("conv_1__norm")
        )),
        "{text}"
    );
}
