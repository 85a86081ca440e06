//! What the shadow names: the non-finite origin, or the operation whose own
//! error the confirmation holds to, each with its metrics and reproducer data.

use super::tapped::Tapped;
use super::Found;
use crate::bisect::confirm;
use crate::bisect::error::BisectError;
use crate::bisect::measure::{value_metrics, LOCAL_ULP_BUDGET};
use crate::bisect::Program;
use parity_record::{Confirmation, Evidence};
use std::collections::BTreeSet;

/// The non-finite origin `o`: production vs shadow at its operands and
/// results; the reproducer runs it on production's own (finite) operands and
/// expects the shadow's (finite) results.
pub(super) fn nonfinite_found(
    program: &Program,
    o: usize,
    tapped: &Tapped,
) -> Result<Found, BisectError> {
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
        let Some(p) = tapped.production(v) else {
            continue;
        };
        repro_inputs.push((v, p.clone()));
        if let (true, Some(s)) = (func.values[v].ty.is_float(), tapped.shadow_of.get(&v)) {
            let m = value_metrics(func, v, p, s, "shadow", budget)?;
            worst_drift = worst_drift.max(m.ulps_at_max);
            inputs.push(m);
        }
    }
    let mut output = Vec::new();
    let mut expected = Vec::new();
    let mut count = 0;
    for &rv in &op.results {
        let (Some(p), Some(s)) = (tapped.prod_of.get(&rv), tapped.shadow_of.get(&rv)) else {
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
    Ok(Found {
        op: o,
        evidence: Evidence::NonFinite,
        note: Some(note),
        inputs,
        output,
        repro_inputs,
        expected,
    })
}

/// The confirmed op `o`: production vs shadow at its operands, the op alone
/// vs shadow at its results; the reproducer runs it on the shadow's operands
/// (as run alone) and expects the shadow's results.
pub(super) fn inferred_found(
    program: &Program,
    o: usize,
    tapped: &Tapped,
    confirmation: &Confirmation,
) -> Result<Found, BisectError> {
    let func = program.func;
    let budget = program.budget;
    let op = &func.ops[o];
    let repro_inputs = tapped
        .alone
        .iter()
        .find(|(x, _)| *x == o)
        .map(|(_, ins)| ins.clone())
        .unwrap_or_default();
    let mut inputs = Vec::new();
    for (v, _) in &repro_inputs {
        if let (Some(p), Some(s)) = (tapped.production(*v), tapped.shadow_of.get(v)) {
            if func.values[*v].ty.is_float() {
                inputs.push(value_metrics(func, *v, p, s, "shadow", budget)?);
            }
        }
    }
    let mut output = Vec::new();
    let mut expected = Vec::new();
    let results = tapped.local_of.get(&o).cloned().unwrap_or_default();
    for (&rv, alone_result) in op.results.iter().zip(&results) {
        let Some(s) = tapped.shadow_of.get(&rv) else {
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
    Ok(Found {
        op: o,
        evidence: Evidence::Inferred,
        note: Some(confirm::note(confirmation, budget.name())),
        inputs,
        output,
        repro_inputs,
        expected,
    })
}
