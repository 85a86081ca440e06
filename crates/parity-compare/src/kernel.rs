//! The single-pass comparison kernel: per-chunk accumulators over both
//! tensors' raw little-endian bytes, specialised per dtype pair, merged in
//! chunk order so results never depend on the thread count.

use crate::histogram::UlpHistogram;
use crate::ulp::{key_16, key_f32, round_bf16, round_f16, UlpDType};
use parity_tensor::{decode_f64, DType};

/// Elements per chunk. Fixed (not derived from the thread count) so partial
/// sums, and hence results, are identical for serial and parallel runs.
pub(crate) const CHUNK: usize = 1 << 16;

/// One element type: how wide it is and how to decode it from LE bytes.
pub(crate) trait Elem: Copy + Send + Sync {
    /// Bytes per element.
    fn size(&self) -> usize;
    /// The element's value (`c` is exactly `size()` bytes).
    fn load(&self, c: &[u8]) -> f64;
    /// The element's raw bits, zero-extended.
    fn raw(&self, c: &[u8]) -> u64;
}

macro_rules! float_elem {
    ($name:ident, $n:literal, $decode:expr, $raw:ty) => {
        #[derive(Clone, Copy)]
        pub(crate) struct $name;
        impl Elem for $name {
            #[inline(always)]
            fn size(&self) -> usize {
                $n
            }
            #[inline(always)]
            fn load(&self, c: &[u8]) -> f64 {
                let mut b = [0u8; $n];
                b.copy_from_slice(&c[..$n]);
                $decode(b)
            }
            #[inline(always)]
            fn raw(&self, c: &[u8]) -> u64 {
                let mut b = [0u8; $n];
                b.copy_from_slice(&c[..$n]);
                <$raw>::from_le_bytes(b) as u64
            }
        }
    };
}

float_elem!(F16E, 2, |b| half::f16::from_le_bytes(b).to_f64(), u16);
float_elem!(Bf16E, 2, |b| half::bf16::from_le_bytes(b).to_f64(), u16);
float_elem!(F32E, 4, |b| f32::from_le_bytes(b) as f64, u32);
float_elem!(F64E, 8, f64::from_le_bytes, u64);

/// Any dtype, decoded through a runtime match (integers, bools, mixed pairs).
#[derive(Clone, Copy)]
pub(crate) struct DynE(pub DType);

impl Elem for DynE {
    #[inline]
    fn size(&self) -> usize {
        self.0.size()
    }
    #[inline]
    fn load(&self, c: &[u8]) -> f64 {
        decode_f64(self.0, c)
    }
    #[inline]
    fn raw(&self, c: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let n = c.len().min(8);
        b[..n].copy_from_slice(&c[..n]);
        u64::from_le_bytes(b)
    }
}

/// Where a value sits on the ULP integer line of some float type.
pub(crate) trait UlpKey: Copy + Send + Sync {
    /// False when no ULP metrics are wanted.
    const ENABLED: bool;
    /// Key of a non-NaN value.
    fn key(&self, x: f64) -> i64;
}

#[derive(Clone, Copy)]
pub(crate) struct NoUlp;
impl UlpKey for NoUlp {
    const ENABLED: bool = false;
    #[inline(always)]
    fn key(&self, _: f64) -> i64 {
        0
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpF32;
impl UlpKey for UlpF32 {
    const ENABLED: bool = true;
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_f32(x as f32)
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpBf16;
impl UlpKey for UlpBf16 {
    const ENABLED: bool = true;
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_16(round_bf16(x))
    }
}

#[derive(Clone, Copy)]
pub(crate) struct UlpF16;
impl UlpKey for UlpF16 {
    const ENABLED: bool = true;
    #[inline(always)]
    fn key(&self, x: f64) -> i64 {
        key_16(round_f16(x))
    }
}

#[derive(Clone, Copy)]
pub(crate) struct DynUlp(pub UlpDType);
impl UlpKey for DynUlp {
    const ENABLED: bool = true;
    #[inline]
    fn key(&self, x: f64) -> i64 {
        self.0.key(x).unwrap_or(0)
    }
}

/// One element worth reporting: flat index and both values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hit {
    pub flat: usize,
    pub actual: f64,
    pub expected: f64,
    /// The ranking key (abs diff or allclose excess).
    pub score: f64,
}

/// The K largest hits by score, ties broken by the lower flat index, kept sorted.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopK {
    pub k: usize,
    pub items: Vec<Hit>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            items: Vec::new(),
        }
    }

    #[inline(always)]
    pub fn offer(&mut self, h: Hit) {
        // Fast reject: most elements are not among the worst K.
        if self.items.len() == self.k {
            match self.items.last() {
                Some(last) if beats(&h, last) => {}
                _ => return,
            }
        }
        self.insert(h);
    }

    #[inline(never)]
    fn insert(&mut self, h: Hit) {
        let pos = self
            .items
            .iter()
            .position(|x| beats(&h, x))
            .unwrap_or(self.items.len());
        self.items.insert(pos, h);
        self.items.truncate(self.k);
    }
}

