//! The kernel's per-run ULP histogram: eight interleaved copies of u32
//! counters, folded into the run's [`crate::UlpHistogram`] once at its end,
//! and the vector paths' queue of groups with a large distance.

use crate::acc::{Acc, CHUNK};
use crate::histogram::{slot, EXACT_MAX, LOG_MIN, SLOTS};

/// Counters per copy: [`SLOTS`] rounded up to a power of two, so an index
/// masked with `WIDTH - 1` needs no bounds check.
const WIDTH: usize = SLOTS.next_power_of_two();

/// A counter no distance maps to: where the AVX2 path sends the distances
/// it counted already. Never folded into the histogram.
pub(crate) const SPARE: u32 = WIDTH as u32 - 1;
const _: () = assert!(SPARE as usize >= SLOTS);

/// Copies of the counters; element `t` counts in copy `t % COPIES`.
const COPIES: usize = 8;

/// Groups of eight the AVX2 path may queue before its block's end (the
/// AVX-512 path queues groups of sixteen as two of eight).
pub(crate) const QUEUE: usize = 32;

// A run covers at most one chunk, so a u32 counter cannot overflow.
const _: () = assert!(CHUNK <= u32::MAX as usize);

/// Distances below this one (0 to 3 ULPs, what most elements of a close
/// pair are) are counted by the AVX2 path in vector registers; a group of
/// eight with a larger one is queued and counted by [`RunHist::add_slots8`].
pub(crate) const SMALL: u32 = 4;
const _: () = assert!(SMALL.is_power_of_two() && SMALL as u64 <= EXACT_MAX + 1);

/// The histogram's layout as the AVX2 path computes slots: distances up to
/// `EXACT_LIMIT` are their own slot, a larger `d` is in slot
/// `LOG_BASE + ceil(log2(d))`.
pub(crate) const EXACT_LIMIT: u32 = EXACT_MAX as u32;
/// See [`EXACT_LIMIT`].
pub(crate) const LOG_BASE: u32 = EXACT_MAX as u32 + 1 - LOG_MIN;

/// Eight interleaved ULP histograms (element `t` goes to `t % 8`), so that
/// runs of equal distances do not serialise on one counter's
/// store-to-load latency (a vector of eight distances touches eight
/// different counters). Counts are integers: the split changes nothing.
pub(crate) struct RunHist {
    counts: [[u32; WIDTH]; COPIES],
    /// Distances of groups of eight queued by the AVX2 path.
    queue: [[u32; 8]; QUEUE],
}

impl RunHist {
    /// Empty counters, boxed (5 KB: too big to keep moving on the stack).
    pub(crate) fn new() -> Box<RunHist> {
        Box::new(RunHist {
            counts: [[0; WIDTH]; COPIES],
            queue: [[0; 8]; QUEUE],
        })
    }

    /// Records distance `dist` of element `t`.
    #[inline(always)]
    pub(crate) fn add(&mut self, t: usize, dist: u64) {
        self.counts[t % COPIES][slot(dist) & (WIDTH - 1)] += 1;
    }

    /// Counts eight elements whose slots (as [`slot`] computes them, or
    /// [`SPARE`] for one already counted) the caller computed.
    #[inline(always)]
    pub(crate) fn add_slots8(&mut self, slots: &[u32; COPIES]) {
        for (c, &s) in self.counts.iter_mut().zip(slots) {
            c[s as usize & (WIDTH - 1)] += 1;
        }
    }

    /// Where the AVX2 path writes a group's distances: slot `i` of the queue.
    #[inline(always)]
    pub(crate) fn queue_slot(&mut self, i: usize) -> &mut [u32; 8] {
        &mut self.queue[i % QUEUE]
    }

    /// Where the AVX-512 path writes a group of sixteen's distances: slots
    /// `2i` and `2i + 1` of the queue, as eight-element groups.
    #[inline(always)]
    pub(crate) fn queue_pair(&mut self, i: usize) -> &mut [[u32; 8]; 2] {
        let (pairs, _) = self.queue.as_chunks_mut::<2>();
        &mut pairs[i % (QUEUE / 2)]
    }

    /// The first `n` queued groups (at most [`QUEUE`]).
    #[inline(always)]
    pub(crate) fn queued(&self, n: usize) -> &[[u32; 8]] {
        &self.queue[..n.min(QUEUE)]
    }

    /// Adds `counts[d]` elements at distance `d`, for the small distances
    /// the vector path counts itself (see [`SMALL`]).
    #[inline]
    pub(crate) fn add_small(&mut self, counts: &[u64; SMALL as usize]) {
        for (d, &c) in counts.iter().enumerate() {
            // At most one run's elements: fits (see the assertion above).
            self.counts[0][d] += c as u32;
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
