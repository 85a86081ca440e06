//! From a failing stage output to an operation or a region: oracle
//! checkpoints, then the region between them, then (when it holds several
//! operations) the f64 shadow and the repair search.

use super::confirm;
use super::error::BisectError;
use super::measure::{self, op_line, oracle_as, LOCAL_ULP_BUDGET};
use super::oracle::OracleSearch;
use super::probe::{Cut, Prober};
use super::repaired::{repaired, repaired_upstream};
use super::shadow::{self, Found};
use super::{cases, divergent_op, repair, Program};
use parity_mlir::ValueId;
use parity_record::{BisectRecord, Evidence, Region, Status, Strategy, ValueMetrics};
use parity_tensor::Tensor;
use std::collections::HashMap;

/// Where the evidence led, with what the reproducer needs.
pub(super) enum Localised {
    /// One operation.
    Op {
        op_index: usize,
        evidence: Evidence,
        inputs: Vec<(ValueId, Tensor)>,
        expected: Vec<(ValueId, Tensor)>,
    },
    /// A region the evidence cannot narrow, or the one the repair search
    /// narrowed (the reproducer is then still the region).
    Region {
        ops: Vec<usize>,
        inputs: Vec<(ValueId, Tensor)>,
        expected: Vec<(ValueId, Tensor)>,
    },
}

/// Oracle checkpoints, then the region, then (when it holds several
/// operations) the f64 shadow. Fills the report's evidence as it goes.
pub(super) fn localise(
    program: &Program,
    prober: &mut Prober,
    statuses: &HashMap<String, bool>,
    (case, skipped_cases): (&str, Vec<String>),
    strategy: Strategy,
    report: &mut BisectRecord,
) -> Result<Localised, BisectError> {
    let baseline = baseline(program, prober)?;
    let start = start_value(program, report)?;
    let mut search = OracleSearch::new(program, statuses, case, baseline.clone());
    let target = locate(&mut search, prober, start, strategy, report)?;
    let region = FailingRegion::read(program, &search, target, report)?;
    report.status = Status::Fail;
    if let [op] = region.ops[..] {
        return Ok(single_op(program, &search, op, region, report));
    }
    let target_nonfinite = target_nonfinite(program, &search, &baseline, &region);
    let cross = cross_cases(program, case, &search, &region, skipped_cases);
    let outcome = shadow::run(
        program,
        prober,
        &region.ops,
        &region.feed,
        strategy,
        target_nonfinite,
        &region.end(),
    )?;
    report.shadow = outcome.rows;
    report.confirmation = outcome.confirmation;
    report.notes.extend(outcome.notes);
    match outcome.found {
        Some(f)
            if f.evidence == Evidence::NonFinite
                && repaired_upstream(
                    program,
                    prober,
                    (&region.ops, &region.feed),
                    &region.expected,
                    &cross,
                    f.op,
                    report,
                ) =>
        {
            report.notes.extend(f.note);
            Ok(region.into_localised())
        }
        Some(f) => Ok(shadow_op(program, f, report)),
        None => Ok(unnarrowed(program, prober, region, &cross, report)),
    }
}

/// The untapped build's outputs: every tapped build must reproduce them.
fn baseline(program: &Program, prober: &mut Prober) -> Result<Vec<Tensor>, BisectError> {
    Ok(prober
        .run(
            &[Cut {
                name: "baseline".into(),
                given: program.given(),
                want: program.outputs.clone(),
            }],
            false,
            "baseline (untapped)",
        )?
        .remove(0))
}

/// The value of the failing output the report names, where the search starts.
fn start_value(program: &Program, report: &BisectRecord) -> Result<ValueId, BisectError> {
    report
        .output
        .as_ref()
        .and_then(|name| program.stage.outputs.iter().position(|o| &o.name == name))
        .map(|i| program.outputs[i])
        .ok_or_else(|| BisectError::UnknownOutput {
            output: report.output.clone().unwrap_or_default(),
        })
}

