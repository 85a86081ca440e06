//! The reproducer directory: the smallest failing slice as standalone MLIR, its
//! inputs and expected outputs as `.npy`, the `iree-compile` /
//! `iree-run-module --expected_output=@...` commands that show the mismatch
//! outside parity (`run.sh`), and a stages.yaml (+ oracle manifest) that shows
//! it inside.
//!
//! `slice.mlir` holds the slice verbatim (`@repro`, production types) and a
//! wrapper `@check` that numpy and `iree-run-module` can feed: bf16 operands
//! arrive as f32 (exactly) and every float result leaves as f64 (exactly), so
//! the expected values are the higher-precision reference itself (the oracle,
//! or the f64 shadow unrounded: a rounding fault's reproducer compares with
//! the value it failed to keep). Thresholds are the ones bisect judged by
//! (the spec's `max_abs` for a stage output, else the ULP budget), with
//! `--expected_rtol=0`.

mod scripts;
mod wrapper;

use super::error::BisectError;
use crate::target::Target;
use parity_iree::CompileOptions;
use parity_mlir::{emit_slices, Function, Module, SliceArg, SliceRequest, ValueId};
use parity_record::{Evidence, ReproducerCheck, ReproducerOutput};
use parity_tensor::{write_file_atomic, write_npy, DType, Tensor};
use scripts::Scripts;
use std::collections::BTreeSet;
use std::path::Path;
use wrapper::insert_check;

/// The entry function's name in `slice.mlir`.
pub const REPRO_FUNCTION: &str = "repro";

/// The wrapper function `run.sh` and parity's own check call.
pub const CHECK_FUNCTION: &str = "check";

/// Keeps f64 results f64 (the wrapper's widened outputs).
const KEEP_F64: &str = "--iree-input-demote-f64-to-f32=false";

/// What the in-process check needs from a written reproducer.
pub struct Written {
    /// `slice.mlir`'s text.
    pub text: String,
    /// `@check`'s arguments, as written to `input_<k>.npy`.
    pub inputs: Vec<Tensor>,
    /// `@check`'s expected results, as written to `expected_<k>.npy`.
    pub expected: Vec<Tensor>,
    /// The absolute threshold of each result (ignored for non-float ones).
    pub thresholds: Vec<f64>,
    /// The options `run.sh` compiles with.
    pub options: CompileOptions,
}

/// Writes the reproducer for `ops` of `func`: arguments `inputs` (values and
/// tensors, in order), expected `expected` (any float dtype; written as f64)
/// with one absolute threshold per expected value.
#[allow(clippy::too_many_arguments)]
pub fn write(
    dir: &Path,
    module: &Module,
    func: &Function,
    ops: &[usize],
    inputs: &[(ValueId, Tensor)],
    expected: &[(ValueId, Tensor)],
    thresholds: &[f64],
    target: &Target,
    options: &CompileOptions,
    source_name: &str,
    evidence: Evidence,
) -> Result<Written, BisectError> {
    std::fs::create_dir_all(dir).map_err(|source| BisectError::CreateDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    let out = ReproDir { dir };
    let made = Provenance {
        source_name,
        evidence,
    };
    let given = needed_inputs(func, ops, inputs);
    let (text, args) = slice_text(module, func, ops, &given, expected, &made)?;
    out.write("slice.mlir", text.as_bytes())?;
    let tensors = write_tensors(&out, func, &args, &given, expected, &made)?;

    let mut options = options.clone();
    if !options.flags.iter().any(|f| f == KEEP_F64) {
        options.flags.push(KEEP_F64.to_string());
    }
    let parameters = scripts::parameter_files(target);
    let scripts = Scripts {
        target,
        options: &options,
        parameters: &parameters,
        arg_names: &tensors.arg_names,
        thresholds,
    };
    out.write("run.sh", scripts.run_sh(expected.len()).as_bytes())?;
    out.write(
        "stages.yaml",
        scripts.stages_yaml(&tensors.expected).as_bytes(),
    )?;
    Ok(Written {
        text,
        inputs: tensors.inputs,
        expected: tensors.expected,
        thresholds: thresholds.to_vec(),
        options,
    })
}

/// The reproducer directory, whose write errors name the file.
struct ReproDir<'a> {
    /// Where the files go.
    dir: &'a Path,
}

