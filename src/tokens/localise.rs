//! Localising a divergent step: its step-stage chain runs as an ordinary
//! stage graph (the runner, isolated and chained) for the step case; the first
//! divergent stage is the first divergent layer, and bisect takes it to an
//! operation or a region.

use crate::bisect::{self, BisectOptions};
use crate::run::{self, RunOptions};
use parity_record::{Mode, StepLocalisation, TokenFinding, TokenVerdict};
use parity_spec::Spec;

/// Runs the chain for (`case`, `step`): the finding's localisation, first
/// divergent layer and op, or notes saying why not.
pub fn localise(
    spec: &Spec,
    options: &BisectOptions,
    case: &str,
    step: usize,
    verdict: TokenVerdict,
) -> TokenFinding {
    let mut record = TokenFinding {
        case: case.to_string(),
        step,
        verdict,
        localisation: None,
        first_divergent_layer: None,
        first_divergent_op: None,
        notes: Vec::new(),
    };
    let Some(step_spec) = spec.step_spec(case, step) else {
        let which = if step == 0 { "prefill" } else { "decode" };
        record.notes.push(format!(
            "step {step} of case `{case}` not localised: the spec has no `tokens.step_stages.{which}` chain"
        ));
        return record;
    };
    let step_case = step_spec.cases[0].name.clone();
    let run_options = RunOptions {
        modes: vec![Mode::Isolated, Mode::Chained],
        cases: Vec::new(),
        stages: Vec::new(),
        ..options.run.clone()
    };
    let run_record = run::execute(&step_spec, &run_options, &mut |_| {});
    record.first_divergent_layer = run_record.first_divergence.clone();
    if run_record.first_divergence.is_none() {
        if run_record.all_errors().next().is_some() {
            record.notes.push(format!(
                "the step-stage chain of `{step_case}` errored (see its run record); not localised"
            ));
        } else if let Some(c) = run_record.chained_divergence.first() {
            record.notes.push(format!(
                "every stage of `{step_case}` passes in isolation; the error accumulates: in chained mode `{}` is the first over its tolerance. No single layer is at fault at these tolerances.",
                c.stage
            ));
        } else {
            record.notes.push(format!(
                "every stage of `{step_case}` passes isolated and chained: the step's layers agree with the oracle within tolerance, so the token flip is not localised to a layer"
            ));
        }
    } else {
        let bisect_options = BisectOptions {
            run: RunOptions {
                modes: vec![Mode::Isolated],
                ..run_options.clone()
            },
            ..options.clone()
        };
        let bisected = bisect::bisect_record(&step_spec, &bisect_options, &run_record);
        record.first_divergent_op = bisected.localisation();
        if record.first_divergent_op.is_none() {
            let why: Vec<String> = bisected
                .errors
                .iter()
                .map(|e| e.message.clone())
                .chain(bisected.notes.iter().cloned())
                .collect();
            record.notes.push(format!(
                "bisect did not narrow the first divergent layer further: {}",
                if why.is_empty() {
                    "no reason given".to_string()
                } else {
                    why.join("; ")
                }
            ));
        }
    }
    record.localisation = Some(StepLocalisation {
        case: case.to_string(),
        step,
        step_case,
        chained_divergence: run_record.chained_divergence.clone(),
        run: Box::new(run_record),
    });
    record
}
