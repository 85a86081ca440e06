//! NaN, infinity and empty-comparison semantics, end to end through
//! `compare` and `evaluate_with`: NaN never equals NaN unless `equal_nan`,
//! equal infinities at the same place match, and zero compared elements
//! fail unless `allow_empty`.

use super::f32t;
use crate::{
    compare, default_tolerance, evaluate, evaluate_with, CompareOptions, Criterion, Mask, Metrics,
    TruthErrors, VerdictOptions,
};
use parity_tensor::{DType, Tensor};
use proptest::prelude::*;

const NAN: f32 = f32::NAN;
const INF: f32 = f32::INFINITY;

fn measure(a: &[f32], e: &[f32], equal_nan: bool) -> Metrics {
    let opts = CompareOptions {
        equal_nan,
        ..CompareOptions::default()
    };
    compare(&f32t(&[a.len()], a), &f32t(&[e.len()], e), None, &opts).unwrap()
}

/// One criterion of every kind that `stages.yaml` can name for floats.
fn every_value_criterion() -> Vec<Criterion> {
    vec![
        Criterion::MaxAbs(1e-5),
        Criterion::Rms(1e-5),
        Criterion::RelL2(1e-5),
        Criterion::CosineMin(0.99),
        Criterion::MaxUlp(4),
        Criterion::UlpQuantile { q: 0.5, max: 4 },
        Criterion::Exact,
        Criterion::Allclose {
            atol: 1e-5,
            rtol: 1.3e-6,
            max_fraction: 0.0,
        },
    ]
}

const NAN_BOTH_NOTE: &str =
    "3 elements are NaN in both (NaN never equals NaN; set equal_nan: true to accept)";

#[test]
fn nan_in_both_at_the_same_places_fails_every_criterion_without_equal_nan() {
    let a = [NAN, 1.0, NAN, 2.0, NAN];
    let m = measure(&a, &a, false);
    assert_eq!((m.nan_both, m.nan_mismatch, m.mismatches), (3, 0, 3));
    assert_eq!(m.bitwise_mismatches, 3);
    assert_eq!(
        m.first_violation.as_ref().map(|d| d.index.clone()),
        Some(vec![0])
    );
    let v = evaluate(&every_value_criterion(), &m, None);
    assert!(!v.passed);
    for r in &v.results {
        assert!(!r.passed, "{r:?}");
        let note = r.note.as_deref().unwrap_or("");
        assert!(note.starts_with(NAN_BOTH_NOTE), "{note}");
    }
    // No threshold passes: +inf, NaN for cosine_min (no largest passing minimum).
    let min: Vec<f64> = v.results.iter().map(|r| r.min_passing).collect();
    assert_eq!(min[..3], [f64::INFINITY; 3]);
    assert!(min[3].is_nan());
    assert_eq!(min[4..6], [f64::INFINITY; 2]);
    // exact: its knob is the mismatch count; allclose: no atol helps.
    assert_eq!((min[6], min[7]), (3.0, f64::INFINITY));
    // allclose observes 3 of 5 elements bad.
    assert_eq!(v.results[7].observed, 0.6);
}

#[test]
fn nan_in_both_passes_with_equal_nan_and_says_so() {
    let a = [NAN, 1.0, NAN, 2.0, NAN];
    let m = measure(&a, &a, true);
    assert_eq!((m.nan_both, m.mismatches, m.bitwise_mismatches), (3, 0, 0));
    assert_eq!(m.first_violation, None);
    let v = evaluate(&every_value_criterion(), &m, None);
    assert!(v.passed, "{v:?}");
    for r in &v.results {
        assert_eq!(
            r.note.as_deref(),
            Some("3 elements are NaN in both, accepted by equal_nan")
        );
    }
    assert_eq!(v.results[0].min_passing, 0.0);
}

#[test]
fn nan_on_one_side_fails_even_with_equal_nan() {
    for equal_nan in [false, true] {
        let m = measure(&[NAN, 1.0], &[1.0, 1.0], equal_nan);
        assert_eq!((m.nan_mismatch, m.nan_both), (1, 0));
        let v = evaluate(&every_value_criterion(), &m, None);
        assert!(v.results.iter().all(|r| !r.passed), "{v:?}");
        assert_eq!(v.results[0].min_passing, f64::INFINITY);
        assert!(v.results[0]
            .note
            .as_deref()
            .unwrap_or("")
            .starts_with("1 element is NaN on one side only"));
        // And the other way round.
        let m = measure(&[1.0, 1.0], &[1.0, NAN], equal_nan);
        assert_eq!(m.nan_mismatch, 1);
        assert!(!evaluate(&default_tolerance(DType::F32), &m, None).passed);
    }
}

