//! The AVX2 path for f32 against f32, bf16 against bf16 and f16 against f16
//! (ULPs in the pair's own type, or none), unpadded runs: eight elements a
//! step. A 16-bit pair is widened as it is loaded, as on the AVX-512 path
//! (`kernel_avx512.rs`). The f64 work keeps each sum as two vectors of
//! four f64, lanes 0-3 and 4-7 of the sums (see [`crate::kernel::LANES`]):
//! element `k` of a group of eight adds into lane `k`, so every lane sees
//! the same additions in the same order as on the scalar path and results
//! stay bit-identical. A group of eight with a NaN or an infinity goes
//! through the scalar `Kernel::segment` with the running sums handed over.
//!
//! What the profile asked for (docs/performance.md), per group of eight:
//! - **Histogram:** distances 0 to 3 ([`SMALL`]) are counted in one vector
//!   of packed 8-bit counters (`1 << 8d` added per lane, from a `vpermd`
//!   table), unpacked once a block; a group with a larger distance is
//!   queued, and its slots computed eight at a time at the block's end.
//! - **Top-K, allclose violations and the first violation** are looked for
//!   once a block of [`BLOCK_GROUPS`] groups, not once a group: the block's
//!   largest |a - e| and allclose excess against the lists' floors and
//!   against what a violation needs. Only a block that may hold a candidate
//!   (or a violation) is read again, in flat order (`offer_range`,
//!   `count_violations`, `first_violation`), which offers the lists a
//!   superset of what the scalar path offers them: same lists.
//! - **Three passes over a block** (it is in L1 by then): the integer work
//!   (finiteness, bitwise equality, ULP distances), then the f64 work of
//!   lanes 0-3 and of lanes 4-7; each pass has few enough live vector
//!   registers that no sum is spilled to the stack (one pass doing both
//!   spilled several, every group).
//! - **a², e², a·e** are fused multiply-adds: a product of two f32 values is
//!   exact in f64 (48 significant bits), so `fma(a, a, s)` rounds once, as
//!   `s + a * a` does. (d² is not exact, so it keeps a multiply and an add.)

use crate::elem::{Elem, UlpKey};
use crate::kernel::{Acc, Hit, Kernel, Sums, LANES};
use crate::kernel_hist::{RunHist, EXACT_LIMIT, LOG_BASE, QUEUE, SMALL, SPARE};
use crate::ulp::UlpDType;
use std::arch::x86_64::*;

/// Groups of eight per block. At most 255 so that a packed 8-bit
/// histogram counter cannot overflow within a block, at most the histogram's
/// queue of groups with a large distance; small, so that a block read again
/// for the top-K lists costs little.
const BLOCK_GROUPS: usize = 32;
const _: () = assert!(BLOCK_GROUPS <= 255 && BLOCK_GROUPS <= QUEUE);
// The packed counters' table (`one_at`) has a lane for each of 0..SMALL.
const _: () = assert!(SMALL == 4);