/// Runs the checkpoint search from `start` and records its checkpoints,
/// observer effect and strategy; returns the earliest failing checkpoint.
fn locate(
    search: &mut OracleSearch,
    prober: &mut Prober,
    start: ValueId,
    strategy: Strategy,
    report: &mut BisectRecord,
) -> Result<ValueId, BisectError> {
    let located = search.locate(prober, start, strategy);
    report.checkpoints = search.records();
    report.observer_effect = std::mem::take(&mut search.observer_effect);
    if !report.observer_effect.is_empty() {
        report.notes.push(
            "observer effect: tapped builds compute the stage's outputs differently from the \
             untapped build that failed (see observer effect below), so the checkpoint \
             verdicts describe another computation; the localisation may point at where the \
             compiler builds the two differently (an FMA contraction, a fusion) rather than at \
             a fault"
                .into(),
        );
    }
    let (target, used) = located?;
    report.strategy = Some(used);
    Ok(target)
}

/// The region from the passing checkpoints (and the stage inputs) to the
/// failing one, with the tensors that feed it and the oracle's at its end.
struct FailingRegion {
    /// The passing checkpoints the failing one depends on.
    passing: Vec<ValueId>,
    /// The failing checkpoint.
    target: ValueId,
    /// Its oracle tensor's name.
    target_oracle: String,
    /// The region's operations (constants left out), in program order.
    ops: Vec<usize>,
    /// Region inputs: the oracle's tensors at the passing checkpoints, the
    /// stage's inputs otherwise.
    feed: Vec<(ValueId, Tensor)>,
    /// The failing checkpoint with its oracle tensor.
    expected: Vec<(ValueId, Tensor)>,
}

impl FailingRegion {
    /// Reads the region ending at `target` and records it in the report.
    fn read(
        program: &Program,
        search: &OracleSearch,
        target: ValueId,
        report: &mut BisectRecord,
    ) -> Result<Self, BisectError> {
        let func = program.func;
        let passing = search.passing_for(target);
        let oracle_name = |v: ValueId| search.oracle_of(v).unwrap_or_default().to_string();
        let target_oracle = oracle_name(target);
        let mut from = passing.clone();
        from.extend(program.inputs.iter().copied());
        let ops: Vec<usize> = func
            .cone(&from, &[target])
            .into_iter()
            .filter(|&o| func.ops[o].results.iter().any(|&r| !func.is_constant(r)))
            .collect();
        report.region = Some(Region {
            passing: passing.iter().map(|&v| oracle_name(v)).collect(),
            failing: target_oracle.clone(),
            ops: ops.len(),
            op_list: ops.iter().map(|&o| op_line(func, o)).collect(),
        });
        let mut feed: Vec<(ValueId, Tensor)> = Vec::new();
        for &v in &passing {
            feed.push((v, oracle_as(program.store, &oracle_name(v), func, v)?));
        }
        for (&v, t) in program.inputs.iter().zip(&program.args) {
            if !passing.contains(&v) {
                feed.push((v, t.clone()));
            }
        }
        let expected = vec![(
            target,
            oracle_as(program.store, &target_oracle, func, target)?,
        )];
        Ok(FailingRegion {
            passing,
            target,
            target_oracle,
            ops,
            feed,
            expected,
        })
    }

    /// The failing checkpoint and its oracle tensor, for the confirmation.
    fn end(&self) -> confirm::End<'_> {
        confirm::End {
            value: self.target,
            oracle: &self.expected[0].1,
            oracle_name: &self.target_oracle,
        }
    }

    /// The region as the answer (its reproducer is the whole region).
    fn into_localised(self) -> Localised {
        Localised::Region {
            ops: self.ops,
            inputs: self.feed,
            expected: self.expected,
        }
    }
}

/// A region of one operation: that op, by oracle evidence.
fn single_op(
    program: &Program,
    search: &OracleSearch,
    op: usize,
    region: FailingRegion,
    report: &mut BisectRecord,
) -> Localised {
    let func = program.func;
    let inputs = func.ops[op]
        .operands
        .iter()
        .map(|&v| match search.metrics_of(v) {
            Some(m) => m.clone(),
            None => ValueMetrics::exact(
                func.values[v].name.clone(),
                if func.is_constant(v) {
                    "constant".into()
                } else if let Some(n) = search.oracle_of(v) {
                    format!("oracle:{n} (passes)")
                } else {
                    "stage input".into()
                },
            ),
        })
        .collect();
    let output = search
        .metrics_of(region.target)
        .cloned()
        .into_iter()
        .collect();
    report.first_divergent_op = Some(divergent_op(program, op, Evidence::Oracle, inputs, output));
    Localised::Op {
        op_index: op,
        evidence: Evidence::Oracle,
        inputs: region.feed,
        expected: region.expected,
    }
}

