//! Ambiguous repairs, checked for equivalence (issue 10, docs/bisect.md):
//! when the repairs that make a region match the oracle act at several
//! operations, bisect runs each of them, and the unedited region, on
//! perturbed copies of the region's inputs and says whether they compute
//! one function (then no oracle tensor at the region's end can separate
//! them) or not (then another case could).

mod common;

use serde_json::Value;
use std::path::Path;

const SPEC: &str = r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
stages:
  - name: f
    module: m
    function: f
    args:
      - {oracle: x}
    outputs:
      - name: y
        oracle: y
        tolerance: [{max_ulp: 4}]
"#;

/// A directory holding `model`, the one-stage spec and an oracle of x and y.
fn subject(model: &str, x: &[f32], y: &[f32]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.mlir"), model).unwrap();
    std::fs::write(dir.path().join("stages.yaml"), SPEC).unwrap();
    common::write_f32_store(&dir.path().join("oracle"), &[("x", x), ("y", y)]);
    dir
}

/// Bisects `model`; returns the text, the repair search and the named op
/// (null when no op is named).
fn bisect_named(model: &str, x: &[f32], y: &[f32]) -> (String, Value, Value) {
    let dir = subject(model, x, y);
    let d: &Path = dir.path();
    let (code, text, report) = common::bisect_in(d, "stages.yaml", &[]);
    assert_eq!(code, 1, "{text}");
    let repair = &report["repair"];
    assert!(repair["claimed"].is_null(), "{repair}");
    (text, repair.clone(), report["first_divergent_op"].clone())
}

/// Bisects `model`, which must end ambiguous (no op named).
fn bisect(model: &str, x: &[f32], y: &[f32]) -> (String, Value) {
    let (text, repair, op) = bisect_named(model, x, y);
    assert!(op.is_null(), "ambiguous: {text}");
    (text, repair)
}

