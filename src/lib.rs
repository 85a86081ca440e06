//! parity: differential parity testing of IREE-compiled models against an oracle.
//!
//! `run` executes a stage graph (parsed by `parity_spec`) on IREE
//! (`parity_iree`) and compares every output (`parity_compare`) into a
//! [`run::record::RunRecord`]; `report` renders that record.

#![warn(missing_docs)]

pub mod bench;
pub mod bisect;
pub mod cli;
pub mod dispatch;
pub mod fuzz;
pub mod report;
pub mod run;
mod seed;
pub mod serve;
pub mod target;
pub mod tokens;
