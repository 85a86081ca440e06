//! Hand-computed metric values on small tensors.

use super::{f32t, run, tensor};
use crate::{compare, CompareError, CompareOptions, ElementDiff, Mask};
use parity_tensor::{DType, Tensor};

fn diff(index: &[usize], actual: f64, expected: f64) -> ElementDiff {
    ElementDiff {
        index: index.to_vec(),
        actual,
        expected,
    }
}

#[test]
fn every_metric_on_a_2x2_f32_pair() {
    let a = f32t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let e = f32t(&[2, 2], &[1.0, 2.5, 2.0, 4.0]);
    let m = run(&a, &e, None, 3);
    assert_eq!((m.count, m.masked_out, m.numeric_count), (4, 0, 4));
    assert_eq!(m.max_abs, 1.0);
    assert_eq!(m.mean_abs, 0.375);
    assert_eq!(m.rms, (1.25f64 / 4.0).sqrt());
    assert_eq!(m.rel_l2, 1.25f64.sqrt() / 27.25f64.sqrt());
    assert!((m.cosine - 28.0 / (30.0f64.sqrt() * 27.25f64.sqrt())).abs() < 1e-15);
    // f32 ULPs in [2, 4) are 2^-22: 0.5 is 2^21 of them, 1.0 is 2^22.
    assert_eq!(m.ulp_dtype, Some(DType::F32));
    assert_eq!(m.max_ulp, Some(1 << 22));
    assert_eq!(m.ulp_quantile(0.5), Some(0));
    assert_eq!(m.ulp_quantile(0.75), Some(1 << 21));
    assert_eq!(m.ulp_quantile(1.0), Some(1 << 22));
    assert_eq!((m.atol, m.rtol), (1e-5, 1.3e-6));
    assert_eq!((m.allclose_violations, m.allclose_fraction), (2, 0.5));
    assert_eq!(
        (
            m.mismatches,
            m.mismatch_fraction,
            m.nan_mismatch,
            m.inf_mismatch
        ),
        (2, 0.5, 0, 0)
    );
    assert_eq!(m.bitwise_mismatches, 2);
    assert_eq!(m.first_violation, Some(diff(&[0, 1], 2.0, 2.5)));
    assert_eq!(
        m.worst,
        vec![
            diff(&[1, 0], 3.0, 2.0),
            diff(&[0, 1], 2.0, 2.5),
            diff(&[0, 0], 1.0, 1.0)
        ]
    );
    assert_eq!(m.allclose_min_atol, 1.0 - 1.3e-6 * 2.0);
    assert_eq!(
        m.allclose_excess_top,
        vec![1.0 - 1.3e-6 * 2.0, 0.5 - 1.3e-6 * 2.5, -1.3e-6]
    );
    assert_eq!(m.padded_nonzero, None);
}

#[test]
fn nan_and_inf_placement() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let a = f32t(&[7], &[nan, nan, inf, inf, -inf, 1.0, 1.0]);
    let e = f32t(&[7], &[nan, 1.0, inf, -inf, 1.0, inf, 1.5]);
    let m = run(&a, &e, None, 8);
    assert_eq!((m.count, m.numeric_count), (7, 1));
    assert_eq!(
        (
            m.nan_both,
            m.nan_mismatch,
            m.inf_mismatch,
            m.allclose_violations,
            m.mismatches
        ),
        (1, 1, 3, 1, 6)
    );
    // NaN never equals NaN: the NaN pair is a mismatch, for `exact` too,
    // and the first one; inf vs inf matches. Neither enters numeric metrics.
    assert_eq!((m.max_abs, m.mean_abs, m.rms), (0.5, 0.5, 0.5));
    assert_eq!(m.max_ulp, Some(1 << 22));
    assert_eq!(m.ulp_histogram.as_ref().map(|h| h.total()), Some(1));
    assert_eq!(m.bitwise_mismatches, 6);
    let first = m.first_violation.unwrap();
    assert_eq!(first.index, vec![0]);
    assert!(first.actual.is_nan() && first.expected.is_nan());
    assert_eq!(m.worst, vec![diff(&[6], 1.0, 1.5)]);
    // With equal_nan the NaN pair matches, whatever the payloads.
    let e_payload = Tensor::from_f32(
        vec![7],
        &[f32::from_bits(0x7fc0_0001), 1.0, inf, -inf, 1.0, inf, 1.5],
    )
    .unwrap();
    let opts = CompareOptions {
        equal_nan: true,
        ..CompareOptions::default()
    };
    for e in [&e, &e_payload] {
        let m = compare(&a, e, None, &opts).unwrap();
        assert_eq!((m.nan_both, m.equal_nan, m.mismatches), (1, true, 5));
        assert_eq!(m.bitwise_mismatches, 5);
        let first = m.first_violation.unwrap();
        assert_eq!(first.index, vec![1]);
        assert!(first.actual.is_nan() && first.expected == 1.0);
    }
}

