//! Collecting a traced run: the trace events grouped into dispatches, with
//! their tensors kept under a byte budget, and the comparison of two
//! dispatches' tensors under the stage's criteria.

use crate::run::{output_compare_options, output_criteria};
use parity_compare::{compare, evaluate_with, Criterion, VerdictOptions};
use parity_record::{Status, TracedDiff};
use parity_spec::{OutputSpec, Spec};
use parity_tensor::Tensor;

/// One dispatch as traced: its key (`EXECUTABLE::ENTRY`) and its tensors,
/// None when they were dropped over the budget (or never traced).
#[derive(Debug, Default)]
pub struct TracedDispatch {
    /// `EXECUTABLE::ENTRY_POINT`.
    pub key: String,
    /// The operands.
    pub inputs: Option<Vec<Tensor>>,
    /// The results.
    pub outputs: Option<Vec<Tensor>>,
    /// Whether its inputs trace arrived.
    pub inputs_seen: bool,
    /// Whether its outputs trace arrived.
    pub outputs_seen: bool,
    /// Its results' shapes, kept when the tensors are not.
    pub output_shapes: Vec<Vec<usize>>,
}

impl TracedDispatch {
    /// The executable's name (the key before `::`).
    pub fn executable(&self) -> &str {
        self.key.split("::").next().unwrap_or(&self.key)
    }
}

/// A traced run's dispatches, in execution order.
#[derive(Debug, Default)]
pub struct Trace {
    /// The dispatches.
    pub dispatches: Vec<TracedDispatch>,
    /// Bytes of tensors kept.
    pub kept: u64,
    /// Bytes of tensors dropped over the budget.
    pub dropped: u64,
    /// The budget, in bytes.
    pub budget: u64,
    /// Events seen per (key, outputs?).
    seen: std::collections::HashMap<(String, bool), usize>,
    /// (key, k) -> dispatch index.
    instances: std::collections::HashMap<(String, usize), usize>,
}

/// `KEY inputs` / `KEY outputs` (the label may add " with {..} decoded to
/// row major layout"): the key and whether these are the outputs.
pub fn split_label(label: &str) -> (String, bool) {
    let (head, _) = label.split_once(" with {").unwrap_or((label, ""));
    if let Some(k) = head.strip_suffix(" outputs") {
        (k.to_string(), true)
    } else {
        (
            head.strip_suffix(" inputs").unwrap_or(head).to_string(),
            false,
        )
    }
}

impl Trace {
    /// An empty trace keeping at most `budget` bytes of tensors.
    pub fn new(budget: u64) -> Self {
        Trace {
            budget,
            ..Trace::default()
        }
    }

    /// The dispatch an event belongs to, made when it is the first of its
    /// kind: the k-th `KEY inputs` and the k-th `KEY outputs` are one
    /// dispatch. (The stream scheduler may emit a dispatch's outputs trace
    /// before its inputs trace, so events are not paired by adjacency.)
    /// Dispatches are numbered in the order their first event arrives.
    pub fn slot(&mut self, key: &str, outputs: bool) -> usize {
        let seen = self.seen.entry((key.to_string(), outputs)).or_insert(0);
        let k = *seen;
        *seen += 1;
        let instance = (key.to_string(), k);
        if let Some(&i) = self.instances.get(&instance) {
            return i;
        }
        self.dispatches.push(TracedDispatch {
            key: key.to_string(),
            ..TracedDispatch::default()
        });
        let i = self.dispatches.len() - 1;
        self.instances.insert(instance, i);
        i
    }

    /// Stores an event's tensors in dispatch `i` (kept under the budget;
    /// `keep` false drops them whatever the budget: they were compared as
    /// they arrived).
    pub fn store(&mut self, i: usize, outputs: bool, tensors: Vec<Tensor>, keep: bool) {
        let bytes: u64 = tensors.iter().map(|t| t.bytes().len() as u64).sum();
        if outputs {
            self.dispatches[i].output_shapes = tensors.iter().map(|t| t.shape().to_vec()).collect();
        }
        let kept = if keep && self.kept + bytes <= self.budget {
            self.kept += bytes;
            Some(tensors)
        } else {
            if keep {
                self.dropped += bytes;
            }
            None
        };
        let d = &mut self.dispatches[i];
        if outputs {
            d.outputs = kept;
            d.outputs_seen = true;
        } else {
            d.inputs = kept;
            d.inputs_seen = true;
        }
    }

    /// Records one trace event (see [`Trace::slot`] and [`Trace::store`]).
    pub fn push(&mut self, label: &str, tensors: Vec<Tensor>, keep: bool) {
        let (key, outputs) = split_label(label);
        let i = self.slot(&key, outputs);
        self.store(i, outputs, tensors, keep);
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<String> {
        self.dispatches.iter().map(|d| d.key.clone()).collect()
    }
}

/// How traced tensors are judged: the criteria of the stage's first output
/// (vs_f64 left out: no truth exists for a dispatch's tensors), masks not
/// applied (they are shaped for the stage's outputs).
pub struct Judge {
    /// The spec (per-dtype default tolerances).
    pub spec: Spec,
    /// The stage output whose criteria apply.
    pub output: OutputSpec,
}

impl Judge {
    /// The criteria for tensors of `t`'s dtype.
    pub fn criteria(&self, t: &Tensor) -> Vec<Criterion> {
        self.criteria_for(t.dtype())
    }

