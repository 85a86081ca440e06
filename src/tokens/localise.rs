//! Localising a divergent step: its step-stage chain runs as an ordinary
//! stage graph (the runner, isolated and chained) for the step case; the first
//! divergent stage is the first divergent layer, and bisect takes it to an
//! operation or a region.

use crate::bisect::{self, BisectOptions};
use crate::run::{self, RunOptions};
use parity_record::{
    Divergence, Evidence, LayerVsF64, Localisation, Mode, RunRecord, StepLocalisation,
    TokenFinding, TokenVerdict, WrongSide,
};
use parity_spec::Spec;

/// Runs the chain for (`case`, `step`): the finding's localisation, first
/// divergent layer and op, or notes saying why not. `logits_gate`: the step
/// is localised because its logits failed the gate, not for a token flip.
pub fn localise(
    spec: &Spec,
    options: &BisectOptions,
    case: &str,
    step: usize,
    verdict: TokenVerdict,
    logits_gate: bool,
) -> TokenFinding {
    let mut record = TokenFinding {
        case: case.to_string(),
        step,
        verdict,
        logits_gate,
        localisation: None,
        first_divergent_layer: None,
        first_divergent_op: None,
        layer_vs_f64: None,
        notes: Vec::new(),
        chain_check: None,
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
    record.layer_vs_f64 = run_record
        .first_divergence
        .as_ref()
        .and_then(|d| layer_vs_f64(&run_record, d));
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
            // A step localised for its logits (the gate) has no flip to speak of.
            let what = if logits_gate {
                "the step's logits difference"
            } else {
                "the token flip"
            };
            record.notes.push(format!(
                "every stage of `{step_case}` passes isolated and chained: the step's layers agree with the oracle within tolerance, so {what} is not localised to a layer"
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
        if matches!(&record.first_divergent_op, Some(Localisation::Op(op)) if op.evidence == Evidence::Repair)
        {
            // The edit that makes production match the oracle (what differs there).
            record.notes.extend(
                bisected
                    .notes
                    .iter()
                    .filter(|n| n.starts_with("repair search:"))
                    .cloned(),
            );
        }
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

/// The f64 truth's judgement of the first divergent layer: its output's
/// `vs_f64` distances in the isolated run (both sides on the oracle's inputs).
fn layer_vs_f64(run: &RunRecord, d: &Divergence) -> Option<LayerVsF64> {
    let stage = run
        .stages
        .iter()
        .find(|s| s.name == d.stage && s.case == d.case && s.mode == Mode::Isolated)?;
    let output = stage.outputs.iter().find(|o| o.name == d.output)?;
    let t = output.metrics.as_ref()?.vs_f64.as_ref()?;
    Some(LayerVsF64 {
        stage: d.stage.clone(),
        output: d.output.clone(),
        truth: t.truth.clone(),
        production_vs_truth: t.actual_vs_truth,
        oracle_vs_truth: t.expected_vs_truth,
        wrong: WrongSide::judge(t.actual_vs_truth, t.expected_vs_truth),
    })
}
