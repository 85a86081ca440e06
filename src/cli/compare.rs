//! `parity compare A B`: the comparison engine on two tensors from files.

use crate::report;
use parity_compare::{
    compare, default_rtol_atol, evaluate_with, CompareOptions, Criterion, Mask, UlpDType,
    VerdictOptions,
};
use parity_record::{AnyRecord, CompareRecord, ErrorRecord, Status, TensorSource};
use parity_tensor::{load_tensor, DType, Tensor};
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
    /// The reports of the record (`parity.compare/1`): none by default, the
    /// text on stdout; `--json -` prints the JSON record instead of the text.
    #[command(flatten)]
    exports: super::emit::ExportArgs,
}

/// Runs `parity compare`: builds the compare record, prints it as text on
/// stdout (unless an export goes there) and writes the exports asked for;
/// errors are also named on stderr.
pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let exports = &args.exports;
    if let Err(why) = exports.check() {
        return super::emit::refuse(&why);
    }
    let record = compare_files(&args);
    for e in &record.errors {
        eprintln!("parity: error: {}", report::sanitize::terminal(&e.message));
    }
    let record = AnyRecord::Compare(record);
    if !exports.to_stdout() {
        super::emit::print_text_with(&record, false)?;
    }
    let written = exports.write_all(&record);
    Ok(super::check::exit_with(record.exit_code(), written))
}

fn source(file: &std::path::Path, key: Option<&str>) -> TensorSource {
    TensorSource {
        file: file.display().to_string(),
        key: key.map(str::to_string),
        dtype: None,
        shape: None,
    }
}

/// Loads the tensor `src` describes from `path` itself: the record's `file`
/// is for display only (a lossy string when the name is not UTF-8), so it is
/// never reopened.
fn load(path: &std::path::Path, src: &mut TensorSource) -> Result<Tensor, ErrorRecord> {
    let t = load_tensor(path, src.key.as_deref()).map_err(|e| ErrorRecord::input(e.to_string()))?;
    src.dtype = Some(t.dtype().name().to_string());
    src.shape = Some(t.shape().to_vec());
    Ok(t)
}

/// The comparison the arguments ask for, as a record (errored when a file
/// cannot be read or the tensors do not fit together).
fn compare_files(args: &CompareArgs) -> CompareRecord {
    let mut record = CompareRecord::new(
        source(&args.actual, args.key.as_deref()),
        source(
            &args.expected,
            args.key_b.as_deref().or(args.key.as_deref()),
        ),
    );
    let actual = match load(&args.actual, &mut record.actual) {
        Ok(t) => t,
        Err(e) => return record.with_error(e),
    };
    let expected = match load(&args.expected, &mut record.expected) {
        Ok(t) => t,
        Err(e) => return record.with_error(e),
    };
    let mask = match &args.mask {
        None => None,
        Some(path) => {
            let mut src = source(path, args.mask_key.as_deref());
            let tensor = load(path, &mut src);
            record.mask = Some(src);
            let tensor = match tensor {
                Ok(t) => t,
                Err(e) => return record.with_error(e),
            };
            let axes = args
                .mask_axes
                .clone()
                .unwrap_or_else(|| (0..tensor.shape().len()).collect());
            match Mask::new(&tensor, axes, args.padded, actual.shape()) {
                Ok(m) => Some(m),
                Err(e) => {
                    return record
                        .with_error(ErrorRecord::input(format!("mask {}: {e}", path.display())))
                }
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
            return record.with_error(ErrorRecord::input(format!(
                "{} vs {}: {e}",
                args.actual.display(),
                args.expected.display()
            )))
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
    record.status = if verdict.passed {
        Status::Pass
    } else {
        Status::Fail
    };
    record.criteria = crate::run::criteria_records(&verdict);
    record.metrics = Some(crate::run::metrics_record(&metrics, None));
    record
}
