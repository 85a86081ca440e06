//! Verdicts: applying tolerance criteria to measured metrics, with the
//! smallest threshold that would have passed each one.

pub use crate::criterion::default_rtol_atol;
use crate::criterion::Criterion;
use crate::histogram::EXACT_MAX;
use crate::metrics::Metrics;
use crate::nonfinite::{empty, nan_note, nothing_passes, vs_f64, NO_THRESHOLD};
pub use crate::result::{CriterionResult, TruthErrors};
use parity_tensor::DType;
use serde::{Deserialize, Serialize};

/// What a spec accepts beyond its criteria's thresholds (NaN handling is a
/// comparison option, [`crate::CompareOptions::equal_nan`], since it also
/// decides which element is the first mismatch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerdictOptions {
    /// A comparison of zero elements (everything masked, or an empty tensor)
    /// passes vacuously; by default it fails every criterion.
    pub allow_empty: bool,
}

/// All criteria results; passed when every one passed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// True when every criterion passed.
    pub passed: bool,
    /// One result per criterion, in order.
    pub results: Vec<CriterionResult>,
}

/// The built-in tolerance for a dtype: allclose with the PyTorch assert_close
/// (rtol, atol) for floats, exact for integers and bool.
pub fn default_tolerance(dtype: DType) -> Vec<Criterion> {
    if !dtype.is_float() {
        return vec![Criterion::Exact];
    }
    let (rtol, atol) = default_rtol_atol(dtype);
    vec![Criterion::Allclose {
        atol,
        rtol,
        max_fraction: 0.0,
    }]
}

/// Evaluates every criterion against `m` with the default [`VerdictOptions`]
/// (an empty comparison fails).
pub fn evaluate(criteria: &[Criterion], m: &Metrics, truth: Option<&TruthErrors>) -> Verdict {
    evaluate_with(criteria, m, truth, &VerdictOptions::default())
}

/// Evaluates every criterion against `m`. Never panics: a criterion that
/// cannot be evaluated (vs_f64 without truth, ULPs of an integer
/// comparison) fails with a note, and so does every criterion of a
/// comparison of zero elements unless `opts.allow_empty`.
pub fn evaluate_with(
    criteria: &[Criterion],
    m: &Metrics,
    truth: Option<&TruthErrors>,
    opts: &VerdictOptions,
) -> Verdict {
    let results: Vec<CriterionResult> = criteria
        .iter()
        .map(|c| {
            let r = evaluate_one(c, m, truth);
            if m.count == 0 {
                empty(r, m, opts.allow_empty)
            } else {
                r
            }
        })
        .collect();
    Verdict {
        passed: results.iter().all(|r| r.passed),
        results,
    }
}

/// Elements whose NaN/Inf placement fails value criteria outright.
fn nonfinite_mismatches(m: &Metrics) -> u64 {
    let nan_both = if m.equal_nan { 0 } else { m.nan_both };
    m.nan_mismatch + m.inf_mismatch + nan_both
}

fn evaluate_one(c: &Criterion, m: &Metrics, truth: Option<&TruthErrors>) -> CriterionResult {
    let nonfinite = nonfinite_mismatches(m);
    let res = |observed: f64, threshold: f64, passed: bool, min_passing: f64| CriterionResult {
        criterion: c.clone(),
        passed,
        observed,
        threshold,
        min_passing,
        note: None,
    };
    // Value criteria are blind to NaN/Inf placement, so such mismatches
    // fail them outright, and no threshold would pass.
    let value = |observed: f64, threshold: f64, ok: bool| {
        let mut r = res(observed, threshold, ok && nonfinite == 0, observed);
        if nonfinite > 0 {
            r.min_passing = nothing_passes(c);
        }
        r.note = nan_note(m, NO_THRESHOLD);
        r
    };
    match *c {
        Criterion::MaxAbs(t) => value(m.max_abs, t, m.max_abs <= t),
        Criterion::Rms(t) => value(m.rms, t, m.rms <= t),
        Criterion::RelL2(t) => value(m.rel_l2, t, m.rel_l2 <= t),
        Criterion::CosineMin(t) => value(m.cosine, t, m.cosine >= t),
        Criterion::MaxUlp(t) => match m.max_ulp {
            Some(u) => value(u as f64, t as f64, u <= t),
            None => with_note(res(f64::NAN, t as f64, false, f64::NAN), no_ulp_note()),
        },
        Criterion::UlpQuantile { q, max } => {
            if !(0.0..=1.0).contains(&q) {
                with_note(
                    res(f64::NAN, max as f64, false, f64::NAN),
                    format!("quantile q = {q} is not in [0, 1]"),
                )
            } else if m.max_ulp.is_none() {
                with_note(res(f64::NAN, max as f64, false, f64::NAN), no_ulp_note())
            } else {
                let obs = m.ulp_quantile(q).unwrap_or(0);
                let mut r = value(obs as f64, max as f64, obs <= max);
                if obs > EXACT_MAX && r.note.is_none() {
                    r.note = Some(format!(
                        "ULP quantile above {EXACT_MAX} is the upper bound of its power-of-two bucket"
                    ));
                }
                r
            }
        }
        Criterion::Exact => {
            let obs = m.bitwise_mismatches as f64;
            let mut r = res(obs, 0.0, m.bitwise_mismatches == 0, obs);
            r.note = nan_note(m, "");
            r
        }
        Criterion::Allclose {
            atol,
            rtol,
            max_fraction,
        } => allclose(c, m, atol, rtol, max_fraction),
        Criterion::VsF64 { factor, tol } => match truth {
            None => with_note(
                res(f64::NAN, f64::NAN, false, f64::NAN),
                "vs_f64 needs an f64 truth tensor, and none was given for this output".to_string(),
            ),
            Some(t) => vs_f64(value, t, factor, tol, nonfinite),
        },
    }
}

