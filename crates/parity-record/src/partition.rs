//! Shards: `parity check --shard i/n` runs a deterministic part of a run.
//! This is the partition and what a shard's record says about it; putting
//! the parts back together is [`merge`](crate::merge).
//!
//! The partition (docs/run-record.md, "Shards"): number the isolated stage
//! runs 0, 1, 2, ... in the order the unsharded run executes them (case
//! order, then dependency order); isolated run `k` belongs to shard
//! `k mod n + 1`. A chained stage needs its upstream stages' production
//! outputs, so chained runs are sharded by case: every chained run of case
//! `j` (0-based, spec order) belongs to shard `n - (j mod n)`, counted from
//! the last shard so that a one-case spec does not load the first shard with
//! both modes. Every (stage, case, mode) belongs to exactly one shard.

use crate::common::Mode;
use crate::plan::RunPlan;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Shard `index` of `count`, 1-based (`--shard 2/3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    /// 1..=count.
    pub index: usize,
    /// How many shards the run is split into (at least 1).
    pub count: usize,
}

/// A `--shard` argument that is not `i/n` with 1 <= i <= n.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid shard `{0}`: expected i/n with 1 <= i <= n, e.g. 2/3")]
pub struct ShardParseError(String);

impl std::str::FromStr for Shard {
    type Err = ShardParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ShardParseError(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether this shard runs stage `rank` (position in dependency order among
    /// the `stages` selected) of case `case` (position among the selected cases) in `mode`.
    pub fn owns(&self, mode: Mode, case: usize, rank: usize, stages: usize) -> bool {
        let slot = match mode {
            Mode::Isolated => (case * stages + rank) % self.count,
            Mode::Chained => self.count - 1 - case % self.count,
        };
        slot == self.index - 1
    }
}

/// What a shard's run record says about the shard (`shard` in the run record).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// 1-based shard index.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
    /// Hex sha256 of the spec file's bytes: shards of different specs never merge.
    pub spec_sha256: String,
    /// The whole run's plan (not only this shard's part), for the merge.
    pub plan: RunPlan,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_shard_arguments() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_stage_run_belongs_to_exactly_one_shard() {
        for count in 1..=5 {
            for mode in [Mode::Isolated, Mode::Chained] {
                for case in 0..4 {
                    for rank in 0..6 {
                        let owners = (1..=count)
                            .filter(|&index| Shard { index, count }.owns(mode, case, rank, 6))
                            .count();
                        assert_eq!(owners, 1, "{count} {mode:?} {case} {rank}");
                    }
                }
            }
        }
        // The documented rule, on one example: 6 stages, 1 case, 3 shards.
        let owned = |index| {
            (0..6)
                .filter(|&r| Shard { index, count: 3 }.owns(Mode::Isolated, 0, r, 6))
                .collect::<Vec<_>>()
        };
        assert_eq!(owned(1), vec![0, 3]);
        assert_eq!(owned(3), vec![2, 5]);
        assert!(Shard { index: 3, count: 3 }.owns(Mode::Chained, 0, 4, 6));
        assert!(Shard { index: 2, count: 3 }.owns(Mode::Chained, 1, 0, 6));
    }
}