/// Half of the five lane sums as vectors: lanes 0-3 or 4-7.
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
    fn load(s: &Sums, half: usize) -> VecSums {
        // SAFETY: lanes 4 * half..4 * half + 4 of eight; unaligned load.
        let v = |l: &[f64; LANES]| unsafe { _mm256_loadu_pd(l[4 * half..][..4].as_ptr()) };
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
    fn store(&self, s: &mut Sums, half: usize) {
        // SAFETY: lanes 4 * half..4 * half + 4 of eight; unaligned store.
        let v = |l: &mut [f64; LANES], x: __m256d| unsafe {
            _mm256_storeu_pd(l[4 * half..][..4].as_mut_ptr(), x)
        };
        v(&mut s.sum_abs, self.abs);
        v(&mut s.sum_sq, self.sq);
        v(&mut s.sum_aa, self.aa);
        v(&mut s.sum_ee, self.ee);
        v(&mut s.sum_ae, self.ae);
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Whether the vector paths ([`Kernel::segment_avx2`],
    /// [`Kernel::segment_avx512`]) apply: both sides stored as the same f32,
    /// bf16 or f16, with ULPs in that type (keys from the bits) or none.
    pub(crate) const VEC_PATH: bool = A::ULP.is_some()
        && crate::elem::same_ulp(A::ULP, E::ULP)
        && (Self::RAW_KEYS || !U::ENABLED);

    /// Elements `start..end`, none padded; only when `VEC_PATH`.
    #[target_feature(enable = "avx2,fma,popcnt,f16c")]
    pub(crate) fn segment_avx2(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
    ) {
        // Up to a multiple of eight on the scalar path, so that element k of
        // a group is sum lane k.
        let head = start.next_multiple_of(LANES).min(end);
        if head > start {
            self.segment(acc, hist, a, e, start, head, |_| false);
        }
        let groups = (end - head) / 8;
        let body = head + groups * 8;
        // Bytes an element, the same on both sides (`VEC_PATH`).
        let w = self.a.size();
        let kind = A::ULP;
        let ra = &a[head * w..body * w];
        let re = &e[head * w..body * w];
        let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let (wide, max_finite) = match kind {
            Some(UlpDType::F32) => (true, 0x7f7f_ffff),
            Some(UlpDType::Bf16) => (false, 0x7f7f),
            _ => (false, 0x7bff),
        };
        let mag32 = _mm256_set1_epi32(if wide { i32::MAX } else { 0x7fff });
        let max_finite = _mm256_set1_epi32(max_finite);
        let not_small = _mm256_set1_epi32(!(SMALL as i32 - 1));
        let small_limit = _mm256_set1_epi32(SMALL as i32);
        // Lane d < SMALL: 1 << 8d; lane SMALL: 0.
        let one_at = _mm256_setr_epi32(1, 1 << 8, 1 << 16, 1 << 24, 0, 0, 0, 0);
        let rtol = _mm256_set1_pd(self.rtol);
        let mut s = acc.s;
        let mut max_abs = _mm256_set1_pd(s.max_abs);
        let mut max_excess = _mm256_set1_pd(s.max_excess);
        let mut equal = 0u64;
        // Per lane: elements at each small distance.
        let mut small = [_mm256_setzero_si256(); SMALL as usize];
        let mut max_big = 0u32;
        let (mut clean, mut g) = (0usize, 0usize);
        while g < groups {
            let g_end = (g + BLOCK_GROUPS).min(groups);
            let mut block_abs = _mm256_set1_pd(f64::NEG_INFINITY);
            let mut block_excess = _mm256_set1_pd(f64::NEG_INFINITY);
            // Elements at distance d in byte d of each lane.
            let mut packed = _mm256_setzero_si256();
            let mut stop = g_end;
            // Groups with a distance of SMALL or more, queued in `hist`.
            let mut n_big = 0usize;
            // First the integer work, up to the first group with a NaN or
            // an infinity.
            for gi in g..g_end {
                let (pa, pe) = (
                    ra.as_ptr().wrapping_add(gi * 8 * w),
                    re.as_ptr().wrapping_add(gi * 8 * w),
                );
                // SAFETY: gi < groups and both slices hold 8 * w * groups
                // bytes: a group's 8 * w bytes.
                let (ua, ue) = unsafe { (bits8(kind, pa), bits8(kind, pe)) };
                let (ma, me) = (_mm256_and_si256(ua, mag32), _mm256_and_si256(ue, mag32));
                let inf_or_nan = _mm256_cmpgt_epi32(_mm256_max_epu32(ma, me), max_finite);
                if _mm256_movemask_ps(_mm256_castsi256_ps(inf_or_nan)) != 0 {
                    stop = gi;
                    break;
                }
                let eq = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ua, ue)));
                equal += eq.count_ones() as u64;
                if U::ENABLED {
                    // Without branches: distance d < SMALL adds 1 << 8d, a
                    // larger one (capped at SMALL) adds 0, and every group is
                    // written to the queue, which keeps only those with one.
                    // `ulp_dist8` reads the sign at bit 31.
                    let dist = if wide {
                        ulp_dist8(ua, ue, ma, me)
                    } else {
                        let (sa, se) = (_mm256_slli_epi32::<16>(ua), _mm256_slli_epi32::<16>(ue));
                        ulp_dist8(sa, se, ma, me)
                    };
                    let capped = _mm256_min_epu32(dist, small_limit);
                    packed = _mm256_add_epi32(packed, _mm256_permutevar8x32_epi32(one_at, capped));
                    let slot = hist.queue_slot(n_big);
                    // SAFETY: a queue slot is 32 bytes; unaligned store.
                    unsafe { _mm256_storeu_si256(slot.as_mut_ptr().cast(), dist) };
                    n_big += (_mm256_testz_si256(dist, not_small) == 0) as usize;
                }
            }
            // Then the f64 work on the groups before it: lanes 0-3, then
            // lanes 4-7, passes over the block (in L1) with fewer live
            // vector registers than one pass doing both, so none of the
            // sums is spilled.
            for h in 0..2 {
                let mut v = VecSums::load(&s, h);
                for gi in g..stop {
                    let off = (gi * 8 + 4 * h) * w;
                    // SAFETY: gi < groups and both slices hold 8 * w * groups
                    // bytes: elements 4h..4h + 4 of the group.
                    let (a4, e4) = unsafe {
                        (
                            f64x4(kind, ra.as_ptr().add(off)),
                            f64x4(kind, re.as_ptr().add(off)),
                        )
                    };
                    let d = _mm256_sub_pd(a4, e4);
                    let ad = _mm256_and_pd(d, abs_mask);
                    let r = _mm256_mul_pd(rtol, _mm256_and_pd(e4, abs_mask));
                    let x = _mm256_sub_pd(ad, r);
                    v.abs = _mm256_add_pd(v.abs, ad);
                    v.sq = _mm256_add_pd(v.sq, _mm256_mul_pd(d, d));
                    v.aa = _mm256_fmadd_pd(a4, a4, v.aa);
                    v.ee = _mm256_fmadd_pd(e4, e4, v.ee);
                    v.ae = _mm256_fmadd_pd(a4, e4, v.ae);
                    // Maxima of non-NaN values, none of them -0: order-free.
                    block_abs = _mm256_max_pd(block_abs, ad);
                    block_excess = _mm256_max_pd(block_excess, x);
                }
                v.store(&mut s, h);
            }
            if n_big > 0 {
                max_big = max_big.max(count_queued(hist, n_big));
            }
            for (d, count) in small.iter_mut().enumerate() {
                let field = _mm256_srlv_epi32(packed, _mm256_set1_epi32(8 * d as i32));
                let field = _mm256_and_si256(field, _mm256_set1_epi32(0xff));
                *count = _mm256_add_epi32(*count, field);
            }
            max_abs = _mm256_max_pd(max_abs, block_abs);
            max_excess = _mm256_max_pd(max_excess, block_excess);
            let top = (hmax_pd(block_abs), hmax_pd(block_excess));
            let range = (head + g * 8, head + stop * 8);
            self.block_end(acc, &mut s, a, e, range, top);
            clean += stop - g;
            g = g_end;
            if stop < g_end {
                // Hand the running state to the scalar kernel for these eight.
                acc.s = s;
                self.scalar_group(acc, hist, a, e, head + stop * 8, 8);
                s = acc.s;
                g = stop + 1;
            }
        }
        s.max_abs = s.max_abs.max(hmax_pd(max_abs));
        s.max_excess = s.max_excess.max(hmax_pd(max_excess));
        let counts = small.map(|c| hsum_epi32(c));
        acc.s = s;
        self.finish(acc, hist, counts, max_big, 8 * clean as u64, equal);
        if body < end {
            self.segment(acc, hist, a, e, body, end, |_| false);
        }
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// What a vector path does at a block's end, for the elements
    /// `range` (all finite, whole groups of eight, stored as `A::ULP` says
    /// on both sides) whose largest |a - e|
    /// and allclose excess are `top`: offers them to the top-K lists when
    /// a maximum beats a list's floor, and counts their allclose
    /// violations when one may be there.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    pub(crate) fn block_end(
        &self,
        acc: &mut Acc,
        s: &mut Sums,
        a: &[u8],
        e: &[u8],
        (from, to): (usize, usize),
        (top_abs, top_excess): (f64, f64),
    ) {
        if top_abs > acc.worst.floor() || top_excess > acc.excess.floor() {
            self.offer_range(acc, a, e, from, to);
        }
        // A violation has |a - e| > fl(atol + r) >= atol and >= r (r =
        // rtol |e|, rounded): so |a - e| > atol and the excess
        // fl(|a - e| - r) > 0. A block where neither maximum says so
        // has none; any other is counted again (`count_violations`).
        if top_abs > self.atol && top_excess > 0.0 {
            let violations = self.count_violations(a, e, from, to);
            s.allclose_violations += violations;
            if violations > 0 && acc.first.is_none() {
                self.first_violation(acc, a, e, from, to);
            }
        }
    }

    /// What a vector path adds to `acc.s` and `hist` at its end: `clean`
    /// elements all finite, `equal` of them equal bit for bit, `counts[d]`
    /// at each small distance d, `max_big` the largest queued distance.
    #[inline]
    pub(crate) fn finish(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        counts: [u64; SMALL as usize],
        max_big: u32,
        clean: u64,
        equal: u64,
    ) {
        let s = &mut acc.s;
        if U::ENABLED {
            hist.add_small(&counts);
            let top_small = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
            s.max_ulp = s.max_ulp.max(max_big.max(top_small as u32) as u64);
        }
        s.count += clean;
        s.numeric += clean;
        s.bitwise_mismatches += clean - equal;
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Elements `g0..g0 + n` on the scalar path. Kept out of line so the
    /// vector loop's registers are not spilled on its (common) path.
    #[cold]
    #[inline(never)]
    pub(crate) fn scalar_group(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        a: &[u8],
        e: &[u8],
        g0: usize,
        n: usize,
    ) {
        self.segment(acc, hist, a, e, g0, g0 + n, |_| false);
    }

    /// Offers elements `from..to` (all finite, whole groups of eight) to both
    /// top-K lists, in flat order: each group's elements that beat the
    /// lists' floors (as the floors were when the group began; they only
    /// rise), which leaves the lists as offering every element would.
    #[cold]
    #[inline(never)]
    #[target_feature(enable = "avx2,f16c")]
    fn offer_range(&self, acc: &mut Acc, a: &[u8], e: &[u8], from: usize, to: usize) {
        let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let rtol = _mm256_set1_pd(self.rtol);
        let (w, kind) = (self.a.size(), A::ULP);
        let groups = a[from * w..to * w]
            .chunks_exact(8 * w)
            .zip(e[from * w..to * w].chunks_exact(8 * w));
        for (g0, (ca, ce)) in (from..).step_by(8).zip(groups) {
            let wf = _mm256_set1_pd(acc.worst.floor());
            let xf = _mm256_set1_pd(acc.excess.floor());
            let mut beats = 0;
            for h in 0..2 {
                // SAFETY: each chunk is eight elements: elements 4h..4h + 4.
                let (a4, e4) = unsafe {
                    (
                        f64x4(kind, ca.as_ptr().add(4 * h * w)),
                        f64x4(kind, ce.as_ptr().add(4 * h * w)),
                    )
                };
                let ad = _mm256_and_pd(_mm256_sub_pd(a4, e4), abs_mask);
                let x = _mm256_sub_pd(ad, _mm256_mul_pd(rtol, _mm256_and_pd(e4, abs_mask)));
                let m = _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_GT_OQ>(ad, wf),
                    _mm256_cmp_pd::<_CMP_GT_OQ>(x, xf),
                );
                beats |= _mm256_movemask_pd(m) << (4 * h);
            }
            for t in (0..8).filter(|t| beats >> t & 1 == 1) {
                let (x, y) = (
                    self.a.load(&ca[w * t..w * t + w]),
                    self.e.load(&ce[w * t..w * t + w]),
                );
                let score = (x - y).abs();
                let h = Hit {
                    flat: g0 + t,
                    actual: x,
                    expected: y,
                    score,
                };
                acc.worst.offer(h);
                let excess = score - self.rtol * y.abs();
                acc.excess.offer(Hit { score: excess, ..h });
            }
        }
    }

    /// The allclose violations among elements `from..to` (all finite, whole
    /// groups of eight), tested as the scalar path tests them.
    #[cold]
    #[inline(never)]
    #[target_feature(enable = "avx2,f16c")]
    fn count_violations(&self, a: &[u8], e: &[u8], from: usize, to: usize) -> u64 {
        let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let (atol, rtol) = (_mm256_set1_pd(self.atol), _mm256_set1_pd(self.rtol));
        let mut violations = 0;
        let (w, kind) = (self.a.size(), A::ULP);
        let halves = a[from * w..to * w]
            .chunks_exact(4 * w)
            .zip(e[from * w..to * w].chunks_exact(4 * w));
        for (ca, ce) in halves {
            // SAFETY: each chunk is four elements.
            let (a4, e4) = unsafe { (f64x4(kind, ca.as_ptr()), f64x4(kind, ce.as_ptr())) };
            let ad = _mm256_and_pd(_mm256_sub_pd(a4, e4), abs_mask);
            let r = _mm256_mul_pd(rtol, _mm256_and_pd(e4, abs_mask));
            let bad = _mm256_cmp_pd::<_CMP_GT_OQ>(ad, _mm256_add_pd(atol, r));
            violations += _mm256_movemask_pd(bad).count_ones() as u64;
        }
        violations
    }

    /// Records the first allclose violation among elements `from..to` (all
    /// finite), tested as the scalar path tests it.
    #[cold]
    #[inline(never)]
    fn first_violation(&self, acc: &mut Acc, a: &[u8], e: &[u8], from: usize, to: usize) {
        let w = self.a.size();
        let pairs = a[from * w..to * w]
            .chunks_exact(w)
            .zip(e[from * w..to * w].chunks_exact(w));
        for (i, (ca, ce)) in (from..).zip(pairs) {
            let (x, y) = (self.a.load(ca), self.e.load(ce));
            let score = (x - y).abs();
            if score > self.atol + self.rtol * y.abs() {
                acc.first = Some(Hit {
                    flat: i,
                    actual: x,
                    expected: y,
                    score,
                });
                return;
            }
        }
    }
}

