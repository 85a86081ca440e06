//! The two black-box [`ServingTarget`]s: [`HttpTarget`] (an OpenAI-style
//! endpoint on loopback) and [`CommandTarget`] (a command template run per
//! request). Both build each request from the oracle store of the
//! scenario's spec, run up to `slots` requests at once in arrival order,
//! cancel by hanging up after k tokens, and report [`Observed`] requests
//! for the same checks as the in-process engine. A black box has no engine
//! steps and no slot numbers: those fields stay None.
//!
//! `run` streams (HTTP) and `run_solo` does not, so the batch-invariance
//! check (each request equals its solo run) also checks that streamed and
//! non-streamed output agree.

use super::command::CommandTemplate;
use super::http::{complete, CallOptions, Endpoint};
use super::request::from_oracle;
use super::AdapterError;
use crate::serve::target::{
    Cancel, Observed, Request, RequestInput, Scenario, ServeError, ServingTarget,
};
use parity_record::ErrorKind;
use parity_tensor::OracleStore;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Default bound on one request (connect to last token).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

fn serve_error(e: AdapterError) -> ServeError {
    match e.kind() {
        ErrorKind::Input => ServeError::Input(e.to_string()),
        ErrorKind::Execution => ServeError::Execution(e.to_string()),
    }
}

/// A request the target answered unreadably: its error (the other requests
/// go on and keep their results); a misdescribed target stops the run.
fn wire_failure(request: &Request, e: AdapterError) -> Result<Observed, ServeError> {
    match e {
        AdapterError::Wire(m) => Ok(Observed {
            id: request.id.clone(),
            error: Some(format!("request `{}`: wire: {m}", request.id)),
            ..Observed::default()
        }),
        e => Err(serve_error(e).context(&format!("request `{}`", request.id))),
    }
}

/// Tokens after which a black box hangs up: `after_tokens: k`, or for a
/// step-based cancel the steps it had been running (one token per step).
pub fn hang_up_after(request: &Request) -> Option<usize> {
    match request.cancel {
        None => None,
        Some(Cancel::AfterTokens(k)) => Some(k as usize),
        Some(Cancel::AtStep(s)) => Some(s.saturating_sub(request.arrive) as usize),
    }
}

/// The oracle store of the spec a scenario names.
fn open_store(spec: &Path, cached: &mut Option<(PathBuf, OracleStore)>) -> Result<(), ServeError> {
    if cached.as_ref().is_some_and(|(p, _)| p == spec) {
        return Ok(());
    }
    let loaded = parity_spec::Spec::load(spec)
        .map_err(|e| ServeError::Input(format!("{}: {e}", spec.display())))?;
    let store = OracleStore::open(&loaded.oracle)
        .map_err(|e| ServeError::Input(format!("{}: oracle store: {e}", spec.display())))?;
    *cached = Some((spec.to_path_buf(), store));
    Ok(())
}

fn wire(store: &OracleStore, request: &Request) -> Result<super::wire::WireRequest, ServeError> {
    let padded = matches!(request.input, RequestInput::AllPadded(_));
    from_oracle(
        store,
        request.input.case(),
        request.max_new_tokens as usize,
        padded,
    )
    .map_err(|m| {
        ServeError::Input(format!(
            "request `{}` (line {}): {m}",
            request.id, request.location.line
        ))
    })
}

/// Runs `one` over the requests in arrival order, at most `width` at once;
/// results in the scenario's order.
fn run_all<F>(requests: &[Request], width: usize, one: F) -> Result<Vec<Observed>, ServeError>
where
    F: Fn(usize, &Request) -> Result<Observed, ServeError> + Sync,
{
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| requests[i].arrive);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Observed, ServeError>>>> =
        Mutex::new(vec![None; requests.len()]);
    std::thread::scope(|s| {
        for _ in 0..width.clamp(1, requests.len().max(1)) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = order.get(k) else { return };
                let r = one(i, &requests[i]);
                if let Ok(mut all) = results.lock() {
                    all[i] = Some(r);
                }
            });
        }
    });
    let all = results
        .into_inner()
        .map_err(|_| ServeError::Execution("a request thread panicked".into()))?;
    all.into_iter()
        .zip(requests)
        .map(|(r, q)| {
            r.unwrap_or_else(|| {
                Err(ServeError::Execution(format!(
                    "request `{}` did not run",
                    q.id
                )))
            })
        })
        .collect()
}

