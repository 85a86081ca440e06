//! The kernel's per-run ULP histogram: eight interleaved copies of u32
//! counters, folded into the run's [`crate::UlpHistogram`] once at its end.

use crate::histogram::{slot, EXACT_MAX, SLOTS};

/// Counters per copy: [`SLOTS`] rounded up to a power of two, so an index
/// masked with `WIDTH - 1` needs no bounds check.
const WIDTH: usize = SLOTS.next_power_of_two();
use crate::kernel::{Acc, CHUNK};

/// Copies of the counters; element `t` counts in copy `t % COPIES`.
const COPIES: usize = 8;

// A run covers at most one chunk, so a u32 counter cannot overflow.
const _: () = assert!(CHUNK <= u32::MAX as usize);

/// Eight interleaved ULP histograms (element `t` goes to `t % 8`), so that
/// runs of equal distances do not serialise on one counter's
/// store-to-load latency (a vector of eight distances touches eight
/// different counters). Counts are integers: the split changes nothing.
pub(crate) struct RunHist {
    counts: [[u32; WIDTH]; COPIES],
}

impl RunHist {
    /// Empty counters, boxed (4 KB: too big to keep moving on the stack).
    pub(crate) fn new() -> Box<RunHist> {
        Box::new(RunHist {
            counts: [[0; WIDTH]; COPIES],
        })
    }

    /// Records distance `dist` of element `t`.
    #[inline(always)]
    pub(crate) fn add(&mut self, t: usize, dist: u64) {
        self.counts[t % COPIES][slot(dist) & (WIDTH - 1)] += 1;
    }

    /// Records eight consecutive elements' distances.
    #[inline(always)]
    pub(crate) fn add8(&mut self, dist: &[u32; COPIES], all_exact: bool) {
        if all_exact {
            // Every distance is <= EXACT_MAX: it is its own slot.
            for (c, &d) in self.counts.iter_mut().zip(dist) {
                c[d as usize & (WIDTH - 1)] += 1;
            }
        } else {
            for (c, &d) in self.counts.iter_mut().zip(dist) {
                c[slot(d as u64) & (WIDTH - 1)] += 1;
            }
        }
    }

    /// Moves the counts into `acc`'s histogram.
    pub(crate) fn flush(&self, acc: &mut Acc) {
        let mut total = [0u64; SLOTS];
        for h in &self.counts {
            for (t, &c) in total.iter_mut().zip(h) {
                *t += c as u64;
            }
        }
        acc.hist.add_slot_counts(&total);
    }
}

/// Whether a distance is counted in its own slot (see [`RunHist::add8`]).
pub(crate) const EXACT_LIMIT: u32 = EXACT_MAX as u32;
