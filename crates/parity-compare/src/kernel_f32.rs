//! An SSE2 path for f32 against f32 (ULPs in f32, or none), unpadded runs:
//! four elements at a time. A group of four that is entirely ordinary (both
//! sides finite, no allclose violation, no top-K candidate) is folded in
//! here; any other group goes through the scalar `Kernel::segment`, with the
//! running sums handed over, so every sum sees the same additions in the
//! same order and results stay bit-identical.

use crate::elem::{Elem, UlpKey};
use crate::histogram::EXACT_MAX;
use crate::kernel::{Acc, Hist4, Kernel};
use std::arch::x86_64::*;

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Whether [`Kernel::segment_f32`] applies to this kernel.
    pub(crate) const F32_PATH: bool = A::IS_F32 && E::IS_F32 && (U::IS_F32 || !U::ENABLED);

    /// Elements `start..end`, none padded; only when `F32_PATH`.
    #[target_feature(enable = "sse2")]
    pub(crate) fn segment_f32(
        &self,
        acc: &mut Acc,
        hist: &mut Hist4,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
    ) {
        let groups = (end - start) / 4;
        let ra = &a[start * 4..(start + groups * 4) * 4];
        let re = &e[start * 4..(start + groups * 4) * 4];
        let abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(i64::MAX));
        let mag32 = _mm_set1_epi32(i32::MAX);
        let inf32 = _mm_set1_epi32(0x7f80_0000);
        let (atol, rtol) = (_mm_set1_pd(self.atol), _mm_set1_pd(self.rtol));
        let mut s = acc.s;
        let mut wf = _mm_set1_pd(acc.worst.floor());
        let mut xf = _mm_set1_pd(acc.excess.floor());
        let mut s_abs_sq = _mm_set_pd(s.sum_sq, s.sum_abs);
        let mut s_aa_ee = _mm_set_pd(s.sum_ee, s.sum_aa);
        let mut s_ae = _mm_set_sd(s.sum_ae);
        let mut max_abs = _mm_set1_pd(s.max_abs);
        let mut max_excess = _mm_set1_pd(s.max_excess);
        let (mut bitwise, mut clean) = (0u64, 0u64);
        let mut max_dist = 0u32;
        for (g, (ca, ce)) in ra.chunks_exact(16).zip(re.chunks_exact(16)).enumerate() {
            let ua = bits4(ca);
            let ue = bits4(ce);
            let fin = _mm_and_si128(
                _mm_cmplt_epi32(_mm_and_si128(ua, mag32), inf32),
                _mm_cmplt_epi32(_mm_and_si128(ue, mag32), inf32),
            );
            let mut ordinary = _mm_movemask_ps(_mm_castsi128_ps(fin)) == 0xf;
            if ordinary {
                let (fa, fe) = (_mm_castsi128_ps(ua), _mm_castsi128_ps(ue));
                let (a0, e0) = (_mm_cvtps_pd(fa), _mm_cvtps_pd(fe));
                let (a1, e1) = (
                    _mm_cvtps_pd(_mm_movehl_ps(fa, fa)),
                    _mm_cvtps_pd(_mm_movehl_ps(fe, fe)),
                );
                let (d0, d1) = (_mm_sub_pd(a0, e0), _mm_sub_pd(a1, e1));
                let (ad0, ad1) = (_mm_and_pd(d0, abs_mask), _mm_and_pd(d1, abs_mask));
                let (r0, r1) = (
                    _mm_mul_pd(rtol, _mm_and_pd(e0, abs_mask)),
                    _mm_mul_pd(rtol, _mm_and_pd(e1, abs_mask)),
                );
                let (x0, x1) = (_mm_sub_pd(ad0, r0), _mm_sub_pd(ad1, r1));
                let flagged = _mm_or_pd(
                    _mm_or_pd(
                        _mm_cmpgt_pd(ad0, _mm_add_pd(atol, r0)),
                        _mm_cmpgt_pd(ad1, _mm_add_pd(atol, r1)),
                    ),
                    _mm_or_pd(
                        _mm_or_pd(_mm_cmpgt_pd(ad0, wf), _mm_cmpgt_pd(ad1, wf)),
                        _mm_or_pd(_mm_cmpgt_pd(x0, xf), _mm_cmpgt_pd(x1, xf)),
                    ),
                );
                ordinary = _mm_movemask_pd(flagged) == 0;
                if ordinary {
                    // In element order: lane 0 of each pair, then lane 1.
                    let (sq0, sq1) = (_mm_mul_pd(d0, d0), _mm_mul_pd(d1, d1));
                    let (aa0, aa1) = (_mm_mul_pd(a0, a0), _mm_mul_pd(a1, a1));
                    let (ee0, ee1) = (_mm_mul_pd(e0, e0), _mm_mul_pd(e1, e1));
                    let (ae0, ae1) = (_mm_mul_pd(a0, e0), _mm_mul_pd(a1, e1));
                    s_abs_sq = _mm_add_pd(s_abs_sq, _mm_unpacklo_pd(ad0, sq0));
                    s_abs_sq = _mm_add_pd(s_abs_sq, _mm_unpackhi_pd(ad0, sq0));
                    s_abs_sq = _mm_add_pd(s_abs_sq, _mm_unpacklo_pd(ad1, sq1));
                    s_abs_sq = _mm_add_pd(s_abs_sq, _mm_unpackhi_pd(ad1, sq1));
                    s_aa_ee = _mm_add_pd(s_aa_ee, _mm_unpacklo_pd(aa0, ee0));
                    s_aa_ee = _mm_add_pd(s_aa_ee, _mm_unpackhi_pd(aa0, ee0));
                    s_aa_ee = _mm_add_pd(s_aa_ee, _mm_unpacklo_pd(aa1, ee1));
                    s_aa_ee = _mm_add_pd(s_aa_ee, _mm_unpackhi_pd(aa1, ee1));
                    s_ae = _mm_add_sd(s_ae, ae0);
                    s_ae = _mm_add_sd(s_ae, _mm_unpackhi_pd(ae0, ae0));
                    s_ae = _mm_add_sd(s_ae, ae1);
                    s_ae = _mm_add_sd(s_ae, _mm_unpackhi_pd(ae1, ae1));
                    // Maxima of non-NaN values, none of them -0: order-free.
                    max_abs = _mm_max_pd(max_abs, _mm_max_pd(ad0, ad1));
                    max_excess = _mm_max_pd(max_excess, _mm_max_pd(x0, x1));
                    let eq = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(ua, ue)));
                    bitwise += 4 - eq.count_ones() as u64;
                    clean += 4;
                    if U::ENABLED {
                        let dist = ulp_dist4(ua, ue);
                        let top = dist[0].max(dist[1]).max(dist[2].max(dist[3]));
                        max_dist = max_dist.max(top);
                        if top as u64 <= EXACT_MAX {
                            for (k, &d) in dist.iter().enumerate() {
                                hist.add_exact(k, d as usize);
                            }
                        } else {
                            for (k, &d) in dist.iter().enumerate() {
                                hist.add(k, d as u64);
                            }
                        }
                    }
                }
            }
            if !ordinary {
                // Hand the running state to the scalar kernel for these four.
                s.sum_abs = _mm_cvtsd_f64(s_abs_sq);
                s.sum_sq = _mm_cvtsd_f64(_mm_unpackhi_pd(s_abs_sq, s_abs_sq));
                s.sum_aa = _mm_cvtsd_f64(s_aa_ee);
                s.sum_ee = _mm_cvtsd_f64(_mm_unpackhi_pd(s_aa_ee, s_aa_ee));
                s.sum_ae = _mm_cvtsd_f64(s_ae);
                acc.s = s;
                let g0 = start + g * 4;
                self.segment(acc, hist, a, e, g0, g0 + 4, |_| false);
                s = acc.s;
                s_abs_sq = _mm_set_pd(s.sum_sq, s.sum_abs);
                s_aa_ee = _mm_set_pd(s.sum_ee, s.sum_aa);
                s_ae = _mm_set_sd(s.sum_ae);
                wf = _mm_set1_pd(acc.worst.floor());
                xf = _mm_set1_pd(acc.excess.floor());
            }
        }
        s.sum_abs = _mm_cvtsd_f64(s_abs_sq);
        s.sum_sq = _mm_cvtsd_f64(_mm_unpackhi_pd(s_abs_sq, s_abs_sq));
        s.sum_aa = _mm_cvtsd_f64(s_aa_ee);
        s.sum_ee = _mm_cvtsd_f64(_mm_unpackhi_pd(s_aa_ee, s_aa_ee));
        s.sum_ae = _mm_cvtsd_f64(s_ae);
        let lanes = |v: __m128d| _mm_cvtsd_f64(v).max(_mm_cvtsd_f64(_mm_unpackhi_pd(v, v)));
        s.max_abs = s.max_abs.max(lanes(max_abs));
        s.max_excess = s.max_excess.max(lanes(max_excess));
        s.max_ulp = s.max_ulp.max(max_dist as u64);
        s.count += clean;
        s.numeric += clean;
        s.bitwise_mismatches += bitwise;
        acc.s = s;
        let tail = start + groups * 4;
        if tail < end {
            self.segment(acc, hist, a, e, tail, end, |_| false);
        }
    }
}

