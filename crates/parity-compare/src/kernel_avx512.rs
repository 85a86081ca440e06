//! The AVX-512 path for f32 against f32, bf16 against bf16 and f16 against
//! f16 (ULPs in the pair's own type, or none), unpadded runs: the AVX2
//! path's design (`kernel_avx2.rs`) at twice the width. A 16-bit pair is
//! widened as it is loaded: its bits zero-extended to 32-bit lanes for the
//! integer work (keys from the 16-bit magnitudes, as `key_16`), its values
//! converted exactly to f64 for the f64 work (bf16 through a shift into an
//! f32, f16 through `vcvtph2ps`).
//! The integer work takes sixteen elements a step; the f64 work takes eight,
//! one vector per sum whose lane `k` is the sums' lane `k` (see
//! [`crate::kernel::LANES`]), so every lane sees the same additions in the
//! same order as on the scalar and AVX2 paths and results stay
//! bit-identical. A group of sixteen with a NaN or an infinity goes
//! through the scalar `Kernel::segment` with the running sums handed over.
//!
//! Why a second vector path (docs/performance.md, "AVX-512"): the AVX2
//! loop runs about ten instructions an element and is bound by how many
//! the core can issue, not by its arithmetic units. Half as many
//! instructions, each on twice the data, do the same arithmetic in fewer
//! cycles even on a core that splits a 512-bit operation in two (Zen 4).
//! Mask registers also save the AVX2 path's `movemask` steps. The top-K
//! lists, the allclose violations and the queued large distances are the
//! AVX2 path's functions, called once a block as there.

use crate::elem::{Elem, UlpKey};
use crate::kernel::{Acc, Kernel, Sums, LANES};
use crate::kernel_avx2::count_queued;
use crate::kernel_hist::{RunHist, QUEUE, SMALL};
use crate::ulp::UlpDType;
use std::arch::x86_64::*;

/// How far ahead (elements) the integer pass prefetches each input: two
/// blocks. Measured on the 1 GiB f32 pair, parallel, six alternated rounds:
/// 46.5-48.4 ms at the fastest against 48.7-50.4 without.
const PREFETCH: usize = 2 * BLOCK_GROUPS * STEP;

/// Elements a step of the integer work.
const STEP: usize = 16;

/// Groups of sixteen per block: 256 elements, as on the AVX2 path. At most
/// 255 so that a packed 8-bit histogram counter cannot overflow within a
/// block; each group fills two of the histogram's queue slots.
const BLOCK_GROUPS: usize = 16;
const _: () = assert!(BLOCK_GROUPS <= 255 && 2 * BLOCK_GROUPS <= QUEUE);
// The packed counters' table (`one_at`) has a lane for each of 0..SMALL,
// and one f64 vector holds the eight lanes.
const _: () = assert!(SMALL == 4 && LANES == 8);

/// The five lane sums as vectors.
#[derive(Clone, Copy)]
struct VecSums {
    abs: __m512d,
    sq: __m512d,
    aa: __m512d,
    ee: __m512d,
    ae: __m512d,
}

impl VecSums {
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn load(s: &Sums) -> VecSums {
        // SAFETY: `l` is eight f64; unaligned load.
        let v = |l: &[f64; LANES]| unsafe { _mm512_loadu_pd(l.as_ptr()) };
        VecSums {
            abs: v(&s.sum_abs),
            sq: v(&s.sum_sq),
            aa: v(&s.sum_aa),
            ee: v(&s.sum_ee),
            ae: v(&s.sum_ae),
        }
    }

