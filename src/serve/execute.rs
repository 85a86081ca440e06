//! `parity serve SCENARIO`: runs the scenario and every admitted request
//! alone on a target (the in-process engine, or a black box: an HTTP
//! endpoint or a command template), then judges each request (`checks`)
//! into a `parity.serving/1` record. Never fails as a whole: problems become
//! errors in the record. The in-process engine is opened either way: its
//! admission rules say which requests must be refused, and its session reads
//! the oracle's tokens and logits.

use super::adapters::targets::{CommandTarget, HttpTarget, REQUEST_TIMEOUT};
use super::admission::{prepare, Prepared};
use super::checks::{check_request, RequestEvidence};
use super::engine::InProcess;
use super::error::ServeError;
use super::target::{Observed, ServingTarget};
use crate::run::{self, RunOptions};
use crate::tokens::case::OracleCase;
use crate::tokens::error::TokensError;
use crate::tokens::session::Session;
use parity_record::{ErrorRecord, ServingRecord, ServingRequestRecord, Status};
use parity_spec::{Case, RequestInput, Scenario, TokensSpec};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which target `parity serve` drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetChoice {
    /// The in-process engine on IREE.
    InProcess,
    /// An OpenAI-compatible endpoint on loopback (`--target URL`).
    Http(String),
    /// A command template run per request (`--target-command TEMPLATE`).
    Command(String),
}

impl TargetChoice {
    fn name(&self) -> &'static str {
        match self {
            TargetChoice::InProcess => "in-process",
            TargetChoice::Http(_) => "http",
            TargetChoice::Command(_) => "command",
        }
    }
}

/// Runs the scenario at `path` in-process.
pub fn execute(path: &Path, options: &RunOptions) -> ServingRecord {
    execute_on(path, options, &TargetChoice::InProcess, REQUEST_TIMEOUT)
}

/// Runs the scenario at `path` on `choice`; a black box gets `request_timeout`
/// per request (one wall-clock deadline each).
pub fn execute_on(
    path: &Path,
    options: &RunOptions,
    choice: &TargetChoice,
    request_timeout: Duration,
) -> ServingRecord {
    let clock = Instant::now();
    let mut record = ServingRecord::new(
        path.display().to_string(),
        choice.name().to_string(),
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
    let black_box: Result<Option<Box<dyn ServingTarget>>, ServeError> = match choice {
        TargetChoice::InProcess => Ok(None),
        TargetChoice::Http(url) => {
            HttpTarget::new(url, request_timeout).map(|t| Some(Box::new(t) as _))
        }
        TargetChoice::Command(t) => {
            CommandTarget::new(t, request_timeout).map(|t| Some(Box::new(t) as _))
        }
    };
    let result = match black_box {
        Err(e) => Err(e),
        Ok(None) => serve(&scenario, &mut target, None, &mut record),
        Ok(Some(mut b)) => serve(&scenario, &mut target, Some(b.as_mut()), &mut record),
    };
    if let Err(e) = result {
        record.errors.push(e.to_record());
    }
    finish(record)
}

/// The oracle's tokens and logits of `case`: a case of the spec's `tokens:`
/// section, or another case of the oracle store (a serving-only case such
/// as `audio_only`, a prompt no token-run case has), read by the same tensor
/// names, with no truth logits and as many tokens as the store holds (up to
/// the section's `max_new_tokens`; tokens past them are not judged). None:
/// the store has no token oracle for the case.
fn oracle_case(session: &Session<'_>, case: &str) -> Result<Option<OracleCase>, TokensError> {
    if let Some(c) = session.tokens.case(case) {
        return OracleCase::load(session, c).map(Some);
    }
    let c = Case {
        name: case.to_string(),
        vars: BTreeMap::new(),
    };
    let tokens_name =
        TokensSpec::render(&session.tokens.oracle.tokens, &c).map_err(TokensError::Template)?;
    if !session.sources.has_oracle(&tokens_name) {
        return Ok(None);
    }
    let held = session.sources.oracle(&tokens_name)?.numel();
    if held == 0 {
        return Ok(None);
    }
    let mut tokens = session.tokens.clone();
    tokens.oracle.truth_logits = None;
    tokens.max_new_tokens = tokens.max_new_tokens.min(held);
    let serving_only = Session {
        tokens: &tokens,
        ..*session
    };
    OracleCase::load(&serving_only, &c).map(Some)
}

fn serve(
    scenario: &Scenario,
    target: &mut InProcess,
    mut black_box: Option<&mut dyn ServingTarget>,
    record: &mut ServingRecord,
) -> Result<(), ServeError> {
    let prepared: Vec<Prepared> = scenario
        .requests
        .iter()
        .map(|r| prepare(target, r))
        .collect::<Result<_, _>>()?;
    let observed = match black_box.as_deref_mut() {
        Some(b) => b.run(scenario)?,
        None => target.run(scenario)?,
    };
    // A black box gives no logits (and claims no bitwise invariance).
    let logits = std::mem::take(&mut target.last_logits);
    let mut solos: Vec<Option<Observed>> = Vec::new();
    for (r, p) in scenario.requests.iter().zip(&prepared) {
        solos.push(if p.refusal.is_some() {
            None
        } else {
            Some(match black_box.as_deref_mut() {
                Some(b) => b.run_solo(r)?,
                None => target.run_solo(r)?,
            })
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
        // Bad input met while the request ran (a weight missing at prefill): exit 2.
        if let (true, Some(e)) = (o.error_is_input, &o.error) {
            record.errors.push(ErrorRecord::input(e.clone()));
        }
        let oracle = match &session {
            Some(s) if p.refusal.is_none() => match oracle_case(s, r.input.case()) {
                Ok(x) => x,
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
            bitwise_claimed: black_box.is_none(),
            black_box: black_box.is_some(),
        };
        let verdicts = check_request(&ev, session.as_ref());
        // A failed solo reference run is the request's execution error (exit 3), never hidden.
        let error = o
            .error
            .clone()
            .or_else(|| solos[i].as_ref().and_then(|s| s.error.clone()));
        let status = if error.is_some() {
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
            logprobs: o.logprobs.clone(),
            finish: o.finish.clone(),
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
            error,
            verdicts,
        });
    }
    Ok(())
}
