//! The validated spec the runner consumes: plain structs, no serde, no YAML.
//! This is the whole spec and its subject; the stages and their parts live
//! below it (`stage_model.rs`, re-exported here), as do the sections it holds.

use crate::fuzz::FuzzSpec;
use crate::tokens::TokensSpec;
use crate::transform::{CheckpointMap, WeightTransform};
use parity_compare::Criterion;
use parity_tensor::DType;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// A stage's parts sit below the spec and its sections, which hold stages.
pub use crate::stage_model::{
    Arg, Case, Location, MaskSource, MaskSpec, OutputSpec, SliceSpec, Stage, StageLocations,
};

/// A parsed and validated stages.yaml.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The spec file (as given to `load` / `parse_str`).
    pub path: PathBuf,
    /// The directory relative paths in the spec are resolved against.
    pub base_dir: PathBuf,
    /// Schema version; always 1.
    pub version: u32,
    /// What is being tested: the IREE modules and how to compile and run them.
    pub subject: Subject,
    /// Weight files (safetensors / npz), resolved against `base_dir`, searched in order.
    pub weights: Vec<PathBuf>,
    /// `weight_transforms:`: rename, transpose, cast applied to weights at load.
    pub weight_transforms: Vec<WeightTransform>,
    /// `checkpoints:`: oracle tensor -> point, for `parity bisect`'s checkpoints.
    pub checkpoints: Vec<CheckpointMap>,
    /// The oracle store directory (holding `manifest.json`), resolved against `base_dir`.
    pub oracle: PathBuf,
    /// The cases; a spec without `cases:` has one case named `default` with no variables.
    pub cases: Vec<Case>,
    /// Per-dtype default tolerances that override the built-in table.
    pub tolerances: HashMap<DType, Vec<Criterion>>,
    /// The stages in file order; run them in [`Spec::topo_order`](crate::Spec::topo_order).
    /// Empty only in a token-only spec (one with `tokens:` and no `stages:`).
    pub stages: Vec<Stage>,
    /// The `tokens:` section (`parity tokens`), when the spec has one.
    pub tokens: Option<TokensSpec>,
    /// The `fuzz:` section (`parity fuzz`), when the spec has one.
    pub fuzz: Option<FuzzSpec>,
    /// `baseline:`: the ratchet's noise band and metrics for `parity report --baseline`.
    pub baseline: BaselineSpec,
}

/// The `baseline:` section: how `parity report RUN --baseline BASE` judges
/// growth. Absent keys are `None` (parity's defaults apply).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BaselineSpec {
    /// Relative growth allowed, as a fraction of the baseline value (`band: 0.1` = 10%).
    pub band: Option<f64>,
    /// Absolute growth allowed on top (`band_abs`).
    pub band_abs: Option<f64>,
    /// The metrics watched, by name (one of [`BASELINE_METRICS`]).
    pub metrics: Option<Vec<String>>,
}

/// The metric names `baseline.metrics` accepts.
pub const BASELINE_METRICS: &[&str] = &[
    "max_abs",
    "mean_abs",
    "rms",
    "rel_l2",
    "cosine",
    "max_ulp",
    "ulp_p99",
    "mismatches",
];

/// The subject under test: named IREE modules plus compile and runtime settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    /// Module name -> source.
    pub modules: BTreeMap<String, Module>,
    /// The production targets, in the order the spec names them (never
    /// empty; the first is the default). `subject.targets:`, or the one
    /// target `default` made of the older `target_backend` / `driver` pair.
    pub targets: Vec<TargetSpec>,
    /// Extra `iree-compile` flags for every MLIR module, on every target.
    pub flags: Vec<String>,
    /// IREE parameter files by scope (`subject.parameters`), in the order
    /// the spec names them; paths resolved against the spec's directory.
    pub parameters: Vec<ParameterScope>,
}

/// One scope of `subject.parameters`: the files whose keys a module's
/// `#flow.parameter.named<"scope"::"key">` globals read at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterScope {
    /// The scope name (may be empty: IREE's anonymous scope).
    pub scope: String,
    /// Its `.irpa` / `.safetensors` / `.gguf` files, in order (a key in two
    /// of them is read from the first, as IREE looks keys up).
    pub files: Vec<PathBuf>,
    /// Where the scope is declared.
    pub location: Location,
}

impl Subject {
    /// The target named `name`, or the first (the default) when None.
    pub fn target(&self, name: Option<&str>) -> Option<&TargetSpec> {
        match name {
            None => self.targets.first(),
            Some(name) => self.targets.iter().find(|t| t.name == name),
        }
    }
}

/// One production target as the spec names it: how modules compile for it
/// and the runtime device they run on.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetSpec {
    /// The target's name (`subject.targets` key; `default` for the older pair).
    pub name: String,
    /// `--iree-hal-target-backends` value (`llvm-cpu`, `vulkan-spirv`, `cuda`, ...).
    pub backend: String,
    /// IREE runtime device: a HAL driver name, optionally with a device
    /// (`local-task`, `vulkan`, `cuda`, `cuda://1`).
    pub device: String,
    /// This target's own compile flags; they go after `Subject::flags`.
    pub flags: Vec<String>,
    /// `modules:`: prebuilt modules for this target only, by subject module
    /// name; on this target they replace the subject's module of that name.
    pub modules: BTreeMap<String, Module>,
    /// `tolerances:`: output name -> the criteria that replace that
    /// output's tolerance on this target only (a backend's measured noise).
    pub tolerances: BTreeMap<String, TargetTolerance>,
    /// Where the target is declared.
    pub location: Location,
}

/// A target's tolerance for one output (`targets.NAME.tolerances.OUTPUT`).
#[derive(Clone, Debug, PartialEq)]
pub struct TargetTolerance {
    /// The criteria, as a stage output's `tolerance:` gives them.
    pub criteria: Vec<Criterion>,
    /// Where the output name is given.
    pub location: Location,
}

/// One module of the subject.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// Where the module comes from.
    pub source: ModuleSource,
    /// The module's own compile flags; they go after `Subject::flags` on the command line.
    pub flags: Vec<String>,
    /// Where the module is declared.
    pub location: Location,
}

/// Where a module's code comes from; paths are resolved against the spec's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// MLIR (e.g. StableHLO) text to compile.
    Mlir(PathBuf),
    /// A prebuilt IREE VM flatbuffer, loaded as is.
    Vmfb(PathBuf),
}