/// Counts the distances of [`SMALL`] or more of the first `n` queued groups
/// on the scalar counters, their slots computed eight at a time; returns
/// the largest distance.
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn count_queued(hist: &mut RunHist, n: usize) -> u32 {
    let mut max = _mm256_setzero_si256();
    for i in 0..n.min(QUEUE) {
        let group = hist.queued(n)[i];
        // SAFETY: `group` is 32 bytes; unaligned load.
        let dist = unsafe { _mm256_loadu_si256(group.as_ptr().cast()) };
        max = _mm256_max_epu32(max, dist);
        let mut slots = [0u32; 8];
        // SAFETY: `slots` is 32 bytes; unaligned store.
        unsafe { _mm256_storeu_si256(slots.as_mut_ptr().cast(), slots8(dist)) };
        hist.add_slots8(&slots);
    }
    let mut m = [0u32; 8];
    // SAFETY: `m` is 32 bytes; unaligned store.
    unsafe { _mm256_storeu_si256(m.as_mut_ptr().cast(), max) };
    m.iter().copied().max().unwrap_or(0)
}

/// The histogram slots of eight distances (`histogram::slot`), with
/// [`SPARE`] for those below [`SMALL`] (counted already). A distance `d`
/// above `EXACT_LIMIT` is in slot `LOG_BASE + ceil(log2(d))`, and
/// `ceil(log2(d)) = floor(log2((d - 1) >> 1)) + 2`: the exponent of
/// `(d - 1) >> 1` (below 2^31, exact as an i32 converted to f64).
#[target_feature(enable = "avx2")]
#[inline]
fn slots8(dist: __m256i) -> __m256i {
    let t = _mm256_srli_epi32::<1>(_mm256_sub_epi32(dist, _mm256_set1_epi32(1)));
    let lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(t));
    let hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256::<1>(t));
    let exp_lo = _mm256_srli_epi64::<52>(_mm256_castpd_si256(lo));
    let exp_hi = _mm256_srli_epi64::<52>(_mm256_castpd_si256(hi));
    // Dwords e0 e4 e1 e5 e2 e6 e3 e7, put back in order.
    let both = _mm256_or_si256(exp_lo, _mm256_slli_epi64::<32>(exp_hi));
    let exp = _mm256_permutevar8x32_epi32(both, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    // floor(log2(t)) = exp - 1023.
    let log_slot = _mm256_add_epi32(exp, _mm256_set1_epi32(LOG_BASE as i32 + 2 - 1023));
    let within = |limit: u32| {
        _mm256_cmpeq_epi32(
            _mm256_min_epu32(dist, _mm256_set1_epi32(limit as i32)),
            dist,
        )
    };
    let slot = _mm256_blendv_epi8(log_slot, dist, within(EXACT_LIMIT));
    _mm256_blendv_epi8(slot, _mm256_set1_epi32(SPARE as i32), within(SMALL - 1))
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

/// Sum of eight u32 lanes, in u64.
#[target_feature(enable = "avx2")]
#[inline]
fn hsum_epi32(v: __m256i) -> u64 {
    let mut l = [0u32; 8];
    // SAFETY: `l` is 32 bytes.
    unsafe { _mm256_storeu_si256(l.as_mut_ptr().cast(), v) };
    l.iter().map(|&x| x as u64).sum()
}

/// f32 ULP distances of eight finite pairs: |key(a) - key(e)| with the
/// sign-magnitude keys of `key_f32_bits` (`ma`, `me` are the magnitudes),
/// exact in u32: keys of finite values lie within ±0x7f7f_ffff, so the
/// larger key minus the smaller one is below 2^32.
#[target_feature(enable = "avx2")]
#[inline]
fn ulp_dist8(ua: __m256i, ue: __m256i, ma: __m256i, me: __m256i) -> __m256i {
    // The magnitude, negated where the sign bit is set (-0 stays 0).
    let (ka, ke) = (_mm256_sign_epi32(ma, ua), _mm256_sign_epi32(me, ue));
    _mm256_sub_epi32(_mm256_max_epi32(ka, ke), _mm256_min_epi32(ka, ke))
}

/// Four elements as f64, exactly (see `kernel_avx512::f64x8`).
///
/// # Safety
/// `p` points at four elements of the storage `kind` names (`Elem::ULP`:
/// f32, bf16 or f16).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn f64x4(kind: Option<UlpDType>, p: *const u8) -> __m256d {
    // SAFETY: the caller's; unaligned loads of 16 or 8 bytes.
    unsafe {
        match kind {
            Some(UlpDType::F32) => _mm256_cvtps_pd(_mm_loadu_ps(p.cast())),
            Some(UlpDType::Bf16) => {
                let w = _mm_cvtepu16_epi32(_mm_loadl_epi64(p.cast()));
                _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32::<16>(w)))
            }
            _ => _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(p.cast()))),
        }
    }
}

/// Eight elements' bits as 32-bit lanes: an f32's bits, or a 16-bit float's
/// zero-extended.
///
/// # Safety
/// `p` points at eight elements of the storage `kind` names (`Elem::ULP`).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn bits8(kind: Option<UlpDType>, p: *const u8) -> __m256i {
    // SAFETY: the caller's; unaligned loads of 32 or 16 bytes.
    unsafe {
        match kind {
            Some(UlpDType::F32) => _mm256_loadu_si256(p.cast()),
            _ => _mm256_cvtepu16_epi32(_mm_loadu_si128(p.cast())),
        }
    }
}
