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

use super::error::BisectError;
use crate::target::Target;
use parity_iree::CompileOptions;
use parity_mlir::{emit_slices, Function, Module, SliceArg, SliceRequest, Type, ValueId};
use parity_record::{Evidence, ReproducerCheck, ReproducerOutput};
use parity_spec::yaml_quote;
use parity_tensor::{write_file_atomic, write_npy, DType, Tensor};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

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
    let write = |path: std::path::PathBuf, bytes: &[u8]| {
        write_file_atomic(&path, bytes).map_err(|e| BisectError::WriteFile {
            path,
            source: Box::new(e),
        })
    };
    let write_tensor = |path: std::path::PathBuf, t: &Tensor| {
        write_npy(&path, t).map_err(|e| BisectError::WriteFile {
            path,
            source: Box::new(e),
        })
    };
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
    let (mut text, infos) =
        emit_slices(module, func, "parity_repro", &[req]).map_err(|source| BisectError::Slice {
            function: func.name.clone(),
            source,
        })?;
    let info = &infos[0];
    let arg_types: Vec<&str> = info
        .args
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
        "// parity bisect reproducer: {} operation(s) of @{} from {source_name}\n// evidence: {}\n\
         // @{REPRO_FUNCTION} is the slice; @{CHECK_FUNCTION} feeds it from numpy-friendly types \
         (bf16 as f32) and returns float results as f64.\n",
        ops.len(),
        func.name,
        evidence.name()
    );
    let text = format!("{header}{text}");
    write(dir.join("slice.mlir"), text.as_bytes())?;

    let mut arg_names = Vec::new();
    let mut manifest = serde_json::Map::new();
    let mut check_inputs = Vec::new();
    for (k, (arg, _)) in info.args.iter().enumerate() {
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
        write_tensor(dir.join(format!("{name}.npy")), &t)?;
        manifest.insert(name.clone(), entry(&name, &t));
        arg_names.push(name);
        check_inputs.push(t);
    }
    let mut check_expected = Vec::new();
    for (k, (_, t)) in expected.iter().enumerate() {
        let t = if t.dtype().is_float() {
            super::probe::widen(t)?
        } else {
            t.clone()
        };
        let name = format!("expected_{k}");
        write_tensor(dir.join(format!("{name}.npy")), &t)?;
        manifest.insert(name.clone(), entry(&name, &t));
        check_expected.push(t);
    }
    let manifest = serde_json::json!({
        "schema": "parity.oracle-manifest/1",
        "provenance": {"made_by": "parity bisect", "evidence": evidence.name(), "source": source_name},
        "tensors": manifest,
    });
    write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)
            .unwrap_or_default()
            .as_bytes(),
    )?;

    // run.sh: the pip-installed IREE tools, no parity.
    let mut options = options.clone();
    if !options.flags.iter().any(|f| f == KEEP_F64) {
        options.flags.push(KEEP_F64.to_string());
    }
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
        "iree-run-module --module=slice.vmfb {} --function={CHECK_FUNCTION}",
        shell_words::quote(&format!("--device={}", target.device()))
    );
    // A slice of a parameterised function reads the subject's parameter
    // files where they are (they may be many GB): by absolute path.
    let parameters: Vec<(String, Vec<String>)> = target
        .parameter_scopes()
        .into_iter()
        .map(|(scope, files)| {
            let files = files
                .iter()
                .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
                .map(|f| f.display().to_string())
                .collect();
            (scope, files)
        })
        .collect();
    for (scope, files) in &parameters {
        for f in files {
            let _ = write!(
                run,
                " {}",
                shell_words::quote(&format!("--parameters={scope}={f}"))
            );
        }
    }
    for a in &arg_names {
        let _ = write!(run, " --input=@{a}.npy");
    }
    for k in 0..expected.len() {
        let _ = write!(run, " --expected_output=@expected_{k}.npy");
    }
    // One flag per dtype: the tightest threshold of the float results.
    let thr = thresholds
        .iter()
        .copied()
        .filter(|t| t.is_finite() && *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    if thr.is_finite() {
        let _ = write!(run, " --expected_f64_threshold={thr:e} --expected_rtol=0");
    }
    let _ = writeln!(sh, "{run}");
    write(dir.join("run.sh"), sh.as_bytes())?;

    // stages.yaml: the same check inside parity.
    let mut y = String::from("# parity bisect reproducer: `parity check stages.yaml` in this directory.\nversion: 1\nsubject:\n  modules:\n    repro: {mlir: slice.mlir}\n");
    let _ = writeln!(y, "  target_backend: {}", yaml_quote(target.backend()));
    let _ = writeln!(y, "  driver: {}", yaml_quote(target.device()));
    let _ = writeln!(
        y,
        "  flags: [{}]",
        options
            .flags
            .iter()
            .map(|f| yaml_quote(f))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !parameters.is_empty() {
        y.push_str("  parameters:\n");
        for (scope, files) in &parameters {
            let files: Vec<String> = files.iter().map(|f| yaml_quote(f)).collect();
            let _ = writeln!(y, "    {}: [{}]", yaml_quote(scope), files.join(", "));
        }
    }
    let _ = writeln!(
        y,
        "oracle: .\ncases: [{{name: repro}}]\nstages:\n  - name: repro\n    module: repro\n    function: {CHECK_FUNCTION}\n    args:"
    );
    for a in &arg_names {
        let _ = writeln!(y, "      - {{oracle: {}}}", yaml_quote(a));
    }
    y.push_str("    outputs:\n");
    for (k, t) in check_expected.iter().enumerate() {
        let tolerance = match thresholds.get(k) {
            Some(thr) if t.dtype().is_float() => format!("[{{max_abs: {thr:e}}}]"),
            _ => "[exact]".to_string(),
        };
        let _ = writeln!(
            y,
            "      - {{name: out_{k}, oracle: expected_{k}, tolerance: {tolerance}}}"
        );
    }
    write(dir.join("stages.yaml"), y.as_bytes())?;
    Ok(Written {
        text,
        inputs: check_inputs,
        expected: check_expected,
        thresholds: thresholds.to_vec(),
        options,
    })
}

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

/// The element type of a tensor type's text (`tensor<4x8xbf16>` -> `bf16`).
fn element_of(ty: &str) -> &str {
    ty.strip_suffix('>')
        .and_then(|t| t.rsplit(['x', '<']).next())
        .unwrap_or("")
}

/// `tensor<4x8xbf16>` with another element type.
fn with_element(ty: &str, element: &str) -> Option<String> {
    let body = ty.strip_suffix('>')?;
    let cut = body.rfind(['x', '<'])?;
    Some(format!("{}{element}>", &body[..=cut]))
}

/// Appends `@check` to the module: bf16 arguments taken as f32 and
/// converted, float results converted to f64, everything else passed through.
fn insert_check(text: &mut String, args: &[&str], results: &[&str]) -> Result<(), String> {
    let end = text
        .rfind('}')
        .ok_or("the reproducer module has no closing brace")?;
    let mut body = String::new();
    let mut outer_args = Vec::new();
    let mut call_args = Vec::new();
    for (k, ty) in args.iter().enumerate() {
        if element_of(ty) == "bf16" {
            let wide = with_element(ty, "f32").ok_or_else(|| format!("argument type {ty}"))?;
            let _ = writeln!(
                body,
                "    %n{k} = stablehlo.convert %a{k} : ({wide}) -> {ty}"
            );
            outer_args.push(format!("%a{k}: {wide}"));
            call_args.push(format!("%n{k}"));
        } else {
            outer_args.push(format!("%a{k}: {ty}"));
            call_args.push(format!("%a{k}"));
        }
    }
    let single = results.len() == 1;
    let result = |k: usize| {
        if single {
            "%r".to_string()
        } else {
            format!("%r#{k}")
        }
    };
    let _ = writeln!(
        body,
        "    {} = func.call @{REPRO_FUNCTION}({}) : ({}) -> ({})",
        if single {
            "%r".to_string()
        } else {
            format!("%r:{}", results.len())
        },
        call_args.join(", "),
        args.join(", "),
        results.join(", ")
    );
    let mut outs = Vec::new();
    let mut out_types = Vec::new();
    for (k, ty) in results.iter().enumerate() {
        if Type::new(*ty).is_float() && element_of(ty) != "f64" {
            let wide = with_element(ty, "f64").ok_or_else(|| format!("result type {ty}"))?;
            let _ = writeln!(
                body,
                "    %w{k} = stablehlo.convert {} : ({ty}) -> {wide}",
                result(k)
            );
            outs.push(format!("%w{k}"));
            out_types.push(wide);
        } else {
            outs.push(result(k));
            out_types.push(ty.to_string());
        }
    }
    let _ = writeln!(
        body,
        "    return {} : {}",
        outs.join(", "),
        out_types.join(", ")
    );
    let wrapper = format!(
        "  func.func public @{CHECK_FUNCTION}({}) -> ({}) {{\n{body}  }}\n",
        outer_args.join(", "),
        out_types.join(", ")
    );
    text.insert_str(end, &wrapper);
    Ok(())
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
    fn element_types_are_read_and_replaced() {
        assert_eq!(element_of("tensor<4x8xbf16>"), "bf16");
        assert_eq!(element_of("tensor<f32>"), "f32");
        assert_eq!(
            with_element("tensor<4x8xbf16>", "f32").as_deref(),
            Some("tensor<4x8xf32>")
        );
        assert_eq!(
            with_element("tensor<f32>", "f64").as_deref(),
            Some("tensor<f64>")
        );
    }

    #[test]
    fn the_check_wrapper_converts_bf16_in_and_floats_out() {
        let mut text = "module @m {\n  func.func public @repro() {}\n}\n".to_string();
        insert_check(
            &mut text,
            &["tensor<4xbf16>", "tensor<4xi32>"],
            &["tensor<4xbf16>", "tensor<4xi32>"],
        )
        .unwrap();
        assert!(text.contains("@check(%a0: tensor<4xf32>, %a1: tensor<4xi32>)"));
        assert!(text.contains("%n0 = stablehlo.convert %a0 : (tensor<4xf32>) -> tensor<4xbf16>"));
        assert!(text.contains("%r:2 = func.call @repro(%n0, %a1)"));
        assert!(text.contains("%w0 = stablehlo.convert %r#0 : (tensor<4xbf16>) -> tensor<4xf64>"));
        assert!(text.contains("return %w0, %r#1 : tensor<4xf64>, tensor<4xi32>"));
        assert!(text.trim_end().ends_with('}'));
    }

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
