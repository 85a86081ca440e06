//! `parity serve`: many requests through the production pipeline's slot
//! entry points, as a continuous-batching server runs them, judged per
//! request against the oracle and the request's solo run (docs/serving.md).

pub mod error;
pub mod target;

pub use error::ServeError;
pub use target::{Observed, ServingTarget};
