//! Dispatch evidence for bisect after a run over several targets: when the
//! divergent stage matches the oracle on one target and not on another,
//! trace it on both and attach the first divergent dispatch.

use super::{dispatches, DispatchOptions, DEFAULT_BUDGET};
use crate::bisect::BisectOptions;
use parity_record::{BisectRecord, DispatchEvidence, Mode, RunRecord, Status};
use parity_spec::Spec;

/// Adds `dispatch` (or a note saying why there is none) to `bisect`.
pub fn attach(spec: &Spec, options: &BisectOptions, run: &RunRecord, bisect: &mut BisectRecord) {
    let Some(div) = &run.first_divergence else {
        return;
    };
    let Some(failing) = div.target.clone() else {
        return;
    };
    let passing = run
        .stages
        .iter()
        .find(|s| {
            s.name == div.stage
                && s.case == div.case
                && s.mode == Mode::Isolated
                && s.status == Status::Pass
                && s.target != failing
                && !s.target.is_empty()
        })
        .map(|s| s.target.clone());
    let Some(reference) = passing else {
        bisect.notes.push(format!(
            "dispatch evidence: no target matches the oracle on stage `{}` (case `{}`): the targets fail alike, a fault of the program rather than of one backend, so no dispatches are compared",
            div.stage, div.case
        ));
        return;
    };
    let o = DispatchOptions {
        cache_dir: options.run.cache_dir.clone(),
        compiler_lib: options.run.compiler_lib.clone(),
        cases: vec![div.case.clone()],
        stages: vec![div.stage.clone()],
        reference: reference.clone(),
        target: failing.clone(),
        budget: DEFAULT_BUDGET,
    };
    let traced = dispatches(spec, &o);
    match traced.stages.into_iter().next() {
        Some(stage) if traced.errors.is_empty() && stage.status != Status::Error => {
            bisect.dispatch = Some(Box::new(DispatchEvidence {
                reference,
                target: failing,
                stage,
            }));
        }
        _ => {
            let why: Vec<String> = traced.errors.iter().map(|e| e.message.clone()).collect();
            let why = if why.is_empty() {
                traced.notes.last().cloned().unwrap_or_default()
            } else {
                why.join("; ")
            };
            bisect
                .notes
                .push(format!("dispatch evidence could not be gathered: {why}"));
        }
    }
}
