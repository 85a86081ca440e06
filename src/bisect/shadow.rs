//! Inferred evidence: inside a region the oracle cannot narrow, the f64
//! shadow (the region promoted to f64) is the reference for every value, and
//! each operation run alone in production precision on the shadow's inputs
//! shows the error it adds by itself.

use super::confirm::{self, Candidate, End};
use super::error::BisectError;
use super::measure::{
    all_finite, loc_label, nonfinite_where_finite, value_metrics, LOCAL_ULP_BUDGET,
};
use super::probe::{dtype_of, narrow, widen, Cut, Prober};
use super::{Program, Strategy, MARK_ALL_BYTES};
use parity_mlir::ValueId;
use parity_record::{Confirmation, Evidence, ShadowRow, ValueMetrics};
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// What the shadow found.
pub struct ShadowOutcome {
    /// One row per examined operation, in program order.
    pub rows: Vec<ShadowRow>,
    /// The non-finite origin, or the first operation adding more error than
    /// rounding explains whose confirmation holds.
    pub found: Option<Found>,
    /// The confirmation probe of the operations over the local budget.
    pub confirmation: Option<Confirmation>,
    /// Fallbacks worth telling.
    pub notes: Vec<String>,
}

/// The operation the shadow names, with its evidence and reproducer data.
pub struct Found {
    /// Its index.
    pub op: usize,
    /// `Inferred` (its own error exceeds rounding) or `NonFinite` (the first
    /// NaN/Inf from finite operands where the shadow is finite).
    pub evidence: Evidence,
    /// What the evidence does not settle, for the report's notes.
    pub note: Option<String>,
    /// Production vs shadow at its operands.
    pub inputs: Vec<ValueMetrics>,
    /// The op alone vs shadow at its results.
    pub output: Vec<ValueMetrics>,
    /// Its operands: the shadow's values rounded to the operand types.
    pub repro_inputs: Vec<(ValueId, Tensor)>,
    /// Its results per the shadow (f64, unrounded).
    pub expected: Vec<(ValueId, Tensor)>,
}

/// Runs the shadow over `region` (op indices), fed by `feed` (the oracle's
/// tensors at the passing checkpoints and the stage's inputs).
/// `target_nonfinite`: the failing checkpoint holds NaN/Inf where the oracle
/// is finite, so the bisection strategy first looks for where they begin.
/// `end`: the failing checkpoint and its oracle tensor, which a candidate's
/// confirmation must reach.
pub fn run(
    program: &Program,
    prober: &mut Prober,
    region: &[usize],
    feed: &[(ValueId, Tensor)],
    strategy: Strategy,
    target_nonfinite: bool,
    end: &End,
) -> Result<ShadowOutcome, BisectError> {
    let func = program.func;
    let bytes: usize = region
        .iter()
        .flat_map(|&o| func.ops[o].results.iter())
        .map(|&v| {
            func.values[v]
                .ty
                .shape()
                .map_or(0, |s| s.iter().product::<usize>() * 12)
        })
        .sum();
    let bisect = match strategy {
        Strategy::Bisection => true,
        Strategy::MarkAll => false,
        Strategy::Auto => bytes > MARK_ALL_BYTES,
    };
    let mut outcome = ShadowOutcome {
        rows: Vec::new(),
        found: None,
        confirmation: None,
        notes: Vec::new(),
    };
    let subset = if bisect {
        let first = if target_nonfinite {
            match first_drifting(program, prober, region, feed, Pick::NonFinite)? {
                Some(k) => Some(k),
                None => first_drifting(program, prober, region, feed, Pick::Drift)?,
            }
        } else {
            first_drifting(program, prober, region, feed, Pick::Drift)?
        };
        match first {
            // Nothing drifts from the shadow beyond the budget.
            None => return Ok(outcome),
            Some(k) => {
                // The op and its operands' producers inside the region.
                let op = &func.ops[k];
                let mut s: BTreeSet<usize> = BTreeSet::from([k]);
                for &v in op.operands.iter().chain(&op.captures) {
                    if let Some(p) = func.op_of(v).filter(|p| region.contains(p)) {
                        s.insert(p);
                    }
                }
                s.into_iter().collect()
            }
        }
    } else {
        region.to_vec()
    };
    let mut examined = examine(program, prober, &subset, feed, end)?;
    if examined.found.is_none() && subset.len() < region.len() {
        outcome.notes.push(
            "shadow bisection was inconclusive (the first value over budget did not come from \
             its own operation, or its confirmation failed); fell back to mark-all over the region"
                .into(),
        );
        examined = examine(program, prober, region, feed, end)?;
    }
    outcome.rows = examined.rows;
    outcome.found = examined.found;
    if let (None, Some(c)) = (&outcome.found, &examined.confirmation) {
        outcome.notes.push(confirm::note(c, program.budget.name()));
    }
    outcome.confirmation = examined.confirmation;
    Ok(outcome)
}

