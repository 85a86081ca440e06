//! The kernel against the original element-by-element kernel (kept in
//! `kernel_reference`): identical `Metrics`, bit for bit, for every dtype
//! pair and ULP dtype, with NaN/Inf/±0/subnormals, masked and unmasked; and
//! the vector paths (AVX-512 and AVX2, whichever the CPU has; f32, bf16 and
//! f16 pairs) against the scalar one and against parallel runs.

use crate::kernel_reference::{with_avx2, with_reference, with_scalar};
use crate::{compare, CompareOptions, Mask, Metrics, Simd, UlpDType};
use parity_tensor::{DType, Tensor};
use proptest::prelude::*;

const DTYPES: [DType; 8] = [
    DType::F32,
    DType::Bf16,
    DType::F16,
    DType::F64,
    DType::I32,
    DType::I8,
    DType::Bool,
    DType::U8,
];

fn special() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(-0.0),
        Just(1e-40),   // f32 subnormal
        Just(-3e-42),  // f32 subnormal
        Just(6e-8),    // f16 subnormal
        Just(5e-324),  // f64 subnormal
        Just(1e300),   // beyond f32
        Just(-3.4e38), // near f32::MAX
        Just(65504.0), // f16::MAX
    ]
}

/// Expected and actual values: mostly near each other, some specials.
fn pair() -> impl Strategy<Value = (f64, f64)> {
    let near = (-100.0f64..100.0, -8i32..8).prop_map(|(e, k)| (e + k as f64 * e * 1e-7, e));
    prop_oneof![
        6 => near,
        1 => (-100.0f64..100.0, -100.0f64..100.0),
        1 => (special(), -100.0f64..100.0),
        1 => (-100.0f64..100.0, special()),
        1 => (special(), special()),
    ]
}

fn build(dtype: DType, shape: &[usize], v: &[f64]) -> Tensor {
    let v: Vec<f64> = if dtype.is_float() {
        v.to_vec()
    } else {
        // Small integers (and NaN/Inf folded to 0), so exact matches happen.
        v.iter()
            .map(|&x| {
                if x.is_finite() {
                    (x % 3.0).round()
                } else {
                    0.0
                }
            })
            .map(|x| {
                if dtype == DType::Bool || dtype == DType::U8 {
                    x.abs()
                } else {
                    x
                }
            })
            .collect()
    };
    Tensor::from_f64_as(dtype, shape.to_vec(), &v).unwrap()
}

/// Exact comparison: `Debug` prints every f64 so that it round-trips.
/// A xorshift64 generator from a nonzero state: the tests' deterministic data.
fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn exact(m: &Metrics) -> String {
    format!("{m:?}")
}

#[derive(Clone, Debug)]
struct Case {
    rows: usize,
    cols: usize,
    values: Vec<(f64, f64)>,
    da: usize,
    de: usize,
    ulp: Option<UlpDType>,
    top_k: usize,
    /// 0: none, 1: per row (constant runs), 2: per column (strided), 3: per element.
    mask_kind: u8,
    mask_bits: Vec<bool>,
    assert_zero: bool,
    equal_nan: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..40, 1usize..80)
        .prop_flat_map(|(rows, cols)| {
            (
                Just(rows),
                Just(cols),
                proptest::collection::vec(pair(), rows * cols),
                0usize..DTYPES.len(),
                0usize..DTYPES.len(),
                prop_oneof![
                    Just(None),
                    Just(Some(UlpDType::F32)),
                    Just(Some(UlpDType::Bf16)),
                    Just(Some(UlpDType::F16))
                ],
                0usize..20,
                0u8..4,
                proptest::collection::vec(any::<bool>(), rows * cols),
                any::<bool>(),
                any::<bool>(),
            )
        })
        .prop_map(
            |(
                rows,
                cols,
                values,
                da,
                de,
                ulp,
                top_k,
                mask_kind,
                mask_bits,
                assert_zero,
                equal_nan,
            )| Case {
                rows,
                cols,
                values,
                da,
                de,
                ulp,
                top_k,
                mask_kind,
                mask_bits,
                assert_zero,
                equal_nan,
            },
        )
}

