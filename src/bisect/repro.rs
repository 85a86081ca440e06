//! The reproducer directory: the smallest failing slice as standalone MLIR, its
//! inputs and expected outputs as `.npy`, the `iree-compile` /
//! `iree-run-module --expected_output=@...` commands that show the mismatch
//! outside parity (`run.sh`), and a stages.yaml (+ oracle manifest) that shows
//! it inside.

use super::measure::{max_finite_abs, ulp_at};
use parity_iree::CompileOptions;
use parity_mlir::{emit_slices, Function, Module, SliceArg, SliceRequest, ValueId};
use parity_record::Evidence;
use parity_spec::{yaml_quote, Spec};
use parity_tensor::{write_file_atomic, write_npy, DType, Tensor};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The entry function's name in `slice.mlir`.
pub const REPRO_FUNCTION: &str = "repro";

/// ULPs (of f32 at the largest expected magnitude) iree-run-module may differ by.
const THRESHOLD_ULPS: f64 = 64.0;

/// Writes the reproducer for `ops` of `func`: arguments `inputs` (values and
/// tensors, in order), expected `expected`.
#[allow(clippy::too_many_arguments)]
pub fn write(
    dir: &Path,
    module: &Module,
    func: &Function,
    ops: &[usize],
    inputs: &[(ValueId, Tensor)],
    expected: &[(ValueId, Tensor)],
    spec: &Spec,
    options: &CompileOptions,
    source_name: &str,
    evidence: Evidence,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Only the inputs the slice actually needs, in the slice's argument order.
    let needed: BTreeSet<ValueId> = ops
        .iter()
        .flat_map(|&o| {
            let op = &func.ops[o];
            op.operands
                .iter()
                .chain(&op.captures)
                .copied()
                .collect::<Vec<_>>()
        })
        .collect();
    let given: Vec<&(ValueId, Tensor)> =
        inputs.iter().filter(|(v, _)| needed.contains(v)).collect();
    let req = SliceRequest {
        name: REPRO_FUNCTION.to_string(),
        from: given.iter().map(|(v, _)| *v).collect(),
        to: expected.iter().map(|(v, _)| *v).collect(),
    };
    let (text, infos) =
        emit_slices(module, func, "parity_repro", &[req]).map_err(|e| e.to_string())?;
    let info = &infos[0];
    let header = format!(
        "// parity bisect reproducer: {} operation(s) of @{} from {source_name}\n// evidence: {}\n",
        ops.len(),
        func.name,
        evidence.name()
    );
    write_file_atomic(
        &dir.join("slice.mlir"),
        format!("{header}{text}").as_bytes(),
    )
    .map_err(|e| e.to_string())?;

    let mut arg_names = Vec::new();
    let mut manifest = serde_json::Map::new();
    for (k, (arg, _)) in info.args.iter().enumerate() {
        let t = match arg {
            SliceArg::From(i) => &given[*i].1,
            SliceArg::FuncArg(j) => {
                return Err(format!(
                    "the reproducer slice needs function argument {j}, which was not given"
                ))
            }
        };
        let name = format!("input_{k}");
        write_npy(dir.join(format!("{name}.npy")), t).map_err(|e| e.to_string())?;
        manifest.insert(name.clone(), entry(&name, t));
        arg_names.push(name);
    }
    let mut thresholds = Vec::new();
    for (k, (_, t)) in expected.iter().enumerate() {
        let name = format!("expected_{k}");
        write_npy(dir.join(format!("{name}.npy")), t).map_err(|e| e.to_string())?;
        manifest.insert(name.clone(), entry(&name, t));
        let ulp = ulp_at(max_finite_abs(t), DType::F32);
        thresholds.push((t.dtype(), THRESHOLD_ULPS * ulp));
    }
    let manifest = serde_json::json!({
        "schema": "parity.oracle-manifest/1",
        "provenance": {"made_by": "parity bisect", "evidence": evidence.name(), "source": source_name},
        "tensors": manifest,
    });
    write_file_atomic(
        &dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)
            .unwrap_or_default()
            .as_bytes(),
    )
    .map_err(|e| e.to_string())?;

    // run.sh: the pip-installed IREE tools, no parity.
    let flags = options.effective_flags();
    let mut sh = String::from(
        "#!/bin/sh\n# Reproduces the mismatch parity bisect found, with the pip-installed IREE tools\n\
         # (iree-base-compiler / iree-base-runtime 3.13): exits non-zero when the slice's\n\
         # result differs from expected_*.npy by more than the threshold.\nset -e\ncd \"$(dirname \"$0\")\"\n",
    );
    let _ = writeln!(
        sh,
        "iree-compile {} slice.mlir -o slice.vmfb",
        shell_words::join(&flags)
    );
    let mut run = format!(
        "iree-run-module --module=slice.vmfb {} --function={REPRO_FUNCTION}",
        shell_words::quote(&format!("--device={}", spec.subject.driver))
    );
    for a in &arg_names {
        let _ = write!(run, " --input=@{a}.npy");
    }
    for k in 0..expected.len() {
        let _ = write!(run, " --expected_output=@expected_{k}.npy");
    }
    let f32_thr = thresholds
        .iter()
        .filter(|(d, _)| *d == DType::F32)
        .map(|(_, t)| *t)
        .fold(0.0f64, f64::max);
    if f32_thr > 0.0 {
        let _ = write!(run, " --expected_f32_threshold={f32_thr:e}");
    }
    let _ = writeln!(sh, "{run}");
    write_file_atomic(&dir.join("run.sh"), sh.as_bytes()).map_err(|e| e.to_string())?;

    // stages.yaml: the same check inside parity.
    let mut y = String::from("# parity bisect reproducer: `parity check stages.yaml` in this directory.\nversion: 1\nsubject:\n  modules:\n    repro: {mlir: slice.mlir}\n");
    let _ = writeln!(
        y,
        "  target_backend: {}",
        yaml_quote(&spec.subject.target_backend)
    );
    let _ = writeln!(y, "  driver: {}", yaml_quote(&spec.subject.driver));
    let _ = writeln!(
        y,
        "  flags: [{}]",
        spec.subject
            .flags
            .iter()
            .map(|f| yaml_quote(f))
            .collect::<Vec<_>>()
            .join(", ")
    );
    y.push_str("oracle: .\ncases: [{name: repro}]\nstages:\n  - name: repro\n    module: repro\n    function: repro\n    args:\n");
    for a in &arg_names {
        let _ = writeln!(y, "      - {{oracle: {}}}", yaml_quote(a));
    }
    y.push_str("    outputs:\n");
    for (k, (_, thr)) in thresholds.iter().enumerate() {
        let _ = writeln!(
            y,
            "      - {{name: out_{k}, oracle: expected_{k}, tolerance: [{{max_abs: {thr:e}}}]}}"
        );
    }
    write_file_atomic(&dir.join("stages.yaml"), y.as_bytes()).map_err(|e| e.to_string())?;
    Ok(())
}

fn entry(name: &str, t: &Tensor) -> serde_json::Value {
    serde_json::json!({"file": format!("{name}.npy"), "dtype": t.dtype().name(), "shape": t.shape()})
}
