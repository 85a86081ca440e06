//! Property tests: masks isolate padded elements, order-free metrics ignore
//! order, serial and parallel runs agree, and the kernel matches a naive model.

use crate::{compare, ulp_distance, CompareOptions, Mask, Metrics, UlpDType};
use parity_tensor::{DType, Tensor};
use proptest::prelude::*;

/// Values that exercise NaN and Inf placement alongside ordinary numbers.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => -100.0f32..100.0,
        1 => Just(f32::NAN),
        1 => prop_oneof![Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(0.0), Just(-0.0)],
    ]
}

/// A shape of rank 1..=3, values for actual/expected, and a mask over a subset of axes.
#[derive(Clone, Debug)]
struct Case {
    shape: Vec<usize>,
    a: Vec<f32>,
    e: Vec<f32>,
    axes: Vec<usize>,
    mask: Vec<bool>,
    garbage: Vec<f32>,
}

fn case() -> impl Strategy<Value = Case> {
    proptest::collection::vec(1usize..5, 1..=3)
        .prop_flat_map(|shape| {
            let n: usize = shape.iter().product();
            let rank = shape.len();
            (
                Just(shape),
                proptest::collection::vec(value(), n),
                proptest::collection::vec(value(), n),
                proptest::sample::subsequence((0..rank).collect::<Vec<_>>(), 0..=rank),
                proptest::collection::vec(any::<bool>(), 64),
                proptest::collection::vec(value(), n),
            )
        })
        .prop_map(|(shape, a, e, axes, mask, garbage)| Case {
            shape,
            a,
            e,
            axes,
            mask,
            garbage,
        })
}

fn build_mask(c: &Case) -> Mask {
    let mshape: Vec<usize> = c.axes.iter().map(|&ax| c.shape[ax]).collect();
    let n: usize = mshape.iter().product();
    let vals: Vec<f64> = (0..n)
        .map(|i| c.mask[i % c.mask.len()] as u8 as f64)
        .collect();
    let t = Tensor::from_f64_as(DType::Bool, mshape, &vals).unwrap();
    Mask::new(&t, c.axes.clone(), true, &c.shape).unwrap()
}

fn metrics(
    shape: &[usize],
    a: &[f32],
    e: &[f32],
    mask: Option<&Mask>,
    opts: &CompareOptions,
) -> Metrics {
    let at = Tensor::from_f32(shape.to_vec(), a).unwrap();
    let et = Tensor::from_f32(shape.to_vec(), e).unwrap();
    compare(&at, &et, mask, opts).unwrap()
}

/// NaN-aware equality through JSON (NaN becomes null on both sides).
fn json(m: &Metrics) -> String {
    serde_json::to_string(m).unwrap()
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
}