#[inline(always)]
fn beats(a: &Hit, b: &Hit) -> bool {
    a.score > b.score || (a.score == b.score && a.flat < b.flat)
}

/// Partial results over a range of elements.
#[derive(Clone, Debug)]
pub(crate) struct Acc {
    pub count: u64,
    pub masked_out: u64,
    pub numeric: u64,
    pub nan_mismatch: u64,
    pub inf_mismatch: u64,
    pub allclose_violations: u64,
    pub bitwise_mismatches: u64,
    pub padded_nonzero: u64,
    pub sum_abs: f64,
    pub sum_sq: f64,
    pub sum_aa: f64,
    pub sum_ee: f64,
    pub sum_ae: f64,
    pub max_abs: f64,
    pub max_excess: f64,
    pub max_ulp: u64,
    pub hist: UlpHistogram,
    pub first: Option<Hit>,
    pub worst: TopK,
    pub excess: TopK,
}

impl Acc {
    pub fn new(k: usize) -> Self {
        Acc {
            count: 0,
            masked_out: 0,
            numeric: 0,
            nan_mismatch: 0,
            inf_mismatch: 0,
            allclose_violations: 0,
            bitwise_mismatches: 0,
            padded_nonzero: 0,
            sum_abs: 0.0,
            sum_sq: 0.0,
            sum_aa: 0.0,
            sum_ee: 0.0,
            sum_ae: 0.0,
            max_abs: 0.0,
            max_excess: f64::NEG_INFINITY,
            max_ulp: 0,
            hist: UlpHistogram::default(),
            first: None,
            worst: TopK::new(k),
            excess: TopK::new(k),
        }
    }

