//! The original one-pass, per-element kernel, kept for tests only: the
//! blocked kernel in `kernel.rs` must reproduce its results bit for bit.

use crate::elem::{Elem, UlpKey};
use crate::kernel::{Acc, Hit, Kernel, BLOCK, LANES};
use crate::metrics::Simd;

use std::cell::Cell;

thread_local! {
    static USE_REFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Whether `Kernel::run` on this thread uses the reference kernel.
pub(crate) fn use_reference() -> bool {
    USE_REFERENCE.with(Cell::get)
}

thread_local! {
    static SIMD_CAP: Cell<Simd> = const { Cell::new(Simd::Avx512) };
}

/// The widest vector path this thread's comparisons may take.
pub(crate) fn simd_cap() -> Simd {
    SIMD_CAP.with(Cell::get)
}

/// Runs `f` with this thread's comparisons (serial ones) on paths no wider
/// than `cap`.
pub(crate) fn with_simd<T>(cap: Simd, f: impl FnOnce() -> T) -> T {
    SIMD_CAP.with(|r| r.set(cap));
    let out = f();
    SIMD_CAP.with(|r| r.set(Simd::Avx512));
    out
}

/// Runs `f` with this thread's comparisons (serial ones) on the AVX2 path
/// at most (the scalar kernel on a CPU without AVX2).
pub(crate) fn with_avx2<T>(f: impl FnOnce() -> T) -> T {
    with_simd(Simd::Avx2, f)
}

/// Runs `f` with this thread's comparisons (serial ones) on the scalar blocked kernel.
pub(crate) fn with_scalar<T>(f: impl FnOnce() -> T) -> T {
    with_simd(Simd::Scalar, f)
}

/// Runs `f` with this thread's comparisons (serial ones) on the reference kernel.
pub(crate) fn with_reference<T>(f: impl FnOnce() -> T) -> T {
    USE_REFERENCE.with(|r| r.set(true));
    let out = f();
    USE_REFERENCE.with(|r| r.set(false));
    out
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Elements `start..end` where `padded(j)` says whether element `start + j`
    /// is padded. Works in blocks whose inner loop makes no calls, so the
    /// accumulators stay in registers (SysV calls clobber every xmm
    /// register); the rare elements that may enter a top-K list are only
    /// noted there and offered after the block.
    pub(crate) fn segment_reference(
        &self,
        acc: &mut Acc,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
        padded: impl Fn(usize) -> bool,
    ) {
        let (sa, se) = (self.a.size(), self.e.size());
        let mut j0 = 0;
        while start + j0 < end {
            let j1 = (j0 + BLOCK).min(end - start);
            let ra = &a[(start + j0) * sa..(start + j1) * sa];
            let re = &e[(start + j0) * se..(start + j1) * se];
            let mut s = acc.s;
            // Floors only rise, so stale ones admit a superset of candidates.
            let (wf, xf) = (acc.worst.floor(), acc.excess.floor());
            let mut cand = [0u16; BLOCK];
            let mut nc = 0usize;
            let mut first: Option<usize> = None;
            for (t, (ca, ce)) in ra.chunks_exact(sa).zip(re.chunks_exact(se)).enumerate() {
                if padded(j0 + t) {
                    s.masked_out += 1;
                    if self.assert_zero {
                        s.padded_nonzero += (self.a.load(ca) != 0.0) as u64;
                    }
                    continue;
                }
                let a = self.a.load(ca);
                let e = self.e.load(ce);
                s.count += 1;
                let equal = if a.is_nan() && e.is_nan() {
                    self.equal_nan
                } else if self.same_dtype {
                    self.a.raw(ca) == self.e.raw(ce)
                } else {
                    a == e
                };
                s.bitwise_mismatches += (!equal) as u64;
                if a.is_finite() && e.is_finite() {
                    s.numeric += 1;
                    let d = a - e;
                    let ad = d.abs();
                    let l = (start + j0 + t) % LANES;
                    s.sum_abs[l] += ad;
                    s.sum_sq[l] += d * d;
                    s.sum_aa[l] += a * a;
                    s.sum_ee[l] += e * e;
                    s.sum_ae[l] += a * e;
                    s.max_abs = s.max_abs.max(ad);
                    let excess = ad - self.rtol * e.abs();
                    s.max_excess = s.max_excess.max(excess);
                    let bad = ad > self.atol + self.rtol * e.abs();
                    s.allclose_violations += bad as u64;
                    if bad && first.is_none() {
                        first = Some(t);
                    }
                    if ad > wf || excess > xf {
                        cand[nc] = t as u16;
                        nc += 1;
                    }
                    if U::ENABLED {
                        let dist = self.u.key(a).abs_diff(self.u.key(e));
                        acc.hist.add(dist);
                        s.max_ulp = s.max_ulp.max(dist);
                    }
                } else if a.is_nan() && e.is_nan() {
                    s.nan_both += 1;
                    if !self.equal_nan {
                        first.get_or_insert(t);
                    }
                } else if a.is_nan() || e.is_nan() {
                    s.nan_mismatch += 1;
                    first.get_or_insert(t);
                } else if a != e {
                    s.inf_mismatch += 1;
                    first.get_or_insert(t);
                }
            }
            acc.s = s;
            let hit = |t: usize| {
                let (ca, ce) = (&ra[t * sa..(t + 1) * sa], &re[t * se..(t + 1) * se]);
                let (a, e) = (self.a.load(ca), self.e.load(ce));
                Hit {
                    flat: start + j0 + t,
                    actual: a,
                    expected: e,
                    score: (a - e).abs(),
                }
            };
            if let (None, Some(t)) = (acc.first, first) {
                acc.first = Some(hit(t));
            }
            for &t in &cand[..nc] {
                let h = hit(t as usize);
                acc.worst.offer(h);
                let excess = h.score - self.rtol * h.expected.abs();
                acc.excess.offer(Hit { score: excess, ..h });
            }
            j0 = j1;
        }
    }
}
