//! A loopback test fixture for parity's black-box serving adapters: it
//! serves the bundled subject's production slot entry points (compiled by
//! IREE through parity's artifact cache) as a continuous-batching server
//! over HTTP, `POST /v1/completions` with token ids, logprobs and SSE
//! streaming, and as a one-request CLI printing JSON lines. `--leak`
//! variants serve the production leak modules, for the negative control.
//! See docs/serving-blackbox.md.

#![warn(missing_docs)]

pub mod artifacts;
pub mod batch;
pub mod cli;
pub mod error;
pub mod http;
pub mod leak;
pub mod model;
pub mod server;

pub use error::ServerError;
