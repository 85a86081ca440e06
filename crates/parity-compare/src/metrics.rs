//! `compare`: one pass over an actual and an expected tensor (and an optional
//! mask) producing every metric a tolerance criterion can ask about.

use crate::criterion::Criterion;
use crate::elem::{
    Bf16E, DynE, DynUlp, Elem, NoUlp, UlpBf16, UlpF16, UlpF32, UlpKey, F16E, F32E, F64E,
};
use crate::error::CompareError;
use crate::histogram::UlpHistogram;
use crate::kernel::{lane_total, Acc, Hit, Kernel, MaskView, CHUNK};
use crate::mask::{unravel, Mask};
pub use crate::simd::Simd;
use crate::ulp::UlpDType;
use parity_tensor::{DType, Tensor};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Largest `top_k` accepted: keeps per-chunk state small whatever the caller asks.
pub const MAX_TOP_K: usize = 1024;

/// Knobs for one comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// Absolute tolerance for the allclose count.
    pub atol: f64,
    /// Relative tolerance (times |expected|) for the allclose count.
    pub rtol: f64,
    /// How many worst elements to report (at most [`MAX_TOP_K`]).
    pub top_k: usize,
    /// Float type ULP distances are measured in; None picks [`UlpDType::default_for`].
    pub ulp_dtype: Option<UlpDType>,
    /// NaN in both tensors at the same place counts as equal (PyTorch's
    /// `equal_nan`); by default it is a mismatch, as NaN never equals NaN.
    pub equal_nan: bool,
    /// Count masked elements of `actual` that are not exactly zero.
    pub assert_padded_zero: bool,
    /// Use rayon for tensors larger than one chunk (results are identical either way).
    pub parallel: bool,
    /// The widest vector path the kernel may take, if the CPU has it
    /// ([`Simd::available`]); results are identical on every path, so this
    /// only matters to benchmarks.
    pub simd: Simd,
}

impl Default for CompareOptions {
    /// The PyTorch assert_close f32 tolerances, NaN unequal to NaN, top 8,
    /// default ULP dtype, parallel.
    fn default() -> Self {
        CompareOptions {
            atol: 1e-5,
            rtol: 1.3e-6,
            top_k: 8,
            ulp_dtype: None,
            equal_nan: false,
            assert_padded_zero: false,
            parallel: true,
            simd: Simd::Avx512,
        }
    }
}

impl CompareOptions {
    /// Defaults whose atol/rtol come from the first `allclose` criterion, or
    /// else from [`crate::default_rtol_atol`] for `dtype`, so a verdict on
    /// those criteria can be evaluated exactly.
    pub fn for_criteria(criteria: &[Criterion], dtype: DType) -> CompareOptions {
        let (rtol, atol) = criteria
            .iter()
            .find_map(|c| match *c {
                Criterion::Allclose { atol, rtol, .. } => Some((rtol, atol)),
                _ => None,
            })
            .unwrap_or_else(|| crate::criterion::default_rtol_atol(dtype));
        CompareOptions {
            atol,
            rtol,
            ..CompareOptions::default()
        }
    }
}

/// One element singled out in a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementDiff {
    /// Multi-dimensional index into the compared tensors.
    pub index: Vec<usize>,
    /// The actual value (widened to f64).
    pub actual: f64,
    /// The expected value (widened to f64).
    pub expected: f64,
}

/// Everything measured by [`compare`]. Numeric metrics cover the unmasked
/// elements where both values are finite; NaN and Inf placement is counted
/// apart (`nan_mismatch`, `nan_both`, `inf_mismatch`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Unmasked elements compared.
    pub count: u64,
    /// Elements skipped because the mask marks them padded.
    pub masked_out: u64,
    /// Unmasked elements where both values are finite (the numeric metrics' population).
    pub numeric_count: u64,
    /// Largest |actual - expected|.
    pub max_abs: f64,
    /// Mean |actual - expected|.
    pub mean_abs: f64,
    /// Root mean square of the difference.
    pub rms: f64,
    /// ||a - e|| / ||e||; 0 when both norms are 0, +inf when only ||e|| is.
    pub rel_l2: f64,
    /// a.e / (||a|| ||e||); 1 when both are zero vectors (or nothing was compared), 0 when exactly one is.
    pub cosine: f64,
    /// The dtype ULP distances are measured in; None for integer/bool comparisons.
    pub ulp_dtype: Option<DType>,
    /// Largest ULP distance; None when no ULP dtype applies.
    pub max_ulp: Option<u64>,
    /// Distribution of ULP distances; None when no ULP dtype applies.
    pub ulp_histogram: Option<UlpHistogram>,
    /// The atol used for `allclose_violations`.
    pub atol: f64,
    /// The rtol used for `allclose_violations`.
    pub rtol: f64,
    /// Finite elements with |a - e| > atol + rtol |e|.
    pub allclose_violations: u64,
    /// `allclose_violations / count` (0 when count is 0).
    pub allclose_fraction: f64,
    /// The smallest atol (at `rtol`) under which no finite element violates allclose.
    pub allclose_min_atol: f64,
    /// The K largest values of |a - e| - rtol |e| (descending): the atol each
    /// element needs; lets a verdict compute the smallest passing atol.
    pub allclose_excess_top: Vec<f64>,
    /// allclose violations plus NaN and Inf mismatches, plus `nan_both` unless `equal_nan`.
    pub mismatches: u64,
    /// `mismatches / count` (0 when count is 0).
    pub mismatch_fraction: f64,
    /// Places where exactly one side is NaN.
    pub nan_mismatch: u64,
    /// Places where both sides are NaN: mismatches unless `equal_nan`.
    #[serde(default)]
    pub nan_both: u64,
    /// Whether NaN against NaN was counted as equal ([`CompareOptions::equal_nan`]).
    #[serde(default)]
    pub equal_nan: bool,
    /// Places (no NaN) where a side is infinite and the values differ.
    pub inf_mismatch: u64,
    /// Unmasked elements that differ bitwise (same dtypes) or in value
    /// (different dtypes); NaN against NaN differs unless `equal_nan`, and
    /// then equals whatever the payloads.
    pub bitwise_mismatches: u64,
    /// The lowest-index mismatch (allclose violation, NaN or Inf mismatch,
    /// NaN in both unless `equal_nan`).
    pub first_violation: Option<ElementDiff>,
    /// The `top_k` finite elements with the largest |a - e|, largest first (ties: lower index first).
    pub worst: Vec<ElementDiff>,
    /// Masked elements of `actual` that are not exactly zero; only with `assert_padded_zero`.
    pub padded_nonzero: Option<u64>,
}

