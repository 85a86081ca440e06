//! The rows of a traced stage's dispatch table: each aligned pair of
//! dispatches with its comparisons, the dispatches left unaligned, and the
//! stage's own results, each under its output's criteria.

use super::align;
use super::stage::Diffs;
use super::trace::{Judge, Trace};
use crate::bisect;
use parity_mlir::Function;
use parity_record::{DispatchOp, DispatchRow, Status, TracedDiff, UnalignedDispatch};
use parity_spec::{Spec, Stage};
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// A row per aligned pair: the comparisons streamed during the tested
/// run where the pair is in step, else made from the kept tensors.
pub(super) fn rows(
    pairs: &[align::Pair],
    reference: &Trace,
    tested: &Trace,
    streamed: &HashMap<usize, Diffs>,
    judge: &Judge,
    func: &Function,
    ref_ops: &[(BTreeSet<usize>, Vec<Vec<usize>>)],
) -> Vec<DispatchRow> {
    let mut rows = Vec::with_capacity(pairs.len());
    for p in pairs {
        let r = &reference.dispatches[p.reference];
        let t = &tested.dispatches[p.target];
        let streamed = (p.reference == p.target)
            .then(|| streamed.get(&p.target))
            .flatten();
        let pick = |streamed: Option<&Option<Vec<TracedDiff>>>,
                    tv: &Option<Vec<Tensor>>,
                    rv: &Option<Vec<Tensor>>| {
            streamed.cloned().flatten().or_else(|| match (tv, rv) {
                (Some(t), Some(r)) => Some(judge.diff(t, r)),
                _ => None,
            })
        };
        let ins = pick(streamed.map(|s| &s.0), &t.inputs, &r.inputs);
        let outs = pick(streamed.map(|s| &s.1), &t.outputs, &r.outputs);
        rows.push(row(p, &r.key, func, &ref_ops[p.reference].0, ins, outs));
    }
    rows
}

/// The stage's own results, tested against reference, each under its own
/// output's criteria (the first output's for a result the stage does not
/// name); a result only one side has fails.
pub(super) fn results(
    spec: &Spec,
    stage: &Stage,
    tested: &[Tensor],
    reference: &[Tensor],
) -> Vec<TracedDiff> {
    let Some(first) = stage.outputs.first() else {
        return Vec::new();
    };
    (0..tested.len().max(reference.len()))
        .map(|i| {
            let own = Judge {
                spec: spec.clone(),
                output: stage.outputs.get(i).unwrap_or(first).clone(),
            };
            let mut d = own.diff(
                tested.get(i).map(std::slice::from_ref).unwrap_or_default(),
                reference
                    .get(i)
                    .map(std::slice::from_ref)
                    .unwrap_or_default(),
            );
            let mut one = d.pop().unwrap_or(TracedDiff {
                index: i,
                ty: String::new(),
                status: Status::Fail,
                max_abs: None,
                max_ulp: None,
                mismatched: 0,
            });
            one.index = i;
            one
        })
        .collect()
}

/// One aligned pair's row: its operations, and its inputs' and outputs'
/// comparisons (Skipped when the outputs were not kept).
fn row(
    p: &align::Pair,
    key: &str,
    func: &Function,
    ops: &BTreeSet<usize>,
    inputs: Option<Vec<TracedDiff>>,
    outputs: Option<Vec<TracedDiff>>,
) -> DispatchRow {
    let inputs_differ = inputs
        .as_ref()
        .is_some_and(|d| d.iter().any(|x| x.status == Status::Fail));
    let inputs_max_abs = inputs
        .iter()
        .flatten()
        .filter_map(|x| x.max_abs)
        .fold(0.0, f64::max);
    let status = match &outputs {
        None => Status::Skipped,
        Some(o) if o.iter().any(|x| x.status == Status::Fail) => Status::Fail,
        Some(_) => Status::Pass,
    };
    DispatchRow {
        ordinal: p.reference,
        target_ordinal: p.target,
        key: key.to_string(),
        aligned_by: if p.by_ops { "ops" } else { "key" }.to_string(),
        ops: ops
            .iter()
            .map(|&o| DispatchOp {
                index: o,
                name: func.ops[o].name.clone(),
                loc: bisect::loc_label(&func.ops[o].loc),
            })
            .collect(),
        status,
        inputs_differ,
        inputs_max_abs,
        outputs: outputs.unwrap_or_default(),
    }
}

/// The dispatches of `trace` that no pair holds, as the record lists them.
pub(super) fn unaligned<'a>(
    target: &'a str,
    trace: &'a Trace,
    paired: &'a BTreeSet<usize>,
) -> impl Iterator<Item = UnalignedDispatch> + 'a {
    trace
        .dispatches
        .iter()
        .enumerate()
        .filter(move |(i, _)| !paired.contains(i))
        .map(move |(i, d)| UnalignedDispatch {
            target: target.to_string(),
            ordinal: i,
            key: d.key.clone(),
        })
}
