//! `parity bisect` on StableHLO it was not built around: the f64 shadow must
//! compile regions whose transcendental functions are computed in the graph
//! from constants (IREE's const-eval JIT links without libm), and compiler
//! diagnostics in errors stay bounded.

mod common;

use common::parity;
use parity_tensor::{write_npy, Tensor};
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;

/// A timing signal `sin(iota * 0.1)` built in the graph (constant-foldable,
/// so IREE's const-eval wants to JIT it: in f64 that needs libm's `sin`), added
/// to `x * 3.3`, then rounded to bf16 precision by mistake (the fault), then
/// scaled. The oracle holds the intended f32 result (no rounding).
const MODEL: &str = r#"
func.func @timing(%x: tensor<64xf32>) -> tensor<64xf32> {
  %i = stablehlo.iota dim = 0 : tensor<64xf32>
  %c = stablehlo.constant dense<0.1> : tensor<64xf32>
  %t = stablehlo.multiply %i, %c : tensor<64xf32>
  %s = stablehlo.sine %t : tensor<64xf32>
  %k = stablehlo.constant dense<3.3> : tensor<64xf32>
  %y = stablehlo.multiply %x, %k : tensor<64xf32>
  %z = stablehlo.add %y, %s : tensor<64xf32>
  %r = stablehlo.reduce_precision %z, format = e8m7 : tensor<64xf32>
  %h = stablehlo.constant dense<0.5> : tensor<64xf32>
  %o = stablehlo.multiply %r, %h : tensor<64xf32>
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
  - name: timing
    module: m
    function: timing
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
    let x: Vec<f32> = (0..64)
        .map(|i| ((i * 37 % 64) as f32 - 31.5) / 7.0)
        .collect();
    // The intended value, in f32 arithmetic as the module computes it.
    let out: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (v * 3.3 + (i as f32 * 0.1f32).sin()) * 0.5)
        .collect();
    common::write_f32_store(&oracle, &[("x", &x), ("out", &out)]);
}

#[test]
fn the_f64_shadow_compiles_transcendentals_computed_in_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    write_subject(dir.path());
    let (code, stdout, report) = common::bisect_in(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 1, "bisect localises the fault\n{stdout}");
    let op = &report["first_divergent_op"];
    assert_eq!(op["op_name"], "stablehlo.reduce_precision", "{stdout}");
    assert_eq!(op["evidence"], "inferred", "{stdout}");
    // Confirmed: with the rounding's result taken from the f64 shadow, the
    // stage's output matches the oracle.
    assert_eq!(
        report["confirmation"]["confirmed"], op["op_index"],
        "{}",
        report["confirmation"]
    );
    // The shadow ran (before const-eval was turned off for it, its compile
    // failed on the in-graph sine: exit 3); the sine depends only on constants,
    // so it is folded into its consumer and is not a region row of its own.
    // The reproducer compares the one op with the unrounded shadow, so a
    // rounding fault's reproducer fails (against the shadow rounded to f32 it
    // could not), inside bisect and with the pip tools.
    assert_eq!(report["reproducer_check"]["reproduces"], true, "{stdout}");
    let (rc, out) = common::run_sh(&dir.path().join("repro"));
    assert_ne!(rc, 0, "the rounding fault's reproducer fails:\n{out}");
    assert!(out.contains("does not match"), "{out}");
    let shadow = report["shadow"].as_array().unwrap();
    let flagged: Vec<_> = shadow.iter().filter(|r| r["flagged"] == true).collect();
    assert_eq!(flagged.len(), 1, "{}", report["shadow"]);
    assert_eq!(flagged[0]["op_name"], "stablehlo.reduce_precision");
    assert!(
        shadow.iter().any(|r| r["op_name"] == "stablehlo.add"),
        "the add consuming the sine is under the shadow: {}",
        report["shadow"]
    );
}

/// examples/basic's bf16 projection with a semantic fault: the activations
/// negated after their (exact) bf16 -> f32 convert. The function's last op
/// is the model's deliberate f32 -> bf16 convert, which the f64 shadow (f64
/// throughout) sees losing about 28000 f32 ULPs: more than rounding at f32
/// explains, so before the confirmation probe bisect named that innocent
/// convert as `inferred`.
const NEGATED_SPEC: &str = r#"version: 1
subject:
  modules:
    basic: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
