//! Inferred evidence: inside a region the oracle cannot narrow, the f64
//! shadow (the region promoted to f64) is the reference for every value, and
//! each operation run alone in production precision on the shadow's inputs
//! shows the error it adds by itself.

mod found;
mod tapped;

use super::confirm::{self, Candidate, End};
use super::error::BisectError;
use super::measure::{loc_label, nonfinite_where_finite, value_metrics, LOCAL_ULP_BUDGET};
use super::probe::{dtype_of, narrow, Cut, Prober};
use super::{Program, Strategy, MARK_ALL_BYTES};
use parity_mlir::ValueId;
use parity_record::{Confirmation, Evidence, ShadowRow, ValueMetrics};
use parity_tensor::Tensor;
use std::collections::BTreeSet;
use tapped::Tapped;

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
    let mut outcome = ShadowOutcome {
        rows: Vec::new(),
        found: None,
        confirmation: None,
        notes: Vec::new(),
    };
    let subset = if bisects(program, region, strategy) {
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
            Some(k) => with_producers(program, region, k),
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

/// Whether the shadow bisects `region` (one tap per probe) rather than
/// tapping every value at once: by strategy, or for `Auto` by the taps' size.
fn bisects(program: &Program, region: &[usize], strategy: Strategy) -> bool {
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
    match strategy {
        Strategy::Bisection => true,
        Strategy::MarkAll => false,
        Strategy::Auto => bytes > MARK_ALL_BYTES,
    }
}

/// Op `k` and its operands' producers inside `region`, in program order.
fn with_producers(program: &Program, region: &[usize], k: usize) -> Vec<usize> {
    let func = program.func;
    let op = &func.ops[k];
    let mut s: BTreeSet<usize> = BTreeSet::from([k]);
    for &v in op.operands.iter().chain(&op.captures) {
        if let Some(p) = func.op_of(v).filter(|p| region.contains(p)) {
            s.insert(p);
        }
    }
    s.into_iter().collect()
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
    let tapped = Tapped::tap(program, prober, ops, feed)?;
    // Exact evidence first.
    let origin = tapped.nonfinite_origin(program, ops);
    let (mut rows, over) = rows(program, &tapped, ops, origin)?;
    if let Some(o) = origin {
        return Ok(Examined {
            rows,
            found: Some(found::nonfinite_found(program, o, &tapped)?),
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
    let candidates = candidates(program, &tapped, &over)?;
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
    Ok(Examined {
        rows,
        found: Some(found::inferred_found(program, o, &tapped, &confirmation)?),
        confirmation: Some(confirmation),
    })
}

/// Ops whose own error is over the local budget, each with that error (ULPs).
type OverBudget = Vec<(usize, f64)>;

/// One row per op of `ops` (`origin` flagged), and the ops whose own error
/// is over the local budget, with that error.
fn rows(
    program: &Program,
    tapped: &Tapped,
    ops: &[usize],
    origin: Option<usize>,
) -> Result<(Vec<ShadowRow>, OverBudget), BisectError> {
    let func = program.func;
    let mut rows = Vec::new();
    let mut over = Vec::new();
    for &o in ops {
        let op = &func.ops[o];
        let r = op.results[0];
        let accumulated_ulps = tapped.accumulated_ulps(program, r)?;
        let local_ulps = tapped.local_ulps(program, o)?;
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
    Ok((rows, over))
}

/// The confirmation's candidates: each op over budget with its results from
/// the shadow, rounded to their types (past the probe's limit only counted).
fn candidates(
    program: &Program,
    tapped: &Tapped,
    over: &[(usize, f64)],
) -> Result<Vec<Candidate>, BisectError> {
    let func = program.func;
    let mut candidates = Vec::new();
    for (k, &(o, local_ulps)) in over.iter().enumerate() {
        let mut results = Vec::new();
        // Past the probe's limit a candidate is only counted (not tried).
        let tried = k < confirm::MAX_CANDIDATES;
        for &r in func.ops[o].results.iter().filter(|_| tried) {
            if let Some(s) = tapped.shadow_of.get(&r) {
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
    Ok(candidates)
}
