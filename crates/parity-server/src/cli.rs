//! The one-request CLI mode (`parity-fixture-server run`), for parity's
//! command-template adapter: one request as JSON in (a file or stdin), JSON
//! lines out (`{"token", "logprob"}` ..., then `{"done", "reason", "slot"}`,
//! or `{"refused"}` / `{"error"}` and a non-zero exit). It runs on the same
//! scheduler as the HTTP server. `--state FILE` keeps the slots' KV caches
//! and lengths between runs (safetensors: `k_cache`, `v_cache`, `lengths`),
//! as a server with a persistent cache would; with the honest module a
//! prefill resets its slot, so the state changes nothing, with a leak module
//! it leaks into the next run.

use crate::artifacts::Artifacts;
use crate::batch::{Batcher, Event, Job};
use crate::error::ServerError;
use crate::model::Model;
use parity::serve::adapters::wire::{CommandLine, WireRequest};
use parity::serve::slots::SlotCaches;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// Steps one request may take (max_tokens is bounded by the context anyway).
const MAX_STEPS: usize = 4096;

fn load_state(path: &Path, empty: SlotCaches) -> Result<SlotCaches, ServerError> {
    if !path.exists() {
        return Ok(empty);
    }
    let bad = |e: String| ServerError::Setup(format!("--state {}: {e}", path.display()));
    let f = parity_tensor::read_safetensors(path).map_err(|e| bad(e.to_string()))?;
    let get = |n: &str, like: &parity_tensor::Tensor| {
        let t = f.get(n).map_err(|e| bad(e.to_string()))?;
        if t.shape() != like.shape() || t.dtype() != like.dtype() {
            return Err(bad(format!(
                "`{n}` is {:?} {:?}, the serving module takes {:?} {:?}",
                t.dtype(),
                t.shape(),
                like.dtype(),
                like.shape()
            )));
        }
        Ok(t)
    };
    Ok(SlotCaches {
        k: get("k_cache", &empty.k)?,
        v: get("v_cache", &empty.v)?,
        lengths: get("lengths", &empty.lengths)?,
    })
}

fn save_state(path: &Path, c: &SlotCaches) -> Result<(), ServerError> {
    parity_tensor::write_safetensors(
        path,
        &[
            ("k_cache", &c.k),
            ("v_cache", &c.v),
            ("lengths", &c.lengths),
        ],
        None,
    )
    .map_err(|e| ServerError::Execution(format!("--state {}: {e}", path.display())))
}

fn line(out: &mut impl Write, l: &CommandLine) -> Result<(), ServerError> {
    writeln!(out, "{}", serde_json::to_string(l).unwrap_or_default())
        .and_then(|_| out.flush())
        .map_err(|e| ServerError::Execution(format!("writing the output: {e}")))
}

/// Runs `request` (JSON text) in slot 0 and writes its JSON lines to `out`;
/// the error, if any, is also returned (after its line was written).
pub fn run_one(
    art: Arc<Artifacts>,
    driver: &str,
    request: &str,
    state: Option<&Path>,
    out: &mut impl Write,
) -> Result<(), ServerError> {
    let result = (|| {
        let wire: WireRequest = serde_json::from_str(request).map_err(|e| {
            ServerError::Refused(format!("the request is not a completion request: {e}"))
        })?;
        let model = Model::load(art, driver)?;
        let empty = model.empty_caches()?;
        let caches = match state {
            Some(p) => load_state(p, empty)?,
            None => empty,
        };
        let mut batcher = Batcher::new(model, 1, caches)?;
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        batcher.submit(Job {
            request: wire,
            events: tx,
            cancel: Arc::clone(&cancel),
        });
        let mut slot = None;
        let mut end = None;
        for _ in 0..MAX_STEPS {
            for e in rx.try_iter() {
                match e {
                    Event::Admitted(s) => slot = Some(s),
                    Event::Token(token, logprob) => {
                        if let Err(e) = line(out, &CommandLine::Token { token, logprob }) {
                            cancel.store(true, Ordering::SeqCst);
                            end = Some(Err(e));
                        }
                    }
                    Event::Done(f) => end = end.or(Some(Ok(f))),
                    Event::Failed(e) => end = end.or(Some(Err(e))),
                }
            }
            if end.is_some() || batcher.idle() {
                break;
            }
            batcher.step();
        }
        if let Some(p) = state {
            save_state(p, batcher.caches())?;
        }
        let finish = end.unwrap_or_else(|| {
            Err(ServerError::Execution(format!(
                "the request did not finish within {MAX_STEPS} steps"
            )))
        })?;
        line(
            out,
            &CommandLine::Done {
                done: true,
                reason: finish.reason().to_string(),
                slot,
            },
        )
    })();
    if let Err(e) = &result {
        let l = match e {
            ServerError::Refused(m) => CommandLine::Refused { refused: m.clone() },
            e => CommandLine::Error {
                error: e.to_string(),
            },
        };
        let _ = line(out, &l);
    }
    result
}
