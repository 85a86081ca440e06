//! Black-box serving targets: a command template run per request and an
//! OpenAI-compatible HTTP endpoint, and the wire formats they share
//! (docs/serving-blackbox.md).

pub mod chunked;
pub mod command;
mod command_io;
pub mod http;
mod http_answer;
mod http_io;
pub mod mlx_lm;
pub mod request;
pub mod sse;
pub mod targets;
pub mod tokenizer;
pub mod wire;

use parity_record::ErrorKind;
use std::time::Duration;

/// Tokens read past `max_tokens` before parity stops reading a request and
/// fails it (a token flood): enough to show by how much the target overran,
/// few enough that a flood costs nothing.
pub const TOKEN_MARGIN: usize = 16;

/// Largest non-streamed HTTP answer (and command output line) parity reads:
/// the same bound as one line of an event stream (`sse::MAX_LINE`).
pub const MAX_BODY: usize = sse::MAX_LINE;

/// `1.0 s`, `120.0 s`: a duration for messages.
pub fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Why a black-box target could not be driven (as opposed to a request the
/// target refused or failed, which is an observation the checks judge).
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// The target is misdescribed: a non-loopback or malformed URL, an
    /// empty or unbalanced command template, a command that cannot start (exit 2).
    #[error("{0}")]
    Target(String),
    /// The target answered with something parity cannot read: malformed
    /// JSON, a stream without `data: [DONE]`, a dropped connection, a
    /// timeout, a command's undocumented output (exit 3).
    #[error("{0}")]
    Wire(String),
}

impl AdapterError {
    /// The error kind (and so the exit code) of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AdapterError::Target(_) => ErrorKind::Input,
            AdapterError::Wire(_) => ErrorKind::Execution,
        }
    }
}

/// What one request gave a black box (either adapter).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Token ids, in order.
    pub tokens: Vec<u32>,
    /// Their log-probabilities, when the target sent them.
    pub logprobs: Vec<f32>,
    /// The finish reason (`length`, `stop`, `cancelled`); None when parity hung up.
    pub finish: Option<String>,
    /// The target refused the request at admission (HTTP 4xx, a `refused` line): its message.
    pub refused: Option<String>,
    /// The target failed it (HTTP 5xx, an error event, an `error` line): its message.
    pub error: Option<String>,
    /// Parity hung up (disconnected, or killed the command) after k tokens.
    pub hung_up: bool,
    /// The server slot it ran in, when the target said (parity's `slot` extension).
    pub slot: Option<u32>,
    /// Parity stopped reading: the target sent more than `max_tokens` +
    /// [`TOKEN_MARGIN`] tokens (`tokens` holds the first `max_tokens` + margin).
    pub token_flood: bool,
}
