//! Why a bisection could not finish: bad input (exit 2) or IREE (exit 3).

use parity_record::ErrorRecord;

/// A bisection failure; the message names the file, stage, point or tensor.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BisectError {
    /// Invalid input: unreadable or unsupported MLIR, unknown point, missing
    /// or mismatched tensor, a spec that does not fit the function.
    #[error("{0}")]
    Input(String),
    /// The IREE compiler or runtime failed on a probe.
    #[error("{0}")]
    Execution(String),
}

impl BisectError {
    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        match self {
            BisectError::Input(m) => ErrorRecord::input(m.clone()),
            BisectError::Execution(m) => ErrorRecord::execution(m.clone()),
        }
    }
}

/// Shorthand: an input error from anything printable.
pub fn input(m: impl std::fmt::Display) -> BisectError {
    BisectError::Input(m.to_string())
}

/// Shorthand: an execution error from anything printable.
pub fn execution(m: impl std::fmt::Display) -> BisectError {
    BisectError::Execution(m.to_string())
}