/// What the shadow bisection looks for.
#[derive(Clone, Copy)]
enum Pick {
    /// Accumulated error against the shadow over the budget.
    Drift,
    /// NaN/Inf in production where the shadow is finite.
    NonFinite,
}

/// The region's float values in program order (the first float result of each op).
fn float_values(program: &Program, region: &[usize]) -> Vec<(usize, ValueId)> {
    let func = program.func;
    region
        .iter()
        .filter_map(|&o| {
            func.ops[o]
                .results
                .iter()
                .copied()
                .find(|&r| func.values[r].ty.is_float())
                .map(|r| (o, r))
        })
        .collect()
}

/// Production and shadow values of `v` (one tap each).
fn tap_pair(
    prober: &mut Prober,
    feed: &[(ValueId, Tensor)],
    v: ValueId,
    why: &str,
) -> Result<(Tensor, Tensor), BisectError> {
    let given: Vec<(ValueId, &Tensor)> = feed.iter().map(|(v, t)| (*v, t)).collect();
    let cut = || Cut {
        name: "tap".into(),
        given: given.clone(),
        want: vec![v],
    };
    let mut p = prober.run(&[cut()], false, why)?;
    let mut s = prober.run(&[cut()], true, why)?;
    Ok((p.remove(0).remove(0), s.remove(0).remove(0)))
}

