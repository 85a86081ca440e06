//! Matching oracle tensors against the values one tapped build returned, for
//! [`propose`](super::propose): every value of the tensor's element count,
//! in its most natural layout that passes the tolerance.

use super::layout::{arrange, layouts, Layout};
use super::propose::{Found, Tie};
use super::MARK_ALL_BYTES;
use parity_compare::{compare, evaluate, CompareOptions, Criterion, UlpDType};
use parity_mlir::{Function, ValueId};
use parity_spec::{Arg, Stage};
use parity_tensor::{OracleStore, Tensor};
use std::collections::{BTreeSet, HashMap};

/// Value -> the point naming it: its outermost scope path (when no other
/// scope shares its `_` form), else nothing (the SSA name is used).
pub(super) fn points_of(func: &Function) -> HashMap<ValueId, String> {
    let mut out: HashMap<ValueId, String> = HashMap::new();
    for p in func.scope_points() {
        if p.shared_key {
            continue;
        }
        let depth = p.path.matches('/').count();
        match out.get(&p.value) {
            Some(q) if q.matches('/').count() <= depth => {}
            _ => {
                out.insert(p.value, p.path.clone());
            }
        }
    }
    out
}

/// Value -> every scope path it is the output of (nested scopes ending at
/// one value name it several times), for matching an oracle tensor's name.
pub(super) fn scope_names_of(func: &Function) -> HashMap<ValueId, Vec<String>> {
    let mut out: HashMap<ValueId, Vec<String>> = HashMap::new();
    for p in func.scope_points() {
        if !p.shared_key {
            out.entry(p.value).or_default().push(p.path);
        }
    }
    out
}

/// `name` lowercased with every run of other characters than letters and
/// digits one `_`: `conformer_1/attention/rel_shift` and
/// `conformer_1_attention_rel_shift` read alike.
fn name_key(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// Whether a scope path names the oracle tensor `oracle` (its name without
/// the case): the same words, or the path ends with them
/// (`encoder/subsampled_mask` names `subsampled_mask`).
pub(super) fn scope_names_tensor(path: &str, oracle: &str) -> bool {
    let (p, o) = (name_key(path), name_key(oracle));
    !o.is_empty() && (p == o || p.ends_with(&format!("_{o}")))
}

/// Matches oracle tensors against one probe's tapped values.
pub(super) struct Judge<'a> {
    /// The stage's function.
    pub func: &'a Function,
    /// The tapped values, in probe order.
    pub tapped: &'a [ValueId],
    /// Their tensors.
    pub values: &'a [Tensor],
    /// The criteria a match passes.
    pub tolerance: &'a [Criterion],
    /// Value -> its point ([`points_of`]).
    pub points: HashMap<ValueId, String>,
    /// Value -> the scope paths it is the output of ([`scope_names_of`]).
    pub scopes: HashMap<ValueId, Vec<String>>,
}

/// A tapped value that passed, arranged as the oracle tensor.
struct Hit {
    value: ValueId,
    layout: Layout,
    arranged: Tensor,
    metric: String,
}

