//! The single-pass comparison kernel: per-chunk accumulators over both
//! tensors' raw little-endian bytes, specialised per dtype pair, merged in
//! chunk order so results never depend on the thread count.

use crate::elem::{same_ulp, Elem, UlpKey};
use crate::kernel_hist::RunHist;
use crate::simd::Simd;
pub(crate) use crate::topk::Hit;
use crate::ulp::{key_16, key_f32_bits, UlpDType};

pub(crate) use crate::acc::{lane_total, Acc, Sums, BLOCK, CHUNK, LANES};

/// Everything the kernel needs besides the bytes.
#[derive(Clone, Copy)]
pub(crate) struct Kernel<A, E, U> {
    pub a: A,
    pub e: E,
    pub u: U,
    /// Same dtype on both sides: `exact` compares raw bits.
    pub same_dtype: bool,
    pub atol: f64,
    pub rtol: f64,
    /// NaN against NaN counts as equal (else as a mismatch, whatever the payloads).
    pub equal_nan: bool,
    pub assert_zero: bool,
    pub top_k: usize,
    /// The vector path f32 pairs take (same results on every path).
    pub simd: Simd,
}

/// The ULP key of raw bits of `U`'s own type (see `Kernel::RAW_KEYS`).
#[inline(always)]
fn raw_key<U: UlpKey>(bits: u64) -> i64 {
    match U::DTYPE {
        Some(UlpDType::F32) => key_f32_bits(bits as u32),
        _ => key_16(bits as u16),
    }
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// Both sides are stored in the type ULPs are measured in, so keys come
    /// from the raw bits.
    pub(crate) const RAW_KEYS: bool =
        U::ENABLED && same_ulp(A::ULP, U::DTYPE) && same_ulp(E::ULP, U::DTYPE);

    /// Elements `start..end` where `padded(j)` says whether element `start + j`
    /// is padded. Works in blocks whose inner loop makes no calls, so the
    /// accumulators stay in registers (SysV calls clobber every xmm
    /// register); the rare elements that may enter a top-K list are only
    /// noted there and offered after the block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn segment(
        &self,
        acc: &mut Acc,
        hist: &mut RunHist,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
        padded: impl Fn(usize) -> bool,
    ) {
        let (sa, se) = (self.a.size(), self.e.size());
        // Both sides stored in the type ULPs are measured in (f32, bf16 or
        // f16): the key is the raw bits transformed, with no rounding back
        // from f64 (for a finite value of that type, the same key).
        let raw_keys = Self::RAW_KEYS;
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
            // The common path (unpadded, both finite, no violation or
            // candidate) updates only plain locals; count and numeric are
            // derived after the loop from the rare paths' counts, keeping
            // its work and live state small.
            let (mut sum_abs, mut sum_sq, mut sum_aa) = (s.sum_abs, s.sum_sq, s.sum_aa);
            let (mut sum_ee, mut sum_ae) = (s.sum_ee, s.sum_ae);
            let (mut max_abs, mut max_excess, mut max_ulp) = (s.max_abs, s.max_excess, s.max_ulp);
            let (mut bitwise, mut masked, mut non_numeric) = (0u64, 0u64, 0u64);
            let mut violations = 0u64;
            let base = start + j0;
            let (rtol, atol) = (self.rtol, self.atol);
            for (t, (ca, ce)) in ra.chunks_exact(sa).zip(re.chunks_exact(se)).enumerate() {
                if padded(j0 + t) {
                    masked += 1;
                    if self.assert_zero {
                        s.padded_nonzero += (self.a.load(ca) != 0.0) as u64;
                    }
                    continue;
                }
                let a = self.a.load(ca);
                let e = self.e.load(ce);
                let equal = if self.same_dtype {
                    self.a.raw(ca) == self.e.raw(ce)
                } else {
                    a == e || (a.is_nan() && e.is_nan())
                };
                bitwise += (!equal) as u64;
                if a.is_finite() && e.is_finite() {
                    let d = a - e;
                    let ad = d.abs();
                    let l = (base + t) % LANES;
                    sum_abs[l] += ad;
                    sum_sq[l] += d * d;
                    sum_aa[l] += a * a;
                    sum_ee[l] += e * e;
                    sum_ae[l] += a * e;
                    max_abs = max_abs.max(ad);
                    let excess = ad - rtol * e.abs();
                    max_excess = max_excess.max(excess);
                    let bad = ad > atol + rtol * e.abs();
                    let is_cand = (ad > wf) | (excess > xf);
                    // Counted without a branch: violations can come at
                    // random (a pair near the tolerance), and a branch on
                    // each would be mispredicted half the time.
                    violations += bad as u64;
                    if is_cand | (bad & first.is_none()) {
                        if bad {
                            first.get_or_insert(t);
                        }
                        if is_cand {
                            cand[nc & (BLOCK - 1)] = t as u16;
                            nc += 1;
                        }
                    }
                    if U::ENABLED {
                        let dist = if raw_keys {
                            raw_key::<U>(self.a.raw(ca)).abs_diff(raw_key::<U>(self.e.raw(ce)))
                        } else {
                            self.u.key(a).abs_diff(self.u.key(e))
                        };
                        hist.add(t, dist);
                        max_ulp = max_ulp.max(dist);
                    }
                } else {
                    non_numeric += 1;
                    if a.is_nan() && e.is_nan() {
                        // Counted apart; `exact` sees it as equal only with
                        // equal_nan, whatever the two payloads are.
                        s.nan_both += 1;
                        bitwise = bitwise + (!self.equal_nan) as u64 - (!equal) as u64;
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
            }
            let count = (j1 - j0) as u64 - masked;
            s.count += count;
            s.masked_out += masked;
            s.numeric += count - non_numeric;
            s.bitwise_mismatches += bitwise;
            s.allclose_violations += violations;
            (s.sum_abs, s.sum_sq, s.sum_aa) = (sum_abs, sum_sq, sum_aa);
            (s.sum_ee, s.sum_ae) = (sum_ee, sum_ae);
            (s.max_abs, s.max_excess, s.max_ulp) = (max_abs, max_excess, max_ulp);
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

    /// Elements `start..end`, all padded: only the padding counts apply.
    fn padded_run(&self, acc: &mut Acc, a: &[u8], start: usize, end: usize) {
        let sa = self.a.size();
        acc.s.masked_out += (end - start) as u64;
        if self.assert_zero {
            let nz = a[start * sa..end * sa]
                .chunks_exact(sa)
                .filter(|c| self.a.load(c) != 0.0)
                .count();
            acc.s.padded_nonzero += nz as u64;
        }
    }

    /// Accumulates elements `start..end` of the flat tensors.
    pub fn run(
        &self,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
        mask: Option<&MaskView<'_>>,
    ) -> Acc {
        let mut acc = Acc::new(self.top_k);
        #[cfg(test)]
        if crate::kernel_reference::use_reference() {
            walk(&mut acc, start, end, mask, |acc, s, t, pad| {
                self.segment_reference(acc, a, e, s, t, |j| pad.at(j))
            });
            return acc;
        }
        let mut hist = RunHist::new();
        walk(&mut acc, start, end, mask, |acc, s, t, pad| match pad {
            Pad::Const(true) => self.padded_run(acc, a, s, t),
            #[cfg(target_arch = "x86_64")]
            Pad::Const(false) if Self::VEC_PATH && self.simd == Simd::Avx512 => {
                // SAFETY: `Avx512` is chosen only when the CPU has AVX-512
                // F, BW, DQ and VL, AVX2, FMA, POPCNT and F16C.
                unsafe { self.segment_avx512(acc, &mut hist, a, e, s, t) }
            }
            #[cfg(target_arch = "x86_64")]
            Pad::Const(false) if Self::VEC_PATH && self.simd == Simd::Avx2 => {
                // SAFETY: `Avx2` is chosen only when the CPU has AVX2, FMA, POPCNT and F16C.
                unsafe { self.segment_avx2(acc, &mut hist, a, e, s, t) }
            }
            Pad::Const(false) => self.segment(acc, &mut hist, a, e, s, t, |_| false),
            Pad::Strided { .. } => self.segment(acc, &mut hist, a, e, s, t, |j| pad.at(j)),
        });
        if U::ENABLED {
            hist.flush(&mut acc);
        }
        acc
    }
}

/// Which elements of a run along the last axis are padded.
#[derive(Clone, Copy)]
pub(crate) enum Pad<'m> {
    /// All or none.
    Const(bool),
    /// Element `t` of the run is padded when `values[off + t * stride]`.
    Strided {
        values: &'m [bool],
        off: usize,
        stride: usize,
    },
}

impl Pad<'_> {
    /// Whether element `t` of the run is padded.
    #[inline(always)]
    pub fn at(&self, t: usize) -> bool {
        match *self {
            Pad::Const(p) => p,
            Pad::Strided {
                values,
                off,
                stride,
            } => values[off + t * stride],
        }
    }
}