    #[target_feature(enable = "avx512f")]
    #[inline]
    fn store(&self, s: &mut Sums) {
        // SAFETY: `l` is eight f64; unaligned store.
        let v = |l: &mut [f64; LANES], x: __m512d| unsafe { _mm512_storeu_pd(l.as_mut_ptr(), x) };
        v(&mut s.sum_abs, self.abs);
        v(&mut s.sum_sq, self.sq);
        v(&mut s.sum_aa, self.aa);
        v(&mut s.sum_ee, self.ee);
        v(&mut s.sum_ae, self.ae);
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Elements `start..end`, none padded; only when `VEC_PATH`.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,popcnt,f16c")]
    pub(crate) fn segment_avx512(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
    ) {
        // Up to a multiple of eight on the scalar path, so that element k of
        // a group of eight is sum lane k.
        let head = start.next_multiple_of(LANES).min(end);
        if head > start {
            self.segment(acc, hist, a, e, start, head, |_| false);
        }
        let groups = (end - head) / STEP;
        let body = head + groups * STEP;
        // Bytes an element, the same on both sides (`VEC_PATH`).
        let w = self.a.size();
        let kind = A::ULP;
        let ra = &a[head * w..body * w];
        let re = &e[head * w..body * w];
        let abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(i64::MAX));
        let (sign, max_finite) = match kind {
            Some(UlpDType::F32) => (i32::MIN, 0x7f7f_ffff),
            Some(UlpDType::Bf16) => (0x8000, 0x7f7f),
            _ => (0x8000, 0x7bff),
        };
        let mag32 = _mm512_set1_epi32(!sign);
        let sign = _mm512_set1_epi32(sign);
        let max_finite = _mm512_set1_epi32(max_finite);
        let zero = _mm512_setzero_si512();
        let not_small = _mm512_set1_epi32(!(SMALL as i32 - 1));
        let small_limit = _mm512_set1_epi32(SMALL as i32);
        // Lane d < SMALL: 1 << 8d; lane SMALL: 0.
        let one_at = _mm512_setr_epi32(
            1,
            1 << 8,
            1 << 16,
            1 << 24,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        );
        let rtol = _mm512_set1_pd(self.rtol);
        let mut s = acc.s;
        let mut v = VecSums::load(&s);
        let mut max_abs = _mm512_set1_pd(s.max_abs);
        let mut max_excess = _mm512_set1_pd(s.max_excess);
        let mut equal = 0u64;
        // Per lane: elements at each small distance.
        let mut small = [zero; SMALL as usize];
        let mut max_big = 0u32;
        let (mut clean, mut g) = (0usize, 0usize);
        while g < groups {
            let g_end = (g + BLOCK_GROUPS).min(groups);
            let mut block_abs = _mm512_set1_pd(f64::NEG_INFINITY);
            let mut block_excess = _mm512_set1_pd(f64::NEG_INFINITY);
            // Elements at distance d in byte d of each lane.
            let mut packed = zero;
            let mut stop = g_end;
            // Groups with a distance of SMALL or more, queued in `hist`.
            let mut n_big = 0usize;
            // First the integer work, up to the first group with a NaN or
            // an infinity.
            for gi in g..g_end {
                let (pa, pe) = (
                    ra.as_ptr().wrapping_add(gi * STEP * w),
                    re.as_ptr().wrapping_add(gi * STEP * w),
                );
                // A prefetch past the end of the data is harmless.
                _mm_prefetch::<_MM_HINT_T0>(pa.wrapping_add(PREFETCH * w).cast());
                _mm_prefetch::<_MM_HINT_T0>(pe.wrapping_add(PREFETCH * w).cast());
                // SAFETY: gi < groups and both slices hold STEP * w * groups
                // bytes: a group's STEP * w bytes.
                let (ua, ue) = unsafe { (bits16(kind, pa), bits16(kind, pe)) };
                let (ma, me) = (_mm512_and_si512(ua, mag32), _mm512_and_si512(ue, mag32));
                let top = _mm512_max_epu32(ma, me);
                if _mm512_cmpgt_epu32_mask(top, max_finite) != 0 {
                    stop = gi;
                    break;
                }
                // A popcount on the integer units: one vector operation.
                equal += _mm512_cmpeq_epi32_mask(ua, ue).count_ones() as u64;
                if U::ENABLED {
                    // As on the AVX2 path: distance d < SMALL adds 1 << 8d,
                    // a larger one adds 0, and every group is written to the
                    // queue, which keeps only those with one.
                    let dist = ulp_dist16(ua, ue, ma, me, top, sign);
                    let capped = _mm512_min_epu32(dist, small_limit);
                    packed = _mm512_add_epi32(packed, _mm512_permutexvar_epi32(capped, one_at));
                    let slot = hist.queue_pair(n_big);
                    // SAFETY: a queue pair is 64 bytes; unaligned store.
                    unsafe { _mm512_storeu_si512(slot.as_mut_ptr().cast(), dist) };
                    n_big += (_mm512_test_epi32_mask(dist, not_small) != 0) as usize;
                }
            }
            // Then the f64 work on the groups before it, a second pass over
            // the block (in L1), eight elements a step in flat order.
            for gi in g..stop {
                for h in 0..2 {
                    let off = (gi * STEP + 8 * h) * w;
                    // SAFETY: gi < groups and both slices hold STEP * w *
                    // groups bytes: elements 8h..8h + 8 of the group.
                    let (a8, e8) = unsafe {
                        (
                            f64x8(kind, ra.as_ptr().add(off)),
                            f64x8(kind, re.as_ptr().add(off)),
                        )
                    };
                    let d = _mm512_sub_pd(a8, e8);
                    let ad = _mm512_and_pd(d, abs_mask);
                    let r = _mm512_mul_pd(rtol, _mm512_and_pd(e8, abs_mask));
                    let x = _mm512_sub_pd(ad, r);
                    v.abs = _mm512_add_pd(v.abs, ad);
                    v.sq = _mm512_add_pd(v.sq, _mm512_mul_pd(d, d));
                    v.aa = _mm512_fmadd_pd(a8, a8, v.aa);
                    v.ee = _mm512_fmadd_pd(e8, e8, v.ee);
                    v.ae = _mm512_fmadd_pd(a8, e8, v.ae);
                    // Maxima of non-NaN values, none of them -0: order-free.
                    block_abs = _mm512_max_pd(block_abs, ad);
                    block_excess = _mm512_max_pd(block_excess, x);
                }
            }
            if n_big > 0 {
                max_big = max_big.max(count_queued(hist, 2 * n_big));
            }
            for (d, count) in small.iter_mut().enumerate() {
                let field = _mm512_srlv_epi32(packed, _mm512_set1_epi32(8 * d as i32));
                let field = _mm512_and_si512(field, _mm512_set1_epi32(0xff));
                *count = _mm512_add_epi32(*count, field);
            }
            max_abs = _mm512_max_pd(max_abs, block_abs);
            max_excess = _mm512_max_pd(max_excess, block_excess);
            let top = (
                _mm512_reduce_max_pd(block_abs),
                _mm512_reduce_max_pd(block_excess),
            );
            let range = (head + g * STEP, head + stop * STEP);
            self.block_end(acc, &mut s, a, e, range, top);
            clean += stop - g;
            g = g_end;
            if stop < g_end {
                // Hand the running state to the scalar kernel for these sixteen.
                v.store(&mut s);
                acc.s = s;
                self.scalar_group(acc, hist, a, e, head + stop * STEP, STEP);
                s = acc.s;
                v = VecSums::load(&s);
                g = stop + 1;
            }
        }
        v.store(&mut s);
        s.max_abs = s.max_abs.max(_mm512_reduce_max_pd(max_abs));
        s.max_excess = s.max_excess.max(_mm512_reduce_max_pd(max_excess));
        let counts = small.map(|c| hsum_epi32(c));
        acc.s = s;
        self.finish(acc, hist, counts, max_big, (STEP * clean) as u64, equal);
        if body < end {
            self.segment(acc, hist, a, e, body, end, |_| false);
        }
    }
}