weights: [weights.safetensors]
oracle: oracle
stages:
  - name: proj_bf16
    module: basic
    function: proj_bf16
    args:
      - {oracle: context}
      - {weight: proj.weight}
      - {weight: proj.bias}
    outputs:
      - name: proj
        oracle: proj
        tolerance: [{max_abs: 0.032}, {max_ulp: 16}]
"#;

#[test]
fn a_deliberate_precision_drop_flagged_by_the_shadow_is_not_claimed_when_the_fault_is_semantic() {
    let dir = common::basic_copy();
    let model = dir.path().join("model.mlir");
    let text = std::fs::read_to_string(&model).unwrap();
    let widen = "    %xf = stablehlo.convert %x : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>\n";
    assert!(text.contains(widen), "proj_bf16 widens its input");
    let faulty = text
        .replace(
            widen,
            &format!("{widen}    %xn = stablehlo.negate %xf : tensor<2x4x16xf32>\n"),
        )
        .replace(
            "%y = stablehlo.dot_general %xf, %wf",
            "%y = stablehlo.dot_general %xn, %wf",
        );
    assert!(faulty.contains("dot_general %xn"));
    std::fs::write(&model, faulty).unwrap();
    std::fs::write(dir.path().join("stages-negated.yaml"), NEGATED_SPEC).unwrap();
    let (code, stdout, report) = common::bisect_in(
        dir.path(),
        "stages-negated.yaml",
        &["--strategy", "mark-all"],
    );
    assert_eq!(code, 1, "still a divergence\n{stdout}");
    // The shadow flags the final convert (its own error is bf16 rounding) ...
    let c = &report["confirmation"];
    let candidates = c["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 1, "{c}");
    assert_eq!(candidates[0]["op_name"], "stablehlo.convert", "{c}");
    assert!(
        candidates[0]["local_ulps"].as_f64().unwrap() > 1000.0,
        "{c}"
    );
    // ... but with its result taken from the shadow the projection still
    // misses the oracle (the negation is upstream): not confirmed, not named.
    assert_eq!(candidates[0]["holds"], false, "{c}");
    assert!(c["confirmed"].is_null(), "{c}");
    assert!(
        candidates[0]["after"]["ulps_at_max"].as_f64().unwrap() > 64.0,
        "{c}"
    );
    let op = &report["first_divergent_op"];
    assert!(
        op.is_null() || (op["op_name"] == "stablehlo.negate" && op["evidence"] == "repair"),
        "no wrong op: the convert is innocent: {op}\n{stdout}"
    );
    assert!(
        !report["shadow"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["flagged"] == true),
        "{}",
        report["shadow"]
    );
    let notes = report["notes"].to_string();
    assert!(notes.contains("the confirmation fails"), "{notes}");
    assert!(
        stdout.contains("confirmation (the region's end vs oracle:proj")
            && stdout.contains("fails #"),
        "{stdout}"
    );
    // The confirmation is one counted probe.
    let log = report["probe_log"].to_string();
    assert_eq!(log.matches("confirmation").count(), 1, "{log}");
}

/// `a * b + c`. For a CPU with FMA (`--iree-llvmcpu-target-cpu=haswell`)
/// IREE contracts the multiply and the add into one FMA, which keeps the
/// product exact; when the product is tapped (a checkpoint), the tapped
/// build rounds it to f32 before the add. Measured with the pip tools
/// (IREE 3.13, llvm-cpu): on inputs where `c = -fl(a * b)`, all 64 results
/// differ (untapped: the product's rounding error, about 5e-8; tapped: 0);
/// with `target-cpu=generic` (no FMA) both builds are bit-identical.
const FMA_MODEL: &str = r#"
func.func @fma(%a: tensor<64xf32>, %b: tensor<64xf32>, %c: tensor<64xf32>) -> tensor<64xf32> {
  %p = stablehlo.multiply %a, %b : tensor<64xf32> loc("jit(fma)/product/mul")
  %s = stablehlo.add %p, %c : tensor<64xf32> loc("jit(fma)/sum/add")
  return %s : tensor<64xf32>
}
"#;

/// The oracle rounds the product first (as MLX does on CPU), so the
/// contracted production fails by the product's rounding error; the product
/// is a checkpoint through the spec's map.
const FMA_SPEC: &str = r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=haswell"]
oracle: oracle
checkpoints:
  - {oracle: product, point: product}
stages:
  - name: fma
    module: m
    function: fma
    args: [{oracle: a}, {oracle: b}, {oracle: c}]
    outputs:
      - name: out
        oracle: out
        tolerance: [{max_abs: 1.0e-9}]
"#;

/// Whether this CPU runs code built for haswell (AVX2 and FMA).
fn cpu_has_fma() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines().find(|l| l.starts_with("flags")).is_some_and(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            ["fma", "avx2", "bmi2", "movbe"]
                .iter()
                .all(|x| f.contains(x))
        })
    })
}