    /// The criteria for tensors of `dtype`.
    pub fn criteria_for(&self, dtype: parity_tensor::DType) -> Vec<Criterion> {
        // An integer or boolean tensor (an index, a mask, a length) is
        // judged exactly: the float output's bounds (ULPs, relative error)
        // do not speak for it, and would fail it at zero difference.
        if !dtype.is_float() {
            return vec![Criterion::Exact];
        }
        output_criteria(&self.spec, &self.output, dtype)
            .into_iter()
            .filter(|c| !matches!(c, Criterion::VsF64 { .. }))
            .collect()
    }

    /// The criteria for the stage output `out` itself (its declared dtype,
    /// else f32), for the record.
    pub fn criteria_of(&self, out: &OutputSpec) -> Vec<Criterion> {
        let dtype = out.ulp_dtype.unwrap_or(parity_tensor::DType::F32);
        self.criteria_for(dtype)
    }

    /// Compares the tested target's tensors with the reference's, one
    /// entry per tensor.
    pub fn diff(&self, tested: &[Tensor], reference: &[Tensor]) -> Vec<TracedDiff> {
        let n = tested.len().max(reference.len());
        (0..n)
            .map(|i| match (tested.get(i), reference.get(i)) {
                (Some(t), Some(r)) => self.one(i, t, r),
                (t, r) => TracedDiff {
                    index: i,
                    ty: t.or(r).map(type_text).unwrap_or_default(),
                    status: Status::Fail,
                    max_abs: None,
                    max_ulp: None,
                    mismatched: 0,
                },
            })
            .collect()
    }

    fn one(&self, index: usize, tested: &Tensor, reference: &Tensor) -> TracedDiff {
        let ty = type_text(reference);
        let fail = || TracedDiff {
            index,
            ty: ty.clone(),
            status: Status::Fail,
            max_abs: None,
            max_ulp: None,
            mismatched: 0,
        };
        if tested.shape() != reference.shape() {
            return fail();
        }
        if tested.dtype() != reference.dtype() {
            // Another dtype on the tested target (a demoted operand): the
            // values are compared in f64, under the reference dtype's criteria.
            let (Ok(t), Ok(r)) = (as_f64(tested), as_f64(reference)) else {
                return fail();
            };
            let mut d = self.one(index, &t, &r);
            d.ty = format!("{ty} vs {}", type_text(tested));
            // ULPs of f64 say nothing about either side's dtype.
            d.max_ulp = None;
            return d;
        }
        let criteria = self.criteria(reference);
        let options = output_compare_options(&self.output, &criteria, reference.dtype());
        let Ok(m) = compare(tested, reference, None, &options) else {
            return fail();
        };
        let verdict = evaluate_with(&criteria, &m, None, &VerdictOptions { allow_empty: true });
        TracedDiff {
            index,
            ty,
            status: if verdict.passed {
                Status::Pass
            } else {
                Status::Fail
            },
            max_abs: Some(m.max_abs),
            max_ulp: m.max_ulp,
            mismatched: m.mismatches,
        }
    }
}

fn as_f64(t: &Tensor) -> Result<Tensor, String> {
    let bytes: Vec<u8> = t
        .to_f64_vec()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    Tensor::from_bytes(parity_tensor::DType::F64, t.shape().to_vec(), bytes)
        .map_err(|e| e.to_string())
}

/// `f32[4,16]`.
pub fn type_text(t: &Tensor) -> String {
    let dims: Vec<String> = t.shape().iter().map(usize::to_string).collect();
    format!("{}[{}]", t.dtype().name(), dims.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_f32(vec![v.len()], v).unwrap()
    }

    #[test]
    fn events_group_into_dispatches_and_respect_the_budget() {
        let mut trace = Trace::new(20);
        trace.push("e0::a inputs", vec![t(&[1.0, 2.0])], true);
        trace.push("e0::a outputs", vec![t(&[3.0])], true);
        trace.push("e1::b inputs", vec![t(&[3.0])], true);
        trace.push(
            "e1::b outputs with {0} decoded to row major layout",
            vec![t(&[1.0, 2.0, 3.0])],
            true,
        );
        assert_eq!(trace.keys(), ["e0::a", "e1::b"]);
        assert_eq!(trace.dispatches[1].executable(), "e1");
        // 8 + 4 + 4 kept; the last 12 bytes are over the 20-byte budget.
        assert_eq!((trace.kept, trace.dropped), (16, 12));
        assert!(trace.dispatches[1].outputs.is_none());
        // The same key again is another dispatch.
        trace.push("e1::b inputs", vec![], false);
        assert_eq!(trace.dispatches.len(), 3);
        // An outputs trace before its inputs trace pairs with it all the same.
        trace.push("e2::c outputs", vec![t(&[0.0])], false);
        trace.push("e2::c inputs", vec![t(&[0.0])], false);
        assert_eq!(trace.keys(), ["e0::a", "e1::b", "e1::b", "e2::c"]);
        assert!(trace.dispatches[3].inputs_seen && trace.dispatches[3].outputs_seen);
    }
}
