//! The rule that picks the first divergence from stage records: chosen by
//! data flow and by position in the model, never by the order stages are
//! listed in the spec. It is a method of the [`RunPlan`] a run (or a
//! shard record, for the merge) carries.
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
use crate::plan::{PlanStage, RunPlan};
use crate::run::{Divergence, RunRecord, StageRecord};
use std::collections::{BTreeSet, HashMap};

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
