//! parity-spec: parses and validates `stages.yaml` into a [`Spec`]; nothing else
//! in parity reads YAML. The schema is documented in `docs/stages-schema.md`.
//!
//! Every error carries `file:line:col` and, where it applies, the stage name.

#![warn(missing_docs)]

mod arg_parse;
mod bind;
mod bind_parse;
mod case_parse;
mod error;
mod fuzz;
mod fuzz_parse;
mod graph;
mod instantiate;
mod model;
mod parse;
mod reader;
mod serving;
mod serving_parse;
#[cfg(test)]
mod serving_tests;
mod stage;
mod stage_model;
mod step_spec;
mod target_parse;
mod template;
mod tokens;
mod tokens_parse;
mod tolerance;
mod transform;
mod write;
mod yaml;

pub use arg_parse::MAX_LITERAL_ELEMENTS;
pub use bind::{
    bind_args, bind_args_in, Bind, BindError, BindRule, BindTarget, NamePattern, SliceScope,
};
pub use error::{Position, Scope, SpecError, SpecErrorKind};
pub use fuzz::{
    FuzzArg, FuzzOutput, FuzzShape, FuzzSpec, LengthsContract, MaskContract, MaskLayout,
    MelContract, Tolerance as FuzzTolerance, ValidRegion, INVARIANTS as FUZZ_INVARIANTS,
};
pub use fuzz_parse::MAX_FUZZ_CASES;
pub use model::{
    Arg, BaselineSpec, Case, Location, MaskSource, MaskSpec, Module, ModuleSource, OutputSpec,
    ParameterScope, SliceSpec, Spec, Stage, StageLocations, Subject, TargetSpec, TargetTolerance,
    BASELINE_METRICS,
};
pub use parity_compare::Criterion;
pub use parity_tensor::DType;
pub use parse::{DEFAULT_DRIVER, DEFAULT_TARGET, DEFAULT_TARGET_BACKEND};
pub use serving::{
    Cancel, PrebuiltServing, Request, RequestInput, Scenario, ScenarioSource, SERVING_CONTEXT,
};
pub use tokens::{
    LogitsTolerance, TokenArg, TokenBind, TokenBindInput, TokenCall, TokenOracle, TokenVerdictSpec,
    TokensSpec, STEP_VARS,
};
pub use transform::{CheckpointMap, WeightTransform};
pub use write::quote as yaml_quote;

use std::io::Read;
use std::path::Path;

/// Largest spec file accepted, so a wrong path (a weights file, /dev/zero) fails fast.
pub const MAX_SPEC_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a spec-like YAML file's text: a regular file only (a FIFO or device
/// would block or never end), at most [`MAX_SPEC_BYTES`], UTF-8; errors name the file.
pub(crate) fn read_text(path: &Path) -> Result<String, SpecError> {
    let io = |source| -> SpecError {
        SpecErrorKind::Io {
            path: path.to_path_buf(),
            source,
        }
        .into()
    };
    let file = parity_tensor::open_regular(path).map_err(io)?;
    let mut bytes = Vec::new();
    // `take` bounds the read even when metadata lies (pipes, /proc files).
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(SpecErrorKind::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit: MAX_SPEC_BYTES,
        }
        .into());
    }
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 ({e})"),
        ))
    })
}

impl Spec {
    /// Reads, parses and validates the spec at `path`; relative paths in it
    /// resolve against its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Spec, SpecError> {
        let path = path.as_ref();
        let text = read_text(path)?;
        Spec::parse_str(&text, path)
    }

    /// Parses and validates spec text; `path` names the file in messages and
    /// its directory is the base for relative paths (module files must exist).
    pub fn parse_str(text: &str, path: impl AsRef<Path>) -> Result<Spec, SpecError> {
        let path = path.as_ref();
        if text.len() as u64 > MAX_SPEC_BYTES {
            return Err(SpecErrorKind::TooLarge {
                path: path.to_path_buf(),
                size: text.len() as u64,
                limit: MAX_SPEC_BYTES,
            }
            .into());
        }
        let mut spec = parse::parse_spec(text, path)?;
        graph::resolve(path, &mut spec.stages)?;
        // Instantiating every case up front turns unknown variables and
        // undeclared templated modules into load-time errors.
        for case in &spec.cases {
            spec.instantiate(case)?;
        }
        tokens_parse::validate(&spec)?;
        fuzz_parse::validate(&spec)?;
        Ok(spec)
    }

    /// The stages with `{case}` and `{var}` substituted for `case`, in file order.
    pub fn instantiate(&self, case: &Case) -> Result<Vec<Stage>, SpecError> {
        instantiate::instantiate(self, case)
    }

    /// Stage indices in execution order: dependencies first, file order among
    /// independent stages.
    pub fn topo_order(&self) -> Vec<usize> {
        graph::topo_order(&self.stages)
    }

    /// The stage with this name.
    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The weight transform that applies to weight `name` (the first
    /// `weight_transforms` entry matching it) and the name to read it under.
    pub fn weight_transform(&self, name: &str) -> Option<(&WeightTransform, String)> {
        self.weight_transforms
            .iter()
            .find_map(|t| t.source_for(name).map(|source| (t, source)))
    }

    /// The case with this name.
    pub fn case(&self, name: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.name == name)
    }
}
