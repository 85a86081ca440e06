//! Per-function artifacts: an MLIR module compiled as one vmfb per public
//! function, so an edit to one function recompiles that function alone.
//!
//! The module is normalised by the IREE compiler (generic form, calls
//! inlined, unused private functions dropped: [`IreeCompiler::normalize`]),
//! split into one module per public function with everything it references
//! ([`parity_mlir::split_module`]), and each piece is looked up in the
//! artifact cache by its own text, flags and compiler; the missing ones are
//! compiled in parallel child processes ([`super::compile_pool`]). A split
//! index keyed by the whole module lets an unchanged module find all of its
//! artifacts without normalising it again.
//!
//! The whole-module compile stays: `PARITY_ARTIFACTS=module` asks for it, and
//! a module that cannot be split (the compiler cannot normalise it, or parity
//! cannot read the normalised form) falls back to it with a warning.

use super::compile_pool::{self, Job};
use parity_iree::{ArtifactCache, CompileOptions, IreeCompiler, SplitIndex};
use std::collections::{BTreeMap, BTreeSet};

/// Env var choosing the artifact granularity: `function` (default) or `module`.
pub const ARTIFACTS_ENV: &str = "PARITY_ARTIFACTS";

/// What a module compiled to.
#[derive(Clone, Debug)]
pub enum Artifacts {
    /// One vmfb for the whole module.
    Whole(Vec<u8>),
    /// One vmfb per public function, or why that function did not compile.
    PerFunction(BTreeMap<String, Result<Vec<u8>, String>>),
}

/// Whether modules are compiled per function (the default) or whole.
pub fn per_function_enabled() -> bool {
    !std::env::var(ARTIFACTS_ENV).is_ok_and(|v| v.trim() == "module")
}

/// One MLIR module to compile per function.
pub struct ModuleJob<'a> {
    /// The module's name in the spec.
    pub name: &'a str,
    /// The file, for messages and source names.
    pub source_name: String,
    /// The module's bytes as read.
    pub mlir: &'a [u8],
    /// Flags and backend.
    pub options: CompileOptions,
    /// The public functions stages use; None: all of them.
    pub wanted: Option<&'a BTreeSet<String>>,
}

/// The per-function artifacts of a module, with the warnings to show. Err
/// (a warning) when the module cannot be split: the caller compiles it whole.
pub fn compile_per_function(
    compiler: &IreeCompiler,
    cache: &ArtifactCache,
    job: &ModuleJob<'_>,
    warnings: &mut Vec<String>,
) -> Result<Artifacts, String> {
    let index_key = cache
        .index_key(compiler, job.mlir, &job.options)
        .map_err(|e| e.to_string())?;
    if let Some(index) = cache.read_index(&index_key) {
        if let Some(found) = all_cached(cache, &index, job.wanted, warnings) {
            return Ok(Artifacts::PerFunction(found));
        }
    }
    let normal = compiler
        .normalize(&job.source_name, job.mlir)
        .map_err(|e| format!("module `{}`: {e}", job.name))?;
    let split = parity_mlir::split_module(&normal).map_err(|e| {
        format!(
            "module `{}`: {} (normalised by the IREE compiler): {e}",
            job.name, job.source_name
        )
    })?;
    let mut index = SplitIndex::new();
    let mut out = BTreeMap::new();
    let mut jobs = Vec::new();
    let mut pending = Vec::new();
    for function in split.public_functions() {
        let Some(text) = split.module_for(function) else {
            continue;
        };
        let parity_iree::cache::Lookup {
            key,
            found,
            warnings: mut w,
        } = cache
            .lookup(compiler, text.as_bytes(), &job.options)
            .map_err(|e| e.to_string())?;
        warnings.append(&mut w);
        index.insert(function.to_string(), key.clone());
        if job.wanted.is_some_and(|w| !w.contains(function)) {
            continue;
        }
        match found {
            Some(vmfb) => {
                out.insert(function.to_string(), Ok(vmfb));
            }
            None => {
                pending.push((function.to_string(), key));
                jobs.push(Job {
                    source_name: format!("{}, function @{function}", job.source_name),
                    mlir: text,
                    options: job.options.clone(),
                });
            }
        }
    }
    let results = compile_pool::compile_jobs(compiler, &jobs);
    for (((function, key), job_), result) in pending.into_iter().zip(&jobs).zip(results) {
        let result = result.inspect(|vmfb| {
            let stored = cache.insert(
                compiler,
                &key,
                &job_.source_name,
                job_.mlir.as_bytes(),
                &job_.options,
                vmfb,
            );
            warnings.extend(stored);
        });
        out.insert(function, result);
    }
    if let Err(e) = cache.write_index(&index_key, &job.source_name, &index) {
        warnings.push(format!("split index not written: {e}"));
    }
    Ok(Artifacts::PerFunction(out))
}

/// Every wanted function's artifact from the cache, or None when one is missing.
fn all_cached(
    cache: &ArtifactCache,
    index: &SplitIndex,
    wanted: Option<&BTreeSet<String>>,
    warnings: &mut Vec<String>,
) -> Option<BTreeMap<String, Result<Vec<u8>, String>>> {
    let mut found = BTreeMap::new();
    for (function, key) in index {
        if wanted.is_some_and(|w| !w.contains(function)) {
            continue;
        }
        let (vmfb, mut w) = cache.read_key(key);
        warnings.append(&mut w);
        found.insert(function.clone(), Ok(vmfb?));
    }
    Some(found)
}
