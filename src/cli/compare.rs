//! `parity compare A B`: the comparison engine on two tensors from files.

use super::{EXIT_FAIL, EXIT_INPUT, EXIT_PASS};
use crate::report::table::num;
use parity_compare::{
    compare, default_rtol_atol, evaluate_with, CompareOptions, Criterion, Mask, UlpDType,
    VerdictOptions,
};
use parity_tensor::{load_tensor, DType};
use std::path::PathBuf;

/// Arguments of `parity compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The production (actual) tensor file: .npy, .npz or .safetensors.
    actual: PathBuf,
    /// The oracle (expected) tensor file.
    expected: PathBuf,
    /// Array name inside an .npz/.safetensors file (both files, unless --key-b is given).
    #[arg(long)]
    key: Option<String>,
    /// Array name inside the expected file, when it differs from --key.
    #[arg(long)]
    key_b: Option<String>,
    /// A mask tensor file (bool or 0/1 integers).
    #[arg(long)]
    mask: Option<PathBuf>,
    /// Array name inside the mask file.
    #[arg(long)]
    mask_key: Option<String>,
    /// Axes of the compared tensors that the mask's dimensions cover (default: the leading axes).
    #[arg(long, value_delimiter = ',')]
    mask_axes: Option<Vec<usize>>,
    /// The mask value that marks a padded (ignored) element.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    padded: bool,
    /// Count ULPs in this dtype (bf16, f16, f32; default: the actual tensor's dtype).
    #[arg(long)]
    ulp_dtype: Option<DType>,
    /// Absolute tolerance of the allclose check (default: PyTorch's for the dtype).
    #[arg(long)]
    atol: Option<f64>,
    /// Relative tolerance of the allclose check (default: PyTorch's for the dtype).
    #[arg(long)]
    rtol: Option<f64>,
    /// Count NaN in both tensors at the same place as equal (default: a
    /// mismatch, as NaN never equals NaN). Equal infinities always match.
    #[arg(long)]
    equal_nan: bool,
    /// Pass when no element is compared (everything masked, or empty
    /// tensors); by default that fails.
    #[arg(long)]
    allow_empty: bool,
    /// Print the metrics as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `parity compare`.
pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let load =
        |path: &PathBuf, key: Option<&str>| load_tensor(path, key).map_err(|e| e.to_string());
    let actual = match load(&args.actual, args.key.as_deref()) {
        Ok(t) => t,
        Err(e) => return input_error(&e),
    };
    let expected = match load(
        &args.expected,
        args.key_b.as_deref().or(args.key.as_deref()),
    ) {
        Ok(t) => t,
        Err(e) => return input_error(&e),
    };
    let mask = match &args.mask {
        None => None,
        Some(path) => {
            let tensor = match load(path, args.mask_key.as_deref()) {
                Ok(t) => t,
                Err(e) => return input_error(&e),
            };
            let axes = args
                .mask_axes
                .clone()
                .unwrap_or_else(|| (0..tensor.shape().len()).collect());
            match Mask::new(&tensor, axes, args.padded, actual.shape()) {
                Ok(m) => Some(m),
                Err(e) => return input_error(&format!("mask {}: {e}", path.display())),
            }
        }
    };
    let (rtol0, atol0) = default_rtol_atol(actual.dtype());
    let (atol, rtol) = (args.atol.unwrap_or(atol0), args.rtol.unwrap_or(rtol0));
    let options = CompareOptions {
        ulp_dtype: args.ulp_dtype.and_then(UlpDType::from_dtype),
        atol,
        rtol,
        equal_nan: args.equal_nan,
        ..CompareOptions::default()
    };
    let metrics = match compare(&actual, &expected, mask.as_ref(), &options) {
        Ok(m) => m,
        Err(e) => {
            return input_error(&format!(
                "{} vs {}: {e}",
                args.actual.display(),
                args.expected.display()
            ))
        }
    };
    let criterion = if actual.dtype().is_float() || expected.dtype().is_float() {
        Criterion::Allclose {
            atol,
            rtol,
            max_fraction: 0.0,
        }
    } else {
        Criterion::Exact
    };
    let allow = VerdictOptions {
        allow_empty: args.allow_empty,
    };
    let verdict = evaluate_with(std::slice::from_ref(&criterion), &metrics, None, &allow);
    let note = verdict.results.iter().find_map(|r| r.note.clone());
    if args.json {
        let mut value = serde_json::to_value(&metrics)?;
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("passed".into(), verdict.passed.into());
            map.insert("note".into(), note.clone().into());
            map.insert("atol".into(), atol.into());
            map.insert("rtol".into(), rtol.into());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!(
            "{} vs {}: {} elements ({} masked out), dtype {} vs {}, shape {:?}",
            args.actual.display(),
            args.expected.display(),
            metrics.count,
            metrics.masked_out,
            actual.dtype(),
            expected.dtype(),
            actual.shape()
        );
        println!(
            "max_abs {}  mean_abs {}  rms {}  rel_l2 {}  cosine {}  max_ulp {} ({})",
            num(metrics.max_abs),
            num(metrics.mean_abs),
            num(metrics.rms),
            num(metrics.rel_l2),
            num(metrics.cosine),
            metrics.max_ulp.map_or("-".to_string(), |u| u.to_string()),
            metrics.ulp_dtype.map_or("-", |d| d.name())
        );
        println!(
            "allclose(atol={atol:e}, rtol={rtol:e}): {} mismatches, {} NaN mismatches, {} NaN in both{}, {} Inf mismatches",
            metrics.mismatches,
            metrics.nan_mismatch,
            metrics.nan_both,
            if metrics.equal_nan { " (equal_nan)" } else { "" },
            metrics.inf_mismatch
        );
        if let Some(v) = &metrics.first_violation {
            println!(
                "first violation at {:?}: actual {} expected {}",
                v.index, v.actual, v.expected
            );
        }
        if let Some(note) = &note {
            println!("note: {note}");
        }
        println!("{}", if verdict.passed { "PASS" } else { "FAIL" });
    }
    Ok(if verdict.passed { EXIT_PASS } else { EXIT_FAIL })
}

fn input_error(message: &str) -> anyhow::Result<i32> {
    eprintln!("parity: error: {message}");
    Ok(EXIT_INPUT)
}
