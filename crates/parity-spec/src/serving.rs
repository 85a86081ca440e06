//! Serving scenarios (`*scenario*.yaml`, `parity serve`): the slot count and
//! the requests a continuous-batching server is given, with their arrival
//! and cancellation steps. Parsed in `serving_parse`; the engine is
//! `parity::serve`. Documented in docs/serving.md.

use crate::model::Location;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The context length the serving modules are exported for (KV positions per slot).
pub const SERVING_CONTEXT: u64 = 64;

/// A validated scenario file.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The scenario file (as given to `load` / `parse_str`).
    pub path: PathBuf,
    /// What the requests are served and judged with: the production spec and
    /// serving module, or an oracle store alone (black-box targets only).
    pub source: ScenarioSource,
    /// The model's `tokenizer.json`, for a target that takes text prompts
    /// (`--target-api mlx-lm`), resolved against the scenario's directory.
    pub tokenizer: Option<PathBuf>,
    /// Number of slots S; the module must export `slot_decode_s{S}`.
    pub slots: u32,
    /// Context length (KV positions per slot); default [`SERVING_CONTEXT`].
    pub context: u64,
    /// Largest engine step the scenario may run to (a bound on every loop).
    pub max_steps: u64,
    /// The requests, in file order (ids unique).
    pub requests: Vec<Request>,
    /// Where `requests:` starts.
    pub location: Location,
}

/// What a scenario serves and judges its requests with.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioSource {
    /// `spec:` with `module:` and/or `vmfb:`: the in-process engine can run
    /// it, and the spec's `tokens:` section names the oracle's tensors.
    Production {
        /// The spec (`stages.yaml`) whose weights, oracle store and audio module
        /// the scenario serves with, resolved against the scenario's directory.
        spec: PathBuf,
        /// The serving module (slot entry points) as MLIR, compiled for each
        /// target that `prebuilt` does not name; resolved against the
        /// scenario's directory. None when `vmfb:` names every target served.
        module: Option<PathBuf>,
        /// `vmfb:`: the serving module prebuilt for a spec target, by target
        /// name (loaded as is, no compiler needed: a GPU machine's run).
        prebuilt: BTreeMap<String, PrebuiltServing>,
    },
    /// `oracle:` alone: a model parity has no production modules for, served
    /// only by a black box; the store holds `<case>/prompt` [1, P],
    /// `<case>/tokens` [N] and `<case>/logits` [N, V].
    Oracle(PathBuf),
}

/// A serving module prebuilt for one spec target (`vmfb: {TARGET: FILE}`).
#[derive(Clone, Debug, PartialEq)]
pub struct PrebuiltServing {
    /// The vmfb, resolved against the scenario's directory (it exists).
    pub path: PathBuf,
    /// Where the entry is in the scenario file.
    pub location: Location,
}

/// One request of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Unique id (named in every message and verdict).
    pub id: String,
    /// What the request asks for.
    pub input: RequestInput,
    /// Tokens to generate (token 0 comes from prefill).
    pub max_new_tokens: u32,
    /// The engine step at which the request arrives.
    pub arrive: u64,
    /// When the request is cancelled, if ever.
    pub cancel: Option<Cancel>,
    /// Where the request is in the scenario file.
    pub location: Location,
}

/// The content of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestInput {
    /// An oracle token case (`full128`, `two_clips`, `text_short`, `near_tie`):
    /// its `<case>/prompt`, mel inputs and greedy `<case>/lm_tokens`.
    Case(String),
    /// Synthetic: the clip(s) of this oracle case with every mel frame marked
    /// padded (`mel_mask` all true). Must be refused at admission.
    AllPadded(String),
}

impl RequestInput {
    /// The oracle case the request takes its prompt (and clips) from.
    pub fn case(&self) -> &str {
        match self {
            RequestInput::Case(c) | RequestInput::AllPadded(c) => c,
        }
    }
}

/// When a request is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// At this engine step (in-process), before that step's work runs.
    AtStep(u64),
    /// After the target has streamed this many tokens (black boxes: disconnect).
    AfterTokens(u32),
}
