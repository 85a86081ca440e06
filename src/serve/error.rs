//! Why a serving run (or one request of it) could not finish: bad input
//! (exit 2) or IREE (exit 3). Admission refusals are not errors: they are
//! observations the checks judge.

use parity_record::ErrorRecord;

/// A serving failure; the message names the scenario position, request,
/// slot, step, function or tensor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServeError {
    /// Invalid input: a malformed scenario, a missing or malformed oracle
    /// tensor, an argument the function's signature refuses.
    #[error("{0}")]
    Input(String),
    /// The IREE compiler or runtime (or a black-box target) failed.
    #[error("{0}")]
    Execution(String),
}

impl ServeError {
    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        match self {
            ServeError::Input(m) => ErrorRecord::input(m.clone()),
            ServeError::Execution(m) => ErrorRecord::execution(m.clone()),
        }
    }

    /// The same error with `prefix: ` in front of its message.
    pub fn context(self, prefix: &str) -> ServeError {
        match self {
            ServeError::Input(m) => ServeError::Input(format!("{prefix}: {m}")),
            ServeError::Execution(m) => ServeError::Execution(format!("{prefix}: {m}")),
        }
    }
}