impl ReproDir<'_> {
    /// Writes `name` whole (atomically).
    fn write(&self, name: &str, bytes: &[u8]) -> Result<(), BisectError> {
        let path = self.dir.join(name);
        write_file_atomic(&path, bytes).map_err(|e| BisectError::WriteFile {
            path,
            source: Box::new(e),
        })
    }

    /// Writes `t` as `<name>.npy`.
    fn write_tensor(&self, name: &str, t: &Tensor) -> Result<(), BisectError> {
        let path = self.dir.join(format!("{name}.npy"));
        write_npy(&path, t).map_err(|e| BisectError::WriteFile {
            path,
            source: Box::new(e),
        })
    }
}

/// Where the reproducer comes from, for its header and oracle manifest.
struct Provenance<'a> {
    /// The module the slice was cut from, as the header names it.
    source_name: &'a str,
    /// The evidence bisect localised by.
    evidence: Evidence,
}

/// Only the inputs the slice actually needs, in the order given.
fn needed_inputs<'a>(
    func: &Function,
    ops: &[usize],
    inputs: &'a [(ValueId, Tensor)],
) -> Vec<&'a (ValueId, Tensor)> {
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
    inputs.iter().filter(|(v, _)| needed.contains(v)).collect()
}

/// `slice.mlir`'s text (header, `@repro` from `given` to `expected`, and
/// `@check`), with `@repro`'s arguments in order.
fn slice_text(
    module: &Module,
    func: &Function,
    ops: &[usize],
    given: &[&(ValueId, Tensor)],
    expected: &[(ValueId, Tensor)],
    made: &Provenance,
) -> Result<(String, Vec<(SliceArg, ValueId)>), BisectError> {
    let req = SliceRequest {
        name: REPRO_FUNCTION.to_string(),
        from: given.iter().map(|(v, _)| *v).collect(),
        to: expected.iter().map(|(v, _)| *v).collect(),
    };
    let (mut text, mut infos) =
        emit_slices(module, func, "parity_repro", &[req]).map_err(|source| BisectError::Slice {
            function: func.name.clone(),
            source,
        })?;
    let args = std::mem::take(&mut infos[0].args);
    let arg_types: Vec<&str> = args
        .iter()
        .map(|(_, v)| func.values[*v].ty.text.as_str())
        .collect();
    let result_types: Vec<&str> = expected
        .iter()
        .map(|(v, _)| func.values[*v].ty.text.as_str())
        .collect();
    insert_check(&mut text, &arg_types, &result_types).map_err(|problem| {
        BisectError::EmittedText {
            what: "the reproducer's slice",
            problem,
        }
    })?;
    let header = format!(
        "// parity bisect reproducer: {} operation(s) of @{} from {}\n// evidence: {}\n\
         // @{REPRO_FUNCTION} is the slice; @{CHECK_FUNCTION} feeds it from numpy-friendly types \
         (bf16 as f32) and returns float results as f64.\n",
        ops.len(),
        func.name,
        made.source_name,
        made.evidence.name()
    );
    Ok((format!("{header}{text}"), args))
}

/// `@check`'s tensors as written: its arguments (`input_<k>.npy`) and
/// expected results (`expected_<k>.npy`).
struct CheckTensors {
    /// The argument files' names, without `.npy`.
    arg_names: Vec<String>,
    /// The arguments, numpy-friendly.
    inputs: Vec<Tensor>,
    /// The expected results, floats as f64.
    expected: Vec<Tensor>,
}

