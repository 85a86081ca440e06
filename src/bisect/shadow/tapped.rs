//! The values the shadow's examination works from: some operations of the
//! region tapped in production precision and in the f64 shadow, and each of
//! them run alone on the shadow's inputs.

use crate::bisect::error::BisectError;
use crate::bisect::measure::{all_finite, nonfinite_where_finite, value_metrics};
use crate::bisect::probe::{dtype_of, narrow, widen, Cut, Prober};
use crate::bisect::Program;
use parity_mlir::ValueId;
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// Tensors by the value they hold.
type ValueTensors = HashMap<ValueId, Tensor>;

/// Operations run alone, each with its inputs.
type AloneInputs = Vec<(usize, Vec<(ValueId, Tensor)>)>;

/// Production, shadow and op-alone values of the examined operations.
pub(super) struct Tapped<'f> {
    /// The region's feed (oracle tensors and stage inputs).
    pub feed: &'f [(ValueId, Tensor)],
    /// Production values of the examined operations' results.
    pub prod_of: ValueTensors,
    /// Shadow values of those results, and of the feed (widened).
    pub shadow_of: ValueTensors,
    /// Each float operation run alone: its inputs, the shadow's values
    /// rounded to its operand types (constants are recomputed in the slice).
    pub alone: AloneInputs,
    /// The results of each operation run alone.
    pub local_of: HashMap<usize, Vec<Tensor>>,
}

impl<'f> Tapped<'f> {
    /// Runs production and shadow with every value of `ops` tapped, then
    /// each op alone on the shadow's inputs.
    pub fn tap(
        program: &Program,
        prober: &mut Prober,
        ops: &[usize],
        feed: &'f [(ValueId, Tensor)],
    ) -> Result<Self, BisectError> {
        let (prod_of, shadow_of) = tap_region(program, prober, ops, feed)?;
        let mut tapped = Tapped {
            feed,
            prod_of,
            shadow_of,
            alone: Vec::new(),
            local_of: HashMap::new(),
        };
        tapped.alone = tapped.alone_inputs(program, ops)?;
        tapped.local_of = tapped.run_alone(program, prober)?;
        Ok(tapped)
    }

    /// Production's value of `v`: tapped, or fed.
    pub fn production(&self, v: ValueId) -> Option<&Tensor> {
        self.prod_of
            .get(&v)
            .or_else(|| self.feed.iter().find(|(f, _)| *f == v).map(|(_, t)| t))
    }

    /// The inputs of each float op of `ops` run alone: the shadow's values
    /// rounded to its operand types; an op with an operand the shadow does
    /// not hold is left out.
    fn alone_inputs(&self, program: &Program, ops: &[usize]) -> Result<AloneInputs, BisectError> {
        let func = program.func;
        let mut alone = Vec::new();
        for &o in ops {
            let op = &func.ops[o];
            if !op.results.iter().any(|&r| func.values[r].ty.is_float()) {
                continue;
            }
            let mut ins = Vec::new();
            let mut seen = BTreeSet::new();
            let mut complete = true;
            for &v in op.operands.iter().chain(&op.captures) {
                if func.is_constant(v) || !seen.insert(v) {
                    continue;
                }
                let Some(sh) = self.shadow_of.get(&v) else {
                    complete = false;
                    break;
                };
                let dt = func.values[v]
                    .ty
                    .element()
                    .and_then(dtype_of)
                    .unwrap_or(sh.dtype());
                ins.push((v, narrow(sh, dt)?));
            }
            if complete {
                alone.push((o, ins));
            }
        }
        Ok(alone)
    }