/// Calls `seg(acc, pos, row_end, pad)` for consecutive runs covering
/// `start..end`, each within one row of the last axis. Walks with an
/// odometer, so the mask offset is updated by additions instead of a
/// division per element.
fn walk(
    acc: &mut Acc,
    start: usize,
    end: usize,
    mask: Option<&MaskView<'_>>,
    mut seg: impl FnMut(&mut Acc, usize, usize, Pad<'_>),
) {
    let Some(m) = mask else {
        seg(acc, start, end, Pad::Const(false));
        return;
    };
    let rank = m.shape.len();
    if rank == 0 {
        let p = m.values.first().copied().unwrap_or(false);
        seg(acc, start, end, Pad::Const(p));
        return;
    }
    let last = m.shape[rank - 1];
    let ls = m.strides[rank - 1];
    let mut idx = crate::mask::unravel(start, m.shape);
    let mut base: usize = (0..rank - 1).map(|k| idx[k] * m.strides[k]).sum();
    let mut j = idx[rank - 1];
    let mut pos = start;
    while pos < end {
        let row_end = end.min(pos + (last - j));
        let pad = if ls == 0 {
            Pad::Const(m.values[base])
        } else {
            Pad::Strided {
                values: m.values,
                off: base + j * ls,
                stride: ls,
            }
        };
        seg(acc, pos, row_end, pad);
        pos = row_end;
        j = 0;
        for k in (0..rank - 1).rev() {
            idx[k] += 1;
            base += m.strides[k];
            if idx[k] < m.shape[k] {
                break;
            }
            base -= m.strides[k] * m.shape[k];
            idx[k] = 0;
        }
    }
}

/// A mask resolved against the compared shape.
pub(crate) struct MaskView<'m> {
    pub shape: &'m [usize],
    pub strides: &'m [usize],
    pub values: &'m [bool],
}