proptest! {
    #[test]
    fn masked_values_never_change_any_metric(c in case()) {
        let mask = build_mask(&c);
        let opts = CompareOptions { assert_padded_zero: false, ..CompareOptions::default() };
        let before = metrics(&c.shape, &c.a, &c.e, Some(&mask), &opts);
        let (mut a2, mut e2) = (c.a.clone(), c.e.clone());
        for i in 0..a2.len() {
            if mask.is_padded(i) {
                a2[i] = c.garbage[i];
                e2[i] = -c.garbage[i] * 3.0;
            }
        }
        let after = metrics(&c.shape, &a2, &e2, Some(&mask), &opts);
        prop_assert_eq!(json(&before), json(&after));
        prop_assert_eq!(before.masked_out, mask.padded_count());
    }

    #[test]
    fn kernel_matches_a_naive_model(c in case(), equal_nan in any::<bool>()) {
        let mask = build_mask(&c);
        let opts = CompareOptions { equal_nan, ..CompareOptions::default() };
        let m = metrics(&c.shape, &c.a, &c.e, Some(&mask), &opts);
        let (mut count, mut numeric, mut nan, mut inf, mut viol, mut bits) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
        let mut nan_both = 0u64;
        let (mut max_abs, mut sum_sq, mut max_ulp) = (0f64, 0f64, 0u64);
        let mut first = None;
        for i in 0..c.a.len() {
            if mask.is_padded(i) { continue; }
            let (a, e) = (c.a[i] as f64, c.e[i] as f64);
            count += 1;
            // NaN never equals NaN (not even bitwise) unless equal_nan.
            let both_nan = a.is_nan() && e.is_nan();
            bits += if both_nan { !equal_nan } else { c.a[i].to_bits() != c.e[i].to_bits() } as u64;
            if a.is_finite() && e.is_finite() {
                numeric += 1;
                max_abs = max_abs.max((a - e).abs());
                sum_sq += (a - e) * (a - e);
                max_ulp = max_ulp.max(ulp_distance(a, e, UlpDType::F32).unwrap());
                if (a - e).abs() > 1e-5 + 1.3e-6 * e.abs() { viol += 1; first.get_or_insert(i); }
            } else if both_nan {
                nan_both += 1;
                if !equal_nan { first.get_or_insert(i); }
            } else if a.is_nan() != e.is_nan() { nan += 1; first.get_or_insert(i); }
            else if !a.is_nan() && a != e { inf += 1; first.get_or_insert(i); }
        }
        prop_assert_eq!((m.count, m.numeric_count, m.nan_mismatch, m.inf_mismatch), (count, numeric, nan, inf));
        let unequal = if equal_nan { 0 } else { nan_both };
        prop_assert_eq!((m.nan_both, m.mismatches), (nan_both, viol + nan + inf + unequal));
        prop_assert_eq!((m.allclose_violations, m.bitwise_mismatches, m.max_ulp), (viol, bits, Some(max_ulp)));
        prop_assert_eq!(m.max_abs, max_abs);
        let rms = if numeric == 0 { 0.0 } else { (sum_sq / numeric as f64).sqrt() };
        prop_assert!(close(m.rms, rms), "{} vs {}", m.rms, rms);
        let first_index = first.map(|f| crate::mask::unravel(f, &c.shape));
        prop_assert_eq!(m.first_violation.map(|d| d.index), first_index);
    }

    #[test]
    fn permuting_elements_with_their_mask_bits_keeps_order_free_metrics(
        c in case(), seed in any::<u64>()
    ) {
        // Flatten to 1-D with a full per-element mask so a permutation can carry mask bits along.
        let n = c.a.len();
        let pad: Vec<bool> = (0..n).map(|i| c.mask[i % c.mask.len()]).collect();
        let mut perm: Vec<usize> = (0..n).collect();
        let mut s = seed | 1;
        for i in (1..n).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            perm.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let run = |order: &[usize]| {
            let a: Vec<f32> = order.iter().map(|&i| c.a[i]).collect();
            let e: Vec<f32> = order.iter().map(|&i| c.e[i]).collect();
            let p: Vec<f64> = order.iter().map(|&i| pad[i] as u8 as f64).collect();
            let t = Tensor::from_f64_as(DType::U8, vec![n], &p).unwrap();
            let mask = Mask::new(&t, vec![0], true, &[n]).unwrap();
            metrics(&[n], &a, &e, Some(&mask), &CompareOptions::default())
        };
        let x = run(&(0..n).collect::<Vec<_>>());
        let y = run(&perm);
        prop_assert_eq!((x.count, x.masked_out, x.numeric_count), (y.count, y.masked_out, y.numeric_count));
        prop_assert_eq!((x.nan_mismatch, x.inf_mismatch, x.mismatches), (y.nan_mismatch, y.inf_mismatch, y.mismatches));
        prop_assert_eq!(x.nan_both, y.nan_both);
        prop_assert_eq!((x.allclose_violations, x.bitwise_mismatches), (y.allclose_violations, y.bitwise_mismatches));
        prop_assert_eq!((x.max_abs, x.max_ulp), (y.max_abs, y.max_ulp));
        prop_assert_eq!(&x.ulp_histogram, &y.ulp_histogram);
        prop_assert_eq!(&x.allclose_excess_top, &y.allclose_excess_top);
        prop_assert!(close(x.mean_abs, y.mean_abs) && close(x.rms, y.rms));
        prop_assert!(close(x.rel_l2, y.rel_l2) || x.rel_l2 == y.rel_l2);
        let worst = |m: &Metrics| m.worst.iter().map(|d| (d.actual - d.expected).abs()).collect::<Vec<_>>();
        prop_assert_eq!(worst(&x), worst(&y));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn parallel_and_serial_agree_bitwise(seed in any::<u64>(), extra in 0usize..5000, masked in any::<bool>()) {
        // Several chunks plus a ragged tail, so the parallel path really runs.
        let rows = 3 * crate::kernel::CHUNK / 64 + extra;
        let n = rows * 64;
        let mut s = seed | 1;
        let mut next = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
        let e: Vec<f32> = (0..n).map(|_| (next() % 20001) as f32 / 100.0 - 100.0).collect();
        let a: Vec<f32> = e.iter().map(|&x| {
            let r = next();
            if r % 997 == 0 { f32::NAN } else { x + ((r >> 20) % 7) as f32 * 1e-5 }
        }).collect();
        let mask_vals: Vec<f64> = (0..rows).map(|_| (next() % 5 == 0) as u8 as f64).collect();
        let mt = Tensor::from_f64_as(DType::Bool, vec![rows], &mask_vals).unwrap();
        let mask = Mask::new(&mt, vec![0], true, &[rows, 64]).unwrap();
        let mask = masked.then_some(&mask);
        let par = CompareOptions { parallel: true, top_k: 16, ..CompareOptions::default() };
        let ser = CompareOptions { parallel: false, ..par.clone() };
        let x = metrics(&[rows, 64], &a, &e, mask, &par);
        let y = metrics(&[rows, 64], &a, &e, mask, &ser);
        prop_assert_eq!(json(&x), json(&y));
        prop_assert_eq!(x.count + x.masked_out, n as u64);
    }
}
