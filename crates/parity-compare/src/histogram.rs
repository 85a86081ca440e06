//! The ULP histogram: exact counts for small distances (where quantile
//! criteria usually sit) and power-of-two buckets above.

use serde::{Deserialize, Serialize};

/// Distances 0..=EXACT_MAX are counted exactly.
pub const EXACT_MAX: u64 = 64;
/// Log2 bucket `k` (7..=64) holds distances in (2^(k-1), 2^k].
pub(crate) const LOG_MIN: u32 = 7;
const LOG_BUCKETS: usize = 64 - LOG_MIN as usize + 1;
pub(crate) const SLOTS: usize = EXACT_MAX as usize + 1 + LOG_BUCKETS;

/// Index into `counts` of a distance, computed without branches (random
/// small distances would otherwise mispredict on every element).
#[inline(always)]
pub(crate) fn slot(d: u64) -> usize {
    let k = 64 - d.saturating_sub(1).leading_zeros(); // ceil(log2 d) for d >= 2
    let log = EXACT_MAX as usize + 1 + k.saturating_sub(LOG_MIN) as usize;
    if d <= EXACT_MAX {
        d as usize
    } else {
        log
    }
}

/// Histogram of ULP distances over compared elements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "HistogramRepr", try_from = "HistogramRepr")]
pub struct UlpHistogram {
    /// Exact counts for 0..=EXACT_MAX, then the log2 buckets: one array so
    /// that recording a distance is a branch-free index computation.
    counts: [u64; SLOTS],
}

/// One range of ULP distances and how many elements fell in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UlpBucket {
    /// Smallest distance in the range.
    pub lo: u64,
    /// Largest distance in the range.
    pub hi: u64,
    /// Elements whose distance is in `lo..=hi`.
    pub count: u64,
}

/// Serialized form: the non-empty fine buckets, so the JSON stays small and
/// a record can be read back for re-rendering.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct HistogramRepr {
    total: u64,
    buckets: Vec<UlpBucket>,
}

impl Default for UlpHistogram {
    fn default() -> Self {
        UlpHistogram { counts: [0; SLOTS] }
    }
}

/// Log2 bucket slot of a distance > EXACT_MAX: ceil(log2(d)) - LOG_MIN.
#[inline]
fn log_slot(d: u64) -> usize {
    let k = 64 - (d - 1).leading_zeros(); // ceil(log2 d) for d >= 2
    (k - LOG_MIN) as usize
}

/// Inclusive range of log2 slot `s`.
fn log_range(s: usize) -> (u64, u64) {
    let k = s as u32 + LOG_MIN;
    let hi = if k == 64 { u64::MAX } else { 1u64 << k };
    ((1u64 << (k - 1)) + 1, hi)
}

impl UlpHistogram {
    /// Records one distance.
    #[inline]
    pub fn add(&mut self, d: u64) {
        self.counts[slot(d)] += 1;
    }

    /// Adds per-slot counts (indexed like `counts`, as [`slot`] computes them).
    #[inline]
    pub(crate) fn add_slot_counts(&mut self, counts: &[u64; SLOTS]) {
        for (a, b) in self.counts.iter_mut().zip(counts) {
            *a += b;
        }
    }

    /// Records `n` copies of one distance.
    #[inline]
    pub fn add_n(&mut self, d: u64, n: u64) {
        self.counts[slot(d)] += n;
    }

    fn exact(&self) -> &[u64] {
        &self.counts[..=EXACT_MAX as usize]
    }

    fn log2(&self) -> &[u64] {
        &self.counts[EXACT_MAX as usize + 1..]
    }

    /// Adds another histogram's counts to this one.
    pub fn merge(&mut self, other: &UlpHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Number of recorded distances.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The `q` quantile (nearest rank: the smallest d with at least
    /// ceil(q * total) distances <= d, rank at least 1). Exact up to
    /// [`EXACT_MAX`]; above, the upper bound of the power-of-two bucket, which
    /// never understates the true quantile. None when empty or q is not in [0, 1].
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.total();
        if total == 0 || !(0.0..=1.0).contains(&q) {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0u64;
        for (d, &c) in self.exact().iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(d as u64);
            }
        }
        for (s, &c) in self.log2().iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(log_range(s).1);
            }
        }
        None
    }

    /// Counts in the display buckets 0, 1, 2, 3-4, 5-8, ..., (2^63, u64::MAX].
    pub fn display_buckets(&self) -> Vec<UlpBucket> {
        let mut out = vec![UlpBucket {
            lo: 0,
            hi: 0,
            count: self.exact()[0],
        }];
        let mut lo = 1u64;
        let mut hi = 1u64;
        while lo <= EXACT_MAX {
            let count = self.exact()[lo as usize..=hi as usize].iter().sum();
            out.push(UlpBucket { lo, hi, count });
            lo = hi + 1;
            hi *= 2;
        }
        for (s, &count) in self.log2().iter().enumerate() {
            let (lo, hi) = log_range(s);
            out.push(UlpBucket { lo, hi, count });
        }
        out
    }

    /// The non-empty fine buckets (single distances up to [`EXACT_MAX`], powers of two above).
    pub fn fine_buckets(&self) -> Vec<UlpBucket> {
        let exact = self
            .exact()
            .iter()
            .enumerate()
            .map(|(d, &count)| UlpBucket {
                lo: d as u64,
                hi: d as u64,
                count,
            });
        let logs = self.log2().iter().enumerate().map(|(s, &count)| {
            let (lo, hi) = log_range(s);
            UlpBucket { lo, hi, count }
        });
        exact.chain(logs).filter(|b| b.count > 0).collect()
    }
}