fn mask(c: &Case) -> Option<Mask> {
    let shape = [c.rows, c.cols];
    let (mshape, axes) = match c.mask_kind {
        0 => return None,
        1 => (vec![c.rows], vec![0]),
        2 => (vec![c.cols], vec![1]),
        _ => (vec![c.rows, c.cols], vec![0, 1]),
    };
    let n: usize = mshape.iter().product();
    let bits: Vec<f64> = c.mask_bits[..n].iter().map(|&b| b as u8 as f64).collect();
    let t = Tensor::from_f64_as(DType::Bool, mshape, &bits).unwrap();
    Some(Mask::new(&t, axes, true, &shape).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn kernel_matches_the_reference_kernel_bit_for_bit(c in case()) {
        let shape = [c.rows, c.cols];
        let (av, ev): (Vec<f64>, Vec<f64>) = c.values.iter().copied().unzip();
        let a = build(DTYPES[c.da], &shape, &av);
        let e = build(DTYPES[c.de], &shape, &ev);
        let m = mask(&c);
        let opts = CompareOptions {
            top_k: c.top_k,
            ulp_dtype: c.ulp,
            assert_padded_zero: c.assert_zero,
            equal_nan: c.equal_nan,
            parallel: false,
            ..CompareOptions::default()
        };
        let fast = compare(&a, &e, m.as_ref(), &opts).unwrap();
        let reference = with_reference(|| compare(&a, &e, m.as_ref(), &opts).unwrap());
        prop_assert_eq!(exact(&fast), exact(&reference));
    }
}

#[test]
fn f32_pair_over_several_blocks_and_chunks_matches_the_reference() {
    // Raw f32 bit patterns (NaN, Inf, subnormals included) next to near
    // copies, over more than one chunk, with and without a row mask.
    let (rows, cols) = (3 * crate::kernel::CHUNK / 512 + 7, 512);
    let n = rows * cols;
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
    let mut e = Vec::with_capacity(n);
    let mut a = Vec::with_capacity(n);
    for _ in 0..n {
        let r = next();
        let x = if r.is_multiple_of(17) {
            f32::from_bits((r >> 32) as u32)
        } else {
            ((r >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 10.0
        };
        let y = match r % 7 {
            0 => f32::from_bits(next() as u32),
            _ => f32::from_bits(x.to_bits().wrapping_add(((r >> 8) % 5) as u32)),
        };
        e.push(x);
        a.push(y);
    }
    let at = Tensor::from_f32(vec![rows, cols], &a).unwrap();
    let et = Tensor::from_f32(vec![rows, cols], &e).unwrap();
    let bits: Vec<f64> = (0..rows).map(|i| (i % 3 == 1) as u8 as f64).collect();
    let mt = Tensor::from_f64_as(DType::Bool, vec![rows], &bits).unwrap();
    let mask = Mask::new(&mt, vec![0], true, &[rows, cols]).unwrap();
    // Both NaN at the same places in some elements, with varied payloads.
    assert!((0..n).any(|i| a[i].is_nan() && e[i].is_nan()));
    for (m, equal_nan) in [(None, false), (Some(&mask), false), (None, true)] {
        for ulp in [None, Some(UlpDType::Bf16)] {
            let opts = CompareOptions {
                top_k: 32,
                ulp_dtype: ulp,
                equal_nan,
                assert_padded_zero: true,
                parallel: false,
                ..CompareOptions::default()
            };
            let fast = compare(&at, &et, m, &opts).unwrap();
            let reference = with_reference(|| compare(&at, &et, m, &opts).unwrap());
            assert_eq!(exact(&fast), exact(&reference));
            let par = compare(
                &at,
                &et,
                m,
                &CompareOptions {
                    parallel: true,
                    ..opts
                },
            )
            .unwrap();
            assert_eq!(exact(&fast), exact(&par));
        }
    }
}

#[test]
fn bf16_and_f16_pairs_in_their_own_ulps_match_the_reference() {
    // Both sides stored in the type ULPs are measured in: the kernel takes
    // keys from the raw bits (`Kernel::RAW_KEYS`), the reference rounds each
    // value back from f64. Every 16-bit pattern appears as an expected
    // value (±0, subnormals, the largest finite, infinities, NaNs with
    // payloads), beside a copy a few ULPs off, its sign flipped, or any
    // other pattern; ULPs in the pair's own type, in f32 and none.
    let n = 1 << 17;
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
    let e: Vec<u16> = (0..n).map(|i| (i % 65536) as u16).collect();
    let a: Vec<u16> = e
        .iter()
        .map(|&x| {
            let r = next();
            match r % 6 {
                0 => r as u16 >> 3,
                1 => x ^ 0x8000,
                _ => x.wrapping_add((r >> 8) as u16 % 4),
            }
        })
        .collect();
    let bytes = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for dtype in [DType::Bf16, DType::F16] {
        let own = UlpDType::from_dtype(dtype);
        let at = Tensor::from_bytes(dtype, vec![n / 256, 256], bytes(&a)).unwrap();
        let et = Tensor::from_bytes(dtype, vec![n / 256, 256], bytes(&e)).unwrap();
        for (ulp, equal_nan) in [
            (own, false),
            (own, true),
            (Some(UlpDType::F32), false),
            (None, false),
        ] {
            let opts = CompareOptions {
                top_k: 16,
                ulp_dtype: ulp,
                equal_nan,
                parallel: false,
                ..CompareOptions::default()
            };
            let fast = compare(&at, &et, None, &opts).unwrap();
            let reference = with_reference(|| compare(&at, &et, None, &opts).unwrap());
            assert_eq!(exact(&fast), exact(&reference), "{dtype:?} ulp {ulp:?}");
            let scalar = with_scalar(|| compare(&at, &et, None, &opts).unwrap());
            assert_eq!(exact(&fast), exact(&scalar), "{dtype:?} ulp {ulp:?}");
            let avx2 = with_avx2(|| compare(&at, &et, None, &opts).unwrap());
            assert_eq!(exact(&fast), exact(&avx2), "{dtype:?} ulp {ulp:?}");
            if ulp == own {
                // Not all exact, not all apart: the keys were exercised.
                let h = fast.ulp_histogram.as_ref().unwrap();
                assert!(
                    fast.max_ulp.unwrap() > 1000,
                    "{dtype:?}: {:?}",
                    fast.max_ulp
                );
                assert!(h.total() > n as u64 / 2, "{dtype:?}: {}", h.total());
            }
        }
    }
}

/// Random f32 pairs over several chunks: mostly near copies (a few ULPs
/// off, some allclose violations after the first), with NaN, Inf and
/// arbitrary bit patterns sprinkled in at `rare` per mille.
fn f32_pairs(seed: u64, n: usize, rare: u64) -> (Vec<f32>, Vec<f32>) {
    let mut next = xorshift(seed | 1);
    let (mut a, mut e) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let r = next();
        let x = ((r >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 4.0;
        let y = match (r >> 8) % 1000 {
            k if k < rare => f32::from_bits(next() as u32),
            k if k < 2 * rare => [f32::NAN, f32::INFINITY, -0.0][(k % 3) as usize],
            k if k < 4 * rare => x + 1e-3,
            _ => f32::from_bits(x.to_bits().wrapping_add(((r >> 20) % 9) as u32)),
        };
        e.push(x);
        a.push(y);
    }
    (a, e)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn vector_scalar_reference_and_parallel_agree_bit_for_bit(
        seed in any::<u64>(),
        cols in 1usize..300,
        extra in 0usize..3000,
        rare in 0u64..4,
        masked in any::<bool>(),
        top_k in 0usize..40,
        ulp in prop_oneof![Just(None), Just(Some(UlpDType::F32))],
    ) {
        // Two chunks and a ragged tail; odd widths make runs start off a
        // multiple of eight, so the vector paths' scalar heads and tails run.
        let rows = (2 * crate::kernel::CHUNK + extra) / cols + 1;
        let n = rows * cols;
        let (a, e) = f32_pairs(seed, n, rare);
        let at = Tensor::from_f32(vec![rows, cols], &a).unwrap();
        let et = Tensor::from_f32(vec![rows, cols], &e).unwrap();
        let bits: Vec<f64> = (0..rows).map(|i| (i as u64 ^ seed).is_multiple_of(4) as u8 as f64).collect();
        let mt = Tensor::from_f64_as(DType::Bool, vec![rows], &bits).unwrap();
        let mask = Mask::new(&mt, vec![0], true, &[rows, cols]).unwrap();
        let m = masked.then_some(&mask);
        let opts = CompareOptions { top_k, ulp_dtype: ulp, parallel: false, ..CompareOptions::default() };
        let vector = compare(&at, &et, m, &opts).unwrap();
        let scalar = with_scalar(|| compare(&at, &et, m, &opts).unwrap());
        let avx2 = with_avx2(|| compare(&at, &et, m, &opts).unwrap());
        prop_assert_eq!(exact(&vector), exact(&avx2));
        // The public cap takes the same paths.
        for simd in [Simd::Scalar, Simd::Avx2] {
            let capped = compare(&at, &et, m, &CompareOptions { simd, ..opts.clone() }).unwrap();
            prop_assert_eq!(exact(&vector), exact(&capped));
        }
        let reference = with_reference(|| compare(&at, &et, m, &opts).unwrap());
        let par = compare(&at, &et, m, &CompareOptions { parallel: true, ..opts.clone() }).unwrap();
        let again = compare(&at, &et, m, &CompareOptions { parallel: true, ..opts }).unwrap();
        prop_assert_eq!(exact(&vector), exact(&scalar));
        prop_assert_eq!(exact(&vector), exact(&reference));
        prop_assert_eq!(exact(&vector), exact(&par));
        prop_assert_eq!(exact(&par), exact(&again));
        prop_assert_eq!(vector.count + vector.masked_out, n as u64);
    }
}

/// Random bf16 or f16 pairs (bit patterns) over several chunks, as
/// `f32_pairs`: mostly near copies 0-8 of their own ULPs off, with NaN, Inf,
/// -0 and arbitrary patterns at `rare` per mille, and subnormals around
/// zero in one element of 64.
fn pairs16(seed: u64, n: usize, rare: u64, dtype: DType) -> (Vec<u8>, Vec<u8>) {
    let mut next = xorshift(seed | 1);
    let (inf, nan) = match dtype {
        DType::Bf16 => (0x7f80u16, 0x7fc1u16),
        _ => (0x7c00, 0x7e01),
    };
    let (mut a, mut e) = (Vec::with_capacity(2 * n), Vec::with_capacity(2 * n));
    for _ in 0..n {
        let r = next();
        let v = ((r >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 4.0;
        let x = match dtype {
            DType::Bf16 => (v.to_bits() >> 16) as u16,
            _ => half::f16::from_f32(v).to_bits(),
        };
        let x = if r.is_multiple_of(64) {
            (r >> 50) as u16 & 0x80ff
        } else {
            x
        };
        let y = match (r >> 8) % 1000 {
            k if k < rare => next() as u16,
            k if k < 2 * rare => [nan, inf, 0x8000][(k % 3) as usize],
            k if k < 4 * rare => x ^ 0x8000,
            _ => x.wrapping_add(((r >> 20) % 9) as u16),
        };
        e.extend_from_slice(&x.to_le_bytes());
        a.extend_from_slice(&y.to_le_bytes());
    }
    (a, e)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn sixteen_bit_vector_scalar_reference_and_parallel_agree_bit_for_bit(
        seed in any::<u64>(),
        cols in 1usize..300,
        extra in 0usize..3000,
        rare in 0u64..4,
        masked in any::<bool>(),
        top_k in 0usize..40,
        bf16 in any::<bool>(),
        tol in 0usize..3,
    ) {
        // As the f32 test above, for bf16 and f16 pairs with ULPs in their
        // own type (the AVX-512 and AVX2 paths), and tolerances
        // from tight (most elements violate) to loose (none do).
        let dtype = if bf16 { DType::Bf16 } else { DType::F16 };
        let rows = (2 * crate::kernel::CHUNK + extra) / cols + 1;
        let n = rows * cols;
        let (a, e) = pairs16(seed, n, rare, dtype);
        let at = Tensor::from_bytes(dtype, vec![rows, cols], a).unwrap();
        let et = Tensor::from_bytes(dtype, vec![rows, cols], e).unwrap();
        let bits: Vec<f64> = (0..rows).map(|i| (i as u64 ^ seed).is_multiple_of(4) as u8 as f64).collect();
        let mt = Tensor::from_f64_as(DType::Bool, vec![rows], &bits).unwrap();
        let mask = Mask::new(&mt, vec![0], true, &[rows, cols]).unwrap();
        let m = masked.then_some(&mask);
        let (atol, rtol) = [(0.0, 0.0), (1e-5, 1e-3), (1e-2, 1e-1)][tol];
        let opts = CompareOptions { top_k, atol, rtol, parallel: false, ..CompareOptions::default() };
        let vector = compare(&at, &et, m, &opts).unwrap();
        let scalar = with_scalar(|| compare(&at, &et, m, &opts).unwrap());
        let capped = compare(&at, &et, m, &CompareOptions { simd: Simd::Scalar, ..opts.clone() }).unwrap();
        let avx2 = with_avx2(|| compare(&at, &et, m, &opts).unwrap());
        prop_assert_eq!(exact(&vector), exact(&avx2));
        let reference = with_reference(|| compare(&at, &et, m, &opts).unwrap());
        let par = compare(&at, &et, m, &CompareOptions { parallel: true, ..opts.clone() }).unwrap();
        prop_assert_eq!(exact(&vector), exact(&scalar));
        prop_assert_eq!(exact(&vector), exact(&capped));
        prop_assert_eq!(exact(&vector), exact(&reference));
        prop_assert_eq!(exact(&vector), exact(&par));
        prop_assert_eq!(vector.count + vector.masked_out, n as u64);
        prop_assert!(vector.max_ulp.is_some());
    }
}

#[test]
fn top_k_lists_that_change_in_every_block_match_the_scalar_kernel() {
    // The error grows by one ULP every 200 elements, so nearly every block
    // of the vector path holds a new top-K entry, by a hair (1e-10), among
    // 200-element runs of exact ties; distances reach the histogram's
    // log2 buckets. The vector path looks for candidates once a block.
    let n = crate::kernel::CHUNK + 5003;
    let e = vec![1e-3f32; n];
    let a: Vec<f32> = (0..n)
        .map(|i| f32::from_bits(1e-3f32.to_bits() + (i / 200) as u32))
        .collect();
    let at = Tensor::from_f32(vec![n], &a).unwrap();
    let et = Tensor::from_f32(vec![n], &e).unwrap();
    for top_k in [1, 8, 33] {
        let opts = CompareOptions {
            top_k,
            atol: 0.0,
            rtol: 1e-4,
            parallel: false,
            ..CompareOptions::default()
        };
        let vector = compare(&at, &et, None, &opts).unwrap();
        let scalar = with_scalar(|| compare(&at, &et, None, &opts).unwrap());
        let avx2 = with_avx2(|| compare(&at, &et, None, &opts).unwrap());
        let reference = with_reference(|| compare(&at, &et, None, &opts).unwrap());
        assert_eq!(exact(&vector), exact(&avx2));
        assert_eq!(exact(&vector), exact(&scalar));
        assert_eq!(exact(&vector), exact(&reference));
        // The worst are the first `top_k` elements at the largest distance.
        let last = (n - 1) / 200 * 200;
        assert_eq!(vector.worst[0].index, vec![last]);
        assert_eq!(vector.max_ulp, Some(((n - 1) / 200) as u64));
        assert!(vector.allclose_violations > 0);
    }
}

#[test]
fn violations_at_the_allclose_boundary_match_the_scalar_kernel() {
    // An oracle of 1.0 and an actual 0 to 31 ULPs above it, with rare
    // elements at K and K + 1 ULPs, the line drawn a hair (1e-9) below
    // K + 1 ULPs: by atol alone, by rtol alone, or by both. The vector path
    // counts violations only in blocks whose largest |a - e| and excess
    // allow one, so its test must hold exactly at the line.
    const K: u32 = 5000;
    let n = crate::kernel::CHUNK + 3001;
    let one = 1.0f32.to_bits();
    let line = f64::from(K + 1) * f64::from(f32::EPSILON) * (1.0 - 1e-9);
    for (atol, rtol) in [(line, 0.0), (0.0, line), (line / 2.0, line / 2.0)] {
        let a: Vec<f32> = (0..n)
            .map(|i| {
                let ulps = match i % 9973 {
                    0 => K + 1,
                    1 => K,
                    _ => (i as u32).wrapping_mul(2_654_435_761) >> 27,
                };
                f32::from_bits(one + ulps)
            })
            .collect();
        let e = vec![1.0f32; n];
        let at = Tensor::from_f32(vec![n], &a).unwrap();
        let et = Tensor::from_f32(vec![n], &e).unwrap();
        let opts = CompareOptions {
            atol,
            rtol,
            parallel: false,
            ..CompareOptions::default()
        };
        let vector = compare(&at, &et, None, &opts).unwrap();
        let scalar = with_scalar(|| compare(&at, &et, None, &opts).unwrap());
        let avx2 = with_avx2(|| compare(&at, &et, None, &opts).unwrap());
        let reference = with_reference(|| compare(&at, &et, None, &opts).unwrap());
        assert_eq!(exact(&vector), exact(&avx2), "atol {atol} rtol {rtol}");
        assert_eq!(exact(&vector), exact(&scalar), "atol {atol} rtol {rtol}");
        assert_eq!(exact(&vector), exact(&reference), "atol {atol} rtol {rtol}");
        // The K + 1 elements, and only they.
        assert_eq!(
            vector.allclose_violations,
            n.div_ceil(9973) as u64,
            "atol {atol} rtol {rtol}"
        );
    }
}