#[test]
fn equal_infinities_match_and_opposite_ones_fail() {
    let m = measure(&[INF, -INF, 1.0], &[INF, -INF, 1.0], false);
    assert_eq!((m.inf_mismatch, m.mismatches, m.numeric_count), (0, 0, 1));
    let v = evaluate(&every_value_criterion(), &m, None);
    assert!(v.passed, "{v:?}");
    assert!(v.results.iter().all(|r| r.note.is_none()));
    let m = measure(&[INF, 1.0], &[-INF, 1.0], false);
    assert_eq!(m.inf_mismatch, 1);
    let v = evaluate(&every_value_criterion(), &m, None);
    assert!(v.results.iter().all(|r| !r.passed));
    assert_eq!(
        v.results[0].note.as_deref(),
        Some(
            "1 infinity differs (opposite signs, or against a finite value); non-finite values \
             stay out of the numeric metrics, so no threshold passes"
        )
    );
    assert_eq!(v.results[0].min_passing, f64::INFINITY);
    // Infinity against a finite value.
    let m = measure(&[INF], &[3.0], false);
    assert_eq!(m.inf_mismatch, 1);
    assert!(!evaluate(&[Criterion::MaxAbs(1e30)], &m, None).passed);
}

#[test]
fn allclose_with_max_fraction_counts_nan_in_both_as_violations() {
    let m = measure(&[NAN, 1.0, 2.0, 3.0], &[NAN, 1.0, 2.0, 3.5], false);
    let c = |max_fraction| Criterion::Allclose {
        atol: 1e-5,
        rtol: 1.3e-6,
        max_fraction,
    };
    // 1 NaN pair + 1 violation of 4: 0.5 allowed passes; 0.25 needs atol for 3.5.
    let r = &evaluate(&[c(0.5)], &m, None).results[0];
    assert_eq!((r.passed, r.observed, r.min_passing), (true, 0.5, 0.0));
    let r = &evaluate(&[c(0.25)], &m, None).results[0];
    assert_eq!((r.passed, r.observed), (false, 0.5));
    assert_eq!(r.min_passing, 0.5 - 1.3e-6 * 3.5);
    assert!(r
        .note
        .as_deref()
        .unwrap_or("")
        .ends_with("these count as violations"));
}

fn all_padded_mask(n: usize) -> Mask {
    let t = Tensor::from_f64_as(DType::Bool, vec![n], &vec![1.0; n]).unwrap();
    Mask::new(&t, vec![0], true, &[n]).unwrap()
}

#[test]
fn an_all_masked_comparison_fails_unless_allowed() {
    // The oracle is off everywhere, but every element is padding.
    let a = f32t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let e = f32t(&[4], &[9.0, 9.0, 9.0, 9.0]);
    let mask = all_padded_mask(4);
    let m = compare(&a, &e, Some(&mask), &CompareOptions::default()).unwrap();
    assert_eq!((m.count, m.masked_out), (0, 4));
    let criteria = every_value_criterion();
    let v = evaluate(&criteria, &m, None);
    assert!(!v.passed);
    for r in &v.results {
        assert!(!r.passed);
        assert_eq!(
            r.note.as_deref(),
            Some("0 elements compared (all 4 masked); set allow_empty: true to accept")
        );
    }
    assert_eq!(v.results[0].min_passing, f64::INFINITY);
    assert!(v.results[3].min_passing.is_nan());
    let allow = VerdictOptions { allow_empty: true };
    let v = evaluate_with(&criteria, &m, None, &allow);
    assert!(v.passed, "{v:?}");
    assert_eq!(
        v.results[0].note.as_deref(),
        Some("0 elements compared (all 4 masked); accepted by allow_empty")
    );
}

#[test]
fn an_empty_tensor_fails_unless_allowed() {
    let e = f32t(&[0, 3], &[]);
    let m = compare(&e, &e, None, &CompareOptions::default()).unwrap();
    let v = evaluate(&default_tolerance(DType::F32), &m, None);
    assert!(!v.passed);
    assert_eq!(
        v.results[0].note.as_deref(),
        Some("0 elements compared (empty tensor); set allow_empty: true to accept")
    );
    assert_eq!(v.results[0].min_passing, f64::INFINITY);
    let t = TruthErrors::default();
    let c = [Criterion::VsF64 {
        factor: 1.0,
        tol: 0.0,
    }];
    assert!(!evaluate(&c, &m, Some(&t)).passed);
    let allow = VerdictOptions { allow_empty: true };
    assert!(evaluate_with(&c, &m, Some(&t), &allow).passed);
    assert!(evaluate_with(&default_tolerance(DType::F32), &m, None, &allow).passed);
}

