//! Why a fuzz check could not run: bad input (exit 2), a batch the guard
//! refuses (exit 2), or IREE (exit 3).

use parity_record::ErrorRecord;

/// A fuzz failure; the message names the spec position, case, clip or function.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FuzzError {
    /// Invalid input: the spec's mel sources, weights, a signature mismatch.
    #[error("{0}")]
    Input(String),
    /// The guard refused a batch before IREE (a malformed mask, length, shape...).
    #[error("malformed input refused before IREE: {0}")]
    Malformed(String),
    /// The IREE compiler or runtime failed.
    #[error("{0}")]
    Execution(String),
}

impl FuzzError {
    /// As a record error (kind + message), with `prefix: ` in front.
    pub fn to_record(&self, prefix: &str) -> ErrorRecord {
        let m = format!("{prefix}: {self}");
        match self {
            FuzzError::Input(_) | FuzzError::Malformed(_) => ErrorRecord::input(m),
            FuzzError::Execution(_) => ErrorRecord::execution(m),
        }
    }
}
