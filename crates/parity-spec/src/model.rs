//! The validated spec the runner consumes: plain structs, no serde, no YAML.

use parity_compare::Criterion;
use parity_tensor::DType;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// A 1-based line and column in the spec file, kept so the runner can point at a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

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
    pub weight_transforms: Vec<crate::transform::WeightTransform>,
    /// `checkpoints:`: oracle tensor -> point, for `parity bisect`'s checkpoints.
    pub checkpoints: Vec<crate::transform::CheckpointMap>,
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
    pub tokens: Option<crate::tokens::TokensSpec>,
    /// The `fuzz:` section (`parity fuzz`), when the spec has one.
    pub fuzz: Option<crate::fuzz::FuzzSpec>,
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

/// One case: a name and the variables templated into stage strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Case name; `{case}` in templates.
    pub name: String,
    /// Variables; `{var}` in templates. YAML scalars are kept as their text.
    pub vars: BTreeMap<String, String>,
}

/// One stage: a function of a module, its inputs and its checked outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Unique stage name.
    pub name: String,
    /// Module name (template).
    pub module: String,
    /// Function name in the module (template). For a `slice:` stage, the
    /// generated slice function, [`SliceSpec::entry_name`] of the stage and
    /// the sliced function (filled in per case by `Spec::instantiate`).
    pub function: String,
    /// `slice:` instead of `function:`: the stage is a cut of a larger function.
    pub slice: Option<SliceSpec>,
    /// Arguments in call order. Empty for a `bind:` stage until the runner
    /// binds them by the function's argument names ([`crate::bind_args`]).
    pub args: Vec<Arg>,
    /// `bind:` instead of `args:`: arguments bound by their MLIR names.
    pub bind: Option<crate::bind::Bind>,
    /// Outputs in the order the function returns them.
    pub outputs: Vec<OutputSpec>,
    /// Where the stage starts in the spec file.
    pub location: Location,
    /// Where its parts are, for messages about a specific argument or output.
    pub locations: StageLocations,
}

/// Positions of a stage's parts (parallel to `Stage::args` / `Stage::outputs`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StageLocations {
    /// The `module` value.
    pub module: Location,
    /// The `function` value (for a slice stage, the `slice.function` value).
    pub function: Location,
    /// Each `slice.from` point (empty for a `function:` stage).
    pub slice_from: Vec<Location>,
    /// Each `slice.to` point (empty for a `function:` stage).
    pub slice_to: Vec<Location>,
    /// Each argument.
    pub args: Vec<Location>,
    /// Each output.
    pub outputs: Vec<Location>,
}

/// A stage cut out of a larger function between named points (`slice:`).
///
/// The slice's arguments are the values crossing into the cut: the `from`
/// points in order, then every argument of `function` the cut still needs,
/// in `function`'s argument order; the stage's `args` feed them in that order.
/// Its results are the `to` points in order, matched to the stage's `outputs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    /// The function to cut (template).
    pub function: String,
    /// Where the cut starts (templates; may be empty): SSA names as printed in
    /// the module's normalised generic form (`%12`, `%5#1`, `%arg3`), named-scope
    /// paths (`conformer_0/attention`) or their `_` form (`conformer_0_attention`).
    pub from: Vec<String>,
    /// The values the slice returns (templates, same forms as `from`; not empty).
    pub to: Vec<String>,
}

impl SliceSpec {
    /// The name of the generated function for `stage` cutting `function`:
    /// `<stage>__<function>` with every character outside `[A-Za-z0-9_]` replaced by `_`.
    pub fn entry_name(stage: &str, function: &str) -> String {
        format!("{stage}__{function}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// One argument of a stage call.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor from the oracle store, by name (template).
    Oracle(String),
    /// A tensor from the weight files, by name (template).
    Weight(String),
    /// An output of another stage: its production value in chained mode, its
    /// oracle tensor in isolated mode.
    Stage {
        /// The upstream stage.
        stage: String,
        /// The upstream output (filled in when the YAML names only a single-output stage).
        output: String,
    },
    /// A constant tensor written in the spec; `values.len()` equals the shape's element count.
    Literal {
        /// Element type.
        dtype: DType,
        /// Shape (`[]` for a scalar).
        shape: Vec<usize>,
        /// Row-major values, already broadcast from `value:`.
        values: Vec<f64>,
    },
}

/// One output of a stage and how to check it.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Output name, unique within the stage.
    pub name: String,
    /// Oracle tensor to compare against (template).
    pub oracle: String,
    /// Optional f64 ground truth tensor (template), for `vs_f64`.
    pub truth: Option<String>,
    /// Optional mask selecting which elements are compared.
    pub mask: Option<MaskSpec>,
    /// Optional tolerance replacing the per-dtype default.
    pub tolerance: Option<Vec<Criterion>>,
    /// Dtype in which ULP distances are measured (default: the output's dtype).
    pub ulp_dtype: Option<DType>,
    /// `equal_nan: true`: NaN in both tensors at the same place counts as
    /// equal; by default it fails every criterion (NaN never equals NaN).
    pub equal_nan: bool,
    /// `allow_empty: true`: a comparison of zero elements (everything masked,
    /// or an empty tensor) passes; by default it fails.
    pub allow_empty: bool,
}

/// A mask over some axes of an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskSpec {
    /// Where the mask tensor comes from.
    pub source: MaskSource,
    /// Output axes the mask's dimensions map to, in order (no repeats).
    pub axes: Vec<usize>,
    /// The mask value that means "padded, do not compare"; default true.
    pub padded: bool,
    /// Also require the padded elements of the output to be zero; default false.
    pub assert_zero: bool,
}

/// The tensor a mask is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskSource {
    /// An oracle tensor, by name (template).
    Oracle(String),
    /// The stage argument with this 0-based index.
    Arg(usize),
}

impl Stage {
    /// Names of the stages this one takes inputs from, without repeats, in argument order.
    pub fn dependencies(&self) -> Vec<&str> {
        let mut deps: Vec<&str> = Vec::new();
        let bound = self
            .bind
            .iter()
            .flat_map(|b| b.rules.iter().map(|r| &r.source));
        for arg in self.args.iter().chain(bound) {
            if let Arg::Stage { stage, .. } = arg {
                if !deps.contains(&stage.as_str()) {
                    deps.push(stage);
                }
            }
        }
        deps
    }
}