#[test]
fn a_tap_that_breaks_an_fma_contraction_is_reported_as_an_observer_effect() {
    if !cpu_has_fma() {
        // The module is compiled for haswell; a CPU without AVX2/FMA cannot run it.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: this CPU has no AVX2/FMA, so the observer effect cannot be shown"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.mlir"), FMA_MODEL).unwrap();
    std::fs::write(dir.path().join("stages.yaml"), FMA_SPEC).unwrap();
    let oracle = dir.path().join("oracle");
    std::fs::create_dir_all(&oracle).unwrap();
    let a: Vec<f32> = (0..64)
        .map(|i| 1.0 + (i * 37 % 64) as f32 / 65536.0)
        .collect();
    let b: Vec<f32> = (0..64)
        .map(|i| 1.0 + (i * 11 % 64) as f32 / 32768.0 + 3e-7)
        .collect();
    let product: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let c: Vec<f32> = product.iter().map(|p| -p).collect();
    let out: Vec<f32> = product.iter().zip(&c).map(|(p, c)| p + c).collect();
    let exact_nonzero = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| (**x as f64) * (**y as f64) != ((**x) * (**y)) as f64)
        .count();
    assert!(exact_nonzero > 32, "the products round: {exact_nonzero}");
    let mut manifest = Vec::new();
    for (name, data) in [
        ("a", &a),
        ("b", &b),
        ("c", &c),
        ("product", &product),
        ("out", &out),
    ] {
        write_npy(
            oracle.join(format!("{name}.npy")),
            &Tensor::from_f32(vec![64], data).unwrap(),
        )
        .unwrap();
        manifest.push(format!(
            r#""{name}": {{"file": "{name}.npy", "dtype": "f32", "shape": [64]}}"#
        ));
    }
    std::fs::write(
        oracle.join("manifest.json"),
        format!(
            r#"{{"schema": "parity.oracle-manifest/1", "tensors": {{{}}}}}"#,
            manifest.join(", ")
        ),
    )
    .unwrap();
    let json = dir.path().join("bisect.json");
    let o = parity(
        dir.path(),
        &[
            "bisect",
            "stages.yaml",
            "--json",
            json.to_str().unwrap(),
            "--repro-dir",
            dir.path().join("repro").to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let effect = report["observer_effect"].as_array().unwrap();
    assert_eq!(
        effect.len(),
        1,
        "one tapped probe: {}",
        report["observer_effect"]
    );
    let e = effect[0].as_str().unwrap();
    assert!(
        e.contains("tapping changed the stage's own results: `out` (")
            && e.contains("of 64 elements differ"),
        "{e}"
    );
    assert!(
        stdout.contains("observer effect: probe 2: tapping changed"),
        "{stdout}"
    );
    assert!(
        report["notes"]
            .to_string()
            .contains("tapped builds compute the stage's outputs differently"),
        "{}",
        report["notes"]
    );
    // The tapped product matches the oracle's (rounded) product.
    let product_checkpoint = report["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["oracle"] == "product")
        .expect("the mapped checkpoint");
    assert_eq!(product_checkpoint["passed"], true, "{product_checkpoint}");
}