#[test]
fn bf16_actual_against_f32_expected() {
    let a = tensor(DType::Bf16, &[3], &[1.0, 1.0078125, 16.125]);
    let e = f32t(&[3], &[1.0, 1.001, 16.0]);
    let m = run(&a, &e, None, 8);
    // ULPs default to the actual dtype: 1.001 rounds to bf16 1.0, one ULP below 1 + 2^-7.
    assert_eq!(m.ulp_dtype, Some(DType::Bf16));
    assert_eq!(m.max_ulp, Some(1));
    assert_eq!(m.ulp_quantile(1.0 / 3.0), Some(0));
    assert_eq!(m.max_abs, 0.125);
    assert_eq!(m.worst[1], diff(&[1], 1.0078125, 1.001f32 as f64));
    // Different dtypes: `exact` compares values, not bits.
    assert_eq!(m.bitwise_mismatches, 2);
    let same = run(
        &a,
        &tensor(DType::F32, &[3], &[1.0, 1.0078125, 16.125]),
        None,
        8,
    );
    assert_eq!(
        (same.bitwise_mismatches, same.max_ulp, same.max_abs),
        (0, Some(0), 0.0)
    );
}

#[test]
fn first_violation_in_3d_is_the_lowest_flat_index() {
    let e: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let mut a = e.clone();
    a[17] += 1.0;
    a[9] -= 2.0;
    let m = run(&f32t(&[2, 3, 4], &a), &f32t(&[2, 3, 4], &e), None, 8);
    assert_eq!(m.first_violation, Some(diff(&[0, 2, 1], 7.0, 9.0)));
    assert_eq!(m.worst[0], diff(&[0, 2, 1], 7.0, 9.0));
    assert_eq!(m.worst[1], diff(&[1, 1, 1], 18.0, 17.0));
    a[9] = 9.0;
    let m = run(&f32t(&[2, 3, 4], &a), &f32t(&[2, 3, 4], &e), None, 8);
    assert_eq!(m.first_violation.map(|d| d.index), Some(vec![1, 1, 1]));
}

#[test]
fn masked_elements_are_skipped_and_padded_nonzero_is_counted() {
    // [B=2, T=3, H=2] with mask [B, T]; true = padded at (0,2) and (1,1), (1,2).
    let mask_t = tensor(DType::Bool, &[2, 3], &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0]);
    let mask = Mask::new(&mask_t, vec![0, 1], true, &[2, 3, 2]).unwrap();
    let e: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let mut a = e.clone();
    a[1] += 0.5; // valid (0,0,1)
    a[6] += 4.0; // valid (1,0,0)
    a[4] = f32::NAN; // padded (0,2,0)
    a[5] = -0.0; // padded (0,2,1): -0 counts as zero
    a[8] = 1e30; // padded (1,1,0)
    a[9] = 0.0; // padded (1,1,1)
    a[10] = 0.0; // padded (1,2,0)
    a[11] = 0.0; // padded (1,2,1)
    let opts = CompareOptions {
        assert_padded_zero: true,
        ..CompareOptions::default()
    };
    let m = compare(
        &f32t(&[2, 3, 2], &a),
        &f32t(&[2, 3, 2], &e),
        Some(&mask),
        &opts,
    )
    .unwrap();
    assert_eq!((m.count, m.masked_out, m.numeric_count), (6, 6, 6));
    assert_eq!(
        (m.nan_mismatch, m.allclose_violations, m.bitwise_mismatches),
        (0, 2, 2)
    );
    assert_eq!(m.max_abs, 4.0);
    assert_eq!(m.mean_abs, 4.5 / 6.0);
    assert_eq!(m.rms, (16.25f64 / 6.0).sqrt());
    let sum_ee: f64 = [0.0, 1.0, 2.0, 3.0, 6.0, 7.0].iter().map(|x| x * x).sum();
    assert_eq!(m.rel_l2, 16.25f64.sqrt() / sum_ee.sqrt());
    assert_eq!(m.first_violation, Some(diff(&[0, 0, 1], 1.5, 1.0)));
    // NaN at (0,2,0) and 1e30 at (1,1,0) are padded but nonzero (elements 10 and 11 were
    // originally 10 and 11 in `e`, so padded zeros there are fine).
    assert_eq!(m.padded_nonzero, Some(2));
}

#[test]
fn integer_mask_on_time_axis() {
    // Valid-mask convention (1 = valid): padded_value = false.
    let mask_t = tensor(DType::I32, &[3], &[1.0, 0.0, 1.0]);
    let mask = Mask::new(&mask_t, vec![1], false, &[2, 3]).unwrap();
    let a = f32t(&[2, 3], &[0.0, 99.0, 0.0, 1.0, -99.0, 1.0]);
    let e = f32t(&[2, 3], &[0.0, 0.0, 0.0, 1.0, 0.0, 2.0]);
    let m = run(&a, &e, Some(&mask), 8);
    assert_eq!((m.count, m.masked_out, m.max_abs), (4, 2, 1.0));
    assert_eq!(m.first_violation, Some(diff(&[1, 2], 1.0, 2.0)));
}