/// An OpenAI-compatible `/v1/completions` endpoint on loopback.
pub struct HttpTarget {
    endpoint: Endpoint,
    timeout: Duration,
    store: Option<(PathBuf, OracleStore)>,
}

impl HttpTarget {
    /// A target at `url` (loopback only; see [`Endpoint::parse`]).
    pub fn new(url: &str, timeout: Duration) -> Result<HttpTarget, ServeError> {
        Ok(HttpTarget {
            endpoint: Endpoint::parse(url).map_err(serve_error)?,
            timeout,
            store: None,
        })
    }

    fn observe(
        &self,
        store: &OracleStore,
        request: &Request,
        stream: bool,
        solo: bool,
    ) -> Result<Observed, ServeError> {
        let w = wire(store, request)?;
        let options = CallOptions {
            stream,
            hang_up_after: if solo { None } else { hang_up_after(request) },
            timeout: self.timeout,
        };
        let out = match complete(&self.endpoint, &w, options) {
            Ok(out) => out,
            Err(e) => return wire_failure(request, e),
        };
        Ok(Observed {
            id: request.id.clone(),
            tokens: out.tokens,
            refused: out.refused,
            error: out.error.map(|e| format!("request `{}`: {e}", request.id)),
            ..Observed::default()
        })
    }
}

impl ServingTarget for HttpTarget {
    fn name(&self) -> &str {
        "http"
    }

    fn run(&mut self, scenario: &Scenario) -> Result<Vec<Observed>, ServeError> {
        open_store(&scenario.spec, &mut self.store)?;
        let store = &self
            .store
            .as_ref()
            .ok_or_else(|| ServeError::Input("no oracle store".into()))?
            .1;
        let this = &*self;
        run_all(&scenario.requests, scenario.slots as usize, |_, r| {
            this.observe(store, r, true, false)
        })
    }

    fn run_solo(&mut self, request: &Request) -> Result<Observed, ServeError> {
        let store = &self
            .store
            .as_ref()
            .ok_or_else(|| {
                ServeError::Input(
                    "run_solo before run: no scenario (and so no oracle store) yet".into(),
                )
            })?
            .1;
        self.observe(store, request, false, true)
    }
}

/// A command template run once per request.
pub struct CommandTarget {
    template: CommandTemplate,
    timeout: Duration,
    scratch: tempfile::TempDir,
    store: Option<(PathBuf, OracleStore)>,
}

impl CommandTarget {
    /// A target running `template` (see [`CommandTemplate::parse`]).
    pub fn new(template: &str, timeout: Duration) -> Result<CommandTarget, ServeError> {
        let scratch = tempfile::tempdir().map_err(|e| {
            ServeError::Execution(format!("a scratch directory for request files: {e}"))
        })?;
        Ok(CommandTarget {
            template: CommandTemplate::parse(template).map_err(serve_error)?,
            timeout,
            scratch,
            store: None,
        })
    }

    fn observe(
        &self,
        store: &OracleStore,
        slot: usize,
        request: &Request,
        solo: bool,
    ) -> Result<Observed, ServeError> {
        let w = wire(store, request)?;
        let dir = self.scratch.path().join(format!("r{slot}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| ServeError::Execution(format!("{}: {e}", dir.display())))?;
        let stop = if solo { None } else { hang_up_after(request) };
        let out = match self.template.run(&w, &dir, self.timeout, stop) {
            Ok(out) => out,
            Err(e) => return wire_failure(request, e),
        };
        Ok(Observed {
            id: request.id.clone(),
            tokens: out.tokens,
            refused: out.refused,
            error: out.error.map(|e| format!("request `{}`: {e}", request.id)),
            ..Observed::default()
        })
    }
}

impl ServingTarget for CommandTarget {
    fn name(&self) -> &str {
        "command"
    }

    fn run(&mut self, scenario: &Scenario) -> Result<Vec<Observed>, ServeError> {
        open_store(&scenario.spec, &mut self.store)?;
        let store = &self
            .store
            .as_ref()
            .ok_or_else(|| ServeError::Input("no oracle store".into()))?
            .1;
        let this = &*self;
        run_all(&scenario.requests, scenario.slots as usize, |i, r| {
            this.observe(store, i, r, false)
        })
    }

    fn run_solo(&mut self, request: &Request) -> Result<Observed, ServeError> {
        let store = &self
            .store
            .as_ref()
            .ok_or_else(|| {
                ServeError::Input(
                    "run_solo before run: no scenario (and so no oracle store) yet".into(),
                )
            })?
            .1;
        self.observe(store, usize::MAX, request, true)
    }
}
