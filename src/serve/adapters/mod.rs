//! Black-box serving targets: a command template run per request and an
//! OpenAI-compatible HTTP endpoint, and the wire formats they share
//! (docs/serving-blackbox.md).

pub mod command;
pub mod http;
pub mod request;
pub mod sse;
pub mod targets;
pub mod wire;

use parity_record::ErrorKind;

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
