//! `parity dispatches`: IREE's own dispatches traced on two targets (the
//! program unchanged), aligned and compared; the first divergent one named
//! with its StableHLO operations. Vulkan runs on Mesa's lavapipe.

mod common;

use common::{basic_copy, parity, parity_with_record};
use serde_json::Value;
use std::path::Path;

const LEGACY: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";

/// A flag that changes the numerics of the matmul dispatches only: IREE's
/// own pass demoting contraction inputs to bf16, run through the session
/// option `--iree-preprocessing-pass-pipeline` (lavapipe's Vulkan target has
/// no bf16, so it goes on a CPU target).
const TARGETS: &str = "  targets:
    cpu: {backend: llvm-cpu, device: local-task}
    vulkan: {backend: vulkan-spirv, device: vulkan}
    cpu_bf16:
      backend: llvm-cpu
      device: local-task
      flags: [\"--iree-preprocessing-pass-pipeline=builtin.module(util.func(iree-global-opt-demote-contraction-inputs{type=bf16 operation=all}))\"]
";

/// The operation names a dispatch row holds.
fn op_names(d: &Value) -> Vec<&str> {
    d["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect()
}

fn spec_with_targets(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("stages.yaml")).unwrap();
    assert!(text.contains(LEGACY), "examples/basic/stages.yaml changed");
    std::fs::write(dir.join("stages.yaml"), text.replacen(LEGACY, TARGETS, 1)).unwrap();
}

/// `parity dispatches ARGS` in a copy of examples/basic: exit code, stdout, record.
fn dispatches(args: &[&str]) -> (i32, String, Value) {
    let dir = basic_copy();
    spec_with_targets(dir.path());
    let json = dir.path().join("d.json");
    let mut all = vec!["dispatches", "stages.yaml"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap()]);
    let out = parity(dir.path(), &all);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let record = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    if record != Value::Null {
        let html = std::fs::read_to_string(dir.path().join("d.html")).unwrap();
        assert!(
            html.contains("Dispatches:"),
            "the HTML page has the section"
        );
    }
    (
        out.status.code().unwrap_or(-1),
        format!("{stdout}{stderr}"),
        record,
    )
}

#[test]
fn identical_numerics_name_no_dispatch_on_lavapipe_against_cpu() {
    let (code, text, r) = dispatches(&[
        "--target",
        "cpu,vulkan",
        "--stage",
        "layer_norm",
        "--stage",
        "strided_conv",
    ]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["schema"], "parity.dispatches/1");
    assert_eq!(r["status"], "pass");
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    for s in stages {
        assert_eq!(s["status"], "pass", "{s}");
        assert!(s.get("first_divergent").is_none());
        let rows = s["dispatches"].as_array().unwrap();
        assert!(!rows.is_empty());
        // Same dispatch formation: every dispatch aligned by key, none left over.
        assert_eq!(s["reference_count"], s["target_count"]);
        assert_eq!(rows.len() as u64, s["reference_count"].as_u64().unwrap());
        assert!(rows
            .iter()
            .all(|d| d["aligned_by"] == "key" && d["status"] == "pass"));
        // Tracing changed no result bit on either target.
        for f in s["fidelity"].as_array().unwrap() {
            assert_eq!(f["bit_identical"], true, "{f}");
        }
    }
    // layer_norm's reductions are located in its dispatches.
    let ops: Vec<&str> = stages[0]["dispatches"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["ops"].as_array().unwrap())
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert!(ops.contains(&"stablehlo.reduce"), "{ops:?}");
    assert!(
        text.contains("no dispatch differs beyond tolerance"),
        "{text}"
    );
}

