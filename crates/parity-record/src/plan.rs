//! What a run covered and how its stages relate, and the rule that picks the
//! first divergence from stage records: chosen by data flow and by position
//! in the model, never by the order stages are listed in the spec.
//!
//! The runner builds a [`RunPlan`] from the spec; a shard record carries it
//! (see [`crate::shard`]) so `parity report --merge` orders stage records and
//! locates divergences from records alone, with the same code as the run.
//!
//! A failing stage is not first when
//! - it depends (through `stage:` arguments, transitively) on another failing
//!   stage: its inputs were already off, or
//! - it contains another failing stage: both cut the same function and the
//!   other's operations are a strict subset of its own (a whole-function stage
//!   contains every slice of that function).
//!
//! Among what is left, dependency order decides, except that of several
//! stages cutting one function, the one whose cut ends earliest in the
//! function wins (the earliest innermost cut).

use crate::common::{Mode, Status};
use crate::run::{Divergence, RunRecord, StageRecord};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

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

/// An extent with its operations expanded, for the containment test.
struct Extent<'a> {
    function: &'a str,
    ops: BTreeSet<usize>,
}

impl Extent<'_> {
    /// Whether `self` strictly contains `other` (same function, a strict superset of its ops).
    fn contains(&self, other: &Extent) -> bool {
        self.function == other.function
            && self.ops.len() > other.ops.len()
            && other.ops.is_subset(&self.ops)
    }

    /// The position of the last operation (where the cut ends).
    fn end(&self) -> usize {
        self.ops.last().copied().unwrap_or(0)
    }
}

impl RunPlan {
    /// The position of a stage record in the plan's execution order: mode,
    /// then case, then dependency order (records the plan does not know last).
    pub fn position(&self, stage: &StageRecord) -> (usize, usize, usize) {
        let find = |i: Option<usize>| i.unwrap_or(usize::MAX);
        (
            find(self.modes.iter().position(|&m| m == stage.mode)),
            find(self.cases.iter().position(|c| *c == stage.case)),
            find(self.stages.iter().position(|s| s.name == stage.name)),
        )
    }

    /// Fills in `record.first_divergence` (isolated mode) and each case's
    /// chained divergence from its stage records.
    pub fn locate(&self, record: &mut RunRecord) {
        let extents: HashMap<(String, String), Extent> = self
            .extents
            .iter()
            .map(|e| {
                let extent = Extent {
                    function: &e.function,
                    ops: e.op_set(),
                };
                ((e.case.clone(), e.stage.clone()), extent)
            })
            .collect();
        // Over cases: the first case's choice, unless a stage earlier by the same
        // rules diverges in a later case (cases are inputs, not positions).
        let mut isolated: Option<(usize, Divergence)> = None;
        for case in &self.cases {
            if let Some((rank, d)) = self.first_in_case(&extents, record, case, Mode::Isolated) {
                if isolated.as_ref().is_none_or(|(r, _)| rank < *r) {
                    isolated = Some((rank, d));
                }
            }
        }
        let chained = self
            .cases
            .iter()
            .filter_map(|c| self.first_in_case(&extents, record, c, Mode::Chained))
            .map(|(_, d)| d)
            .collect();
        record.first_divergence = isolated.map(|(_, d)| d);
        record.chained_divergence = chained;
    }

    /// The first divergence of one case and mode, with its rank in dependency
    /// order (to compare across cases).
    fn first_in_case(
        &self,
        extents: &HashMap<(String, String), Extent>,
        record: &RunRecord,
        case: &str,
        mode: Mode,
    ) -> Option<(usize, Divergence)> {
        let failing: HashMap<&str, Divergence> = record
            .stages
            .iter()
            .filter(|s| s.case == case && s.mode == mode && s.status == Status::Fail)
            .map(|s| {
                let output = s
                    .outputs
                    .iter()
                    .find(|o| o.status == Status::Fail)
                    .map(|o| o.name.clone())
                    .unwrap_or_default();
                let d = Divergence {
                    stage: s.name.clone(),
                    case: s.case.clone(),
                    output,
                    mode,
                    target: None,
                };
                (s.name.as_str(), d)
            })
            .collect();
        if failing.is_empty() {
            return None;
        }
        let extent = |stage: &str| extents.get(&(case.to_string(), stage.to_string()));
        let upstream_fails = |stage: &PlanStage| {
            stage
                .upstream
                .iter()
                .any(|u| failing.contains_key(u.as_str()))
        };
        let contains_failing = |name: &str| {
            extent(name).is_some_and(|e| {
                failing
                    .keys()
                    .any(|&other| other != name && extent(other).is_some_and(|o| e.contains(o)))
            })
        };
        let candidates: Vec<(usize, &str)> = self
            .stages
            .iter()
            .enumerate()
            .filter(|(_, s)| failing.contains_key(s.name.as_str()))
            .filter(|(_, s)| !upstream_fails(s) && !contains_failing(&s.name))
            .map(|(rank, s)| (rank, s.name.as_str()))
            .collect();
        let &(rank, name) = candidates.first()?;
        // Of the candidates cutting the same function, the earliest cut wins.
        let chosen = match extent(name) {
            None => (rank, name),
            Some(e) => candidates
                .iter()
                .copied()
                .filter(|(_, n)| extent(n).is_some_and(|o| o.function == e.function))
                .min_by_key(|(r, n)| (extent(n).map_or(usize::MAX, Extent::end), *r))
                .unwrap_or((rank, name)),
        };
        failing.get(chosen.1).cloned().map(|d| (chosen.0, d))
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
