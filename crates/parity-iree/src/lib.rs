//! In-process IREE compiler and runtime for parity, with a compiled-artifact cache.
//!
//! This crate is the only place parity touches IREE: [`IreeCompiler`] turns
//! StableHLO MLIR into a vmfb (through eerie and `libIREECompiler.so`),
//! [`ArtifactCache`] keeps compiled vmfbs keyed by everything that affects them,
//! and [`IreeRuntime`] / [`LoadedModule`] run them on parity [`parity_tensor::Tensor`]s.
//! Runtime objects are `!Send`: one runtime per thread.
//!
//! Useful flags (pass them in [`CompileOptions::flags`]):
//! - f64 end to end (the f64 shadow run): `--iree-input-demote-f64-to-f32=false`
//!   plus `--iree-llvmcpu-link-embedded=false` so libm functions (tanh, sin, ...)
//!   link against the system libm, and `--iree-opt-const-eval=false` (the
//!   const-eval JIT links with the embedded linker, without libm).
//! - `--iree-llvmcpu-target-cpu=host` is faster but ties the vmfb to this CPU; the
//!   cache key includes the flags, not the machine, so keep such caches per machine.

#![warn(missing_docs)]

pub mod cache;
mod compile;
pub mod compiler;
mod convert;
pub mod diagnostics;
pub mod discover;
pub mod error;
pub mod phased;
pub mod resident;
pub mod runtime;
pub mod signature;
pub mod split_index;
pub mod traced;
mod traced_cache;
pub mod vmfb;

pub use cache::{ArtifactCache, CacheOutcome, Cached, CACHE_DIR_ENV};
pub use compiler::{CompileOptions, IreeCompiler, COMPILER_LIB_ENV};
pub use error::IreeError;
/// IREE parameter files (`subject.parameters`), mapped and indexed by IREE.
pub use parity_iree_io::{Entry as ParameterEntry, ParameterError, Parameters};
pub use phased::{Substitution, SUBSTITUTE_SOURCE_FLAG};
pub use resident::UploadStats;
pub use runtime::{
    available_devices, DeviceFound, IreeRuntime, LoadedModule, DEFAULT_DRIVER, DRIVERS_BUILT_IN,
};
pub use signature::{parse_declaration, Signature, ValueType};
pub use split_index::{FunctionEntry, SplitIndex};
pub use traced::{TracedArtifact, TracedModule, TRACE_PASS};