impl Metrics {
    /// The `q` quantile of ULP distances (see [`UlpHistogram::quantile`]), capped by `max_ulp`.
    pub fn ulp_quantile(&self, q: f64) -> Option<u64> {
        let h = self.ulp_histogram.as_ref()?;
        Some(h.quantile(q)?.min(self.max_ulp.unwrap_or(u64::MAX)))
    }
}

/// Compares `actual` against `expected` (same shape; dtypes may differ),
/// skipping elements `mask` marks as padded, in one pass.
pub fn compare(
    actual: &Tensor,
    expected: &Tensor,
    mask: Option<&Mask>,
    opts: &CompareOptions,
) -> Result<Metrics, CompareError> {
    if actual.shape() != expected.shape() {
        return Err(CompareError::ShapeMismatch {
            actual: actual.shape().to_vec(),
            expected: expected.shape().to_vec(),
        });
    }
    if let Some(m) = mask {
        if m.target_shape() != actual.shape() {
            return Err(CompareError::MaskShape {
                mask_target: m.target_shape().to_vec(),
                tensor: actual.shape().to_vec(),
            });
        }
    }
    for (name, value) in [("atol", opts.atol), ("rtol", opts.rtol)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(CompareError::BadOption { name, value });
        }
    }
    if opts.top_k > MAX_TOP_K {
        return Err(CompareError::TopKTooLarge {
            requested: opts.top_k,
            max: MAX_TOP_K,
        });
    }
    let ulp = opts
        .ulp_dtype
        .or_else(|| UlpDType::default_for(actual.dtype(), expected.dtype()));
    let acc = dispatch(actual, expected, mask, opts, ulp);
    Ok(finish(acc, actual.shape(), opts, ulp))
}

/// Picks the specialised kernel for the dtype pair and ULP dtype.
fn dispatch(
    a: &Tensor,
    e: &Tensor,
    mask: Option<&Mask>,
    o: &CompareOptions,
    ulp: Option<UlpDType>,
) -> Acc {
    macro_rules! with_ulp {
        ($ae:expr, $ee:expr) => {
            match ulp {
                Some(UlpDType::F32) => run(a, e, mask, o, $ae, $ee, UlpF32),
                Some(UlpDType::Bf16) => run(a, e, mask, o, $ae, $ee, UlpBf16),
                Some(UlpDType::F16) => run(a, e, mask, o, $ae, $ee, UlpF16),
                None => run(a, e, mask, o, DynE(a.dtype()), DynE(e.dtype()), NoUlp),
            }
        };
    }
    macro_rules! with_expected {
        ($ae:expr) => {
            match e.dtype() {
                DType::F16 => with_ulp!($ae, F16E),
                DType::Bf16 => with_ulp!($ae, Bf16E),
                DType::F32 => with_ulp!($ae, F32E),
                DType::F64 => with_ulp!($ae, F64E),
                _ => slow(a, e, mask, o, ulp),
            }
        };
    }
    match a.dtype() {
        DType::F16 => with_expected!(F16E),
        DType::Bf16 => with_expected!(Bf16E),
        DType::F32 => with_expected!(F32E),
        DType::F64 => with_expected!(F64E),
        _ => slow(a, e, mask, o, ulp),
    }
}

/// Integer, bool and mixed pairs: runtime-decoded elements.
fn slow(
    a: &Tensor,
    e: &Tensor,
    mask: Option<&Mask>,
    o: &CompareOptions,
    ulp: Option<UlpDType>,
) -> Acc {
    let (ae, ee) = (DynE(a.dtype()), DynE(e.dtype()));
    match ulp {
        Some(u) => run(a, e, mask, o, ae, ee, DynUlp(u)),
        None => run(a, e, mask, o, ae, ee, NoUlp),
    }
}

