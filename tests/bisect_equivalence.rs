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

fn bisect(model: &str, x: &[f32], y: &[f32]) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    std::fs::write(d.join("model.mlir"), model).unwrap();
    std::fs::write(d.join("stages.yaml"), SPEC).unwrap();
    common::write_f32_store(&d.join("oracle"), &[("x", x), ("y", y)]);
    let (code, text, report) = common::bisect_in(d, "stages.yaml", &[]);
    assert_eq!(code, 1, "{text}");
    assert!(report["first_divergent_op"].is_null(), "ambiguous: {text}");
    let repair = &report["repair"];
    assert!(repair["claimed"].is_null(), "{repair}");
    (text, repair.clone())
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
    let (text, repair) = bisect(model, &x, &y);
    let eq = &repair["equivalence"];
    assert_eq!(eq["unedited_differs"], true, "{repair}");
    assert_eq!(eq["differ"], serde_json::json!([]), "{repair}");
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

#[test]
fn check_bisect_says_an_ambiguous_answer_in_its_summary_line() {
    // The odd-function case through `parity check --bisect`: the summary
    // line says what the repair search found (equivalent one-op repairs,
    // and where an oracle tensor would decide), not "a region of 2
    // operations (no evidence narrows it further)".
    let dir = tempfile::tempdir().unwrap();
    let d: &Path = dir.path();
    let model = r#"
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %t = stablehlo.negate %x : tensor<8xf32>
  %y = stablehlo.tanh %t : tensor<8xf32>
  return %y : tensor<8xf32>
}
"#;
    std::fs::write(d.join("model.mlir"), model).unwrap();
    std::fs::write(d.join("stages.yaml"), SPEC).unwrap();
    let x: Vec<f32> = (0..8).map(|i| -2.0 + i as f32 * 4.0 / 7.0).collect();
    let y: Vec<f32> = x.iter().map(|v| v.tanh()).collect();
    common::write_f32_store(&d.join("oracle"), &[("x", &x), ("y", &y)]);
    let (code, stdout, stderr, record) = common::check(d, "stages.yaml", &["--bisect"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("localised to: "))
        .unwrap_or_else(|| panic!("no summary line: {stdout}"));
    assert!(line.starts_with("localised to: ambiguous: "), "{line}");
    assert!(
        line.ends_with(
            " equivalent one-op repairs, at 2 operations, #0, #1; an oracle tensor between #0 \
             and #1 would decide"
        ),
        "{line}"
    );
    assert!(!line.contains("no evidence narrows"), "{line}");
    // run.json carries the repair search that says so.
    let op = &record.unwrap()["first_divergent_op"];
    assert_eq!(op["kind"], "region", "{op}");
    assert!(op["repair"]["claimed"].is_null(), "{op}");
    assert_eq!(op["repair"]["equivalence"]["differ"], serde_json::json!([]));
}