/// Bisection over the region's float values in program order: the first one
/// whose accumulated error against the shadow exceeds the budget, or (for
/// `Pick::NonFinite`) that holds NaN/Inf where the shadow is finite (one tap
/// per probe, production and shadow).
fn first_drifting(
    program: &Program,
    prober: &mut Prober,
    region: &[usize],
    feed: &[(ValueId, Tensor)],
    pick: Pick,
) -> Result<Option<usize>, BisectError> {
    let func = program.func;
    let floats = float_values(program, region);
    let (mut lo, mut hi) = (0, floats.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let (o, v) = floats[mid];
        let why = format!("shadow bisection: tap op #{o}");
        let (p, s) = tap_pair(prober, feed, v, &why)?;
        let hit = match pick {
            Pick::Drift => {
                value_metrics(func, v, &p, &s, "shadow", program.budget)?.ulps_at_max
                    > LOCAL_ULP_BUDGET
            }
            Pick::NonFinite => !nonfinite_where_finite(&p, &s).is_empty(),
        };
        if hit {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(floats.get(lo).map(|&(o, _)| o))
}

/// What [`examine`] found over some operations of the region.
struct Examined {
    rows: Vec<ShadowRow>,
    found: Option<Found>,
    confirmation: Option<Confirmation>,
}

/// Production and shadow with every value of `ops` tapped, then each op alone
/// on the shadow's inputs; rows for `ops`, then the non-finite origin or the
/// first op over budget whose confirmation holds.
fn examine(
    program: &Program,
    prober: &mut Prober,
    ops: &[usize],
    feed: &[(ValueId, Tensor)],
    end: &End,
) -> Result<Examined, BisectError> {
    let func = program.func;
    let budget = program.budget;
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
    let prod_of: HashMap<ValueId, Tensor> = taps.iter().copied().zip(prod).collect();
    let mut shadow_of: HashMap<ValueId, Tensor> = taps.iter().copied().zip(shadow).collect();
    for (v, t) in feed {
        if !shadow_of.contains_key(v) {
            shadow_of.insert(*v, widen(t)?);
        }
    }

    // Each op alone, in production precision, on the shadow's inputs rounded
    // to its operand types. Constants are recomputed inside the slice.
    let mut alone: Vec<(usize, Vec<(ValueId, Tensor)>)> = Vec::new();
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
            let Some(sh) = shadow_of.get(&v) else {
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
    let cuts: Vec<Cut> = alone
        .iter()
        .map(|(o, ins)| Cut {
            name: format!("op_{o}"),
            given: ins.iter().map(|(v, t)| (*v, t)).collect(),
            want: func.ops[*o].results.clone(),
        })
        .collect();
    let local = if cuts.is_empty() {
        Vec::new()
    } else {
        prober.run(&cuts, false, "each op alone on the shadow's inputs")?
    };
    let local_of: HashMap<usize, Vec<Tensor>> = alone.iter().map(|(o, _)| *o).zip(local).collect();

    // Exact evidence first: the first op turning finite operands into NaN/Inf
    // where the shadow stays finite.
    let production_of = |v: ValueId| {
        prod_of
            .get(&v)
            .or_else(|| feed.iter().find(|(f, _)| *f == v).map(|(_, t)| t))
    };
    let origin = ops.iter().copied().find(|&o| {
        let op = &func.ops[o];
        let makes_nonfinite = op.results.iter().any(|r| {
            func.values[*r].ty.is_float()
                && matches!((prod_of.get(r), shadow_of.get(r)),
                    (Some(p), Some(s)) if !nonfinite_where_finite(p, s).is_empty())
        });
        makes_nonfinite
            && op
                .operands
                .iter()
                .chain(&op.captures)
                .filter(|&&v| !func.is_constant(v) && func.values[v].ty.is_float())
                .all(|&v| production_of(v).is_some_and(all_finite))
    });

    let mut rows = Vec::new();
    let mut over: Vec<(usize, f64)> = Vec::new();
    for &o in ops {
        let op = &func.ops[o];
        let r = op.results[0];
        let accumulated_ulps = match (prod_of.get(&r), shadow_of.get(&r)) {
            (Some(p), Some(s)) if func.values[r].ty.is_float() => {
                value_metrics(func, r, p, s, "shadow", budget)?.ulps_at_max
            }
            _ => 0.0,
        };
        let local_ulps = match local_of.get(&o) {
            None => None,
            Some(res) => {
                let mut worst: f64 = 0.0;
                for (&rv, t) in op.results.iter().zip(res) {
                    if let Some(s) = shadow_of.get(&rv).filter(|_| func.values[rv].ty.is_float()) {
                        worst =
                            worst.max(value_metrics(func, rv, t, s, "shadow", budget)?.ulps_at_max);
                    }
                }
                Some(worst)
            }
        };
        if let Some(l) = local_ulps.filter(|l| *l > LOCAL_ULP_BUDGET) {
            over.push((o, l));
        }
        rows.push(ShadowRow {
            op_index: o,
            op_name: op.name.clone(),
            loc: loc_label(&op.loc),
            result_type: func.values[r].ty.text.clone(),
            accumulated_ulps,
            local_ulps,
            flagged: origin == Some(o),
        });
    }

    if let Some(o) = origin {
        let (rows, found) = nonfinite_found(program, o, rows, &prod_of, &shadow_of, feed)?;
        return Ok(Examined {
            rows,
            found,
            confirmation: None,
        });
    }
    if over.is_empty() {
        return Ok(Examined {
            rows,
            found: None,
            confirmation: None,
        });
    }
    // Inferred evidence only when it holds: each op over budget, its results
    // taken from the shadow, must bring the region's end onto the oracle.
    let mut candidates = Vec::new();
    for (k, &(o, local_ulps)) in over.iter().enumerate() {
        let mut results = Vec::new();
        // Past the probe's limit a candidate is only counted (not tried).
        let tried = k < confirm::MAX_CANDIDATES;
        for &r in func.ops[o].results.iter().filter(|_| tried) {
            if let Some(s) = shadow_of.get(&r) {
                let dt = func.values[r]
                    .ty
                    .element()
                    .and_then(dtype_of)
                    .unwrap_or(s.dtype());
                results.push((r, narrow(s, dt)?));
            }
        }
        candidates.push(Candidate {
            op: o,
            local_ulps,
            results,
        });
    }
    let confirmation = confirm::confirm(program, prober, feed, end, &candidates)?;
    let Some(o) = confirmation.confirmed else {
        return Ok(Examined {
            rows,
            found: None,
            confirmation: Some(confirmation),
        });
    };
    for row in &mut rows {
        row.flagged = row.op_index == o;
    }
    let op = &func.ops[o];
    let repro_inputs = alone
        .iter()
        .find(|(x, _)| *x == o)
        .map(|(_, ins)| ins.clone())
        .unwrap_or_default();
    let mut inputs = Vec::new();
    for (v, _) in &repro_inputs {
        let actual = prod_of
            .get(v)
            .or_else(|| feed.iter().find(|(f, _)| f == v).map(|(_, t)| t));
        if let (Some(p), Some(s)) = (actual, shadow_of.get(v)) {
            if func.values[*v].ty.is_float() {
                inputs.push(value_metrics(func, *v, p, s, "shadow", budget)?);
            }
        }
    }
    let mut output = Vec::new();
    let mut expected = Vec::new();
    let results = local_of.get(&o).cloned().unwrap_or_default();
    for (&rv, alone_result) in op.results.iter().zip(&results) {
        let Some(s) = shadow_of.get(&rv) else {
            continue;
        };
        if func.values[rv].ty.is_float() {
            output.push(value_metrics(
                func,
                rv,
                alone_result,
                s,
                "shadow (op alone)",
                budget,
            )?);
        }
        // The unrounded shadow: the reproducer compares with the value the
        // op should have kept (rounding it to the result type would be
        // exactly what a rounding fault computes).
        expected.push((rv, s.clone()));
    }
    Ok(Examined {
        rows,
        found: Some(Found {
            op: o,
            evidence: Evidence::Inferred,
            note: Some(confirm::note(&confirmation, budget.name())),
            inputs,
            output,
            repro_inputs,
            expected,
        }),
        confirmation: Some(confirmation),
    })
}

/// The non-finite origin `o`: production vs shadow at its operands and
/// results; the reproducer runs it on production's own (finite) operands and
/// expects the shadow's (finite) results.
fn nonfinite_found(
    program: &Program,
    o: usize,
    rows: Vec<ShadowRow>,
    prod_of: &HashMap<ValueId, Tensor>,
    shadow_of: &HashMap<ValueId, Tensor>,
    feed: &[(ValueId, Tensor)],
) -> Result<(Vec<ShadowRow>, Option<Found>), BisectError> {
    let func = program.func;
    let budget = program.budget;
    let op = &func.ops[o];
    let mut inputs = Vec::new();
    let mut repro_inputs = Vec::new();
    let mut seen = BTreeSet::new();
    let mut worst_drift: f64 = 0.0;
    for &v in op.operands.iter().chain(&op.captures) {
        if func.is_constant(v) || !seen.insert(v) {
            continue;
        }
        let Some(p) = prod_of
            .get(&v)
            .or_else(|| feed.iter().find(|(f, _)| *f == v).map(|(_, t)| t))
        else {
            continue;
        };
        repro_inputs.push((v, p.clone()));
        if let (true, Some(s)) = (func.values[v].ty.is_float(), shadow_of.get(&v)) {
            let m = value_metrics(func, v, p, s, "shadow", budget)?;
            worst_drift = worst_drift.max(m.ulps_at_max);
            inputs.push(m);
        }
    }
    let mut output = Vec::new();
    let mut expected = Vec::new();
    let mut count = 0;
    for &rv in &op.results {
        let (Some(p), Some(s)) = (prod_of.get(&rv), shadow_of.get(&rv)) else {
            continue;
        };
        if func.values[rv].ty.is_float() {
            let m = value_metrics(func, rv, p, s, "shadow", budget)?;
            count += m.nonfinite;
            output.push(m);
        }
        // The unrounded shadow: the reproducer compares with the value the
        // op should have kept (rounding it to the result type would be
        // exactly what a rounding fault computes).
        expected.push((rv, s.clone()));
    }
    let mut note = format!(
        "non-finite origin: #{o} {} turns finite operands into {count} NaN/Inf element(s) where \
         the f64 shadow is finite",
        op.name
    );
    if worst_drift > LOCAL_ULP_BUDGET {
        note.push_str(&format!(
            "; its operands already differ from the shadow by up to {worst_drift:.1} ULPs of {}, \
             so the values that overflow or leave the domain here come from earlier operations \
             (see the accumulated column)",
            budget.name()
        ));
    } else {
        note.push_str("; its operands agree with the shadow within rounding");
    }
    Ok((
        rows,
        Some(Found {
            op: o,
            evidence: Evidence::NonFinite,
            note: Some(note),
            inputs,
            output,
            repro_inputs,
            expected,
        }),
    ))
}
