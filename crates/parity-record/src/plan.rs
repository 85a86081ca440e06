//! What a run covered and how its stages relate: the [`RunPlan`] the runner
//! builds from the spec. A shard record carries it (see
//! [`ShardRecord`](crate::ShardRecord)) so `parity report --merge` orders
//! stage records and locates divergences from records alone, with the same
//! code as the run; that code, the first-divergence rule, reads run records
//! and so lives above them, in `first_divergence.rs`.

use crate::common::Mode;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The modes, cases and stages a run planned, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Modes, in the order they run (and appear in the record).
    pub modes: Vec<Mode>,
    /// Selected cases, in spec order.
    pub cases: Vec<String>,
    /// Selected stages, in dependency order.
    pub stages: Vec<PlanStage>,
    /// The operations of stages that cut a function (see [`PlanExtent`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extents: Vec<PlanExtent>,
}

/// One stage of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStage {
    /// Stage name.
    pub name: String,
    /// Every stage it depends on through `stage:` arguments, transitively, sorted.
    pub upstream: Vec<String>,
}

/// The operations a stage runs in one case, as indices into one function of
/// one module: known for `slice:` stages and for `function:` stages whose
/// function some slice stage also cuts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanExtent {
    /// Case name.
    pub case: String,
    /// Stage name.
    pub stage: String,
    /// `<module>.<function>` the operations belong to.
    pub function: String,
    /// Operation indices (program order) as inclusive `[first, last]` runs.
    pub ops: Vec<[usize; 2]>,
}

impl PlanExtent {
    /// The extent of `ops` (any order, duplicates allowed) as inclusive runs.
    pub fn new(case: &str, stage: &str, function: &str, ops: &BTreeSet<usize>) -> Self {
        let mut runs: Vec<[usize; 2]> = Vec::new();
        for &op in ops {
            match runs.last_mut() {
                Some(last) if last[1] + 1 == op => last[1] = op,
                _ => runs.push([op, op]),
            }
        }
        PlanExtent {
            case: case.to_string(),
            stage: stage.to_string(),
            function: function.to_string(),
            ops: runs,
        }
    }

    /// The operation indices.
    pub fn op_set(&self) -> BTreeSet<usize> {
        self.ops.iter().flat_map(|&[lo, hi]| lo..=hi).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_runs_round_trip() {
        let ops: BTreeSet<usize> = [1, 2, 3, 7, 9, 10].into();
        let e = PlanExtent::new("c", "s", "m.f", &ops);
        assert_eq!(e.ops, vec![[1, 3], [7, 7], [9, 10]]);
        assert_eq!(e.op_set(), ops);
    }
}