/// NaN/Inf at the failing checkpoint where the oracle is finite (known
/// from the search's metrics or the untapped build's outputs: no probe).
fn target_nonfinite(
    program: &Program,
    search: &OracleSearch,
    baseline: &[Tensor],
    region: &FailingRegion,
) -> bool {
    match search.metrics_of(region.target) {
        Some(m) => m.nonfinite > 0,
        None => program
            .outputs
            .iter()
            .position(|&o| o == region.target)
            .and_then(|i| baseline.get(i))
            .is_some_and(|p| !measure::nonfinite_where_finite(p, &region.expected[0].1).is_empty()),
    }
}

/// The stage's other cases of the same function, for the repair search's
/// cross-case check.
fn cross_cases<'a>(
    program: &Program<'a>,
    case: &str,
    search: &OracleSearch,
    region: &FailingRegion,
    mut skipped_cases: Vec<String>,
) -> repair::CrossCases<'a> {
    let feeds = cases::case_feeds(
        program,
        case,
        (&region.feed, &region.passing, region.target),
        |v| search.oracle_of(v).map(String::from),
        &mut skipped_cases,
    );
    repair::CrossCases {
        feeds,
        skipped: skipped_cases,
    }
}

/// The operation the shadow names.
fn shadow_op(program: &Program, f: Found, report: &mut BisectRecord) -> Localised {
    report.notes.extend(f.note);
    report.first_divergent_op = Some(divergent_op(program, f.op, f.evidence, f.inputs, f.output));
    Localised::Op {
        op_index: f.op,
        evidence: f.evidence,
        inputs: f.repro_inputs,
        expected: f.expected,
    }
}

/// No operation from the shadow: the repair search (on a region small
/// enough) may name one; else the region, with a note on why it stays one.
fn unnarrowed(
    program: &Program,
    prober: &mut Prober,
    region: FailingRegion,
    cross: &repair::CrossCases,
    report: &mut BisectRecord,
) -> Localised {
    if region.ops.len() <= repair::MAX_REGION_OPS {
        match repair::search(
            program,
            prober,
            (&region.ops, &region.feed),
            region.target,
            &region.expected[0].1,
            cross,
        ) {
            Ok(found) => {
                if repaired(program, &found, report) {
                    // The op is named; the reproducer stays the region
                    // (the oracle has a tensor only at its end).
                    return region.into_localised();
                }
            }
            Err(e) => report
                .notes
                .push(format!("the repair search could not run: {e}")),
        }
    }
    let note = region_note(program, &region, report);
    report.notes.push(note);
    region.into_localised()
}

/// Why the region is as far as the evidence goes.
fn region_note(program: &Program, region: &FailingRegion, report: &BisectRecord) -> String {
    let passing_names = if region.passing.is_empty() {
        "the stage inputs".to_string()
    } else {
        report
            .region
            .as_ref()
            .map(|r| r.passing.join(", "))
            .unwrap_or_default()
    };
    let shadow_says = if report.confirmation.is_some() {
        "the operations the f64 shadow flags do not explain the divergence (their \
         confirmation fails, see above), so the difference is not their rounding"
            .to_string()
    } else {
        format!(
            "the f64 shadow finds no operation there losing more than \
             {LOCAL_ULP_BUDGET} ULPs of {}, so the difference is semantic (the oracle \
             computes something else somewhere in these operations)",
            program.budget.name()
        )
    };
    format!(
        "localised to a region of {} operations between {passing_names} (pass) and \
         {} (fail); {shadow_says}, and no oracle tensor inside the region \
         narrows it further",
        region.ops.len(),
        region.target_oracle,
    )
}