/// Four little-endian u32 from 16 bytes. Not a `target_feature` function,
/// so it inlines into the loop (a call would spill every vector register).
#[inline(always)]
fn bits4(c: &[u8]) -> __m128i {
    let w = |k: usize| i32::from_le_bytes([c[4 * k], c[4 * k + 1], c[4 * k + 2], c[4 * k + 3]]);
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe { _mm_set_epi32(w(3), w(2), w(1), w(0)) }
}

/// f32 ULP distances of four finite pairs: |key(a) - key(e)| with the
/// sign-magnitude keys of `key_f32_bits`, exact in u32 (keys of finite
/// values lie within ±0x7f7f_ffff). Inlines like [`bits4`].
#[inline(always)]
fn ulp_dist4(ua: __m128i, ue: __m128i) -> [u32; 4] {
    // SAFETY: SSE2 is part of the x86_64 baseline.
    unsafe {
        let key = |u: __m128i| {
            let sign = _mm_srai_epi32(u, 31);
            let mag = _mm_and_si128(u, _mm_set1_epi32(i32::MAX));
            _mm_sub_epi32(_mm_xor_si128(mag, sign), sign)
        };
        let (ka, ke) = (key(ua), key(ue));
        let diff = _mm_sub_epi32(ka, ke);
        let neg = _mm_cmpgt_epi32(ke, ka);
        let dist = _mm_sub_epi32(_mm_xor_si128(diff, neg), neg);
        [
            _mm_cvtsi128_si32(dist) as u32,
            _mm_cvtsi128_si32(_mm_srli_si128(dist, 4)) as u32,
            _mm_cvtsi128_si32(_mm_srli_si128(dist, 8)) as u32,
            _mm_cvtsi128_si32(_mm_srli_si128(dist, 12)) as u32,
        ]
    }
}