#[test]
fn a_flag_that_changes_the_matmul_numerics_is_named_with_its_operations() {
    // Reference: lavapipe; tested: CPU with matmul inputs demoted to bf16.
    let (code, text, r) = dispatches(&["--target", "vulkan,cpu_bf16", "--stage", "scores"]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(r["status"], "fail");
    let s = &r["stages"][0];
    let first = s["first_divergent"].as_u64().expect("a dispatch is named") as usize;
    let d = &s["dispatches"][first];
    assert_eq!(d["status"], "fail");
    let names = op_names(d);
    assert!(names.contains(&"stablehlo.dot_general"), "{names:?}");
    // The demotion adds conversion dispatches the reference does not run.
    assert!(
        s["target_count"].as_u64() > s["reference_count"].as_u64(),
        "{s}"
    );
    assert!(text.contains("first divergent dispatch"), "{text}");
    // The first matmul, aligned by its operation although its key and
    // result dtype differ; its inputs were demoted by conversion dispatches
    // the reference does not run, and the text says so.
    assert_eq!(d["aligned_by"], "ops");
    assert_eq!(names, ["stablehlo.dot_general"]);
    assert_eq!(d["inputs_differ"], true);
    assert!(text.contains("no counterpart for: #0"), "{text}");
    // Its inputs already differ: the cause may lie before it, so parity does
    // not go inside it.
    assert!(s.get("inside").is_none(), "{s}");
    // Its outputs differ by far more than the stage's tolerance (max_abs 2e-5).
    let worst = d["outputs"][0]["max_abs"].as_f64().unwrap();
    assert!(worst > 1e-3, "{worst}");
}

#[test]
fn dispatches_over_the_byte_budget_are_not_judged_and_never_pass() {
    let (code, text, r) = dispatches(&[
        "--target",
        "cpu,vulkan",
        "--stage",
        "layer_norm",
        "--max-trace-bytes",
        "600",
    ]);
    assert_eq!(code, 2, "{text}");
    assert_eq!(r["status"], "error");
    let s = &r["stages"][0];
    assert_eq!(s["status"], "skipped");
    assert!(s["dropped_bytes"].as_u64().unwrap() > 0);
    assert!(text.contains("raise --max-trace-bytes"), "{text}");
}

#[test]
fn bad_target_selections_are_input_errors() {
    let (code, text, _) = dispatches(&["--target", "cpu"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("exactly two targets"), "{text}");
    let (code, text, r) = dispatches(&["--target", "cpu,nope"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no target named `nope`"), "{text}");
    assert_eq!(r["status"], "error");
}

#[test]
fn bisect_over_two_targets_attaches_the_first_divergent_dispatch() {
    // scores matches the oracle on cpu and not on cpu_bf16 (its matmul
    // inputs demoted): a backend-specific divergence, so bisect traces the
    // stage on both and names the dispatch.
    let dir = basic_copy();
    spec_with_targets(dir.path());
    let json = dir.path().join("b.json");
    let out = parity(
        dir.path(),
        &[
            "bisect",
            "stages.yaml",
            "--target",
            "cpu,cpu_bf16",
            "--stage",
            "scores",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["target"], "cpu_bf16");
    let e = &r["dispatch"];
    assert_eq!(e["reference"], "cpu");
    assert_eq!(e["target"], "cpu_bf16");
    let s = &e["stage"];
    assert_eq!(s["status"], "fail", "{s}");
    let d = &s["dispatches"][s["first_divergent"].as_u64().unwrap() as usize];
    let names = op_names(d);
    assert!(names.contains(&"stablehlo.dot_general"), "{names:?}");
    assert!(
        text.contains("dispatch evidence (cpu matches the oracle, cpu_bf16 does not"),
        "{text}"
    );
}

#[test]
fn a_substituted_dispatch_on_lavapipe_is_named_and_labelled_backend_specific() {
    // IREE's debugging recipe: dump a target's executable sources, edit one,
    // splice it back (`--iree-hal-substitute-executable-source`, applied by
    // parity between two compile phases). The edit: layer_norm's second
    // dispatch divides the variance by 15 instead of 16 (an N-1 bug), on
    // Vulkan only.
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let dump_target = format!(
        "{TARGETS}    vulkan_dump: {{backend: vulkan-spirv, device: vulkan, flags: [\"--iree-hal-dump-executable-sources-to=dump\"]}}\n"
    );
    std::fs::write(&spec, text.replacen(LEGACY, &dump_target, 1)).unwrap();
    let out = parity(
        dir.path(),
        &[
            "check",
            "stages.yaml",
            "--target",
            "vulkan_dump",
            "--stage",
            "layer_norm",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let source =
        std::fs::read_to_string(dir.path().join("dump/basic_layer_norm_dispatch_1.mlir")).unwrap();
    assert_eq!(source.matches("1.600000e+01 : f32").count(), 1, "{source}");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(
        dir.path().join("sub/ln1.mlir"),
        source.replace("1.600000e+01 : f32", "1.500000e+01 : f32"),
    )
    .unwrap();
    let sub_target = format!(
        "{dump_target}    vulkan_sub: {{backend: vulkan-spirv, device: vulkan, flags: [\"--iree-hal-substitute-executable-source=layer_norm_dispatch_1=sub/ln1.mlir\"]}}\n"
    );
    std::fs::write(&spec, text.replacen(LEGACY, &sub_target, 1)).unwrap();

    // The dispatch diff names the substituted dispatch, local, with its ops.
    let json = dir.path().join("d.json");
    let (code, text_out, r) = parity_with_record(
        dir.path(),
        &[
            "dispatches",
            "stages.yaml",
            "--target",
            "cpu,vulkan_sub",
            "--stage",
            "layer_norm",
            "--json",
            json.to_str().unwrap(),
        ],
        &json,
    );
    assert_eq!(code, 1, "{text_out}");
    let s = &r["stages"][0];
    let first = s["first_divergent"].as_u64().expect("a dispatch is named") as usize;
    let d = &s["dispatches"][first];
    assert!(
        d["key"]
            .as_str()
            .unwrap()
            .starts_with("layer_norm_dispatch_1"),
        "{d}"
    );
    assert_eq!(d["inputs_differ"], false, "{d}");
    assert_eq!(d["aligned_by"], "key");
    let names = op_names(d);
    assert!(names.contains(&"stablehlo.rsqrt"), "{names:?}");
    // Its ops cut out would compile without the substitution: not gone inside.
    assert_eq!(s["inside"]["reproduced"], false, "{s}");
    assert!(
        s["inside"]["note"]
            .as_str()
            .unwrap()
            .contains("substitutes executable `layer_norm_dispatch_1`"),
        "{s}"
    );
    // The dispatch before it (the mean) is untouched and passes.
    for earlier in s["dispatches"].as_array().unwrap()[..first].iter() {
        assert_eq!(earlier["status"], "pass", "{earlier}");
    }

    // Triangulation: cpu matches the oracle, the substituted Vulkan does not.
    let run = dir.path().join("run.json");
    let out = parity(
        dir.path(),
        &[
            "check",
            "stages.yaml",
            "--target",
            "cpu,vulkan_sub",
            "--stage",
            "layer_norm",
            "--mode",
            "isolated",
            "--json",
            run.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    let rows = r["triangulation"].as_array().expect("a triangulation");
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(row["label"], "backend-specific", "{row}");
    }
}

#[test]
fn a_lavapipe_softmax_ulp_is_local_ints_are_exact_and_an_inexact_op_set_is_not_entered() {
    // masked_softmax judged with no ULP to spare: lavapipe's exp differs
    // from llvm-cpu's by up to 6 ULP (docs/gpu.md), deterministically.
    let dir = basic_copy();
    spec_with_targets(dir.path());
    let spec = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let loose = "          - {max_abs: 1.0e-6}\n          - {max_ulp: 64}\n          - {vs_f64: {factor: 2.0, tol: 1.0e-8}}\n";
    assert!(text.contains(loose), "masked_softmax's tolerance changed");
    std::fs::write(&spec, text.replacen(loose, "          - {max_ulp: 0}\n", 1)).unwrap();
    let json = dir.path().join("d.json");
    let (code, stdout, r) = parity_with_record(
        dir.path(),
        &[
            "dispatches",
            "stages.yaml",
            "--target",
            "cpu,vulkan",
            "--stage",
            "masked_softmax",
            "--json",
            json.to_str().unwrap(),
        ],
        &json,
    );
    assert_eq!(code, 1, "{stdout}");
    let s = &r["stages"][0];
    let rows = s["dispatches"].as_array().unwrap();
    // The first dispatch reads the stage's arguments: equal on both.
    assert_eq!(rows[0]["inputs_differ"], false, "{}", rows[0]);
    // An integer output (the argmax) is judged exactly, not by the float
    // output's ULP bound: equal, so it passes.
    let ints: Vec<&Value> = rows
        .iter()
        .flat_map(|d| d["outputs"].as_array().unwrap())
        .filter(|o| o["ty"].as_str().unwrap().starts_with("i32"))
        .collect();
    assert!(!ints.is_empty());
    for o in ints {
        assert_eq!(o["status"], "pass", "{o}");
    }
    let first = s["first_divergent"].as_u64().expect("a dispatch is named") as usize;
    let d = &rows[first];
    assert_eq!(d["inputs_differ"], false, "{d}");
    assert!(d["outputs"][0]["max_ulp"].as_u64().unwrap() >= 1, "{d}");
    // The ops located in the softmax dispatch are not all of it (IREE raised
    // exp, reduce and divide into a softmax): parity does not go inside, and
    // does not call that an observer effect.
    let note = s["inside"]["note"].as_str().unwrap();
    assert!(note.starts_with("not gone inside"), "{note}");
    assert!(!note.contains("observer effect"), "{note}");
    assert!(!stdout.contains("elements outside tolerance"), "{stdout}");
}

#[test]
fn inside_a_lavapipe_elementwise_dispatch_the_first_differing_op_is_named_and_checked_in_f64() {
    // One elementwise dispatch of transcendental ops, judged with no ULP to
    // spare: lavapipe's math differs from llvm-cpu's, deterministically.
    let dir = basic_copy();
    spec_with_targets(dir.path());
    let model = dir.path().join("model.mlir");
    let text = std::fs::read_to_string(&model).unwrap();
    let at = text.find("  func.func public @layer_norm").unwrap();
    let act = "  func.func public @act(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
    %c = stablehlo.constant dense<3.0> : tensor<2x8x16xf32>
    %0 = stablehlo.multiply %x, %c : tensor<2x8x16xf32>
    %1 = stablehlo.tanh %0 : tensor<2x8x16xf32>
    %2 = stablehlo.exponential %1 : tensor<2x8x16xf32>
    %3 = stablehlo.log %2 : tensor<2x8x16xf32>
    %4 = stablehlo.sine %3 : tensor<2x8x16xf32>
    %5 = stablehlo.logistic %4 : tensor<2x8x16xf32>
    return %5 : tensor<2x8x16xf32>
  }
";
    std::fs::write(&model, format!("{}{act}{}", &text[..at], &text[at..])).unwrap();
    let spec = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let stage = "stages:\n  - name: act\n    module: basic\n    function: act\n    args:\n      - {oracle: x}\n    outputs:\n      - name: y\n        oracle: normed\n        tolerance: [{max_ulp: 0}]\n";
    std::fs::write(&spec, text.replacen("stages:\n", stage, 1)).unwrap();
    let json = dir.path().join("d.json");
    let (code, stdout, r) = parity_with_record(
        dir.path(),
        &[
            "dispatches",
            "stages.yaml",
            "--target",
            "cpu,vulkan",
            "--stage",
            "act",
            "--json",
            json.to_str().unwrap(),
        ],
        &json,
    );
    assert_eq!(code, 1, "{stdout}");
    let s = &r["stages"][0];
    assert_eq!(s["first_divergent"], 0, "{s}");
    assert_eq!(s["dispatches"][0]["inputs_differ"], false);
    let i = &s["inside"];
    assert_eq!(i["reproduced"], true, "{i}");
    // multiply by 3 is exact on both; tanh is the first to differ.
    assert_eq!(i["op"]["name"], "stablehlo.tanh", "{i}");
    assert!(
        i["op"]["loc"].as_str().unwrap().contains("model.mlir:"),
        "{i}"
    );
    // tanh alone in f64 from cpu's operands: both targets within a few f32
    // ULPs of it (|tanh| <= 1), and `off` names a target only when it is
    // at least twice as far as the other.
    let v = &i["vs_f64"];
    let (re, te) = (
        v["reference_err"].as_f64().unwrap(),
        v["target_err"].as_f64().unwrap(),
    );
    assert!(re < 1e-6 && te < 1e-6 && re.max(te) > 0.0, "{v}");
    match v["off"].as_str() {
        Some("vulkan") => assert!(te >= 2.0 * re, "{v}"),
        Some("cpu") => assert!(re >= 2.0 * te, "{v}"),
        Some(other) => panic!("off names {other}"),
        None => assert!(te < 2.0 * re && re < 2.0 * te, "{v}"),
    }
    assert!(
        stdout.contains("vs f64 (the operation alone in f64"),
        "{stdout}"
    );
}
