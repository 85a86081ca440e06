//! The first divergence is chosen by data flow and position, not by the order
//! stages are listed in: a whole-function stage listed first does not hide the
//! slice inside it where the error starts, and of two failing cuts of one
//! function the one ending earlier wins.

mod common;

use common::check;
use parity_tensor::{write_npy, Tensor};
use std::path::Path;

/// `f(x) = ((x * 2 [+ 0.25 by mistake]) * 3) - 1`, in three named scopes
/// (`double`, `triple`, `shift`), as JAX names them. The fault is in `double`.
const MODEL: &str = r#"
func.func public @f(%x: tensor<16xf32> loc("x")) -> tensor<16xf32> {
  %c2 = stablehlo.constant dense<2.0> : tensor<16xf32> loc("jit(f)/double/two")
  %d0 = stablehlo.multiply %x, %c2 : tensor<16xf32> loc("jit(f)/double/mul")
  %bug = stablehlo.constant dense<0.25> : tensor<16xf32> loc("jit(f)/double/bug")
  %d = stablehlo.add %d0, %bug : tensor<16xf32> loc("jit(f)/double/add")
  %c3 = stablehlo.constant dense<3.0> : tensor<16xf32> loc("jit(f)/triple/three")
  %t = stablehlo.multiply %d, %c3 : tensor<16xf32> loc("jit(f)/triple/mul")
  %c1 = stablehlo.constant dense<1.0> : tensor<16xf32> loc("jit(f)/shift/one")
  %s = stablehlo.subtract %t, %c1 : tensor<16xf32> loc("jit(f)/shift/sub")
  return %s : tensor<16xf32>
}
"#;

/// Stages listed in the worst order: the whole function first, then the cut
/// from the input to `triple` (contains the fault), then `double` alone (the
/// fault), then `shift` fed from the oracle (passes), then a stage fed by the
/// failing `double` stage (fails chained, and in isolation it passes).
const SPEC: &str = r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
tolerances:
  f32: [{max_abs: 1.0e-6}]
stages:
  - name: whole
    module: m
    function: f
    args: [{oracle: x}]
    outputs: [{name: out, oracle: shift}]
  - name: to_triple
    module: m
    slice: {function: f, to: [triple]}
    args: [{oracle: x}]
    outputs: [{name: out, oracle: triple}]
  - name: shift
    module: m
    slice: {function: f, from: [triple], to: [shift]}
    args: [{oracle: triple}]
    outputs: [{name: out, oracle: shift}]
  - name: double
    module: m
    slice: {function: f, to: [double]}
    args: [{oracle: x}]
    outputs: [{name: out, oracle: double}]
"#;

fn write_subject(dir: &Path) {
    std::fs::write(dir.join("model.mlir"), MODEL).unwrap();
    std::fs::write(dir.join("stages.yaml"), SPEC).unwrap();
    let oracle = dir.join("oracle");
    std::fs::create_dir_all(&oracle).unwrap();
    let x: Vec<f32> = (0..16).map(|i| i as f32 * 0.5 - 3.0).collect();
    let double: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    let triple: Vec<f32> = double.iter().map(|v| v * 3.0).collect();
    let shift: Vec<f32> = triple.iter().map(|v| v - 1.0).collect();
    let mut entries = Vec::new();
    for (name, values) in [
        ("x", &x),
        ("double", &double),
        ("triple", &triple),
        ("shift", &shift),
    ] {
        let t = Tensor::from_f32(vec![16], values).unwrap();
        write_npy(oracle.join(format!("{name}.npy")), &t).unwrap();
        entries.push(format!(
            r#""{name}": {{"file": "{name}.npy", "dtype": "f32", "shape": [16]}}"#
        ));
    }
    std::fs::write(
        oracle.join("manifest.json"),
        format!(
            r#"{{"schema": "parity.oracle-manifest/1", "tensors": {{{}}}}}"#,
            entries.join(", ")
        ),
    )
    .unwrap();
}

fn status(run: &serde_json::Value, stage: &str, mode: &str) -> String {
    run["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == stage && s["mode"] == mode)
        .map(|s| s["status"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no {stage} {mode}"))
}

#[test]
fn the_innermost_earliest_failing_cut_is_the_first_divergence() {
    let dir = tempfile::tempdir().unwrap();
    write_subject(dir.path());
    let (code, stdout, stderr, run) = check(dir.path(), "stages.yaml", &[]);
    let run = run.unwrap_or_else(|| panic!("no run.json\n{stdout}\n{stderr}"));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // The premise: three stages fail in isolation, `shift` does not.
    for (stage, want) in [
        ("whole", "fail"),
        ("to_triple", "fail"),
        ("double", "fail"),
        ("shift", "pass"),
    ] {
        assert_eq!(status(&run, stage, "isolated"), want, "{stage}\n{stdout}");
    }
    // `whole` (listed first) contains the other cuts; `to_triple` contains
    // `double`; `double` is where the error starts.
    assert_eq!(run["first_divergence"]["stage"], "double", "{stdout}");
    assert_eq!(run["first_divergence"]["mode"], "isolated");
    assert!(
        stdout.contains("first divergence: stage `double`"),
        "{stdout}"
    );
}
