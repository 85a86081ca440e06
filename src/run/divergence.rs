//! Which failing stage is the first divergence. The rule lives with the
//! records ([`parity_record::plan`]), so `parity report --merge` applies the
//! same one to shards; this module builds its [`RunPlan`] from the spec.

use super::record::{Mode, RunRecord};
use parity_record::plan::{PlanExtent, PlanStage, RunPlan};
use parity_spec::{Case, Spec};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The operations a stage runs, as indices into one function of one module:
/// known for `slice:` stages and for `function:` stages whose function some
/// slice stage also cuts (see `slices::plan`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// `<module>.<function>` the operations belong to.
    pub function: String,
    /// Operation indices (program order).
    pub ops: BTreeSet<usize>,
}

/// (case, stage) -> extent.
pub type Extents = HashMap<(String, String), Extent>;

/// The plan of a run of `spec`: `modes`, `cases`, the `selected` stages
/// (indices into `spec.stages`, in dependency order) and their extents.
pub fn plan(
    spec: &Spec,
    modes: &[Mode],
    cases: &[&Case],
    selected: &[usize],
    extents: &Extents,
) -> RunPlan {
    let mut extents: Vec<PlanExtent> = extents
        .iter()
        .map(|((case, stage), e)| PlanExtent::new(case, stage, &e.function, &e.ops))
        .collect();
    extents.sort_by(|a, b| (&a.case, &a.stage).cmp(&(&b.case, &b.stage)));
    RunPlan {
        modes: modes.to_vec(),
        cases: cases.iter().map(|c| c.name.clone()).collect(),
        stages: selected
            .iter()
            .map(|&i| PlanStage {
                name: spec.stages[i].name.clone(),
                upstream: upstream(spec, i),
            })
            .collect(),
        extents,
    }
}

/// Fills in `record.first_divergence` (isolated mode) and each case's chained divergence.
pub fn locate(plan: &RunPlan, record: &mut RunRecord) {
    plan.locate(record);
}

/// The names of every stage `i` depends on through `stage:` arguments, transitively, sorted.
fn upstream(spec: &Spec, i: usize) -> Vec<String> {
    let index: HashMap<&str, usize> = spec
        .stages
        .iter()
        .enumerate()
        .map(|(j, s)| (s.name.as_str(), j))
        .collect();
    let mut seen = HashSet::new();
    let mut stack = vec![i];
    while let Some(j) = stack.pop() {
        // `dependencies` covers `bind:` rules too.
        for stage in spec.stages[j].dependencies() {
            if let Some(&u) = index.get(stage) {
                if seen.insert(u) {
                    stack.push(u);
                }
            }
        }
    }
    let mut names: Vec<String> = seen
        .into_iter()
        .map(|u| spec.stages[u].name.clone())
        .collect();
    names.sort();
    names
}