#[test]
fn vs_f64_fails_on_non_finite_production_or_oracle_elements() {
    let m = measure(&[1.0, 2.0], &[1.0, 2.0], false);
    let c = [Criterion::VsF64 {
        factor: 2.0,
        tol: 0.0,
    }];
    let t = TruthErrors {
        actual_vs_truth: 0.0,
        expected_vs_truth: 1e-7,
        actual_nonfinite: 2,
        expected_nonfinite: 0,
    };
    let r = &evaluate(&c, &m, Some(&t)).results[0];
    assert_eq!(
        (r.passed, r.observed, r.min_passing),
        (false, f64::INFINITY, f64::INFINITY)
    );
    assert_eq!(
        r.note.as_deref(),
        Some(
            "2 production elements are NaN or infinite where the f64 truth is finite: \
             err(production, truth) is unbounded, no factor passes"
        )
    );
    let t = TruthErrors {
        actual_vs_truth: 1e-7,
        expected_vs_truth: 0.0,
        actual_nonfinite: 0,
        expected_nonfinite: 1,
    };
    let r = &evaluate(&c, &m, Some(&t)).results[0];
    assert!(!r.passed && r.min_passing.is_nan());
    assert!(r
        .note
        .as_deref()
        .unwrap_or("")
        .starts_with("1 oracle element is NaN or infinite where the f64 truth is finite"));
}

/// Finite values, and positions where both sides get a NaN.
fn finite_with_nan_places() -> impl Strategy<Value = (Vec<f32>, Vec<bool>)> {
    (1usize..200).prop_flat_map(|n| {
        (
            proptest::collection::vec(-1e3f32..1e3, n),
            proptest::collection::vec(any::<bool>(), n),
        )
    })
}

proptest! {
    #[test]
    fn shared_nan_fails_without_equal_nan_and_passes_with(
        (x, nan) in finite_with_nan_places()
    ) {
        let a: Vec<f32> = x.iter().zip(&nan).map(|(&v, &p)| if p { NAN } else { v }).collect();
        let k = nan.iter().filter(|&&p| p).count() as u64;
        let criteria = every_value_criterion();
        let strict = measure(&a, &a, false);
        prop_assert_eq!((strict.nan_both, strict.mismatches), (k, k));
        let v = evaluate(&criteria, &strict, None);
        prop_assert_eq!(v.passed, k == 0);
        if k > 0 {
            let max_abs = &v.results[0];
            prop_assert_eq!(max_abs.min_passing, f64::INFINITY);
            prop_assert!(max_abs.note.as_deref().unwrap_or("").contains("NaN in both"));
        }
        let lenient = measure(&a, &a, true);
        prop_assert_eq!((lenient.nan_both, lenient.mismatches), (k, 0));
        let all_nan = k as usize == a.len();
        // All-NaN leaves nothing numeric, but the comparison is not empty.
        prop_assert!(evaluate(&criteria, &lenient, None).passed, "all NaN: {}", all_nan);
    }

    #[test]
    fn nan_on_one_side_fails_whatever_equal_nan(
        (x, nan) in finite_with_nan_places(), equal_nan in any::<bool>(), flip in any::<bool>()
    ) {
        prop_assume!(nan.iter().any(|&p| p));
        let holed: Vec<f32> = x.iter().zip(&nan).map(|(&v, &p)| if p { NAN } else { v }).collect();
        let (a, e) = if flip { (&x, &holed) } else { (&holed, &x) };
        let m = measure(a, e, equal_nan);
        prop_assert_eq!(m.nan_mismatch, nan.iter().filter(|&&p| p).count() as u64);
        let v = evaluate(&every_value_criterion(), &m, None);
        prop_assert!(v.results.iter().all(|r| !r.passed));
    }

    #[test]
    fn infinities_match_only_when_equal(
        (x, inf) in finite_with_nan_places(), neg in any::<bool>()
    ) {
        prop_assume!(inf.iter().any(|&p| p));
        let s = if neg { -INF } else { INF };
        let a: Vec<f32> = x.iter().zip(&inf).map(|(&v, &p)| if p { s } else { v }).collect();
        prop_assert!(evaluate(&every_value_criterion(), &measure(&a, &a, false), None).passed);
        let e: Vec<f32> = x.iter().zip(&inf).map(|(&v, &p)| if p { -s } else { v }).collect();
        let m = measure(&a, &e, false);
        prop_assert_eq!(m.inf_mismatch, inf.iter().filter(|&&p| p).count() as u64);
        prop_assert!(evaluate(&every_value_criterion(), &m, None).results.iter().all(|r| !r.passed));
    }

    #[test]
    fn all_masked_fails_unless_allowed(x in proptest::collection::vec(-1e3f32..1e3, 1..100)) {
        let n = x.len();
        let e: Vec<f32> = x.iter().map(|v| v + 100.0).collect();
        let m = compare(&f32t(&[n], &x), &f32t(&[n], &e), Some(&all_padded_mask(n)), &CompareOptions::default()).unwrap();
        prop_assert_eq!((m.count, m.masked_out), (0, n as u64));
        let criteria = every_value_criterion();
        let v = evaluate(&criteria, &m, None);
        prop_assert!(v.results.iter().all(|r| !r.passed));
        let note = format!("0 elements compared (all {n} masked); set allow_empty: true to accept");
        prop_assert_eq!(v.results[0].note.as_deref(), Some(note.as_str()));
        let allow = VerdictOptions { allow_empty: true };
        prop_assert!(evaluate_with(&criteria, &m, None, &allow).passed);
    }
}
