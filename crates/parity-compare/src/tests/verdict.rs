//! Verdicts on hand-built metrics.

use super::{f32t, run, tensor};
use crate::{default_tolerance, evaluate, Criterion, TruthErrors};
use parity_tensor::DType;

fn base() -> crate::Metrics {
    // diffs 0, 0.5, 1, 0 on expected 1, 2.5, 2, 4 (see the metrics tests).
    run(
        &f32t(&[4], &[1.0, 2.0, 3.0, 4.0]),
        &f32t(&[4], &[1.0, 2.5, 2.0, 4.0]),
        None,
        8,
    )
}

#[test]
fn value_criteria_report_observed_and_min_passing() {
    let m = base();
    let v = evaluate(
        &[
            Criterion::MaxAbs(1.0),
            Criterion::Rms(0.5),
            Criterion::CosineMin(0.97),
        ],
        &m,
        None,
    );
    assert!(!v.passed);
    let r = &v.results;
    assert_eq!(
        (r[0].passed, r[0].observed, r[0].threshold, r[0].min_passing),
        (true, 1.0, 1.0, 1.0)
    );
    assert_eq!((r[1].passed, r[1].observed), (false, m.rms));
    assert_eq!(r[1].min_passing, (1.25f64 / 4.0).sqrt());
    assert_eq!((r[2].passed, r[2].min_passing), (true, m.cosine));
    assert!(r.iter().all(|r| r.note.is_none()));
    let v = evaluate(
        &[Criterion::RelL2(0.25), Criterion::MaxUlp(1 << 22)],
        &m,
        None,
    );
    assert!(v.passed, "{v:?}");
    assert_eq!(v.results[1].observed, (1u64 << 22) as f64);
}

#[test]
fn ulp_quantile_and_exact() {
    let m = base();
    let v = evaluate(
        &[
            Criterion::UlpQuantile { q: 0.5, max: 0 },
            Criterion::UlpQuantile { q: 0.9, max: 8 },
        ],
        &m,
        None,
    );
    assert!(v.results[0].passed && !v.results[1].passed);
    assert_eq!(v.results[1].min_passing, (1u64 << 22) as f64);
    assert!(v.results[1]
        .note
        .as_deref()
        .unwrap_or("")
        .contains("upper bound"));
    let v = evaluate(&[Criterion::UlpQuantile { q: 2.0, max: 8 }], &m, None);
    assert!(!v.passed && v.results[0].note.is_some());
    let v = evaluate(&[Criterion::Exact], &m, None);
    assert_eq!(
        (v.passed, v.results[0].observed, v.results[0].threshold),
        (false, 2.0, 0.0)
    );
}

#[test]
fn allclose_counts_and_smallest_passing_atol() {
    let m = base();
    let (rtol, atol) = (1.3e-6, 1e-5);
    let v = evaluate(
        &[Criterion::Allclose {
            atol,
            rtol,
            max_fraction: 0.0,
        }],
        &m,
        None,
    );
    let r = &v.results[0];
    assert_eq!((r.passed, r.observed, r.threshold), (false, 0.5, 0.0));
    assert_eq!(r.min_passing, 1.0 - 2.0 * rtol);
    // One violation of four allowed: the second-largest excess is the smallest passing atol.
    let v = evaluate(
        &[Criterion::Allclose {
            atol,
            rtol,
            max_fraction: 0.25,
        }],
        &m,
        None,
    );
    assert_eq!(v.results[0].min_passing, 0.5 - 2.5 * rtol);
    assert!(!v.passed);
    // A different atol at the same rtol is evaluated from the tracked excesses.
    let v = evaluate(
        &[Criterion::Allclose {
            atol: 0.6,
            rtol,
            max_fraction: 0.25,
        }],
        &m,
        None,
    );
    assert!(v.passed, "{v:?}");
    assert_eq!(v.results[0].observed, 0.25);
    // A different rtol cannot be evaluated from these metrics: fail with a note.
    let v = evaluate(
        &[Criterion::Allclose {
            atol,
            rtol: 0.1,
            max_fraction: 0.0,
        }],
        &m,
        None,
    );
    assert!(!v.passed);
    assert!(v.results[0]
        .note
        .as_deref()
        .unwrap_or("")
        .contains("for_criteria"));
    // All elements allowed to violate: atol 0 passes.
    let v = evaluate(
        &[Criterion::Allclose {
            atol,
            rtol,
            max_fraction: 1.0,
        }],
        &m,
        None,
    );
    assert_eq!((v.passed, v.results[0].min_passing), (true, 0.0));
}

