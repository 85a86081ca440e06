//! The two black-box [`ServingTarget`]s: [`HttpTarget`] (an OpenAI-style
//! endpoint on loopback) and [`CommandTarget`] (a command template run per
//! request). Both build each request from the oracle store of the
//! scenario's spec, run up to `slots` requests at once in arrival order,
//! cancel by hanging up after k tokens, and report [`Observed`] requests
//! for the same checks as the in-process engine. A black box has no engine
//! steps: those fields stay None; the slot is recorded when the target names it.
//!
//! `run` streams (HTTP) and `run_solo` does not, so the batch-invariance
//! check (each request equals its solo run) also checks that streamed and
//! non-streamed output agree.

use super::command::CommandTemplate;
use super::http::{complete, CallOptions, Endpoint};
use super::mlx_lm::{prompt_text, Api};
use super::request::from_oracle;
use super::wire::WireRequest;
use super::{AdapterError, Outcome};
use crate::serve::target::{
    Cancel, Observed, Request, RequestInput, Scenario, ServeError, ServingTarget,
};
use parity_spec::ScenarioSource;
use parity_tensor::OracleStore;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Default bound on one request: one wall-clock deadline from connect (or
/// spawn) to the last byte (or exit), whatever arrives (`--request-timeout`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A request the target answered unreadably: its error (the other requests
/// go on and keep their results); a misdescribed target stops the run.
/// `who` names the request, and the solo run when it is one.
fn wire_failure(request: &Request, who: &str, e: AdapterError) -> Result<Observed, ServeError> {
    match e {
        AdapterError::Wire(m) => Ok(Observed {
            id: request.id.clone(),
            error: Some(format!("{who}: wire: {m}")),
            ..Observed::default()
        }),
        e => Err(ServeError::from(e).context(who)),
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

/// The oracle store of a scenario: its spec's, or the one it names.
fn open_store(
    source: &ScenarioSource,
    cached: &mut Option<(PathBuf, OracleStore)>,
) -> Result<(), ServeError> {
    let (key, dir) = match source {
        ScenarioSource::Production { spec, .. } => {
            if cached.as_ref().is_some_and(|(p, _)| p == spec) {
                return Ok(());
            }
            let loaded = parity_spec::Spec::load(spec)
                .map_err(|e| ServeError::from(e).context(&spec.display().to_string()))?;
            (spec.clone(), loaded.oracle)
        }
        ScenarioSource::Oracle(dir) => (dir.clone(), dir.clone()),
    };
    if cached.as_ref().is_some_and(|(p, _)| *p == key) {
        return Ok(());
    }
    let store = OracleStore::open(&dir).map_err(|e| {
        ServeError::from(crate::run::inputs::InputError::from(e))
            .context(&format!("{}: oracle store", key.display()))
    })?;
    *cached = Some((key, store));
    Ok(())
}

fn wire(
    store: &OracleStore,
    request: &Request,
    caller: &impl Caller,
) -> Result<WireRequest, ServeError> {
    let padded = matches!(request.input, RequestInput::AllPadded(_));
    let case = request.input.case();
    let at = || format!("request `{}` (line {})", request.id, request.location.line);
    let w = from_oracle(store, case, request.max_new_tokens as usize, padded).map_err(|m| {
        ServeError::Request {
            at: at(),
            message: m.to_string(),
        }
    })?;
    if let Some(problem) = caller.prompt_problem(&w.prompt) {
        return Err(ServeError::Request {
            at: at(),
            message: format!("case `{case}`: {problem}"),
        });
    }
    Ok(w)
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
        .map_err(|_| ServeError::Run("a request thread panicked".into()))?;
    all.into_iter()
        .zip(requests)
        .map(|(r, q)| {
            r.unwrap_or_else(|| Err(ServeError::Run(format!("request `{}` did not run", q.id))))
        })
        .collect()
}

/// How a black box runs one request: `lane` is the worker running it
/// (`usize::MAX` for a solo run), `stream` asks for a streamed answer (where
/// the target can choose), `stop` hangs up after that many tokens.
pub trait Caller: Sync {
    /// The target's name in the record (`http`, `command`).
    fn name(&self) -> &'static str;
    /// Why `prompt` cannot be sent as it is (a text prompt that does not
    /// tokenize back to its ids); None when it can.
    fn prompt_problem(&self, _prompt: &[i64]) -> Option<String> {
        None
    }
    /// Runs one request.
    fn call(
        &self,
        request: &WireRequest,
        lane: usize,
        stream: bool,
        stop: Option<usize>,
    ) -> Result<Outcome, AdapterError>;
}

/// An OpenAI-compatible `/v1/completions` endpoint on loopback: streamed
/// (SSE) in the scenario run, one JSON answer for the solo runs.
pub struct Http {
    endpoint: Endpoint,
    api: Api,
    timeout: Duration,
}

impl Caller for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    fn prompt_problem(&self, prompt: &[i64]) -> Option<String> {
        match &self.api {
            Api::OpenAi => None,
            Api::MlxLm(t) => prompt_text(t, prompt).err(),
        }
    }

    fn call(
        &self,
        request: &WireRequest,
        _lane: usize,
        stream: bool,
        stop: Option<usize>,
    ) -> Result<Outcome, AdapterError> {
        let options = CallOptions {
            stream,
            hang_up_after: stop,
            timeout: self.timeout,
        };
        complete(&self.endpoint, &self.api, request, options)
    }
}

/// A command template run once per request, each worker with its own
/// scratch directory for request files.
pub struct Command {
    template: CommandTemplate,
    timeout: Duration,
    scratch: tempfile::TempDir,
}

impl Caller for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn call(
        &self,
        request: &WireRequest,
        lane: usize,
        _stream: bool,
        stop: Option<usize>,
    ) -> Result<Outcome, AdapterError> {
        let dir = self.scratch.path().join(format!("r{lane}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| AdapterError::Wire(format!("{}: {e}", dir.display())))?;
        self.template.run(request, &dir, self.timeout, stop)
    }
}

/// A black-box target: requests built from the scenario spec's oracle store,
/// run through a [`Caller`].
pub struct BlackBox<C> {
    caller: C,
    store: Option<(PathBuf, OracleStore)>,
}

/// An OpenAI-compatible `/v1/completions` endpoint on loopback.
pub type HttpTarget = BlackBox<Http>;
/// A command template run once per request.
pub type CommandTarget = BlackBox<Command>;

impl HttpTarget {
    /// A target at `url` (loopback only; see [`Endpoint::parse`]) that takes requests in `api`'s form.
    pub fn new(url: &str, api: Api, timeout: Duration) -> Result<HttpTarget, ServeError> {
        Ok(BlackBox {
            caller: Http {
                endpoint: Endpoint::parse(url).map_err(ServeError::from)?,
                api,
                timeout,
            },
            store: None,
        })
    }
}

impl CommandTarget {
    /// A target running `template` (see [`CommandTemplate::parse`]).
    pub fn new(template: &str, timeout: Duration) -> Result<CommandTarget, ServeError> {
        let scratch = tempfile::tempdir()
            .map_err(|e| ServeError::Run(format!("a scratch directory for request files: {e}")))?;
        Ok(BlackBox {
            caller: Command {
                template: CommandTemplate::parse(template).map_err(ServeError::from)?,
                timeout,
                scratch,
            },
            store: None,
        })
    }
}

impl<C: Caller> BlackBox<C> {
    fn observe(
        &self,
        store: &OracleStore,
        lane: usize,
        request: &Request,
        solo: bool,
    ) -> Result<Observed, ServeError> {
        let w = wire(store, request, &self.caller)?;
        let stop = if solo { None } else { hang_up_after(request) };
        let who = if solo {
            format!("request `{}` (its solo reference run)", request.id)
        } else {
            format!("request `{}`", request.id)
        };
        let out = match self.caller.call(&w, lane, !solo, stop) {
            Ok(out) => out,
            Err(e) => return wire_failure(request, &who, e),
        };
        Ok(Observed {
            id: request.id.clone(),
            slot: out.slot,
            tokens: out.tokens,
            logprobs: out.logprobs,
            finish: out.finish,
            token_flood: out.token_flood,
            refused: out.refused,
            error: out.error.map(|e| format!("{who}: {e}")),
            ..Observed::default()
        })
    }

    fn store(&self) -> Result<&OracleStore, ServeError> {
        self.store.as_ref().map(|(_, s)| s).ok_or_else(|| {
            ServeError::Convention(
                "run_solo before run: no scenario (and so no oracle store) yet".into(),
            )
        })
    }
}

impl<C: Caller> ServingTarget for BlackBox<C> {
    fn name(&self) -> &str {
        self.caller.name()
    }

    fn run(&mut self, scenario: &Scenario) -> Result<Vec<Observed>, ServeError> {
        open_store(&scenario.source, &mut self.store)?;
        let store = self.store()?;
        run_all(&scenario.requests, scenario.slots as usize, |i, r| {
            self.observe(store, i, r, false)
        })
    }

    fn run_solo(&mut self, request: &Request) -> Result<Observed, ServeError> {
        self.observe(self.store()?, usize::MAX, request, true)
    }
}
