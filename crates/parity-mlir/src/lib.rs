//! Reads StableHLO modules printed in MLIR's generic form into SSA graphs, cuts
//! standalone slices out of them and promotes slices to f64, for `parity bisect`.
//!
//! Input is what `iree-opt --pass-pipeline='builtin.module(inline,symbol-dce)'
//! --mlir-print-op-generic --mlir-print-debuginfo --mlir-print-local-scope` prints:
//! every op generic, every location inline. [`parse`] builds a [`Module`] of
//! [`Function`]s whose top-level values and ops form the graph; JAX named scopes in
//! the locations ([`Location::path`]) give checkpoint names
//! ([`Function::scope_outputs`], as a tree: [`Function::scope_tree`]); [`emit_slices`] writes the ops between cut points
//! as standalone functions; [`promote_to_f64`] rewrites such a module to f64.

#![warn(missing_docs)]

mod attr;
mod build;
mod cursor;
pub mod error;
mod func_syntax;
mod graph;
pub mod ir;
pub mod loc_brief;
pub mod location;
pub mod nesting;
pub mod parameters;
mod parse;
pub mod points;
mod pretty;
pub mod promote;
mod promote_params;
pub mod slice;
pub mod split;
mod syntax;
pub mod types;

pub use error::MlirError;
pub use ir::{Def, Function, Module, Op, Value, ValueId};
pub use loc_brief::{Frame, LocBrief};
pub use location::Location;
pub use nesting::check_nesting;
pub use parameters::{functions_reading, parameter_globals, ParameterGlobal};
pub use parse::parse;
pub use points::{yaml_point, ScopePoint};
pub use promote::promote_to_f64;
pub use slice::{emit_slices, SliceArg, SliceInfo, SliceRequest};
pub use split::{split_module, SplitModule};
pub use types::Type;
