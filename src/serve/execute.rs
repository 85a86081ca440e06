//! `parity serve SCENARIO` in-process: runs the scenario and every admitted
//! request alone on the engine, then judges each request (`checks`) into a
//! `parity.serving/1` record. Never fails as a whole: problems become errors
//! in the record.

use super::admission::{prepare, Prepared};
use super::checks::{check_request, RequestEvidence};
use super::engine::InProcess;
use super::error::ServeError;
use super::target::{Observed, ServingTarget};
use crate::run::{self, RunOptions};
use crate::tokens::case::OracleCase;
use crate::tokens::session::Session;
use parity_record::{ErrorRecord, ServingRecord, ServingRequestRecord, Status};
use parity_spec::{RequestInput, Scenario};
use std::path::Path;
use std::time::Instant;

/// Runs the scenario at `path`.
pub fn execute(path: &Path, options: &RunOptions) -> ServingRecord {
    let clock = Instant::now();
    let mut record = ServingRecord::new(
        path.display().to_string(),
        "in-process".to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    let finish = |mut r: ServingRecord| {
        r.elapsed_s = clock.elapsed().as_secs_f64();
        r.status = r.derived_status();
        r
    };
    let scenario = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return finish(record);
        }
    };
    record.module = scenario.module.display().to_string();
    record.slots = scenario.slots;
    record.context = scenario.context;
    let mut target = match InProcess::open(&scenario, options) {
        Ok(t) => t,
        Err(e) => {
            record.errors.push(e.to_record());
            return finish(record);
        }
    };
    record.compiler_revision = target.compiler_revision.clone();
    if let Err(e) = serve(&scenario, &mut target, &mut record) {
        record.errors.push(e.to_record());
    }
    finish(record)
}

fn serve(
    scenario: &Scenario,
    target: &mut InProcess,
    record: &mut ServingRecord,
) -> Result<(), ServeError> {
    let prepared: Vec<Prepared> = scenario
        .requests
        .iter()
        .map(|r| prepare(target, r))
        .collect::<Result<_, _>>()?;
    let observed = target.run(scenario)?;
    let logits = std::mem::take(&mut target.last_logits);
    let mut solos: Vec<Option<Observed>> = Vec::new();
    for (r, p) in scenario.requests.iter().zip(&prepared) {
        solos.push(if p.refusal.is_some() {
            None
        } else {
            Some(target.run_solo(r)?)
        });
    }
    record.steps = observed
        .iter()
        .filter_map(|o| o.finished_step.or(o.cancelled_step).or(o.admitted_step))
        .max()
        .map_or(0, |s| s + 1);
    let tokens = target.spec.tokens.clone();
    let session = tokens.as_ref().map(|t| Session {
        spec: &target.spec,
        tokens: t,
        sources: &target.sources,
        modules: &target.modules,
    });
    for (i, r) in scenario.requests.iter().enumerate() {
        let o = &observed[i];
        let p = &prepared[i];
        let oracle = match (
            &session,
            tokens.as_ref().and_then(|t| t.case(r.input.case())),
        ) {
            (Some(s), Some(c)) if p.refusal.is_none() => match OracleCase::load(s, c) {
                Ok(x) => Some(x),
                Err(e) => {
                    record
                        .errors
                        .push(e.context(&format!("request `{}`", r.id)).to_record());
                    None
                }
            },
            _ => None,
        };
        // The slot's earlier occupant: the last request that left it before this one was admitted.
        let previous = o.slot.zip(o.admitted_step).and_then(|(slot, at)| {
            observed
                .iter()
                .filter(|x| x.slot == Some(slot) && x.id != o.id)
                .filter_map(|x| {
                    x.finished_step
                        .or(x.cancelled_step)
                        .map(|l| (x.id.as_str(), l))
                })
                .filter(|(_, l)| *l <= at)
                .max_by_key(|(_, l)| *l)
        });
        let ev = RequestEvidence {
            request: r,
            expected_refusal: p.refusal.as_deref(),
            observed: o,
            logits: logits.get(i).map_or(&[], Vec::as_slice),
            solo: solos[i].as_ref(),
            oracle: oracle.as_ref(),
            prompt_len: p.prompt_len as usize,
            previous,
            bitwise_claimed: true,
        };
        let verdicts = check_request(&ev, session.as_ref());
        let status = if o.error.is_some() {
            Status::Error
        } else if verdicts.iter().any(|v| v.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        };
        let solo = solos[i].as_ref();
        record.requests.push(ServingRequestRecord {
            id: r.id.clone(),
            case: r.input.case().to_string(),
            kind: match (&r.input, &p.audio_case) {
                (RequestInput::AllPadded(_), _) => "all_padded",
                (_, Some(_)) => "audio",
                _ => "text",
            }
            .to_string(),
            status,
            arrive: r.arrive,
            slot: o.slot,
            admitted_step: o.admitted_step,
            cancelled_step: o.cancelled_step,
            finished_step: o.finished_step,
            tokens: o.tokens.clone(),
            oracle_tokens: oracle
                .as_ref()
                .map(|x| x.tokens.clone())
                .unwrap_or_default(),
            solo_tokens: solo.map(|s| s.tokens.clone()).unwrap_or_default(),
            bitwise_logits: solo.filter(|_| !o.logits_sha256.is_empty()).map(|s| {
                o.logits_sha256
                    .iter()
                    .zip(&s.logits_sha256)
                    .all(|(a, b)| a == b)
            }),
            effective_length: o.effective_length,
            solo_effective_length: solo.and_then(|s| s.effective_length),
            dense_ple_sha256: o.dense_ple_sha256.clone(),
            reused_slot: previous.is_some(),
            refused: o.refused.clone(),
            error: o.error.clone(),
            verdicts,
        });
    }
    Ok(())
}
