//! The AVX2 path for f32 against f32 (ULPs in f32, or none), unpadded runs:
//! eight elements at a time, two vectors of four f64 whose lane `k` is the
//! sums' lane `k` (see [`crate::kernel::LANES`]). A group of eight with both
//! sides finite and no top-K candidate is folded in here (allclose
//! violations are counted here too once the first one is known); any other
//! group goes through the scalar `Kernel::segment` with the running sums
//! handed over, so every lane sees the same additions in the same order as
//! on the scalar path and results stay bit-identical.
//!
//! Why this shape (docs/performance.md): the old SSE2 path added each
//! element into one running sum, so five dependent f64 add chains, not
//! memory, set its speed; with four lanes per sum the chains overlap.

use crate::elem::{Elem, UlpKey};
use crate::kernel::{Acc, Kernel, Lanes, Sums};
use crate::kernel_hist::{RunHist, EXACT_LIMIT};
use std::arch::x86_64::*;

/// The five lane sums as vectors.
#[derive(Clone, Copy)]
struct VecSums {
    abs: __m256d,
    sq: __m256d,
    aa: __m256d,
    ee: __m256d,
    ae: __m256d,
}

impl VecSums {
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load(s: &Sums) -> VecSums {
        // SAFETY: `l` is four f64; unaligned load.
        let v = |l: &Lanes| unsafe { _mm256_loadu_pd(l.as_ptr()) };
        VecSums {
            abs: v(&s.sum_abs),
            sq: v(&s.sum_sq),
            aa: v(&s.sum_aa),
            ee: v(&s.sum_ee),
            ae: v(&s.sum_ae),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn store(&self, s: &mut Sums) {
        // SAFETY: `l` is four f64; unaligned store.
        let v = |l: &mut Lanes, x: __m256d| unsafe { _mm256_storeu_pd(l.as_mut_ptr(), x) };
        v(&mut s.sum_abs, self.abs);
        v(&mut s.sum_sq, self.sq);
        v(&mut s.sum_aa, self.aa);
        v(&mut s.sum_ee, self.ee);
        v(&mut s.sum_ae, self.ae);
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Whether [`Kernel::segment_avx2`] applies to this kernel.
    pub(crate) const F32_PATH: bool = A::IS_F32 && E::IS_F32 && (U::IS_F32 || !U::ENABLED);

    /// Elements `start..end`, none padded; only when `F32_PATH`.
    #[target_feature(enable = "avx2,popcnt")]
    pub(crate) fn segment_avx2(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
    ) {
        // Up to a multiple of four on the scalar path, so vector lane k is sum lane k.
        let head = start.next_multiple_of(4).min(end);
        if head > start {
            self.segment(acc, hist, a, e, start, head, |_| false);
        }
        let groups = (end - head) / 8;
        let body = head + groups * 8;
        let ra = &a[head * 4..body * 4];
        let re = &e[head * 4..body * 4];
        let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let mag32 = _mm256_set1_epi32(i32::MAX);
        let inf32 = _mm256_set1_epi32(0x7f80_0000);
        let exact_max = _mm256_set1_epi32(EXACT_LIMIT as i32);
        let (atol, rtol) = (_mm256_set1_pd(self.atol), _mm256_set1_pd(self.rtol));
        let mut s = acc.s;
        let mut v = VecSums::load(&s);
        let mut wf = _mm256_set1_pd(acc.worst.floor());
        let mut xf = _mm256_set1_pd(acc.excess.floor());
        let mut max_abs = _mm256_set1_pd(s.max_abs);
        let mut max_excess = _mm256_set1_pd(s.max_excess);
        let mut max_dist = _mm256_setzero_si256();
        let mut need_first = acc.first.is_none();
        let (mut equal, mut handed_over, mut violations) = (0u64, 0u64, 0u64);
        for (g, (ca, ce)) in ra.chunks_exact(32).zip(re.chunks_exact(32)).enumerate() {
            // SAFETY: each chunk is 32 bytes; unaligned loads.
            let (ua, ue) = unsafe {
                (
                    _mm256_loadu_si256(ca.as_ptr().cast()),
                    _mm256_loadu_si256(ce.as_ptr().cast()),
                )
            };
            let fin = _mm256_and_si256(
                _mm256_cmpgt_epi32(inf32, _mm256_and_si256(ua, mag32)),
                _mm256_cmpgt_epi32(inf32, _mm256_and_si256(ue, mag32)),
            );
            let mut ordinary = _mm256_movemask_ps(_mm256_castsi256_ps(fin)) == 0xff;
            if ordinary {
                let (fa, fe) = (_mm256_castsi256_ps(ua), _mm256_castsi256_ps(ue));
                let a0 = _mm256_cvtps_pd(_mm256_castps256_ps128(fa));
                let a1 = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(fa));
                let e0 = _mm256_cvtps_pd(_mm256_castps256_ps128(fe));
                let e1 = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(fe));
                let (d0, d1) = (_mm256_sub_pd(a0, e0), _mm256_sub_pd(a1, e1));
                let (ad0, ad1) = (_mm256_and_pd(d0, abs_mask), _mm256_and_pd(d1, abs_mask));
                let r0 = _mm256_mul_pd(rtol, _mm256_and_pd(e0, abs_mask));
                let r1 = _mm256_mul_pd(rtol, _mm256_and_pd(e1, abs_mask));
                let (x0, x1) = (_mm256_sub_pd(ad0, r0), _mm256_sub_pd(ad1, r1));
                let cand = _mm256_or_pd(
                    _mm256_or_pd(
                        _mm256_cmp_pd::<_CMP_GT_OQ>(ad0, wf),
                        _mm256_cmp_pd::<_CMP_GT_OQ>(x0, xf),
                    ),
                    _mm256_or_pd(
                        _mm256_cmp_pd::<_CMP_GT_OQ>(ad1, wf),
                        _mm256_cmp_pd::<_CMP_GT_OQ>(x1, xf),
                    ),
                );
                let bad =
                    _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(ad0, _mm256_add_pd(atol, r0)))
                        | (_mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(
                            ad1,
                            _mm256_add_pd(atol, r1),
                        )) << 4);
                // The first violation needs its values: the scalar path records it.
                ordinary = _mm256_movemask_pd(cand) == 0 && !(need_first && bad != 0);
                if ordinary {
                    violations += bad.count_ones() as u64;
                    // Element k, then element k + 4, into lane k: in flat order.
                    v.abs = _mm256_add_pd(_mm256_add_pd(v.abs, ad0), ad1);
                    v.sq = _mm256_add_pd(
                        _mm256_add_pd(v.sq, _mm256_mul_pd(d0, d0)),
                        _mm256_mul_pd(d1, d1),
                    );
                    v.aa = _mm256_add_pd(
                        _mm256_add_pd(v.aa, _mm256_mul_pd(a0, a0)),
                        _mm256_mul_pd(a1, a1),
                    );
                    v.ee = _mm256_add_pd(
                        _mm256_add_pd(v.ee, _mm256_mul_pd(e0, e0)),
                        _mm256_mul_pd(e1, e1),
                    );
                    v.ae = _mm256_add_pd(
                        _mm256_add_pd(v.ae, _mm256_mul_pd(a0, e0)),
                        _mm256_mul_pd(a1, e1),
                    );
                    // Maxima of non-NaN values, none of them -0: order-free.
                    max_abs = _mm256_max_pd(max_abs, _mm256_max_pd(ad0, ad1));
                    max_excess = _mm256_max_pd(max_excess, _mm256_max_pd(x0, x1));
                    let eq = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ua, ue)));
                    equal += eq.count_ones() as u64;
                    if U::ENABLED {
                        let dist = ulp_dist8(ua, ue);
                        max_dist = _mm256_max_epu32(max_dist, dist);
                        let small = _mm256_cmpeq_epi32(_mm256_min_epu32(dist, exact_max), dist);
                        let all_exact = _mm256_movemask_epi8(small) == -1;
                        let mut d = [0u32; 8];
                        // SAFETY: `d` is 32 bytes; unaligned store.
                        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), dist) };
                        hist.add8(&d, all_exact);
                    }
                }
            }
            if !ordinary {
                // Hand the running state to the scalar kernel for these eight.
                v.store(&mut s);
                acc.s = s;
                self.scalar_group(acc, hist, a, e, head + g * 8);
                handed_over += 1;
                s = acc.s;
                v = VecSums::load(&s);
                wf = _mm256_set1_pd(acc.worst.floor());
                xf = _mm256_set1_pd(acc.excess.floor());
                need_first = acc.first.is_none();
            }
        }
        v.store(&mut s);
        s.max_abs = s.max_abs.max(hmax_pd(max_abs));
        s.max_excess = s.max_excess.max(hmax_pd(max_excess));
        let mut d = [0u32; 8];
        // SAFETY: `d` is 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), max_dist) };
        s.max_ulp = s.max_ulp.max(d.iter().copied().max().unwrap_or(0) as u64);
        let clean = 8 * (groups as u64 - handed_over);
        s.count += clean;
        s.numeric += clean;
        s.bitwise_mismatches += clean - equal;
        s.allclose_violations += violations;
        acc.s = s;
        if body < end {
            self.segment(acc, hist, a, e, body, end, |_| false);
        }
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Elements `g0..g0 + 8` on the scalar path. Kept out of line so the
    /// vector loop's registers are not spilled on its (common) path.
    #[cold]
    #[inline(never)]
    fn scalar_group(&self, acc: &mut Acc, hist: &mut RunHist, a: &[u8], e: &[u8], g0: usize) {
        self.segment(acc, hist, a, e, g0, g0 + 8, |_| false);
    }
}