    /// Folds `o` (covering later elements) into `self`.
    pub fn merge(&mut self, o: &Acc) {
        self.count += o.count;
        self.masked_out += o.masked_out;
        self.numeric += o.numeric;
        self.nan_mismatch += o.nan_mismatch;
        self.inf_mismatch += o.inf_mismatch;
        self.allclose_violations += o.allclose_violations;
        self.bitwise_mismatches += o.bitwise_mismatches;
        self.padded_nonzero += o.padded_nonzero;
        self.sum_abs += o.sum_abs;
        self.sum_sq += o.sum_sq;
        self.sum_aa += o.sum_aa;
        self.sum_ee += o.sum_ee;
        self.sum_ae += o.sum_ae;
        self.max_abs = self.max_abs.max(o.max_abs);
        self.max_excess = self.max_excess.max(o.max_excess);
        self.max_ulp = self.max_ulp.max(o.max_ulp);
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
    pub assert_zero: bool,
    pub top_k: usize,
}

impl<A: Elem, E: Elem, U: UlpKey> Kernel<A, E, U> {
    /// One unmasked element.
    #[inline(always)]
    fn elem(&self, acc: &mut Acc, ca: &[u8], ce: &[u8], flat: usize) {
        let a = self.a.load(ca);
        let e = self.e.load(ce);
        acc.count += 1;
        let equal = if self.same_dtype {
            self.a.raw(ca) == self.e.raw(ce)
        } else {
            a == e || (a.is_nan() && e.is_nan())
        };
        acc.bitwise_mismatches += (!equal) as u64;
        if a.is_finite() && e.is_finite() {
            acc.numeric += 1;
            let d = a - e;
            let ad = d.abs();
            acc.sum_abs += ad;
            acc.sum_sq += d * d;
            acc.sum_aa += a * a;
            acc.sum_ee += e * e;
            acc.sum_ae += a * e;
            acc.max_abs = acc.max_abs.max(ad);
            let excess = ad - self.rtol * e.abs();
            acc.max_excess = acc.max_excess.max(excess);
            let hit = Hit {
                flat,
                actual: a,
                expected: e,
                score: ad,
            };
            if ad > self.atol + self.rtol * e.abs() {
                acc.allclose_violations += 1;
                acc.first.get_or_insert(hit);
            }
            acc.worst.offer(hit);
            acc.excess.offer(Hit {
                score: excess,
                ..hit
            });
            if U::ENABLED {
                let dist = self.u.key(a).abs_diff(self.u.key(e));
                acc.hist.add(dist);
                acc.max_ulp = acc.max_ulp.max(dist);
            }
        } else if a.is_nan() || e.is_nan() {
            if !(a.is_nan() && e.is_nan()) {
                acc.nan_mismatch += 1;
                acc.first.get_or_insert(Hit {
                    flat,
                    actual: a,
                    expected: e,
                    score: f64::NAN,
                });
            }
        } else if a != e {
            acc.inf_mismatch += 1;
            acc.first.get_or_insert(Hit {
                flat,
                actual: a,
                expected: e,
                score: f64::INFINITY,
            });
        }
    }

    /// One padded element: ignored except for the padded-zero check.
    #[inline(always)]
    fn padded(&self, acc: &mut Acc, ca: &[u8]) {
        acc.masked_out += 1;
        if self.assert_zero {
            acc.padded_nonzero += (self.a.load(ca) != 0.0) as u64;
        }
    }

    /// Elements `start..end` where `padded(j)` says whether element `start + j` is padded.
    #[inline(always)]
    fn segment(
        &self,
        acc: &mut Acc,
        a: &[u8],
        e: &[u8],
        start: usize,
        end: usize,
        padded: impl Fn(usize) -> bool,
    ) {
        let (sa, se) = (self.a.size(), self.e.size());
        let ra = &a[start * sa..end * sa];
        let re = &e[start * se..end * se];
        for (j, (ca, ce)) in ra.chunks_exact(sa).zip(re.chunks_exact(se)).enumerate() {
            if padded(j) {
                self.padded(acc, ca);
            } else {
                self.elem(acc, ca, ce, start + j);
            }
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
        let Some(m) = mask else {
            self.segment(&mut acc, a, e, start, end, |_| false);
            return acc;
        };
        let rank = m.shape.len();
        if rank == 0 {
            let p = m.values.first().copied().unwrap_or(false);
            self.segment(&mut acc, a, e, start, end, |_| p);
            return acc;
        }
        // Walk row by row along the last axis with an odometer, so the mask
        // offset is updated by additions instead of a division per element.
        let last = m.shape[rank - 1];
        let ls = m.strides[rank - 1];
        let mut idx = crate::mask::unravel(start, m.shape);
        let mut base: usize = (0..rank - 1).map(|k| idx[k] * m.strides[k]).sum();
        let mut j = idx[rank - 1];
        let mut pos = start;
        while pos < end {
            let row_end = end.min(pos + (last - j));
            if ls == 0 {
                let p = m.values[base];
                self.segment(&mut acc, a, e, pos, row_end, |_| p);
            } else {
                let off = base + j * ls;
                self.segment(&mut acc, a, e, pos, row_end, |t| m.values[off + t * ls]);
            }
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
        acc
    }
}

/// A mask resolved against the compared shape.
pub(crate) struct MaskView<'m> {
    pub shape: &'m [usize],
    pub strides: &'m [usize],
    pub values: &'m [bool],
}
