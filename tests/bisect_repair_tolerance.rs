//! The repair search judges a repaired stage output by the output's own
//! criteria (issue 10): an oracle recorded in bf16 is far more than 64 f32
//! ULPs from a correct f32 production, yet within the stage's tolerance, so
//! the right edit is a repair under the spec; under the old fixed budget (64
//! ULPs at the oracle's largest magnitude) nothing was, and bisect stopped
//! at the region.

mod common;

use std::path::Path;

/// Meant: 3x + x²; the port subtracts.
const MODEL: &str = r#"
func.func @poly(%x: tensor<64xf32>) -> tensor<64xf32> {
  %k = stablehlo.constant dense<3.0> : tensor<64xf32>
  %a = stablehlo.multiply %x, %k : tensor<64xf32>
  %sq = stablehlo.multiply %x, %x : tensor<64xf32>
  %y = stablehlo.subtract %a, %sq : tensor<64xf32>
  return %y : tensor<64xf32>
}
"#;

const SPEC: &str = r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
stages:
  - name: poly
    module: m
    function: poly
    args:
      - {oracle: x}
    outputs:
      - name: y
        oracle: y
        tolerance: [{max_abs: 0.04}]
"#;

/// Rounds to the nearest bf16 (ties to even), kept as f32.
fn bf16(v: f32) -> f32 {
    let b = v.to_bits();
    f32::from_bits(((b + 0x7fff + ((b >> 16) & 1)) >> 16) << 16)
}

fn write_subject(dir: &Path) {
    std::fs::write(dir.join("model.mlir"), MODEL).unwrap();
    std::fs::write(dir.join("stages.yaml"), SPEC).unwrap();
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) / 16.0).collect();
    // The oracle computed the intended value and stored it in bf16.
    let y: Vec<f32> = x.iter().map(|&v| bf16(3.0 * v + v * v)).collect();
    common::write_f32_store(&dir.join("oracle"), &[("x", &x), ("y", &y)]);
}

#[test]
fn a_bf16_oracle_within_the_stage_tolerance_accepts_the_right_repair() {
    let dir = tempfile::tempdir().unwrap();
    write_subject(dir.path());
    // The oracle is coarse: more than 64 f32 ULPs at its largest magnitude
    // (about 10: 64 ULPs are 6.1e-5) from the intended f32 value somewhere.
    let x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) / 16.0).collect();
    let worst = x
        .iter()
        .map(|&v| ((3.0 * v + v * v) - bf16(3.0 * v + v * v)).abs())
        .fold(0.0f32, f32::max);
    assert!(worst > 1e-3 && worst < 0.04, "{worst}");

    let (code, text, report) = common::bisect_in(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 1, "{text}");
    let op = &report["first_divergent_op"];
    assert_eq!(op["evidence"], "repair", "{text}");
    assert_eq!(op["op_name"], "stablehlo.subtract", "{text}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("subtract -> add"),
        "the fix is named: {notes}"
    );
    assert!(
        notes.contains("within output `y`'s tolerance"),
        "judged by the spec: {notes}"
    );
}