#[test]
fn nonfinite_mismatches_fail_value_criteria() {
    let m = run(
        &f32t(&[3], &[f32::NAN, 1.0, 2.0]),
        &f32t(&[3], &[0.0, 1.0, 2.0]),
        None,
        8,
    );
    let v = evaluate(&[Criterion::MaxAbs(1.0), Criterion::MaxUlp(0)], &m, None);
    // Observed 0 over the finite elements, but no threshold passes.
    assert!(
        !v.passed
            && v.results
                .iter()
                .all(|r| !r.passed && r.observed == 0.0 && r.min_passing == f64::INFINITY)
    );
    assert_eq!(
        v.results[0].note.as_deref(),
        Some(
            "1 element is NaN on one side only; non-finite values stay out of the numeric \
             metrics, so no threshold passes"
        )
    );
    // allclose: the NaN is one violation of three; no atol can fix it at max_fraction 0.
    let c = Criterion::Allclose {
        atol: 1e-5,
        rtol: 1.3e-6,
        max_fraction: 0.0,
    };
    let r = &evaluate(std::slice::from_ref(&c), &m, None).results[0];
    assert_eq!(
        (r.passed, r.observed, r.min_passing),
        (false, 1.0 / 3.0, f64::INFINITY)
    );
    let c = Criterion::Allclose {
        atol: 1e-5,
        rtol: 1.3e-6,
        max_fraction: 0.4,
    };
    let r = &evaluate(&[c], &m, None).results[0];
    assert_eq!((r.passed, r.min_passing), (true, 0.0));
}

#[test]
fn vs_f64_with_and_without_truth() {
    let m = base();
    let c = [Criterion::VsF64 {
        factor: 2.0,
        tol: 1e-6,
    }];
    let v = evaluate(&c, &m, None);
    assert!(!v.passed);
    assert!(v.results[0].note.as_deref().unwrap_or("").contains("truth"));
    let t = TruthErrors {
        actual_vs_truth: 3e-6,
        expected_vs_truth: 2e-6,
        ..TruthErrors::default()
    };
    let r = &evaluate(&c, &m, Some(&t)).results[0];
    assert!(r.passed);
    assert_eq!(r.threshold, 2.0 * 2e-6 + 1e-6);
    assert_eq!(r.min_passing, (3e-6 - 1e-6) / 2e-6);
    let t = TruthErrors {
        actual_vs_truth: 3e-5,
        expected_vs_truth: 0.0,
        ..TruthErrors::default()
    };
    let r = &evaluate(&c, &m, Some(&t)).results[0];
    assert_eq!((r.passed, r.min_passing), (false, f64::INFINITY));
}

#[test]
fn integer_comparisons_and_defaults() {
    assert_eq!(default_tolerance(DType::I32), vec![Criterion::Exact]);
    assert_eq!(default_tolerance(DType::Bool), vec![Criterion::Exact]);
    assert_eq!(
        default_tolerance(DType::Bf16),
        vec![Criterion::Allclose {
            atol: 1e-5,
            rtol: 1.6e-2,
            max_fraction: 0.0
        }]
    );
    assert_eq!(
        default_tolerance(DType::F16),
        vec![Criterion::Allclose {
            atol: 1e-5,
            rtol: 1e-3,
            max_fraction: 0.0
        }]
    );
    assert_eq!(
        default_tolerance(DType::F64),
        vec![Criterion::Allclose {
            atol: 1e-7,
            rtol: 1e-7,
            max_fraction: 0.0
        }]
    );
    let a = tensor(DType::I64, &[3], &[1.0, 2.0, 3.0]);
    let m = run(&a, &a, None, 8);
    let v = evaluate(&[Criterion::Exact, Criterion::MaxUlp(0)], &m, None);
    assert!(v.results[0].passed && !v.results[1].passed);
    assert!(v.results[1].note.as_deref().unwrap_or("").contains("exact"));
}

#[test]
fn options_follow_the_criteria() {
    let c = [
        Criterion::MaxAbs(1.0),
        Criterion::Allclose {
            atol: 0.1,
            rtol: 0.01,
            max_fraction: 0.0,
        },
    ];
    let o = crate::CompareOptions::for_criteria(&c, DType::F32);
    assert_eq!((o.atol, o.rtol), (0.1, 0.01));
    let o = crate::CompareOptions::for_criteria(&[], DType::Bf16);
    assert_eq!((o.atol, o.rtol), (1e-5, 1.6e-2));
}