#[test]
fn integer_tensors_count_exact_mismatches_without_ulps() {
    let a = tensor(DType::I32, &[4], &[1.0, 2.0, -3.0, 1000.0]);
    let e = tensor(DType::I32, &[4], &[1.0, 2.0, 3.0, 1000.0]);
    let m = run(&a, &e, None, 8);
    assert_eq!(
        (m.ulp_dtype, m.max_ulp, m.ulp_histogram.is_none()),
        (None, None, true)
    );
    assert_eq!((m.bitwise_mismatches, m.max_abs), (1, 6.0));
    // Mixed int actual vs f32 oracle: ULPs in f32.
    let m = run(&a, &f32t(&[4], &[1.0, 2.0, -3.0, 1000.5]), None, 8);
    assert_eq!(
        (m.ulp_dtype, m.bitwise_mismatches, m.max_abs),
        (Some(DType::F32), 1, 0.5)
    );
    assert_eq!(m.max_ulp, Some(1 << 13)); // f32 ULP in [512, 1024) is 2^-14
}

#[test]
fn signed_zero_is_a_bitwise_but_not_a_numeric_difference() {
    let m = run(&f32t(&[2], &[-0.0, 1.0]), &f32t(&[2], &[0.0, 1.0]), None, 8);
    assert_eq!(
        (m.bitwise_mismatches, m.max_abs, m.max_ulp, m.mismatches),
        (1, 0.0, Some(0), 0)
    );
}

#[test]
fn degenerate_norms_and_empty_tensors() {
    let z = f32t(&[3], &[0.0, 0.0, 0.0]);
    let x = f32t(&[3], &[0.0, 3.0, 4.0]);
    let m = run(&z, &z, None, 8);
    assert_eq!((m.rel_l2, m.cosine), (0.0, 1.0));
    let m = run(&x, &z, None, 8);
    assert_eq!((m.rel_l2, m.cosine), (f64::INFINITY, 0.0));
    let m = run(&z, &x, None, 8);
    assert_eq!((m.rel_l2, m.cosine), (1.0, 0.0));
    let m = run(&f32t(&[3], &[0.0, -3.0, -4.0]), &x, None, 8);
    assert_eq!((m.rel_l2, m.cosine), (2.0, -1.0));
    let empty = f32t(&[0, 3], &[]);
    let m = run(&empty, &empty, None, 8);
    assert_eq!(
        (m.count, m.max_abs, m.rms, m.rel_l2, m.cosine),
        (0, 0.0, 0.0, 0.0, 1.0)
    );
    assert_eq!(
        (m.allclose_fraction, m.first_violation.is_none()),
        (0.0, true)
    );
    let scalar = run(&f32t(&[], &[2.0]), &f32t(&[], &[1.0]), None, 8);
    assert_eq!(scalar.first_violation, Some(diff(&[], 2.0, 1.0)));
}

#[test]
fn bad_inputs_are_errors() {
    let a = f32t(&[2, 3], &[0.0; 6]);
    let b = f32t(&[3, 2], &[0.0; 6]);
    let err = compare(&a, &b, None, &CompareOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "shape mismatch: actual has shape [2, 3], expected has shape [3, 2]"
    );
    let mask_t = tensor(DType::Bool, &[3], &[0.0; 3]);
    let mask = Mask::new(&mask_t, vec![0], true, &[3, 2]).unwrap();
    let err = compare(&a, &a, Some(&mask), &CompareOptions::default()).unwrap_err();
    assert!(matches!(err, CompareError::MaskShape { .. }), "{err}");
    let opts = CompareOptions {
        top_k: 1_000_000,
        ..CompareOptions::default()
    };
    assert!(matches!(
        compare(&a, &a, None, &opts),
        Err(CompareError::TopKTooLarge { .. })
    ));
    let opts = CompareOptions {
        rtol: f64::NAN,
        ..CompareOptions::default()
    };
    assert!(matches!(
        compare(&a, &a, None, &opts),
        Err(CompareError::BadOption { name: "rtol", .. })
    ));
}

#[test]
fn explicit_ulp_dtype_and_metrics_serialize() {
    let a = f32t(&[2], &[1.0, 2.0]);
    let e = f32t(&[2], &[1.0 + 2f32.powi(-7), 2.0]);
    let opts = CompareOptions {
        ulp_dtype: Some(crate::UlpDType::Bf16),
        ..CompareOptions::default()
    };
    let m = compare(&a, &e, None, &opts).unwrap();
    assert_eq!((m.ulp_dtype, m.max_ulp), (Some(DType::Bf16), Some(1)));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["max_ulp"], 1);
    assert_eq!(json["ulp_dtype"], "bf16");
    assert_eq!(json["ulp_histogram"]["buckets"][1]["lo"], 1);
    let back: crate::Metrics = serde_json::from_value(json).unwrap();
    assert_eq!(back, m);
}
