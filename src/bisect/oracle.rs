//! Oracle evidence: the stage's checkpoints (its outputs, and oracle tensors
//! named after scopes of its function) evaluated with tapped variants, to
//! find the earliest failing checkpoint and the passing ones it depends on.

use super::error::BisectError;
use super::measure::{loc_label, oracle_as, squeezed, value_metrics, CHECKPOINT_ULP_BUDGET};
use super::probe::{Cut, Prober};
use super::{Program, Strategy, MARK_ALL_BYTES};
use parity_mlir::ValueId;
use parity_record::{CheckpointKind, CheckpointRecord, ValueMetrics, VerdictSource};
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// A value with an oracle tensor.
#[derive(Clone, Debug)]
struct Checkpoint {
    value: ValueId,
    oracle: String,
    kind: CheckpointKind,
}

/// A checkpoint's verdict and where it comes from.
#[derive(Clone, Debug)]
struct Verdict {
    passed: bool,
    from: VerdictSource,
    metrics: Option<ValueMetrics>,
}

/// The search over one stage's checkpoints.
pub struct OracleSearch<'p, 'a> {
    program: &'p Program<'a>,
    checkpoints: Vec<Checkpoint>,
    verdicts: HashMap<ValueId, Verdict>,
    /// The untapped build's results: every tapped build must reproduce them.
    baseline: Vec<Tensor>,
    /// Probes whose taps changed the stage's own results.
    pub observer_effect: Vec<String>,
}

impl<'p, 'a> OracleSearch<'p, 'a> {
    /// Gathers the checkpoints: the stage outputs with the run's verdicts
    /// (`statuses`: output name -> passed) and every oracle tensor of `case`
    /// named after a scope of the function whose shape fits.
    pub fn new(
        program: &'p Program<'a>,
        statuses: &HashMap<String, bool>,
        case: &str,
        baseline: Vec<Tensor>,
    ) -> Self {
        let func = program.func;
        let mut checkpoints = Vec::new();
        let mut verdicts = HashMap::new();
        for (o, &v) in program.stage.outputs.iter().zip(&program.outputs) {
            checkpoints.push(Checkpoint {
                value: v,
                oracle: o.oracle.clone(),
                kind: CheckpointKind::StageOutput,
            });
            if let Some(&passed) = statuses.get(&o.name) {
                verdicts.insert(
                    v,
                    Verdict {
                        passed,
                        from: VerdictSource::Run,
                        metrics: None,
                    },
                );
            }
        }
        // The spec's explicit map first: a mapped tensor need not follow the convention.
        for (name, point) in &program.mapped {
            let Ok(v) = func.resolve_point(point) else {
                continue; // a point of another function
            };
            let fits = program
                .store
                .entry(name)
                .zip(func.values[v].ty.shape())
                .is_some_and(|(e, s)| squeezed(&e.shape) == squeezed(&s));
            if fits && !checkpoints.iter().any(|c: &Checkpoint| c.value == v) {
                checkpoints.push(Checkpoint {
                    value: v,
                    oracle: name.clone(),
                    kind: CheckpointKind::Mapped,
                });
            }
        }
        for (key, v) in func.scope_outputs() {
            let name = format!("{case}/{key}");
            if !program.store.contains(&name) || checkpoints.iter().any(|c| c.value == v) {
                continue;
            }
            let fits = program
                .store
                .entry(&name)
                .zip(func.values[v].ty.shape())
                .is_some_and(|(e, s)| squeezed(&e.shape) == squeezed(&s));
            if fits {
                checkpoints.push(Checkpoint {
                    value: v,
                    oracle: name,
                    kind: CheckpointKind::Convention,
                });
            }
        }
        OracleSearch {
            program,
            checkpoints,
            verdicts,
            baseline,
            observer_effect: Vec::new(),
        }
    }

    /// The oracle tensor of a checkpoint value.
    pub fn oracle_of(&self, v: ValueId) -> Option<&str> {
        self.checkpoints
            .iter()
            .find(|c| c.value == v)
            .map(|c| c.oracle.as_str())
    }

    /// The metrics a probe measured for a checkpoint.
    pub fn metrics_of(&self, v: ValueId) -> Option<&ValueMetrics> {
        self.verdicts.get(&v).and_then(|x| x.metrics.as_ref())
    }