impl Judge<'_> {
    fn point(&self, v: ValueId) -> String {
        self.points
            .get(&v)
            .cloned()
            .unwrap_or_else(|| self.func.values[v].name.clone())
    }

    /// The scope path of `v` that names the oracle tensor `name`, if one
    /// does (not shared with another scope's `_` form, so it resolves).
    fn naming_path(&self, v: ValueId, name: &str) -> Option<String> {
        self.scopes
            .get(&v)?
            .iter()
            .find(|p| scope_names_tensor(p, name))
            .cloned()
    }

    /// What `oracle` (named `name`, without its case) matches among the tapped values.
    pub fn find(&self, name: &str, oracle: &Tensor) -> Found {
        let mut opts = CompareOptions::for_criteria(self.tolerance, oracle.dtype());
        opts.ulp_dtype = UlpDType::from_dtype(oracle.dtype());
        let mut hits: Vec<Hit> = Vec::new();
        let mut closest: Option<(f64, ValueId)> = None;
        for (&v, t) in self.tapped.iter().zip(self.values) {
            if t.dtype().is_float() != oracle.dtype().is_float() {
                continue;
            }
            for layout in layouts(t.shape(), oracle.shape()) {
                let Some(arranged) = arrange(t, &layout, oracle.shape()) else {
                    continue;
                };
                let Ok(m) = compare(&arranged, oracle, None, &opts) else {
                    continue;
                };
                if m.count == 0 {
                    // Nothing compared (an empty tensor): no evidence either way,
                    // so no candidate, and no distance to report.
                    continue;
                }
                if closest.is_none_or(|(c, _)| m.max_abs < c) {
                    closest = Some((m.max_abs, v));
                }
                let verdict = evaluate(self.tolerance, &m, None);
                if verdict.passed {
                    hits.push(Hit {
                        value: v,
                        layout,
                        arranged,
                        metric: describe(&verdict, m.max_abs),
                    });
                    break; // the most natural layout of this value
                }
            }
        }
        let Some(best) = hits.iter().map(|h| h.layout.rank()).min() else {
            return Found::NoMatch {
                closest: closest.map(|(_, v)| self.point(v)),
                closest_max_abs: closest.map(|(m, _)| m),
            };
        };
        hits.retain(|h| h.layout.rank() == best);
        // Values holding bitwise the same numbers on this case (a mask
        // gathered, then selected) cannot be told apart by value: the one
        // whose scope is named as the tensor is proposed, else the last in
        // program order (nearest the values that consume it), and the
        // proposal says it was a tie.
        let same = |a: &Hit, b: &Hit| a.arranged.bytes() == b.arranged.bytes();
        if hits.iter().all(|h| same(h, &hits[0])) {
            let named: Vec<&Hit> = hits
                .iter()
                .filter(|h| self.naming_path(h.value, name).is_some())
                .collect();
            let pool: Vec<&Hit> = if named.is_empty() {
                hits.iter().collect()
            } else {
                named.clone()
            };
            let last = |h: &&Hit| self.func.op_of(h.value).unwrap_or(0);
            let Some(pick) = pool.into_iter().max_by_key(last) else {
                return Found::NoMatch {
                    closest: None,
                    closest_max_abs: None,
                };
            };
            let chosen_by = if named.len() == 1 {
                Tie::ScopeName
            } else {
                Tie::Last
            };
            let tie = (hits.len() > 1).then_some(chosen_by);
            return Found::Matched {
                point: self
                    .naming_path(pick.value, name)
                    .unwrap_or_else(|| self.point(pick.value)),
                value: self.func.values[pick.value].name.clone(),
                layout: pick.layout.clone(),
                metric: pick.metric.clone(),
                also: hits
                    .iter()
                    .filter(|h| h.value != pick.value)
                    .map(|h| self.point(h.value))
                    .collect(),
                tie,
            };
        }
        Found::Ambiguous {
            points: hits.iter().map(|h| self.point(h.value)).collect(),
        }
    }
}

/// `max_abs 2.4e-07 <= 1e-05, rms ...`: each criterion's observed value and
/// bound; an `allclose` as the share of elements outside it, after the max_abs.
fn describe(v: &parity_compare::Verdict, max_abs: f64) -> String {
    let mut parts = Vec::new();
    if !v
        .results
        .iter()
        .any(|r| matches!(r.criterion, Criterion::MaxAbs(_)))
    {
        parts.push(format!("max_abs {max_abs:.3e}"));
    }
    for r in &v.results {
        parts.push(match &r.criterion {
            Criterion::Allclose { atol, rtol, .. } => format!(
                "allclose(atol {atol:e}, rtol {rtol:e}) {:.1}% outside <= {:.1}%",
                r.observed * 100.0,
                r.threshold * 100.0
            ),
            Criterion::Exact => format!("exact: {} differ", r.observed),
            Criterion::CosineMin(_) => format!("cosine {:.6} >= {:.6}", r.observed, r.threshold),
            c => {
                let name = match serde_json::to_value(c) {
                    Ok(serde_json::Value::Object(m)) => {
                        m.keys().next().cloned().unwrap_or_default()
                    }
                    _ => String::new(),
                };
                format!("{name} {:.3e} <= {:.3e}", r.observed, r.threshold)
            }
        });
    }
    parts.join(", ")
}