    /// Runs each op of `alone` by itself, in production precision (one probe).
    fn run_alone(
        &self,
        program: &Program,
        prober: &mut Prober,
    ) -> Result<HashMap<usize, Vec<Tensor>>, BisectError> {
        let cuts: Vec<Cut> = self
            .alone
            .iter()
            .map(|(o, ins)| Cut {
                name: format!("op_{o}"),
                given: ins.iter().map(|(v, t)| (*v, t)).collect(),
                want: program.func.ops[*o].results.clone(),
            })
            .collect();
        let local = if cuts.is_empty() {
            Vec::new()
        } else {
            prober.run(&cuts, false, "each op alone on the shadow's inputs")?
        };
        Ok(self.alone.iter().map(|(o, _)| *o).zip(local).collect())
    }

    /// Exact evidence: the first op of `ops` turning finite operands into
    /// NaN/Inf where the shadow stays finite.
    pub fn nonfinite_origin(&self, program: &Program, ops: &[usize]) -> Option<usize> {
        let func = program.func;
        ops.iter().copied().find(|&o| {
            let op = &func.ops[o];
            let makes_nonfinite = op.results.iter().any(|r| {
                func.values[*r].ty.is_float()
                    && matches!((self.prod_of.get(r), self.shadow_of.get(r)),
                        (Some(p), Some(s)) if !nonfinite_where_finite(p, s).is_empty())
            });
            makes_nonfinite
                && op
                    .operands
                    .iter()
                    .chain(&op.captures)
                    .filter(|&&v| !func.is_constant(v) && func.values[v].ty.is_float())
                    .all(|&v| self.production(v).is_some_and(all_finite))
        })
    }

    /// ULPs at max of production against the shadow at `r` (0 for a
    /// non-float or untapped value).
    pub fn accumulated_ulps(&self, program: &Program, r: ValueId) -> Result<f64, BisectError> {
        let func = program.func;
        Ok(match (self.prod_of.get(&r), self.shadow_of.get(&r)) {
            (Some(p), Some(s)) if func.values[r].ty.is_float() => {
                value_metrics(func, r, p, s, "shadow", program.budget)?.ulps_at_max
            }
            _ => 0.0,
        })
    }

    /// The worst ULPs at max of op `o` run alone against the shadow, over its
    /// float results (`None` when it was not run alone).
    pub fn local_ulps(&self, program: &Program, o: usize) -> Result<Option<f64>, BisectError> {
        let func = program.func;
        let Some(res) = self.local_of.get(&o) else {
            return Ok(None);
        };
        let mut worst: f64 = 0.0;
        for (&rv, t) in func.ops[o].results.iter().zip(res) {
            if let Some(s) = self
                .shadow_of
                .get(&rv)
                .filter(|_| func.values[rv].ty.is_float())
            {
                worst =
                    worst.max(value_metrics(func, rv, t, s, "shadow", program.budget)?.ulps_at_max);
            }
        }
        Ok(Some(worst))
    }
}

/// Production and shadow with every result of `ops` tapped (one probe
/// each), the shadow's map completed with the feed widened to f64.
fn tap_region(
    program: &Program,
    prober: &mut Prober,
    ops: &[usize],
    feed: &[(ValueId, Tensor)],
) -> Result<(ValueTensors, ValueTensors), BisectError> {
    let func = program.func;
    let given: Vec<(ValueId, &Tensor)> = feed.iter().map(|(v, t)| (*v, t)).collect();
    let taps: Vec<ValueId> = ops
        .iter()
        .flat_map(|&o| func.ops[o].results.iter().copied())
        .collect();
    let region_cut = || Cut {
        name: "region".into(),
        given: given.clone(),
        want: taps.clone(),
    };
    let prod = prober
        .run(
            &[region_cut()],
            false,
            "region, production precision, values tapped",
        )?
        .remove(0);
    let shadow = prober
        .run(&[region_cut()], true, "region, f64 shadow, values tapped")?
        .remove(0);
    let prod_of: ValueTensors = taps.iter().copied().zip(prod).collect();
    let mut shadow_of: ValueTensors = taps.iter().copied().zip(shadow).collect();
    for (v, t) in feed {
        if !shadow_of.contains_key(v) {
            shadow_of.insert(*v, widen(t)?);
        }
    }
    Ok((prod_of, shadow_of))
}
