//! Why a token run (or one case of it) could not finish: bad input (exit 2)
//! or IREE (exit 3).

use parity_record::ErrorRecord;

/// A token-run failure; the message names the spec position, case, step,
/// function or tensor.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TokensError {
    /// Invalid input: a missing or malformed oracle tensor, an argument the
    /// function's signature refuses, a NaN logit, a vocabulary mismatch.
    #[error("{0}")]
    Input(String),
    /// The IREE compiler or runtime failed.
    #[error("{0}")]
    Execution(String),
}

impl TokensError {
    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        match self {
            TokensError::Input(m) => ErrorRecord::input(m.clone()),
            TokensError::Execution(m) => ErrorRecord::execution(m.clone()),
        }
    }

    /// The same error with `prefix: ` in front of its message.
    pub fn context(self, prefix: &str) -> TokensError {
        match self {
            TokensError::Input(m) => TokensError::Input(format!("{prefix}: {m}")),
            TokensError::Execution(m) => TokensError::Execution(format!("{prefix}: {m}")),
        }
    }
}

/// Shorthand: an input error from anything printable.
pub fn input(m: impl std::fmt::Display) -> TokensError {
    TokensError::Input(m.to_string())
}