fn run<A: Elem, E: Elem, U: UlpKey>(
    a: &Tensor,
    e: &Tensor,
    mask: Option<&Mask>,
    o: &CompareOptions,
    ae: A,
    ee: E,
    u: U,
) -> Acc {
    let k = Kernel {
        a: ae,
        e: ee,
        u,
        same_dtype: a.dtype() == e.dtype(),
        atol: o.atol,
        rtol: o.rtol,
        equal_nan: o.equal_nan,
        assert_zero: o.assert_padded_zero,
        top_k: o.top_k,
        simd: simd(o.simd),
    };
    let view = mask.map(|m| MaskView {
        shape: m.target_shape(),
        strides: m.strides(),
        values: m.padded_values(),
    });
    let (ab, eb) = (a.bytes(), e.bytes());
    let n = a.numel();
    let chunks = n.div_ceil(CHUNK);
    let one = |c: usize| k.run(ab, eb, c * CHUNK, ((c + 1) * CHUNK).min(n), view.as_ref());
    let parts: Vec<Acc> = if o.parallel && chunks > 1 {
        (0..chunks).into_par_iter().map(one).collect()
    } else {
        (0..chunks).map(one).collect()
    };
    // Merge in chunk order: the same additions in the same order for any thread count.
    let mut total = Acc::new(o.top_k);
    for p in &parts {
        total.merge(p);
    }
    total
}

/// The path the kernel takes: the widest the CPU has, capped at `cap`
/// (and, in tests, at what this thread asked for: `kernel_reference::with_simd`).
fn simd(cap: Simd) -> Simd {
    let path = Simd::available().min(cap);
    #[cfg(test)]
    let path = path.min(crate::kernel_reference::simd_cap());
    path
}

fn finish(acc: Acc, shape: &[usize], o: &CompareOptions, ulp: Option<UlpDType>) -> Metrics {
    let n = acc.s.numeric as f64;
    let ratio = |num: u64| {
        if acc.s.count == 0 {
            0.0
        } else {
            num as f64 / acc.s.count as f64
        }
    };
    let diff = |h: &Hit| ElementDiff {
        index: unravel(h.flat, shape),
        actual: h.actual,
        expected: h.expected,
    };
    let (sum_abs, sum_sq) = (lane_total(&acc.s.sum_abs), lane_total(&acc.s.sum_sq));
    let (sum_aa, sum_ee) = (lane_total(&acc.s.sum_aa), lane_total(&acc.s.sum_ee));
    let sum_ae = lane_total(&acc.s.sum_ae);
    let (norm_d, norm_e, norm_a) = (sum_sq.sqrt(), sum_ee.sqrt(), sum_aa.sqrt());
    let rel_l2 = match (norm_d == 0.0, norm_e == 0.0) {
        (true, _) => 0.0,
        (false, true) => f64::INFINITY,
        (false, false) => norm_d / norm_e,
    };
    let cosine = match (norm_a == 0.0, norm_e == 0.0) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        (false, false) => (sum_ae / (norm_a * norm_e)).clamp(-1.0, 1.0),
    };
    let nan_unequal = if o.equal_nan { 0 } else { acc.s.nan_both };
    let mismatches =
        acc.s.allclose_violations + acc.s.nan_mismatch + acc.s.inf_mismatch + nan_unequal;
    Metrics {
        count: acc.s.count,
        masked_out: acc.s.masked_out,
        numeric_count: acc.s.numeric,
        max_abs: acc.s.max_abs,
        mean_abs: if acc.s.numeric == 0 { 0.0 } else { sum_abs / n },
        rms: if acc.s.numeric == 0 {
            0.0
        } else {
            (sum_sq / n).sqrt()
        },
        rel_l2,
        cosine,
        ulp_dtype: ulp.map(UlpDType::dtype),
        max_ulp: ulp.map(|_| acc.s.max_ulp),
        ulp_histogram: ulp.map(|_| acc.hist.clone()),
        atol: o.atol,
        rtol: o.rtol,
        allclose_violations: acc.s.allclose_violations,
        allclose_fraction: ratio(acc.s.allclose_violations),
        allclose_min_atol: if acc.s.numeric == 0 {
            0.0
        } else {
            acc.s.max_excess.max(0.0)
        },
        allclose_excess_top: acc.excess.items.iter().map(|h| h.score).collect(),
        mismatches,
        mismatch_fraction: ratio(mismatches),
        nan_mismatch: acc.s.nan_mismatch,
        nan_both: acc.s.nan_both,
        equal_nan: o.equal_nan,
        inf_mismatch: acc.s.inf_mismatch,
        bitwise_mismatches: acc.s.bitwise_mismatches,
        first_violation: acc.first.as_ref().map(diff),
        worst: acc.worst.items.iter().map(diff).collect(),
        padded_nonzero: o.assert_padded_zero.then_some(acc.s.padded_nonzero),
    }
}