    fn failed(&self, v: ValueId) -> bool {
        self.verdicts.get(&v).is_some_and(|x| !x.passed)
    }

    /// Unjudged checkpoints that `t` depends on, in program order.
    fn candidates(&self, t: ValueId) -> Vec<ValueId> {
        let anc = self.program.ancestors(t);
        let mut c: Vec<ValueId> = self
            .checkpoints
            .iter()
            .map(|c| c.value)
            .filter(|&v| v != t && !self.verdicts.contains_key(&v))
            .filter(|&v| self.program.op_of(v).is_some_and(|o| anc.contains(&o)))
            .collect();
        c.sort_by_key(|&v| self.program.op_of(v));
        c.dedup();
        c
    }

    /// One probe: the stage's outputs plus `vals` tapped; judges `vals`.
    fn evaluate(
        &mut self,
        prober: &mut Prober,
        vals: &[ValueId],
        why: &str,
    ) -> Result<(), BisectError> {
        let p = self.program;
        let mut want = p.outputs.clone();
        want.extend_from_slice(vals);
        let res = prober
            .run(
                &[Cut {
                    name: "tapped".into(),
                    given: p.given(),
                    want,
                }],
                false,
                why,
            )?
            .remove(0);
        let names: Vec<&str> = p.stage.outputs.iter().map(|o| o.name.as_str()).collect();
        if let Some(changed) = observer_effect(&names, &self.baseline, &res) {
            self.observer_effect
                .push(format!("probe {}: {changed}", prober.probes));
        }
        for (k, &v) in vals.iter().enumerate() {
            let name = self.oracle_of(v).unwrap_or_default().to_string();
            let expected = oracle_as(p.store, &name, p.func, v)?;
            let m = value_metrics(
                p.func,
                v,
                &res[p.outputs.len() + k],
                &expected,
                &format!("oracle:{name}"),
                p.budget,
            )?;
            let passed = m.ulps_at_max <= CHECKPOINT_ULP_BUDGET;
            self.verdicts.insert(
                v,
                Verdict {
                    passed,
                    from: VerdictSource::Probe,
                    metrics: Some(m),
                },
            );
        }
        Ok(())
    }

    /// From the failing stage output `start`, the earliest failing checkpoint
    /// it depends on. Returns it and the strategy used.
    pub fn locate(
        &mut self,
        prober: &mut Prober,
        start: ValueId,
        strategy: Strategy,
    ) -> Result<(ValueId, Strategy), BisectError> {
        let mut target = start;
        let initial = self.candidates(target);
        let tap_bytes: usize = initial
            .iter()
            .map(|&v| {
                self.program.func.values[v]
                    .ty
                    .shape()
                    .map_or(0, |s| s.iter().product::<usize>() * 8)
            })
            .sum();
        let strategy = match strategy {
            Strategy::Auto if tap_bytes <= MARK_ALL_BYTES => Strategy::MarkAll,
            Strategy::Auto => Strategy::Bisection,
            s => s,
        };
        if strategy == Strategy::Bisection {
            loop {
                let cands = self.candidates(target);
                if cands.is_empty() {
                    break;
                }
                let mid = cands[cands.len() / 2];
                self.evaluate(prober, &[mid], "oracle checkpoint, bisection")?;
                if self.failed(mid) {
                    target = mid;
                } else {
                    // A passing checkpoint vouches for the checkpoints it
                    // depends on (an error there would have reached it).
                    let anc = self.program.ancestors(mid);
                    for v in cands {
                        if v != mid && self.program.op_of(v).is_some_and(|o| anc.contains(&o)) {
                            self.verdicts.entry(v).or_insert(Verdict {
                                passed: true,
                                from: VerdictSource::Implied,
                                metrics: None,
                            });
                        }
                    }
                }
            }
        } else {
            if !initial.is_empty() {
                self.evaluate(prober, &initial, "oracle checkpoints, every tap")?;
            }
            let anc = self.program.ancestors(target);
            if let Some(&v) = initial
                .iter()
                .filter(|&&v| self.failed(v))
                .filter(|&&v| self.program.op_of(v).is_some_and(|o| anc.contains(&o)))
                .min_by_key(|&&v| self.program.op_of(v))
            {
                target = v;
            }
        }
        Ok((target, strategy))
    }

