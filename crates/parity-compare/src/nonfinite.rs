//! Verdicts where NaN, infinities or an empty comparison decide the outcome:
//! `vs_f64` with non-finite elements, results no threshold can pass, and the
//! notes that say why.

use crate::criterion::Criterion;
use crate::metrics::Metrics;
use crate::result::{CriterionResult, TruthErrors};

/// `vs_f64` from the truth errors; `value` applies the NaN/Inf placement of
/// the production-vs-oracle comparison.
pub(crate) fn vs_f64(
    value: impl Fn(f64, f64, bool) -> CriterionResult,
    t: &TruthErrors,
    factor: f64,
    tol: f64,
    nonfinite: u64,
) -> CriterionResult {
    if t.actual_nonfinite > 0 {
        let mut r = value(f64::INFINITY, factor * t.expected_vs_truth + tol, false);
        r.min_passing = f64::INFINITY;
        r.note = Some(format!(
            "{} where the f64 truth is finite: err(production, truth) is unbounded, no factor passes",
            elements(t.actual_nonfinite, "production element is", "production elements are")
                + " NaN or infinite"
        ));
        return r;
    }
    if t.expected_nonfinite > 0 {
        let mut r = value(t.actual_vs_truth, f64::INFINITY, false);
        r.min_passing = f64::NAN;
        r.note = Some(format!(
            "{} NaN or infinite where the f64 truth is finite: err(oracle, truth) is unbounded, so it bounds nothing",
            elements(t.expected_nonfinite, "oracle element is", "oracle elements are")
        ));
        return r;
    }
    let bound = factor * t.expected_vs_truth + tol;
    let ok = t.actual_vs_truth <= bound;
    let min_factor = if t.expected_vs_truth > 0.0 {
        ((t.actual_vs_truth - tol) / t.expected_vs_truth).max(0.0)
    } else if t.actual_vs_truth <= tol {
        0.0
    } else {
        f64::INFINITY
    };
    let mut r = value(t.actual_vs_truth, bound, ok);
    if nonfinite == 0 {
        r.min_passing = min_factor;
    }
    r
}

/// The `min_passing` of a criterion no setting of which passes.
pub(crate) fn nothing_passes(c: &Criterion) -> f64 {
    match c {
        Criterion::CosineMin(_) => f64::NAN,
        _ => f64::INFINITY,
    }
}

/// Fails (or, allowed, annotates) a result over zero compared elements.
pub(crate) fn empty(mut r: CriterionResult, m: &Metrics, allow: bool) -> CriterionResult {
    let why = if m.masked_out > 0 {
        format!("all {} masked", m.masked_out)
    } else {
        "empty tensor".to_string()
    };
    if allow {
        r.note = Some(format!(
            "0 elements compared ({why}); accepted by allow_empty"
        ));
    } else {
        r.passed = false;
        r.min_passing = nothing_passes(&r.criterion);
        r.note = Some(format!(
            "0 elements compared ({why}); set allow_empty: true to accept"
        ));
    }
    r
}

/// "1 {one}" or "{n} {many}".
fn elements(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The end of a NaN/Inf note when the placement alone fails a criterion.
pub(crate) const NO_THRESHOLD: &str =
    "; non-finite values stay out of the numeric metrics, so no threshold passes";

/// Why NaN/Inf placement counts against a result (`consequence` ends the
/// text), or that NaN in both was accepted; None when there is nothing to say.
pub(crate) fn nan_note(m: &Metrics, consequence: &str) -> Option<String> {
    let mut parts = Vec::new();
    if m.nan_both > 0 && !m.equal_nan {
        parts.push(format!(
            "{} (NaN never equals NaN; set equal_nan: true to accept)",
            elements(
                m.nan_both,
                "element is NaN in both",
                "elements are NaN in both"
            )
        ));
    }
    if m.nan_mismatch > 0 {
        parts.push(elements(
            m.nan_mismatch,
            "element is NaN on one side only",
            "elements are NaN on one side only",
        ));
    }
    if m.inf_mismatch > 0 {
        parts.push(format!(
            "{} (opposite signs, or against a finite value)",
            elements(m.inf_mismatch, "infinity differs", "infinities differ")
        ));
    }
    if !parts.is_empty() {
        return Some(format!("{}{consequence}", parts.join("; ")));
    }
    (m.nan_both > 0).then(|| {
        elements(m.nan_both, "element is", "elements are") + " NaN in both, accepted by equal_nan"
    })
}
