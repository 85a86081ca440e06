//! `parity bisect` on a non-finite fault: the first operation turning finite
//! operands into NaN/Inf where the f64 shadow stays finite is named with
//! `nonfinite` evidence, by both strategies, and its reproducer fails.

mod common;

use common::{parity, run_sh};
use parity_tensor::{write_npy, Tensor};
use serde_json::Value;
use std::path::Path;

/// softplus(4x)/4 written naively: exp(4x) overflows f32 for x > 22 (the
/// f64 shadow does not), so log and the scale after it carry the infinity.
/// The oracle holds the stable result, max(y, 0) + log1p(exp(-|y|)), over 4.
const MODEL: &str = r#"
func.func @softplus(%x: tensor<64xf32>) -> tensor<64xf32> {
  %k = stablehlo.constant dense<4.0> : tensor<64xf32>
  %s = stablehlo.multiply %x, %k : tensor<64xf32>
  %e = stablehlo.exponential %s : tensor<64xf32>
  %one = stablehlo.constant dense<1.0> : tensor<64xf32>
  %p = stablehlo.add %e, %one : tensor<64xf32>
  %l = stablehlo.log %p : tensor<64xf32>
  %q = stablehlo.constant dense<0.25> : tensor<64xf32>
  %o = stablehlo.multiply %l, %q : tensor<64xf32>
  return %o : tensor<64xf32>
}
"#;

const SPEC: &str = r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
stages:
  - name: softplus
    module: m
    function: softplus
    args:
      - {oracle: x}
    outputs:
      - name: out
        oracle: out
        tolerance: [{max_ulp: 8}]
"#;

fn write_subject(dir: &Path) {
    std::fs::write(dir.join("model.mlir"), MODEL).unwrap();
    std::fs::write(dir.join("stages.yaml"), SPEC).unwrap();
    let oracle = dir.join("oracle");
    std::fs::create_dir_all(&oracle).unwrap();
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) * 0.95).collect();
    let out: Vec<f32> = x
        .iter()
        .map(|&v| {
            let y = 4.0 * v as f64;
            ((y.max(0.0) + (-y.abs()).exp().ln_1p()) / 4.0) as f32
        })
        .collect();
    common::write_f32_store(&oracle, &[("x", &x), ("out", &out)]);
}

fn bisect(dir: &Path, strategy: &str) -> (Value, String) {
    let json = dir.join(format!("bisect-{strategy}.json"));
    let o = parity(
        dir,
        &[
            "bisect",
            "stages.yaml",
            "--strategy",
            strategy,
            "--json",
            json.to_str().unwrap(),
            "--repro-dir",
            dir.join(format!("repro-{strategy}")).to_str().unwrap(),
        ],
    );
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "bisect localises the fault\n{text}"
    );
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, text)
}

#[test]
fn the_first_nan_or_inf_from_finite_operands_is_named_with_nonfinite_evidence() {
    let dir = tempfile::tempdir().unwrap();
    write_subject(dir.path());
    for strategy in ["mark-all", "bisection"] {
        let (report, text) = bisect(dir.path(), strategy);
        let op = &report["first_divergent_op"];
        assert_eq!(op["op_name"], "stablehlo.exponential", "{strategy}: {text}");
        assert_eq!(op["evidence"], "nonfinite", "{strategy}: {text}");
        // exp(4x) overflows for x > 22.2: x = (i - 31.5) * 0.95 for i >= 55.
        assert_eq!(
            op["metrics"]["output"][0]["nonfinite"], 9,
            "{strategy}: {text}"
        );
        assert!(
            op["metrics"]["inputs"][0].get("nonfinite").is_none(),
            "the operand is finite: {}",
            op["metrics"]
        );
        assert!(
            text.contains("9 NaN/Inf where the reference is finite"),
            "{strategy}: {text}"
        );
        let notes = report["notes"].to_string();
        assert!(
            notes.contains("non-finite origin: #") && notes.contains("within rounding"),
            "{strategy}: {notes}"
        );
        // The flagged shadow row is the same op.
        let flagged: Vec<_> = report["shadow"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["flagged"] == true)
            .collect();
        assert_eq!(flagged.len(), 1, "{strategy}: {}", report["shadow"]);
        assert_eq!(flagged[0]["op_name"], "stablehlo.exponential");
        // The one-op reproducer runs exp on production's operands and
        // expects the shadow's finite values: it fails on the infinities.
        let repro = dir.path().join(format!("repro-{strategy}"));
        let expected = parity_tensor::read_npy(repro.join("expected_0.npy")).unwrap();
        assert!(expected.to_f64_vec().iter().all(|x| x.is_finite()));
        assert_eq!(report["reproducer_check"]["reproduces"], true, "{text}");
        let (rc, out) = run_sh(&repro);
        assert_ne!(rc, 0, "{strategy}: the reproducer must fail:\n{out}");
        assert!(out.contains("does not match"), "{strategy}: {out}");
    }
}

/// `x * 3.3 + sin(x)` where the oracle holds `x * 3.3 + sin(x)^2`: a
/// missing square, which none of the repair edits expresses (a wrong
/// binary or unary op, a negate, a fitted scale or offset after an op).
const WRONG_OP: &str = r#"
func.func @wrong(%x: tensor<64xf32>) -> tensor<64xf32> {
  %k = stablehlo.constant dense<3.3> : tensor<64xf32>
  %y = stablehlo.multiply %x, %k : tensor<64xf32>
  %s = stablehlo.sine %x : tensor<64xf32>
  %z = stablehlo.add %y, %s : tensor<64xf32>
  %h = stablehlo.tanh %z : tensor<64xf32>
  return %h : tensor<64xf32>
}
"#;

#[test]
fn a_semantic_fault_no_edit_repairs_stays_an_honest_region() {
    let dir = tempfile::tempdir().unwrap();
    write_subject(dir.path());
    std::fs::write(dir.path().join("model.mlir"), WRONG_OP).unwrap();
    let spec = SPEC.replace("softplus", "wrong");
    std::fs::write(dir.path().join("stages.yaml"), spec).unwrap();
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) * 0.05).collect();
    let out: Vec<f32> = x
        .iter()
        .map(|&v| (v * 3.3 + v.sin() * v.sin()).tanh())
        .collect();
    for (name, data) in [("x", &x), ("out", &out)] {
        write_npy(
            dir.path().join(format!("oracle/{name}.npy")),
            &Tensor::from_f32(vec![64], data).unwrap(),
        )
        .unwrap();
    }
    let (report, text) = bisect(dir.path(), "mark-all");
    assert!(
        report["first_divergent_op"].is_null(),
        "no op claimed: {text}"
    );
    assert!(report["region"]["ops"].as_u64().unwrap() >= 3, "{text}");
    let notes = report["notes"].to_string();
    assert!(notes.contains("repair search: none of"), "{notes}");
    assert!(notes.contains("semantic"), "{notes}");
}
