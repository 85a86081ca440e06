//! In-process IREE compiler and runtime for parity, with a compiled-artifact cache.
//!
//! This crate is the only place parity touches IREE: [`IreeCompiler`] turns
//! StableHLO MLIR into a vmfb (through eerie and `libIREECompiler.so`),
//! [`ArtifactCache`] keeps compiled vmfbs keyed by everything that affects them,
//! and [`IreeRuntime`] / [`LoadedModule`] run them on parity [`parity_tensor::Tensor`]s.
//! Runtime objects are `!Send`: one runtime per thread.

pub mod cache;
pub mod compiler;
mod convert;
pub mod error;
pub mod runtime;
pub mod vmfb;

pub use cache::{ArtifactCache, CacheOutcome, CACHE_DIR_ENV};
pub use compiler::{CompileOptions, IreeCompiler, COMPILER_LIB_ENV};
pub use error::IreeError;
pub use runtime::{IreeRuntime, LoadedModule, DEFAULT_DRIVER};