/// Writes `@check`'s arguments (`args`, drawn from `given`) and expected
/// results as `.npy`, and the oracle manifest naming them.
fn write_tensors(
    out: &ReproDir,
    func: &Function,
    args: &[(SliceArg, ValueId)],
    given: &[&(ValueId, Tensor)],
    expected: &[(ValueId, Tensor)],
    made: &Provenance,
) -> Result<CheckTensors, BisectError> {
    let mut manifest = serde_json::Map::new();
    let mut written = CheckTensors {
        arg_names: Vec::new(),
        inputs: Vec::new(),
        expected: Vec::new(),
    };
    for (k, (arg, _)) in args.iter().enumerate() {
        let t = match arg {
            SliceArg::From(i) => &given[*i].1,
            SliceArg::FuncArg(j) => {
                return Err(BisectError::MissingArgument {
                    slice: REPRO_FUNCTION.to_string(),
                    function: func.name.clone(),
                    index: *j,
                })
            }
        };
        let t = numpy_input(t)?;
        let name = format!("input_{k}");
        out.write_tensor(&name, &t)?;
        manifest.insert(name.clone(), entry(&name, &t));
        written.arg_names.push(name);
        written.inputs.push(t);
    }
    for (k, (_, t)) in expected.iter().enumerate() {
        let t = if t.dtype().is_float() {
            super::probe::widen(t)?
        } else {
            t.clone()
        };
        let name = format!("expected_{k}");
        out.write_tensor(&name, &t)?;
        manifest.insert(name.clone(), entry(&name, &t));
        written.expected.push(t);
    }
    let manifest = serde_json::json!({
        "schema": "parity.oracle-manifest/1",
        "provenance": {"made_by": "parity bisect", "evidence": made.evidence.name(), "source": made.source_name},
        "tensors": manifest,
    });
    out.write(
        "manifest.json",
        serde_json::to_string_pretty(&manifest)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok(written)
}

/// One oracle manifest entry: `<name>.npy` with its dtype and shape.
fn entry(name: &str, t: &Tensor) -> serde_json::Value {
    serde_json::json!({"file": format!("{name}.npy"), "dtype": t.dtype().name(), "shape": t.shape()})
}

/// An operand as numpy and `iree-run-module` can hold it: bf16 widened
/// exactly to f32 (`@check` narrows it back).
fn numpy_input(t: &Tensor) -> Result<Tensor, BisectError> {
    match t.dtype() {
        DType::Bf16 => Tensor::from_f64_as(DType::F32, t.shape().to_vec(), &t.to_f64_vec())
            .map_err(|source| BisectError::Tensor {
                what: "widening a bf16 input to f32",
                source,
            }),
        _ => Ok(t.clone()),
    }
}

/// Runs the written reproducer's `@check` (compiled as `run.sh` compiles it)
/// and holds each result to its threshold, as `iree-run-module` would.
pub fn verify(
    prober: &super::probe::Prober,
    written: &Written,
) -> Result<ReproducerCheck, BisectError> {
    let label = format!("{}[reproducer]", prober.source_name);
    let vmfb = prober
        .cache
        .get_or_compile(
            prober.compiler,
            &label,
            written.text.as_bytes(),
            &written.options,
        )
        .map_err(|source| BisectError::Compile {
            label: label.clone(),
            source,
        })?
        .vmfb;
    let loaded = prober
        .runtime
        .load(&vmfb, &label)
        .map_err(|source| BisectError::Load {
            label: label.clone(),
            source,
        })?;
    let results = loaded
        .invoke(CHECK_FUNCTION, &written.inputs)
        .map_err(|source| BisectError::Invoke {
            slice: CHECK_FUNCTION.to_string(),
            source,
        })?;
    let outputs: Vec<ReproducerOutput> = results
        .iter()
        .zip(&written.expected)
        .enumerate()
        .map(|(k, (got, want))| {
            let threshold = if want.dtype().is_float() {
                written.thresholds.get(k).copied().unwrap_or(0.0)
            } else {
                0.0
            };
            difference(got, want, threshold)
        })
        .collect();
    Ok(ReproducerCheck {
        reproduces: outputs.iter().any(ReproducerOutput::fails),
        outputs,
    })
}

/// Max abs difference over elements finite on both sides, and how many
/// elements differ in their non-finite value (NaN equals NaN, as
/// `iree-run-module` counts it).
fn difference(got: &Tensor, want: &Tensor, threshold: f64) -> ReproducerOutput {
    let (a, b) = (got.to_f64_vec(), want.to_f64_vec());
    if a.len() != b.len() {
        return ReproducerOutput {
            max_abs: f64::INFINITY,
            threshold,
            nonfinite: a.len().max(b.len()) as u64,
        };
    }
    let mut max_abs: f64 = 0.0;
    let mut nonfinite = 0u64;
    for (x, y) in a.iter().zip(&b) {
        if x.is_finite() && y.is_finite() {
            max_abs = max_abs.max((x - y).abs());
        } else if !(x.is_nan() && y.is_nan()) && x != y {
            nonfinite += 1;
        }
    }
    ReproducerOutput {
        max_abs,
        threshold,
        nonfinite,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_count_nonfinite_apart_and_nan_equals_nan() {
        let a = Tensor::from_f64(vec![4], &[1.0, f64::INFINITY, f64::NAN, 2.0]).unwrap();
        let b = Tensor::from_f64(vec![4], &[1.5, 1e52, f64::NAN, 2.0]).unwrap();
        let d = difference(&a, &b, 1.0);
        assert_eq!((d.max_abs, d.nonfinite), (0.5, 1));
        assert!(d.fails());
        let d = difference(&b, &b, 0.0);
        assert!(!d.fails());
    }
}
