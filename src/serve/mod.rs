//! `parity serve`: many requests through the production pipeline's slot
//! entry points, as a continuous-batching server runs them, judged per
//! request against the oracle and the request's solo run (docs/serving.md).

pub mod adapters;
pub mod admission;
pub mod answer;
pub mod checks;
pub mod engine;
pub mod error;
mod execute;
mod front_end;
pub mod functions;
pub mod judge;
pub mod oracle_only;
pub mod scheduler;
pub mod slots;
pub mod target;
mod targets;

pub use error::ServeError;
pub use execute::{execute, execute_on, TargetApi, TargetChoice};
pub use target::{Observed, ServingTarget};
pub use targets::execute_targets;

use sha2::{Digest, Sha256};

/// SHA-256 (hex) of raw bytes.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 (hex) of f32 values' little-endian bits.
pub fn sha256_f32(row: &[f32]) -> String {
    let mut h = Sha256::new();
    for x in row {
        h.update(x.to_le_bytes());
    }
    hex::encode(h.finalize())
}