/// Largest of four non-NaN f64.
#[target_feature(enable = "avx2")]
#[inline]
fn hmax_pd(v: __m256d) -> f64 {
    let mut l = [0f64; 4];
    // SAFETY: `l` is 32 bytes.
    unsafe { _mm256_storeu_pd(l.as_mut_ptr(), v) };
    l[0].max(l[1]).max(l[2].max(l[3]))
}

/// f32 ULP distances of eight finite pairs: |key(a) - key(e)| with the
/// sign-magnitude keys of `key_f32_bits`, exact in u32 (keys of finite
/// values lie within ±0x7f7f_ffff).
#[target_feature(enable = "avx2")]
#[inline]
fn ulp_dist8(ua: __m256i, ue: __m256i) -> __m256i {
    let key = |u: __m256i| {
        let sign = _mm256_srai_epi32::<31>(u);
        let mag = _mm256_and_si256(u, _mm256_set1_epi32(i32::MAX));
        _mm256_sub_epi32(_mm256_xor_si256(mag, sign), sign)
    };
    let (ka, ke) = (key(ua), key(ue));
    let diff = _mm256_sub_epi32(ka, ke);
    let neg = _mm256_cmpgt_epi32(ke, ka);
    _mm256_sub_epi32(_mm256_xor_si256(diff, neg), neg)
}
