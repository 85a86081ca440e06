//! Typed criteria in records: what was checked, and how it came out.

use parity_compare::Criterion;
use serde::{Deserialize, Serialize};

/// One check applied to a compared output.
///
/// JSON: `{"tolerance": {"max_abs": 1e-5}}` (the spec's own criterion form
/// inside) or `"padded_zero"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// A tolerance criterion from the spec (or the dtype's default).
    Tolerance(Criterion),
    /// The mask asserts zero padding: masked elements of the production
    /// output must be exactly zero.
    PaddedZero,
}

impl Check {
    /// The criterion's name as the spec spells it (`max_abs`, `allclose`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Check::PaddedZero => "padded_zero",
            Check::Tolerance(c) => criterion_name(c),
        }
    }
}

/// The spec's name of a criterion.
pub fn criterion_name(c: &Criterion) -> &'static str {
    match c {
        Criterion::MaxAbs(_) => "max_abs",
        Criterion::Rms(_) => "rms",
        Criterion::RelL2(_) => "rel_l2",
        Criterion::CosineMin(_) => "cosine_min",
        Criterion::Allclose { .. } => "allclose",
        Criterion::MaxUlp(_) => "max_ulp",
        Criterion::UlpQuantile { .. } => "ulp_quantile",
        Criterion::Exact => "exact",
        Criterion::VsF64 { .. } => "vs_f64",
    }
}

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriterionRecord {
    /// What was checked.
    pub criterion: Check,
    /// Whether it held.
    pub passed: bool,
    /// The observed value of the criterion's statistic.
    #[serde(with = "crate::float")]
    pub observed: f64,
    /// The threshold it was checked against.
    #[serde(with = "crate::float")]
    pub threshold: f64,
    /// The smallest threshold that would have passed.
    #[serde(with = "crate::float")]
    pub min_passing: f64,
    /// Explanation where the numbers need one.
    pub note: Option<String>,
}

impl CriterionRecord {
    /// Whether the criterion bounds its statistic from below (higher is better: `cosine_min`).
    pub fn higher_is_better(&self) -> bool {
        matches!(self.criterion, Check::Tolerance(Criterion::CosineMin(_)))
    }

    /// The headroom ratio: the error as a fraction of the tolerance,
    /// `observed / threshold`, or for a lower bound `(1 - observed) / (1 -
    /// threshold)`, so that above 1 fails for every criterion. Infinite when
    /// a zero threshold is exceeded, 0 when it holds; a failing criterion
    /// whose ratio would not say so (NaN observed) is infinite.
    pub fn ratio(&self) -> f64 {
        let (observed, threshold) = if self.higher_is_better() {
            (1.0 - self.observed, 1.0 - self.threshold)
        } else {
            (self.observed, self.threshold)
        };
        let r = if threshold > 0.0 {
            observed / threshold
        } else if self.passed {
            0.0
        } else {
            f64::INFINITY
        };
        match (self.passed, r) {
            (false, r) if r.is_nan() || r <= 1.0 => f64::INFINITY,
            (true, r) if r.is_nan() => 0.0,
            _ => r.max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_serialise_in_a_typed_form_and_name_themselves() {
        let c = Check::Tolerance(Criterion::MaxAbs(1e-5));
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({"tolerance": {"max_abs": 1e-5}})
        );
        assert_eq!(c.name(), "max_abs");
        assert_eq!(
            serde_json::to_string(&Check::PaddedZero).unwrap(),
            r#""padded_zero""#
        );
        let back: Check = serde_json::from_str(r#"{"tolerance":"exact"}"#).unwrap();
        assert_eq!(back, Check::Tolerance(Criterion::Exact));
        assert_eq!(back.name(), "exact");
        let allclose: Check =
            serde_json::from_str(r#"{"tolerance":{"allclose":{"atol":1,"rtol":2}}}"#).unwrap();
        assert_eq!(allclose.name(), "allclose");
    }
}
