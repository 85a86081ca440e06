//! The serving-target trait (SERVING-CONTRACT.md): parity's in-process engine
//! and the black-box adapters (command template, OpenAI-compatible HTTP) all
//! report what they did as [`Observed`] requests, which `checks` judges with
//! one set of rules.

pub use super::error::ServeError;
pub use parity_spec::{Cancel, Request, RequestInput, Scenario};

/// One request of a scenario as a target saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// The request's id (`Request::id`).
    pub id: String,
    /// The slot it ran in; None when the target cannot say (black box) or it was refused.
    pub slot: Option<u32>,
    /// The engine step it was admitted at (prefill ran).
    pub admitted_step: Option<u64>,
    /// The step it was cancelled at.
    pub cancelled_step: Option<u64>,
    /// The step its last token was produced at.
    pub finished_step: Option<u64>,
    /// Generated tokens, in order.
    pub tokens: Vec<u32>,
    /// Black box: the log-probability the target gave each token (empty when it gave none).
    pub logprobs: Vec<f32>,
    /// Black box: the finish reason the target gave (`length`, `stop`,
    /// `cancelled`); None when it gave none or parity hung up.
    pub finish: Option<String>,
    /// Black box: parity stopped reading after `max_new_tokens` + a margin of
    /// tokens (a token flood); `tokens` holds those read.
    pub token_flood: bool,
    /// Admission refusal text (nothing ran for this request).
    pub refused: Option<String>,
    /// An error event or exit during the run.
    pub error: Option<String>,
    /// In-process only: `error` is bad input (a weight or oracle tensor
    /// missing when the request ran), exit 2 rather than 3.
    pub error_is_input: bool,
    /// In-process only: the request's effective (unpadded) prompt length.
    pub effective_length: Option<u64>,
    /// In-process only: SHA-256 (hex) of the request's dense PLE rows as fed to prefill.
    pub dense_ple_sha256: Option<String>,
    /// In-process only: SHA-256 (hex) of the logits row behind each token
    /// (bitwise batch invariance); empty when the target cannot say.
    pub logits_sha256: Vec<String>,
}

/// A serving target: parity's in-process engine, a command template, an HTTP endpoint.
pub trait ServingTarget {
    /// A short name for messages and the record (`in-process`, `command`, `http`).
    fn name(&self) -> &str;
    /// Runs every request of `scenario` as the target schedules them.
    fn run(&mut self, scenario: &Scenario) -> Result<Vec<Observed>, ServeError>;
    /// Runs one request alone (the batch-invariance reference).
    fn run_solo(&mut self, request: &Request) -> Result<Observed, ServeError>;
}
