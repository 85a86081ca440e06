//! A loopback test fixture for parity's black-box serving adapters: it
//! serves the bundled subject's production modules (compiled by IREE through
//! parity's artifact cache) over HTTP, `POST /v1/completions` with token ids,
//! logprobs and SSE streaming, and as a one-request CLI printing JSON lines.
//! `--leak` variants keep a slot's state across requests, for the negative
//! control. See docs/serving-blackbox.md.

pub mod artifacts;
pub mod cli;
pub mod error;
pub mod http;
pub mod leak;
pub mod model;
pub mod server;

pub use error::ServerError;
