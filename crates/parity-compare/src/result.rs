//! The outcome of one criterion, and the errors against an f64 truth it
//! may be judged on (a leaf: the verdicts and the non-finite rules both
//! build them).

use crate::criterion::Criterion;
use serde::{Deserialize, Serialize};

/// RMS errors of both sides against an f64 ground truth, for `vs_f64`.
/// The truth itself must be finite (a caller rejects it otherwise), so a
/// non-finite element on either side is an error against it, counted apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthErrors {
    /// RMS of (actual - truth) over the elements where actual is finite.
    pub actual_vs_truth: f64,
    /// RMS of (expected - truth) over the elements where expected is finite.
    pub expected_vs_truth: f64,
    /// Compared elements where actual is NaN or infinite.
    #[serde(default)]
    pub actual_nonfinite: u64,
    /// Compared elements where expected is NaN or infinite.
    #[serde(default)]
    pub expected_nonfinite: u64,
}

/// The outcome of one criterion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// The criterion evaluated.
    pub criterion: Criterion,
    /// Whether it held.
    pub passed: bool,
    /// The measured quantity (max_abs, rms, rel_l2, cosine, violating
    /// fraction for allclose, ULPs, mismatch count for exact, err(actual, truth) for vs_f64).
    pub observed: f64,
    /// The bound `observed` was held to.
    pub threshold: f64,
    /// The loosest setting of the criterion's own knob that would have
    /// passed: the observed value for max_abs/rms/rel_l2/max_ulp/ulp_quantile,
    /// the largest passing minimum for cosine_min, the smallest atol (at the
    /// given rtol and max_fraction) for allclose, the smallest factor (at the
    /// given tol) for vs_f64, the mismatch count for exact. +inf when no
    /// setting passes (non-finite mismatches, NaN in both without
    /// `equal_nan`, nothing compared; `note` says which); NaN when it cannot
    /// be computed, and for cosine_min when no setting passes.
    pub min_passing: f64,
    /// Why a result is approximate, vacuous or failed for a reason other than its threshold.
    pub note: Option<String>,
}
