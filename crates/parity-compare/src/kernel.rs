//! The single-pass comparison kernel: per-chunk accumulators over both
//! tensors' raw little-endian bytes, specialised per dtype pair, merged in
//! chunk order so results never depend on the thread count.

use crate::elem::{same_ulp, Elem, UlpKey};
use crate::histogram::UlpHistogram;
use crate::kernel_hist::RunHist;
use crate::metrics::Simd;
pub(crate) use crate::topk::{Hit, TopK};
use crate::ulp::{key_16, key_f32_bits, UlpDType};

/// Elements per chunk. Fixed (not derived from the thread count) so partial
/// sums, and hence results, are identical for serial and parallel runs.
pub(crate) const CHUNK: usize = 1 << 18;

/// Elements per inner block (see `Kernel::segment`); fits the u16 candidate indices.
pub(crate) const BLOCK: usize = 256;

/// Each f64 sum is kept as `LANES` partial sums: element `i` (flat index)
/// adds into lane `i % LANES`, in increasing `i`. A fixed assignment, so
/// every path (scalar, AVX2, AVX-512, serial, parallel) performs the same
/// additions in the same order and results are bit-identical; and eight
/// independent chains, so a sum is not bound by the latency of one add.
/// Eight is one AVX-512 vector of f64 (two AVX2 vectors), so the AVX-512
/// path adds eight elements with one instruction per sum.
pub(crate) const LANES: usize = 8;

/// Partial sums of one quantity, one per lane (see [`LANES`]).
pub(crate) type Lanes = [f64; LANES];

/// The total of a lane array, always added in the same order.
#[inline]
pub(crate) fn lane_total(l: &Lanes) -> f64 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

#[inline(always)]
fn lane_add(l: &mut Lanes, o: &Lanes) {
    for (x, y) in l.iter_mut().zip(o) {
        *x += y;
    }
}

/// The scalar part of the partial results. Copied into a local for each
/// run of elements so the compiler keeps it in registers instead of
/// reloading every field from memory per element.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sums {
    pub count: u64,
    pub masked_out: u64,
    pub numeric: u64,
    pub nan_mismatch: u64,
    pub nan_both: u64,
    pub inf_mismatch: u64,
    pub allclose_violations: u64,
    pub bitwise_mismatches: u64,
    pub padded_nonzero: u64,
    pub sum_abs: Lanes,
    pub sum_sq: Lanes,
    pub sum_aa: Lanes,
    pub sum_ee: Lanes,
    pub sum_ae: Lanes,
    pub max_abs: f64,
    pub max_excess: f64,
    pub max_ulp: u64,
}

impl Default for Sums {
    fn default() -> Self {
        Sums {
            count: 0,
            masked_out: 0,
            numeric: 0,
            nan_mismatch: 0,
            nan_both: 0,
            inf_mismatch: 0,
            allclose_violations: 0,
            bitwise_mismatches: 0,
            padded_nonzero: 0,
            sum_abs: [0.0; LANES],
            sum_sq: [0.0; LANES],
            sum_aa: [0.0; LANES],
            sum_ee: [0.0; LANES],
            sum_ae: [0.0; LANES],
            max_abs: 0.0,
            max_excess: f64::NEG_INFINITY,
            max_ulp: 0,
        }
    }
}

impl Sums {
    fn merge(&mut self, o: &Sums) {
        self.count += o.count;
        self.masked_out += o.masked_out;
        self.numeric += o.numeric;
        self.nan_mismatch += o.nan_mismatch;
        self.nan_both += o.nan_both;
        self.inf_mismatch += o.inf_mismatch;
        self.allclose_violations += o.allclose_violations;
        self.bitwise_mismatches += o.bitwise_mismatches;
        self.padded_nonzero += o.padded_nonzero;
        lane_add(&mut self.sum_abs, &o.sum_abs);
        lane_add(&mut self.sum_sq, &o.sum_sq);
        lane_add(&mut self.sum_aa, &o.sum_aa);
        lane_add(&mut self.sum_ee, &o.sum_ee);
        lane_add(&mut self.sum_ae, &o.sum_ae);
        self.max_abs = self.max_abs.max(o.max_abs);
        self.max_excess = self.max_excess.max(o.max_excess);
        self.max_ulp = self.max_ulp.max(o.max_ulp);
    }
}

/// Partial results over a range of elements.
#[derive(Clone, Debug)]
pub(crate) struct Acc {
    pub s: Sums,
    pub hist: UlpHistogram,
    pub first: Option<Hit>,
    pub worst: TopK,
    pub excess: TopK,
}

impl Acc {
    pub fn new(k: usize) -> Self {
        Acc {
            s: Sums::default(),
            hist: UlpHistogram::default(),
            first: None,
            worst: TopK::new(k),
            excess: TopK::new(k),
        }
    }

    /// Folds `o` (covering later elements) into `self`.
    pub fn merge(&mut self, o: &Acc) {
        self.s.merge(&o.s);
        self.hist.merge(&o.hist);
        if let Some(f) = o.first {
            if self.first.is_none_or(|s| f.flat < s.flat) {
                self.first = Some(f);
            }
        }
        for &h in &o.worst.items {
            self.worst.offer(h);
        }
        for &h in &o.excess.items {
            self.excess.offer(h);
        }
    }
}

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