/// One case's findings merged over cases: the same everywhere, or ambiguous.
pub(super) fn agree(found: Vec<Found>) -> Found {
    let first = found[0].clone();
    if found.iter().all(|f| f == &first) {
        return first;
    }
    let mut points: Vec<String> = Vec::new();
    for f in &found {
        let p = match f {
            Found::Matched { point, .. } => vec![point.clone()],
            Found::Ambiguous { points } => points.clone(),
            _ => vec!["no match in some case".into()],
        };
        for p in p {
            if !points.contains(&p) {
                points.push(p);
            }
        }
    }
    Found::Ambiguous { points }
}

/// The oracle tensors the stage reads as arguments (its own and upstream outputs').
pub(super) fn stage_inputs(stage: &Stage, stages: &[Stage]) -> BTreeSet<String> {
    stage
        .args
        .iter()
        .filter_map(|a| match a {
            Arg::Oracle(n) => Some(n.clone()),
            Arg::Stage { stage: up, output } => stages
                .iter()
                .find(|s| &s.name == up)
                .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                .map(|o| o.oracle.clone()),
            _ => None,
        })
        .collect()
}

/// The first output's tolerance (without `vs_f64`, which needs an f64 truth),
/// else the default for its oracle's dtype.
pub(super) fn stage_tolerance(stage: &Stage, store: &OracleStore) -> Vec<Criterion> {
    let first = &stage.outputs[0];
    let explicit: Vec<Criterion> = first
        .tolerance
        .iter()
        .flatten()
        .filter(|c| !matches!(c, Criterion::VsF64 { .. }))
        .cloned()
        .collect();
    if !explicit.is_empty() {
        return explicit;
    }
    let dtype = store
        .entry(&first.oracle)
        .map_or(parity_tensor::DType::F32, |e| e.dtype);
    parity_compare::default_tolerance(dtype)
}

/// Values worth tapping: results of the stage's operations whose element
/// count some oracle tensor of the case has; named scopes first, the rest in
/// program order, while all taps stay under [`MARK_ALL_BYTES`]. Returns the
/// tapped values and how many were left out.
pub(super) fn candidates(
    func: &Function,
    inputs: &[ValueId],
    outputs: &[ValueId],
    store: &OracleStore,
    case: &str,
) -> (Vec<ValueId>, usize) {
    let prefix = format!("{case}/");
    let counts: BTreeSet<usize> = store
        .names()
        .iter()
        .filter(|n| n.starts_with(&prefix))
        .filter_map(|n| store.entry(n))
        .map(|e| e.shape.iter().product())
        .collect();
    let named: BTreeSet<ValueId> = func.scope_outputs().into_values().collect();
    let mut all: Vec<ValueId> = func
        .cone(inputs, outputs)
        .into_iter()
        .flat_map(|o| func.ops[o].results.iter().copied())
        .filter(|&v| {
            func.values[v]
                .ty
                .shape()
                .is_some_and(|s| counts.contains(&s.iter().product()))
        })
        .collect();
    all.sort_by_key(|v| !named.contains(v)); // stable: program order within each group
    let mut bytes = 0usize;
    let mut tapped = Vec::new();
    for &v in &all {
        let size = func.values[v]
            .ty
            .shape()
            .map_or(0, |s| s.iter().product::<usize>() * 8);
        if bytes + size > MARK_ALL_BYTES {
            continue;
        }
        bytes += size;
        tapped.push(v);
    }
    let untapped = all.len() - tapped.len();
    (tapped, untapped)
}

#[cfg(test)]
#[path = "matching_tests.rs"]
mod tests;
