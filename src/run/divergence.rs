//! Which failing stage is the first divergence: chosen by data flow and by
//! position in the model, never by the order stages are listed in the spec.
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

use super::record::{Divergence, Mode, RunRecord, Status};
use parity_spec::{Arg, Case, Spec};
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

impl Extent {
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

/// (case, stage) -> extent.
pub type Extents = HashMap<(String, String), Extent>;

/// Fills in `record.first_divergence` (isolated mode) and each case's chained divergence.
pub fn locate(spec: &Spec, cases: &[&Case], extents: &Extents, record: &mut RunRecord) {
    let order = spec.topo_order();
    let first = |case: &str, mode: Mode| first_in_case(spec, &order, extents, record, case, mode);
    // Over cases: the first case's choice, unless a stage earlier by the same
    // rules diverges in a later case (cases are inputs, not positions).
    let mut isolated: Option<(usize, Divergence)> = None;
    for c in cases {
        if let Some((rank, d)) = first(&c.name, Mode::Isolated) {
            if isolated.as_ref().is_none_or(|(r, _)| rank < *r) {
                isolated = Some((rank, d));
            }
        }
    }
    let chained = cases
        .iter()
        .filter_map(|c| first(&c.name, Mode::Chained).map(|(_, d)| d))
        .collect();
    record.first_divergence = isolated.map(|(_, d)| d);
    record.chained_divergence = chained;
}

/// The first divergence of one case and mode, with its rank in dependency
/// order (to compare across cases).
fn first_in_case(
    spec: &Spec,
    order: &[usize],
    extents: &Extents,
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
            (
                s.name.as_str(),
                Divergence {
                    stage: s.name.clone(),
                    case: s.case.clone(),
                    output,
                    mode,
                },
            )
        })
        .collect();
    if failing.is_empty() {
        return None;
    }
    let extent = |stage: &str| extents.get(&(case.to_string(), stage.to_string()));
    let upstream_fails = |i: usize| {
        upstream(spec, i)
            .iter()
            .any(|&u| failing.contains_key(spec.stages[u].name.as_str()))
    };
    let contains_failing = |name: &str| {
        extent(name).is_some_and(|e| {
            failing
                .keys()
                .any(|&other| other != name && extent(other).is_some_and(|o| e.contains(o)))
        })
    };
    let candidates: Vec<(usize, &str)> = order
        .iter()
        .enumerate()
        .map(|(rank, &i)| (rank, spec.stages[i].name.as_str()))
        .filter(|(_, name)| failing.contains_key(name))
        .filter(|&(rank, name)| !upstream_fails(order[rank]) && !contains_failing(name))
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

/// Every stage `i` depends on through `stage:` arguments, transitively.
fn upstream(spec: &Spec, i: usize) -> Vec<usize> {
    let index: HashMap<&str, usize> = spec
        .stages
        .iter()
        .enumerate()
        .map(|(j, s)| (s.name.as_str(), j))
        .collect();
    let mut seen = HashSet::new();
    let mut stack = vec![i];
    while let Some(j) = stack.pop() {
        for arg in &spec.stages[j].args {
            if let Arg::Stage { stage, .. } = arg {
                if let Some(&u) = index.get(stage.as_str()) {
                    if seen.insert(u) {
                        stack.push(u);
                    }
                }
            }
        }
    }
    seen.into_iter().collect()
}
