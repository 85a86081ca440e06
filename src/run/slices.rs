//! `slice:` stages: each is cut out of a larger function of its module.
//!
//! For every module that slice stages cut (over the selected cases and
//! stages), the module's MLIR is normalised by the IREE compiler (generic
//! form, calls inlined), parsed by `parity_mlir`, the stages' points are
//! resolved, and one extra module of generated functions is emitted: one
//! function per distinct (function, from, to), named
//! `<stage>__<function>` (see [`SliceSpec::entry_name`]). The runner compiles
//! it with its parent's flags, registers it as `<module>#slices`, and points
//! the stages at it. A stage whose slice cannot be made errors on its own;
//! the other stages run.

use super::module_error::CompilerUnavailable;
use parity_iree::IreeCompiler;
use parity_mlir::SliceInfo;
use parity_record::{ErrorKind, ErrorRecord};
use parity_spec::{SliceSpec, Spec, Stage};
use std::collections::{BTreeMap, HashMap};

mod cut;
use cut::plan_module;

/// (case, stage).
pub type StageKey = (String, String);

/// One generated module: the slices of one function of one spec module.
#[derive(Clone, Debug)]
pub struct SliceModule {
    /// The name stages call it by: `<parent>#slices`, or
    /// `<parent>#slices@<function>` when the parent's slice stages cut several functions.
    pub name: String,
    /// The spec module it is cut from.
    pub parent: String,
    /// The function it is cut from.
    pub function: String,
    /// The generated MLIR.
    pub mlir: String,
    /// What each generated function takes and returns.
    pub infos: Vec<SliceInfo>,
}

/// Everything slicing decided for a run.
#[derive(Clone, Debug, Default)]
pub struct SlicePlan {
    /// The generated modules, to compile and load beside the spec's own.
    pub modules: Vec<SliceModule>,
    /// Where each slice stage that can run now points: (module, function).
    pub targets: HashMap<StageKey, (String, String)>,
    /// Why each slice stage that cannot run cannot.
    pub errors: HashMap<StageKey, ErrorRecord>,
    /// Problems with a whole module (it cannot be read, normalised or parsed).
    pub run_errors: Vec<ErrorRecord>,
    /// The operations each slice stage runs, and each `function:` stage whose
    /// function is also sliced: what first-divergence selection compares.
    pub extents: super::divergence::Extents,
}

impl SlicePlan {
    /// Points every instantiated slice stage at its generated function.
    pub fn retarget(&self, cases: &mut [(&str, Vec<Stage>)]) {
        for (case, stages) in cases.iter_mut() {
            for stage in stages.iter_mut() {
                if let Some((module, function)) =
                    self.targets.get(&(case.to_string(), stage.name.clone()))
                {
                    stage.module = module.clone();
                    stage.function = function.clone();
                }
            }
        }
    }
}

/// One slice stage of one case, waiting for its module.
struct Pending<'a> {
    key: StageKey,
    stage: &'a Stage,
    slice: &'a SliceSpec,
}

/// A `function:` stage of a module that slice stages cut: if its function is
/// one of the cut ones, it contains them (see `divergence`).
struct Whole<'a> {
    key: StageKey,
    function: &'a str,
}

/// Plans the slices of the stages at `selected` (spec indices) in `cases`
/// (instantiated per case). `compiler` is the loaded IREE compiler or why it is missing.
pub fn plan(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    cases: &[(&str, Vec<Stage>)],
    selected: &[usize],
) -> SlicePlan {
    let mut plan = SlicePlan::default();
    // Parent module -> its slice stages, in case order then execution order.
    let mut by_module: BTreeMap<&str, Vec<Pending<'_>>> = BTreeMap::new();
    let mut wholes: BTreeMap<&str, Vec<Whole<'_>>> = BTreeMap::new();
    for (case, stages) in cases {
        for &i in selected {
            let Some(stage) = stages.get(i) else { continue };
            if stage.slice.is_none() {
                wholes
                    .entry(stage.module.as_str())
                    .or_default()
                    .push(Whole {
                        key: (case.to_string(), stage.name.clone()),
                        function: stage.function.as_str(),
                    });
            }
            if let Some(slice) = &stage.slice {
                by_module
                    .entry(stage.module.as_str())
                    .or_default()
                    .push(Pending {
                        key: (case.to_string(), stage.name.clone()),
                        stage,
                        slice,
                    });
            }
        }
    }
    for (module, pending) in by_module {
        let wholes = wholes.remove(module).unwrap_or_default();
        plan_module(spec, compiler, module, &pending, &wholes, &mut plan);
    }
    plan
}

/// Why a module's MLIR cannot be read for slicing: the file (input), IREE
/// rejecting it (execution, like a failed compile), or MLIR that IREE
/// accepts but parity cannot read (input, naming the line).
#[derive(Debug, thiserror::Error)]
pub enum ReadModuleError {
    /// The file cannot be read (or decompressed).
    #[error("cannot read {source_name}: {source}")]
    Read {
        /// The MLIR file.
        source_name: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The text nests deeper than the compiler's parser can recurse
    /// (checked before the compiler sees it, which would overflow the stack).
    #[error("{source_name}: {source}")]
    TooDeep {
        /// The MLIR file.
        source_name: String,
        /// Where the bound is passed.
        #[source]
        source: parity_mlir::MlirError,
    },
    /// The IREE compiler cannot parse or normalise it.
    #[error(transparent)]
    Normalise(#[from] parity_iree::IreeError),
    /// The normalised text is MLIR parity cannot read.
    #[error("{source_name} (normalised by the IREE compiler): {source}")]
    Parse {
        /// The MLIR file.
        source_name: String,
        /// Where and why (line and column of the normalised text).
        #[source]
        source: parity_mlir::MlirError,
    },
}

impl ReadModuleError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReadModuleError::Normalise(_) => ErrorKind::Execution,
            ReadModuleError::Read { .. }
            | ReadModuleError::TooDeep { .. }
            | ReadModuleError::Parse { .. } => ErrorKind::Input,
        }
    }

    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        ErrorRecord {
            kind: self.kind(),
            message: self.to_string(),
            location: None,
        }
    }
}

/// Reads an MLIR module, normalises it with the IREE compiler (generic form,
/// calls inlined) and parses it; returns it with its source name.
pub fn read_normalised(
    compiler: &IreeCompiler,
    path: &std::path::Path,
) -> Result<(parity_mlir::Module, String), ReadModuleError> {
    let source_name = path.display().to_string();
    let bytes = match parity_tensor::read_module_bytes(path) {
        Ok(b) => b,
        Err(source) => {
            return Err(ReadModuleError::Read {
                source_name,
                source,
            })
        }
    };
    if let Err(source) = parity_mlir::check_nesting(&bytes) {
        return Err(ReadModuleError::TooDeep {
            source_name,
            source,
        });
    }
    let normal = compiler.normalize(&source_name, &bytes)?;
    match parity_mlir::parse(&normal) {
        Ok(module) => Ok((module, source_name)),
        Err(source) => Err(ReadModuleError::Parse {
            source_name,
            source,
        }),
    }
}