fn with_note(mut r: CriterionResult, note: String) -> CriterionResult {
    r.note = Some(note);
    r
}

fn no_ulp_note() -> String {
    "no ULP distances for an integer/bool comparison; use `exact`".to_string()
}

/// Violations (finite elements only) at `atol` and the metrics' rtol, when knowable.
fn numeric_violations_at(m: &Metrics, atol: f64) -> Option<u64> {
    if atol == m.atol {
        return Some(m.allclose_violations);
    }
    let top = &m.allclose_excess_top;
    let over = top.iter().filter(|&&x| x > atol).count();
    // Exact unless every tracked element violates and untracked ones might too.
    (over < top.len() || top.len() as u64 == m.numeric_count).then_some(over as u64)
}

fn allclose(
    c: &Criterion,
    m: &Metrics,
    atol: f64,
    rtol: f64,
    max_fraction: f64,
) -> CriterionResult {
    let mut r = CriterionResult {
        criterion: c.clone(),
        passed: false,
        observed: f64::NAN,
        threshold: max_fraction,
        min_passing: f64::NAN,
        note: None,
    };
    if rtol != m.rtol {
        r.note = Some(format!(
            "metrics were measured with rtol {} but this criterion uses rtol {rtol}; compare with CompareOptions::for_criteria",
            m.rtol
        ));
        return r;
    }
    let nonfinite = nonfinite_mismatches(m);
    let count = m.count.max(1) as f64;
    match numeric_violations_at(m, atol) {
        Some(v) => {
            let bad = v + nonfinite;
            r.observed = if m.count == 0 {
                0.0
            } else {
                bad as f64 / count
            };
            r.passed = r.observed <= max_fraction;
        }
        None => {
            r.note = Some(format!(
                "measured with atol {} and more than {} violations at atol {atol}; compare with CompareOptions::for_criteria",
                m.atol,
                m.allclose_excess_top.len()
            ));
        }
    }
    // Largest number of bad elements the fraction allows.
    let mut allowed = (max_fraction.max(0.0) * m.count as f64).floor() as u64;
    if ((allowed + 1) as f64 / count) <= max_fraction {
        allowed += 1;
    }
    r.min_passing = if nonfinite > allowed {
        f64::INFINITY
    } else {
        let rest = allowed - nonfinite; // finite violations we may keep
        let top = &m.allclose_excess_top;
        if rest >= m.numeric_count {
            0.0
        } else if rest == 0 {
            m.allclose_min_atol
        } else if let Some(x) = top.get(rest as usize) {
            x.max(0.0)
        } else {
            if r.note.is_none() {
                r.note = Some(format!(
                    "min_passing atol is an upper bound: only the top {} excesses are tracked",
                    top.len()
                ));
            }
            top.last().map_or(m.allclose_min_atol, |x| x.max(0.0))
        }
    };
    if r.note.is_none() {
        let consequence = if nonfinite > allowed {
            "; these count as violations, more than max_fraction allows at any atol"
        } else {
            "; these count as violations"
        };
        r.note = nan_note(m, consequence);
    }
    r
}