/// Sum of sixteen u32 lanes: at most one run's elements, below 2^32
/// (`kernel_hist` asserts a chunk fits a u32 counter).
#[target_feature(enable = "avx512f")]
#[inline]
fn hsum_epi32(v: __m512i) -> u64 {
    _mm512_reduce_add_epi32(v) as u32 as u64
}

/// ULP distances of sixteen finite pairs, as `ulp_dist8` on the AVX2 path
/// computes them for f32 (the distance between sign-magnitude keys, -0 and
/// +0 alike), from the bits `ua`, `ue` (f32, or 16-bit patterns
/// zero-extended), the magnitudes `ma`, `me`, their maximum `top` and the
/// sign bit `sign`: the larger magnitude minus the smaller where the signs
/// agree, their sum where they differ (below 2^32: both are at most
/// 0x7f7f_ffff).
#[target_feature(enable = "avx512f,avx512dq")]
#[inline]
fn ulp_dist16(
    ua: __m512i,
    ue: __m512i,
    ma: __m512i,
    me: __m512i,
    top: __m512i,
    sign: __m512i,
) -> __m512i {
    let apart = _mm512_test_epi32_mask(_mm512_xor_si512(ua, ue), sign);
    let same = _mm512_sub_epi32(top, _mm512_min_epu32(ma, me));
    _mm512_mask_add_epi32(same, apart, ma, me)
}

/// Sixteen elements' bits as 32-bit lanes: an f32's bits, or a 16-bit
/// float's zero-extended.
///
/// # Safety
/// `p` points at sixteen elements of the storage `kind` names
/// (`Elem::ULP`: f32, bf16 or f16).
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn bits16(kind: Option<UlpDType>, p: *const u8) -> __m512i {
    // SAFETY: the caller's; unaligned loads of 64 or 32 bytes.
    unsafe {
        match kind {
            Some(UlpDType::F32) => _mm512_loadu_si512(p.cast()),
            _ => _mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast())),
        }
    }
}

/// Eight elements as f64, exactly: an f32 converted; a bf16 shifted into
/// the top of an f32 first; an f16 through `vcvtph2ps` (subnormals
/// included; the vector paths never convert a NaN or an infinity).
///
/// # Safety
/// `p` points at eight elements of the storage `kind` names.
#[target_feature(enable = "avx512f,avx2,f16c")]
#[inline]
unsafe fn f64x8(kind: Option<UlpDType>, p: *const u8) -> __m512d {
    // SAFETY: the caller's; unaligned loads of 32 or 16 bytes.
    unsafe {
        match kind {
            Some(UlpDType::F32) => _mm512_cvtps_pd(_mm256_loadu_ps(p.cast())),
            Some(UlpDType::Bf16) => {
                let w = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast()));
                _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32::<16>(w)))
            }
            _ => _mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(p.cast()))),
        }
    }
}