    /// The passing checkpoints `target` depends on, in value order.
    pub fn passing_for(&self, target: ValueId) -> Vec<ValueId> {
        let anc = self.program.ancestors(target);
        self.checkpoints
            .iter()
            .map(|c| c.value)
            .filter(|&v| v != target && self.verdicts.get(&v).is_some_and(|x| x.passed))
            .filter(|&v| self.program.op_of(v).is_some_and(|o| anc.contains(&o)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Every judged checkpoint, in program order, for the report.
    pub fn records(&self) -> Vec<CheckpointRecord> {
        let func = self.program.func;
        let mut out: Vec<CheckpointRecord> = self
            .checkpoints
            .iter()
            .filter_map(|c| {
                self.verdicts.get(&c.value).map(|v| CheckpointRecord {
                    oracle: c.oracle.clone(),
                    value: func.values[c.value].name.clone(),
                    op_index: self.program.op_of(c.value),
                    loc: loc_label(&func.values[c.value].loc),
                    kind: c.kind,
                    passed: v.passed,
                    verdict_from: v.from,
                    metrics: v.metrics.clone(),
                })
            })
            .collect();
        out.sort_by_key(|c| c.op_index);
        out
    }
}

/// What tapping changed in the stage's own results: the outputs whose tapped
/// build differs bit for bit from the untapped one (`baseline`), with how
/// many elements differ and by how much; `None` when every output is the same.
fn observer_effect(names: &[&str], baseline: &[Tensor], tapped: &[Tensor]) -> Option<String> {
    let changed: Vec<String> = names
        .iter()
        .zip(baseline.iter().zip(tapped))
        .filter(|(_, (a, b))| a.bytes() != b.bytes())
        .map(|(name, (a, b))| {
            let width = a.bytes().len() / a.numel().max(1);
            let bits = |t: &Tensor| {
                t.bytes()
                    .chunks(width.max(1))
                    .map(<[u8]>::to_vec)
                    .collect::<Vec<_>>()
            };
            let differ = if a.numel() == b.numel() && width > 0 {
                bits(a)
                    .iter()
                    .zip(bits(b))
                    .filter(|(x, y)| **x != *y)
                    .count()
            } else {
                a.numel().max(b.numel())
            };
            let max_abs = a
                .to_f64_vec()
                .iter()
                .zip(b.to_f64_vec())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            format!(
                "`{name}` ({differ} of {} elements differ, max_abs {max_abs:.3e})",
                a.numel()
            )
        })
        .collect();
    (!changed.is_empty()).then(|| {
        format!(
            "tapping changed the stage's own results: {}; the compiler built the tapped \
             variant differently (fusion, FMA contraction), so checkpoint verdicts from it \
             describe another computation than the one that failed",
            changed.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::observer_effect;
    use parity_tensor::Tensor;

    #[test]
    fn the_observer_effect_names_each_output_the_taps_changed() {
        let untapped = [
            Tensor::from_f32(vec![4], &[1.0, 2.0, -4.9e-8, 0.0]).unwrap(),
            Tensor::from_f32(vec![2], &[7.0, 8.0]).unwrap(),
        ];
        // A multiply-add contracted into an FMA untapped, rounded twice tapped.
        let tapped = [
            Tensor::from_f32(vec![4], &[1.0, 2.0, 0.0, 0.0]).unwrap(),
            Tensor::from_f32(vec![2], &[7.0, 8.0]).unwrap(),
        ];
        let names = ["out", "aux"];
        let e = observer_effect(&names, &untapped, &tapped).expect("a difference");
        assert!(
            e.contains("`out` (1 of 4 elements differ, max_abs 4.900e-8)"),
            "{e}"
        );
        assert!(!e.contains("aux"), "{e}");
        assert_eq!(observer_effect(&names, &untapped, &untapped), None);
        // -0.0 and 0.0 compare equal but are different bits: still an effect.
        let zero = [Tensor::from_f32(vec![1], &[0.0]).unwrap()];
        let negative_zero = [Tensor::from_f32(vec![1], &[-0.0]).unwrap()];
        assert!(observer_effect(&["z"], &zero, &negative_zero).is_some());
    }
}