impl From<UlpHistogram> for HistogramRepr {
    fn from(h: UlpHistogram) -> Self {
        HistogramRepr {
            total: h.total(),
            buckets: h.fine_buckets(),
        }
    }
}

impl TryFrom<HistogramRepr> for UlpHistogram {
    type Error = String;

    fn try_from(r: HistogramRepr) -> Result<Self, Self::Error> {
        let mut h = UlpHistogram::default();
        let mut sum = 0u64;
        for b in &r.buckets {
            let is_bucket = if b.lo <= EXACT_MAX {
                b.lo == b.hi
            } else {
                log_range(log_slot(b.lo)) == (b.lo, b.hi)
            };
            if !is_bucket {
                return Err(format!(
                    "ULP histogram bucket {}..={} is not a bucket of this format",
                    b.lo, b.hi
                ));
            }
            let c = &mut h.counts[slot(b.lo)];
            *c = c.saturating_add(b.count);
            sum = sum.saturating_add(b.count);
        }
        if sum != r.total {
            return Err(format!(
                "ULP histogram total {} disagrees with its buckets' sum {sum}",
                r.total
            ));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_exact_then_bucketed() {
        let mut h = UlpHistogram::default();
        for d in [0, 0, 1, 3, 3, 64, 65, 100, 1000, 1 << 40] {
            h.add(d);
        }
        assert_eq!(h.total(), 10);
        assert_eq!(h.quantile(0.0), Some(0));
        assert_eq!(h.quantile(0.2), Some(0));
        assert_eq!(h.quantile(0.3), Some(1));
        assert_eq!(h.quantile(0.5), Some(3));
        assert_eq!(h.quantile(0.6), Some(64));
        assert_eq!(h.quantile(0.7), Some(128)); // 65 is in (64, 128]
        assert_eq!(h.quantile(0.8), Some(128));
        assert_eq!(h.quantile(0.9), Some(1024));
        assert_eq!(h.quantile(1.0), Some(1 << 40));
        assert_eq!(h.quantile(1.5), None);
        assert_eq!(UlpHistogram::default().quantile(0.5), None);
    }

    #[test]
    fn display_buckets_cover_powers_of_two() {
        let mut h = UlpHistogram::default();
        for d in [0, 1, 2, 3, 4, 5, 8, 9, 64, 65, u64::MAX] {
            h.add(d);
        }
        let b = h.display_buckets();
        let head: Vec<(u64, u64, u64)> = b.iter().take(9).map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(
            head,
            vec![
                (0, 0, 1),
                (1, 1, 1),
                (2, 2, 1),
                (3, 4, 2),
                (5, 8, 2),
                (9, 16, 1),
                (17, 32, 0),
                (33, 64, 1),
                (65, 128, 1)
            ]
        );
        assert_eq!(
            b.last().map(|b| (b.lo, b.hi, b.count)),
            Some(((1 << 63) + 1, u64::MAX, 1))
        );
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 11);
    }

    #[test]
    fn serde_round_trip_and_rejects_bad_buckets() {
        let mut h = UlpHistogram::default();
        for d in [0, 7, 7, 300, 1 << 33] {
            h.add(d);
        }
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(
            json,
            r#"{"total":5,"buckets":[{"lo":0,"hi":0,"count":1},{"lo":7,"hi":7,"count":2},{"lo":257,"hi":512,"count":1},{"lo":4294967297,"hi":8589934592,"count":1}]}"#
        );
        let back: UlpHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        let bad = HistogramRepr {
            total: 1,
            buckets: vec![UlpBucket {
                lo: 3,
                hi: 4,
                count: 1,
            }],
        };
        assert!(UlpHistogram::try_from(bad).is_err());
        let bad_total = HistogramRepr {
            total: 2,
            buckets: vec![UlpBucket {
                lo: 3,
                hi: 3,
                count: 1,
            }],
        };
        assert!(UlpHistogram::try_from(bad_total).is_err());
    }
}