fn edits(repair: &Value, which: &str) -> Vec<(u64, String)> {
    repair["equivalence"][which]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let c = &repair["candidates"][i.as_u64().unwrap() as usize];
            (
                c["op_index"].as_u64().unwrap(),
                c["edit"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn repairs_that_only_coincide_on_the_failing_case_are_not_called_equivalent() {
    // Meant: 2x + 1; the port subtracts. On the oracle's input (all ones)
    // a scale by 3 after the subtract, or the weight doubled, repairs the
    // output as well as `subtract -> add`; on other inputs they do not.
    let model = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %w = stablehlo.constant dense<2.0> : tensor<8xf32>
  %one = stablehlo.constant dense<1.0> : tensor<8xf32>
  %t = stablehlo.multiply %x, %w : tensor<8xf32>
  %y = stablehlo.subtract %t, %one : tensor<8xf32>
  return %y : tensor<8xf32>
}
"#;
    let (text, repair) = bisect(model, &[1.0; 8], &[3.0; 8]);
    let eq = &repair["equivalence"];
    assert_eq!(eq["inputs"], 3, "{repair}");
    assert_eq!(eq["unedited_differs"], true, "{repair}");
    let agree = edits(&repair, "agree");
    let differ = edits(&repair, "differ");
    assert_eq!(
        agree[0],
        (3, "subtract -> add".to_string()),
        "the first repair: {repair}"
    );
    // x * 2 + 2 - 1 and x * 2 - 1 + 2 are 2x + 1 too.
    assert!(
        agree.contains(&(2, "its result plus 2.0000e0 (a missing add)".into())),
        "{agree:?}"
    );
    // 3 (2x - 1), 4x - 1 (twice).
    assert_eq!(differ.len(), 3, "{differ:?}");
    assert!(
        differ.contains(&(3, "its result times 3.0000e0 (a missing scale)".into())),
        "{differ:?}"
    );
    assert!(
        differ.contains(&(2, "its result times 2.0000e0 (a missing scale)".into())),
        "{differ:?}"
    );
    assert!(text.contains("not the same function"), "{text}");
    assert!(text.contains("in another case can separate them"), "{text}");
    // The four that agree are one fix at the subtract.
    assert!(
        text.contains("the 4 that agree with the first all act at #3"),
        "{text}"
    );
}

#[test]
fn repairs_of_an_odd_function_on_either_side_are_one_function() {
    // Meant: tanh(x); the port negates first. Bypassing the negate, or
    // negating tanh's result (tanh is odd), are the same fix on every input.
    let model = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %t = stablehlo.negate %x : tensor<8xf32>
  %y = stablehlo.tanh %t : tensor<8xf32>
  return %y : tensor<8xf32>
}
"#;
    let x: Vec<f32> = (0..8).map(|i| -2.0 + i as f32 * 4.0 / 7.0).collect();
    let y: Vec<f32> = x.iter().map(|v| v.tanh()).collect();
    let (text, repair, op) = bisect_named(model, &x, &y);
    let eq = &repair["equivalence"];
    assert_eq!(eq["unedited_differs"], true, "{repair}");
    assert_eq!(eq["differ"], serde_json::json!([]), "{repair}");
    // Two adjacent ops, one function: the answer is the pair, neither picked.
    assert_eq!(op["op_index"], 0, "{op}");
    assert_eq!(op["evidence"], "repair", "{op}");
    assert_eq!(op["pair"]["op_index"], 1, "{op}");
    assert_eq!(op["pair"]["op_name"], "stablehlo.tanh", "{op}");
    assert!(text.contains("one of two adjacent operations"), "{text}");
    let agree = edits(&repair, "agree");
    assert_eq!(
        agree.len(),
        repair["candidates"].as_array().unwrap().len(),
        "{repair}"
    );
    assert!(
        agree.contains(&(
            0,
            "bypassed: operand 0 (%arg0) used instead of its result".into()
        )),
        "{agree:?}"
    );
    assert!(agree.contains(&(1, "negated".into())), "{agree:?}");
    assert!(text.contains("compute the same function"), "{text}");
    assert!(
        text.contains(
            "no oracle tensor at the region's end, in this case or another, can tell them apart"
        ),
        "{text}"
    );
}

/// `parity check --bisect` on `model` (x -> y through `f`); returns the
/// summary line and run.json's first_divergent_op.
fn check_summary(model: &str, x: &[f32], y: &[f32]) -> (String, Value) {
    let dir = subject(model, x, y);
    let d: &Path = dir.path();
    let (code, stdout, stderr, record) = common::check(d, "stages.yaml", &["--bisect"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("localised to: "))
        .unwrap_or_else(|| panic!("no summary line: {stdout}"))
        .to_string();
    (line, record.unwrap()["first_divergent_op"].clone())
}

#[test]
fn check_bisect_says_an_ambiguous_answer_in_its_summary_line() {
    // The summary line says what the repair search found (equivalent
    // one-op repairs, and where an oracle tensor would decide), not "a
    // region of N operations (no evidence narrows it further)". Meant:
    // 2 tanh(x); the port negates first. Bypassing the negate, negating
    // tanh's result or the product's are one fix on three ops.
    let model = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<8xf32>
  %t = stablehlo.negate %x : tensor<8xf32>
  %u = stablehlo.tanh %t : tensor<8xf32>
  %y = stablehlo.multiply %u, %two : tensor<8xf32>
  return %y : tensor<8xf32>
}
"#;
    let x: Vec<f32> = (0..8).map(|i| -2.0 + i as f32 * 4.0 / 7.0).collect();
    let y: Vec<f32> = x.iter().map(|v| 2.0 * v.tanh()).collect();
    let (line, op) = check_summary(model, &x, &y);
    assert!(line.starts_with("localised to: ambiguous: "), "{line}");
    assert!(
        line.contains(
            " equivalent one-op repairs, at 3 operations, #1, #2, #3; an oracle tensor \
             between #1 and #3 would decide"
        ),
        "{line}"
    );
    assert!(!line.contains("no evidence narrows"), "{line}");
    // run.json carries the repair search that says so.
    assert_eq!(op["kind"], "region", "{op}");
    assert!(op["repair"]["claimed"].is_null(), "{op}");
    assert_eq!(op["repair"]["equivalence"]["differ"], serde_json::json!([]));
}

#[test]
fn check_bisect_names_a_pair_of_adjacent_ops_that_compute_one_function() {
    // tanh(x) meant, the port negates first: the repairs sit on the negate
    // and the tanh, adjacent, one function: a pair in run.json and in the
    // summary line, neither op picked.
    let model = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %t = stablehlo.negate %x : tensor<8xf32>
  %y = stablehlo.tanh %t : tensor<8xf32>
  return %y : tensor<8xf32>
}
"#;
    let x: Vec<f32> = (0..8).map(|i| -2.0 + i as f32 * 4.0 / 7.0).collect();
    let y: Vec<f32> = x.iter().map(|v| v.tanh()).collect();
    let (line, op) = check_summary(model, &x, &y);
    assert!(
        line.starts_with(
            "localised to: one of two adjacent operations, #0 stablehlo.negate at \
             ./model.mlir:3:8 or #1 stablehlo.tanh at ./model.mlir:4:8"
        ),
        "{line}"
    );
    assert_eq!(op["kind"], "op", "{op}");
    assert_eq!(op["op_index"], 0, "{op}");
    assert_eq!(op["pair"]["op_index"], 1, "{op}");
    assert_eq!(op["evidence"], "repair", "{op}");
}
