//! `parity serve SCENARIO`: runs the scenario and every admitted request
//! alone on a target (the in-process engine, or a black box: an HTTP
//! endpoint or a command template), then judges each request (`checks`)
//! into a `parity.serving/1` record. Never fails as a whole: problems become
//! errors in the record. The in-process engine is opened either way: its
//! admission rules say which requests must be refused, and its session reads
//! the oracle's tokens and logits.

use super::adapters::mlx_lm::Api;
use super::adapters::targets::{CommandTarget, HttpTarget, REQUEST_TIMEOUT};
use super::adapters::tokenizer::WordLevel;
use super::admission::{prepare, Prepared};
use super::engine::InProcess;
use super::error::ServeError;
use super::judge::{record_requests, Gathered};
use super::oracle_only;
use super::target::{Observed, ServingTarget};
use crate::run::{self, RunOptions};
use crate::tokens::case::OracleCase;
use crate::tokens::error::TokensError;
use crate::tokens::session::Session;
use parity_record::{ErrorRecord, ServingRecord};
use parity_spec::{Case, Scenario, ScenarioSource, TokensSpec};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which target `parity serve` drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetChoice {
    /// The in-process engine on IREE.
    InProcess,
    /// An OpenAI-compatible endpoint on loopback (`--target URL`), spoken to
    /// in parity's form or, with `--target-api mlx-lm`, in mlx_lm.server's.
    Http(String, TargetApi),
    /// A command template run per request (`--target-command TEMPLATE`).
    Command(String),
}

/// The request form an HTTP target takes (`--target-api`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetApi {
    /// Token-id prompts, integer `logprobs`, `token_ids` in answers (docs/serving-blackbox.md).
    OpenAi,
    /// `mlx_lm.server`'s: text prompts through the scenario's `tokenizer:`, boolean `logprobs`.
    MlxLm,
}

impl TargetChoice {
    fn name(&self) -> &'static str {
        match self {
            TargetChoice::InProcess => "in-process",
            TargetChoice::Http(..) => "http",
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
    record.slots = scenario.slots;
    record.context = scenario.context;
    let black_box = match open_black_box(&scenario, choice, request_timeout) {
        Ok(b) => b,
        Err(e) => {
            record.errors.push(e.to_record());
            return finish(record);
        }
    };
    let result = match (&scenario.source, black_box) {
        (ScenarioSource::Production { module, .. }, black_box) => {
            if let Some(module) = module {
                record.module = module.display().to_string();
            }
            let mut target = match InProcess::open(&scenario, options) {
                Ok(t) => t,
                Err(e) => {
                    record.errors.push(e.to_record());
                    return finish(record);
                }
            };
            record.module = target.serving_path.display().to_string();
            record.compiler_revision = target.compiler_revision.clone();
            match black_box {
                None => serve(&scenario, &mut target, None, &mut record),
                Some(mut b) => serve(&scenario, &mut target, Some(b.as_mut()), &mut record),
            }
        }
        (ScenarioSource::Oracle(dir), Some(mut b)) => {
            serve_oracle_only(&scenario, dir, b.as_mut(), &mut record)
        }
        (ScenarioSource::Oracle(_), None) => Err(ServeError::Convention(format!(
            "{}: an oracle-only scenario (`oracle:`, no `spec` or `module`) has no production modules to run in-process: check a server with --target URL or --target-command TEMPLATE",
            scenario.path.display()
        ))),
    };
    if let Err(e) = result {
        record.errors.push(e.to_record());
    }
    finish(record)
}

/// The black box `choice` names (None: the in-process engine); an
/// `mlx-lm` target reads the scenario's tokenizer.
fn open_black_box(
    scenario: &Scenario,
    choice: &TargetChoice,
    request_timeout: Duration,
) -> Result<Option<Box<dyn ServingTarget>>, ServeError> {
    Ok(match choice {
        TargetChoice::InProcess => None,
        TargetChoice::Http(url, api) => {
            let api = match api {
                TargetApi::OpenAi => Api::OpenAi,
                TargetApi::MlxLm => {
                    let path = scenario.tokenizer.as_ref().ok_or_else(|| {
                        ServeError::Convention(format!(
                            "{}: --target-api mlx-lm sends text prompts, but the scenario names no `tokenizer:` (the model's tokenizer.json)",
                            scenario.path.display()
                        ))
                    })?;
                    Api::MlxLm(WordLevel::load(path)?)
                }
            };
            Some(Box::new(HttpTarget::new(url, api, request_timeout)?))
        }
        TargetChoice::Command(t) => Some(Box::new(CommandTarget::new(t, request_timeout)?)),
    })
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

/// Each admitted request run alone on `t` (None for a refused one).
fn solo_runs(
    scenario: &Scenario,
    prepared: &[Prepared],
    t: &mut dyn ServingTarget,
) -> Result<Vec<Option<Observed>>, ServeError> {
    let mut solos = Vec::new();
    for (r, p) in scenario.requests.iter().zip(prepared) {
        solos.push(match p.refusal {
            Some(_) => None,
            None => Some(t.run_solo(r)?),
        });
    }
    Ok(solos)
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
    let solos = match black_box.as_deref_mut() {
        Some(b) => solo_runs(scenario, &prepared, b)?,
        None => solo_runs(scenario, &prepared, target)?,
    };
    let tokens = target.spec.tokens.clone();
    // The serving check reads the oracle only; it calls no `bind:` token call.
    let no_binds = crate::tokens::bind::BoundCalls::new();
    let session = tokens.as_ref().map(|t| Session {
        spec: &target.spec,
        tokens: t,
        sources: &target.sources,
        modules: &target.modules,
        bound: &no_binds,
    });
    let mut oracles = Vec::new();
    for (r, p) in scenario.requests.iter().zip(&prepared) {
        oracles.push(match &session {
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
        });
    }
    let gathered = Gathered {
        prepared: &prepared,
        observed: &observed,
        solos: &solos,
        oracles: &oracles,
        logits: &logits,
        session: session.as_ref(),
        black_box: black_box.is_some(),
    };
    record_requests(scenario, &gathered, record);
    Ok(())
}

/// An oracle-only scenario on a black box: admission by the context, the
/// oracle straight from the store.
fn serve_oracle_only(
    scenario: &Scenario,
    dir: &Path,
    black_box: &mut dyn ServingTarget,
    record: &mut ServingRecord,
) -> Result<(), ServeError> {
    let store = parity_tensor::OracleStore::open(dir).map_err(|e| {
        ServeError::from(crate::run::inputs::InputError::from(e))
            .context(&format!("{}: oracle store", scenario.path.display()))
    })?;
    let prepared: Vec<Prepared> = scenario
        .requests
        .iter()
        .map(|r| oracle_only::prepare(&store, scenario, r))
        .collect::<Result<_, _>>()?;
    let observed = black_box.run(scenario)?;
    let solos = solo_runs(scenario, &prepared, black_box)?;
    let mut oracles = Vec::new();
    for (r, p) in scenario.requests.iter().zip(&prepared) {
        oracles.push(match p.refusal {
            Some(_) => None,
            None => Some(oracle_only::oracle_case(
                &store,
                r.input.case(),
                &format!("request `{}`", r.id),
            )?),
        });
    }
    let gathered = Gathered {
        prepared: &prepared,
        observed: &observed,
        solos: &solos,
        oracles: &oracles,
        logits: &[],
        session: None,
        black_box: true,
    };
    record_requests(scenario, &gathered, record);
    Ok(())
}
