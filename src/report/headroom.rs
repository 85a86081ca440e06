//! How close a criterion is to its limit, read the same way for every
//! criterion: the error as a fraction of what the tolerance allows, below 1
//! passes. For a lower bound (`cosine_min`, higher is better) a plain
//! `observed / threshold` reads backwards (0.99 / 0.9999 is below 1 and
//! fails), so its distance from 1 is measured instead.

use super::table::num;
use parity_record::{CriterionRecord, OutputRecord};

/// Whether the criterion bounds its statistic from below (higher is better).
pub fn higher_is_better(c: &CriterionRecord) -> bool {
    c.higher_is_better()
}

/// The error as a fraction of the tolerance ([`CriterionRecord::ratio`]:
/// `observed / threshold`, or for a lower bound `(1 - observed) / (1 -
/// threshold)`; above 1 fails).
pub fn ratio(c: &CriterionRecord) -> f64 {
    c.ratio()
}

/// The output's tightest criterion (the largest [`ratio`]) and its ratio.
pub fn tightest(o: &OutputRecord) -> Option<(&CriterionRecord, f64)> {
    o.criteria
        .iter()
        .map(|c| (c, ratio(c)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
}

/// The observed value against its limit, in the direction that reads true:
/// `max_abs 2.000e-7 / 1.000e-5`, `cosine_min: 1-cos 1.000e-5 / 1.000e-4`.
pub fn versus(c: &CriterionRecord) -> String {
    if higher_is_better(c) {
        format!(
            "{} 1-cos {} / {}",
            c.criterion.name(),
            num(1.0 - c.observed),
            num(1.0 - c.threshold)
        )
    } else {
        format!(
            "{} {} / {}",
            c.criterion.name(),
            num(c.observed),
            num(c.threshold)
        )
    }
}

/// A failed criterion as a true statement: `max_abs 0.25 > 1.000e-5`,
/// `cosine_min 0.99999454 < 0.9999999`.
pub fn failed(c: &CriterionRecord) -> String {
    let rel = if higher_is_better(c) { "<" } else { ">" };
    format!(
        "{} {} {rel} {}",
        c.criterion.name(),
        value(c, c.observed),
        value(c, c.threshold)
    )
}

/// A value of criterion `c` (observed, threshold, passing threshold): a
/// cosine near 1 with the digits that tell it from 1 (`0.99999454`, not
/// `1.0000`), anything else as [`num`] writes it.
pub fn value(c: &CriterionRecord, x: f64) -> String {
    if higher_is_better(c) {
        near_one(x)
    } else {
        num(x)
    }
}

/// A value that lives near 1 (a cosine): within 1e-3 of 1, with the digits
/// that tell it from 1; else as [`num`] writes it.
pub fn near_one(x: f64) -> String {
    let gap = 1.0 - x;
    if !(gap > 0.0 && gap < 1e-3) {
        return num(x);
    }
    // Two significant digits of the distance from 1.
    let digits = ((-gap.log10()).ceil() as usize + 2).min(17);
    let text = format!("{x:.digits$}");
    text.trim_end_matches('0').to_string()
}

/// A ratio for people, two significant digits: `0.02`, `0.5`, `3.1`,
/// `25000`, `1.5e-5`; `inf` when no threshold passes.
pub fn ratio_text(r: f64) -> String {
    if r.is_infinite() {
        "inf".into()
    } else if r.is_nan() {
        "NaN".into()
    } else if r == 0.0 {
        "0".into()
    } else if r >= 10.0 {
        format!("{r:.0}")
    } else if r >= 0.01 {
        // Two significant digits, no trailing zeros (0.50 -> 0.5).
        let digits = (1 - r.log10().floor() as i32).max(0) as usize;
        let s = format!("{r:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{r:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_compare::Criterion;
    use parity_record::Check;
    use proptest::prelude::*;

    fn crit(criterion: Criterion, observed: f64, threshold: f64, passed: bool) -> CriterionRecord {
        CriterionRecord {
            criterion: Check::Tolerance(criterion),
            passed,
            observed,
            threshold,
            min_passing: observed,
            note: None,
        }
    }

    #[test]
    fn cosine_min_is_measured_by_its_distance_from_one() {
        // cosine 0.99 against min 0.9999: 100x too far from 1, a failure above 1.
        let fail = crit(Criterion::CosineMin(0.9999), 0.99, 0.9999, false);
        assert!((ratio(&fail) - 100.0).abs() < 1e-6, "{}", ratio(&fail));
        assert_eq!(failed(&fail), "cosine_min 0.9900 < 0.9999");
        // Near 1, a cosine keeps the digits that tell it from 1.
        let near = crit(
            Criterion::CosineMin(0.9999999),
            0.9999945371385681,
            0.9999999,
            false,
        );
        assert_eq!(failed(&near), "cosine_min 0.99999454 < 0.9999999");
        assert_eq!(value(&near, 1.0), "1");
        assert_eq!(versus(&fail), "cosine_min 1-cos 0.0100 / 1.000e-4");
        let pass = crit(Criterion::CosineMin(0.9999), 0.99999, 0.9999, true);
        assert!((ratio(&pass) - 0.1).abs() < 1e-6, "{}", ratio(&pass));
        // An upper bound stays observed / threshold.
        let max_abs = crit(Criterion::MaxAbs(1e-3), 2e-3, 1e-3, false);
        assert_eq!(ratio(&max_abs), 2.0);
        assert_eq!(failed(&max_abs), "max_abs 0.0020 > 0.0010");
        // A NaN cosine fails and is above every finite ratio.
        let nan = crit(Criterion::CosineMin(0.9), f64::NAN, 0.9, false);
        assert_eq!(ratio(&nan), f64::INFINITY);
    }

    #[test]
    fn ratios_read_in_two_significant_digits() {
        for (r, text) in [
            (0.0, "0"),
            (0.02, "0.02"),
            (0.5, "0.5"),
            (0.123, "0.12"),
            (3.04, "3"),
            (3.26, "3.3"),
            (25000.0, "25000"),
            (1.5e-5, "1.5e-5"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(ratio_text(r), text, "{r}");
        }
    }

    proptest! {
        /// Whatever the criterion, a passing one is at most 1 and a failing one above 1.
        #[test]
        fn the_ratio_says_pass_or_fail_for_every_criterion(
            observed in -1.0f64..2.0,
            threshold in 0.0f64..1.5,
            cosine in any::<bool>(),
        ) {
            let criterion = if cosine { Criterion::CosineMin(threshold) } else { Criterion::MaxAbs(threshold) };
            let passed = if cosine { observed >= threshold } else { observed <= threshold };
            let r = ratio(&crit(criterion, observed, threshold, passed));
            if passed { prop_assert!(r <= 1.0, "{r}") } else { prop_assert!(r > 1.0, "{r}") }
        }
    }
}
