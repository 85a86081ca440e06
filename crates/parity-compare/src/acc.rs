//! The kernel's partial results over a range of elements, and the fixed
//! chunking and lanes that make them independent of the thread count (a
//! leaf: the kernel, its histogram and the metrics all use them).

use crate::histogram::UlpHistogram;
use crate::topk::{Hit, TopK};

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
pub(crate) fn lane_add(l: &mut Lanes, o: &Lanes) {
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
