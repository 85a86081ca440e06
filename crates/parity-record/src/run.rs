//! The run record (`parity.run-record/2`, docs/run-record.md): everything
//! `parity check` measured.

use crate::bisect::Localisation;
use crate::common::{ErrorRecord, Mode, Status};
use crate::criterion::CriterionRecord;
use crate::exit::ExitCode;
use serde::{Deserialize, Serialize};

/// The schema identifier written at the top of every run record.
pub const RUN_RECORD_SCHEMA: &str = "parity.run-record/2";

/// The whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`RUN_RECORD_SCHEMA`].
    pub schema: String,
    /// pass when every output passed, fail on a parity failure, error when anything errored.
    pub status: Status,
    /// The spec file this run executed.
    pub spec: String,
    /// parity's version.
    pub parity_version: String,
    /// The IREE compiler revision, when the compiler was loaded.
    pub compiler_revision: Option<String>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started: String,
    /// Total wall-clock seconds.
    #[serde(with = "crate::float")]
    pub elapsed_s: f64,
    /// The first stage in dependency order whose isolated check failed.
    pub first_divergence: Option<Divergence>,
    /// Per case: the first stage in chained mode whose accumulated error crossed its tolerance.
    pub chained_divergence: Vec<Divergence>,
    /// `parity check --bisect`: where the first divergence was localised, an
    /// operation or a region (as in the bisect record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergent_op: Option<Localisation>,
    /// Where the inputs came from: modules with their cache keys, the oracle's provenance.
    #[serde(default)]
    pub provenance: Provenance,
    /// Problems not tied to one stage (spec, oracle store, weights, compile of a module).
    pub errors: Vec<ErrorRecord>,
    /// Problems that did not change the result, e.g. an artifact cache that
    /// could not be written (the run used the compiled module from memory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// One entry per (stage, case, mode), in execution order.
    pub stages: Vec<StageRecord>,
    /// `parity check --shard i/n`: which shard this record is, and the whole
    /// run's plan for `parity report --merge`; absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::partition::ShardRecord>,
    /// The targets the run executed on, in the order given (`--target a,b`);
    /// one entry for a single-target run, empty in records older than targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetRecord>,
    /// With two or more targets: every output compared across the targets
    /// and labelled with which side is off (derived by `triangulation::triangulate`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triangulation: Vec<crate::triangulation_row::TriangulationRow>,
}

/// One target of a run: a name from the spec's `subject.targets`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetRecord {
    /// The target's name in the spec (`default` for the older backend/driver pair).
    pub name: String,
    /// The compiler backend (`llvm-cpu`, `vulkan-spirv`, `cuda`, ...).
    pub backend: String,
    /// The runtime device (`local-task`, `vulkan`, `cuda`, ...).
    pub device: String,
    /// The target's own compile flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// Where a divergence was found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// Stage name.
    pub stage: String,
    /// Case name.
    pub case: String,
    /// The first failing output of that stage.
    pub output: String,
    /// The mode in which it failed.
    pub mode: Mode,
    /// The target it failed on, in a run over several targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// What the run's results depend on besides the spec and parity's version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Every module the run compiled or read, in name order.
    #[serde(default)]
    pub modules: Vec<ModuleProvenance>,
    /// The oracle store, when it could be opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleProvenance>,
    /// Every weight the run's stages read through a `weight_transforms`
    /// entry, in name order: which weight, which transform.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weight_transforms: Vec<WeightTransformRecord>,
    /// Per target: what the run uploaded to the device, weights (resident:
    /// once per run and target, then reused) and other inputs (every call) apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uploads: Vec<UploadRecord>,
}

impl UploadRecord {
    /// The counts of two runs (shards) of the same target added up.
    pub fn sum(&self, o: &UploadRecord) -> UploadRecord {
        UploadRecord {
            target: self.target.clone(),
            runtimes: self.runtimes + o.runtimes,
            weight_uploads: self.weight_uploads + o.weight_uploads,
            weight_bytes: self.weight_bytes + o.weight_bytes,
            weight_reuses: self.weight_reuses + o.weight_reuses,
            weight_bytes_saved: self.weight_bytes_saved + o.weight_bytes_saved,
            other_uploads: self.other_uploads + o.other_uploads,
            other_bytes: self.other_bytes + o.other_bytes,
            parameter_loads: self.parameter_loads + o.parameter_loads,
        }
    }
}

/// What one target's runtime uploaded during a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    /// The target.
    pub target: String,
    /// Runtimes the run created on it (one, shared by every mode's thread;
    /// records before the runtime was shared say one per mode).
    pub runtimes: u64,
    /// Weights uploaded (each once per run and target).
    pub weight_uploads: u64,
    /// Their bytes.
    pub weight_bytes: u64,
    /// Weight arguments served from a resident upload instead.
    pub weight_reuses: u64,
    /// The bytes those reuses did not move.
    pub weight_bytes_saved: u64,
    /// Other inputs uploaded (oracle tensors, upstream outputs, literals: every call).
    pub other_uploads: u64,
    /// Their bytes.
    pub other_bytes: u64,
    /// Module loads whose globals IREE read from the parameter files (each
    /// module loads once per run and target, and reads its parameters then).
    #[serde(default)]
    pub parameter_loads: u64,
}

/// A weight transformed at load (`weight_transforms:` in the spec).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightTransformRecord {
    /// The weight name the stages ask for.
    pub weight: String,
    /// The name read from the weight files (differs when renamed).
    pub source: String,
    /// The axis permutation applied, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transpose: Option<Vec<usize>>,
    /// The shape it was reshaped to after the transpose, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reshape: Option<Vec<usize>>,
    /// The dtype it was cast to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cast: Option<String>,
    /// `file:line:col` of the spec entry that applied.
    pub rule: String,
}

impl WeightTransformRecord {
    /// One line for reports: `` `w`: read as `hf.w`, transpose [1, 0], reshape to [16, 4, 4], cast to f32 ``.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.source != self.weight {
            parts.push(format!("read as `{}`", self.source));
        }
        if let Some(p) = &self.transpose {
            parts.push(format!("transpose {p:?}"));
        }
        if let Some(s) = &self.reshape {
            parts.push(format!("reshape to {s:?}"));
        }
        if let Some(c) = &self.cast {
            parts.push(format!("cast to {c}"));
        }
        format!("`{}`: {} ({})", self.weight, parts.join(", "), self.rule)
    }
}

/// One module of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleProvenance {
    /// The module's name in the spec (generated slice modules: `<parent>#slices`).
    pub name: String,
    /// Its source file (`.mlir` or `.vmfb`).
    pub source: String,
    /// The artifact cache key (hex sha256) it was compiled under; null for a vmfb.
    pub cache_key: Option<String>,
}

/// The oracle store of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OracleProvenance {
    /// The oracle directory (or manifest) the run read.
    pub path: String,
    /// The manifest's own `provenance` object, as written by the oracle's dumper.
    pub provenance: serde_json::Value,
}

impl Divergence {
    /// ` on target `vulkan`` in a run over several targets, else nothing.
    pub fn on_target(&self) -> String {
        self.target
            .as_deref()
            .map(|t| format!(" on target `{t}`"))
            .unwrap_or_default()
    }

    /// Whether this divergence is at `stage`'s output `output`.
    pub fn is_at(&self, stage: &StageRecord, output: &str) -> bool {
        self.stage == stage.name
            && self.case == stage.case
            && self.mode == stage.mode
            && self.output == output
            && self.target.as_ref().is_none_or(|t| *t == stage.target)
    }
}

impl StageRecord {
    /// The stage's name for a report row: `name @target` in a run over
    /// several targets (`multi`), else the name.
    pub fn display_name(&self, multi: bool) -> String {
        if multi && !self.target.is_empty() {
            format!("{} @{}", self.name, self.target)
        } else {
            self.name.clone()
        }
    }
}

/// One stage run in one case and mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// Stage name from the spec.
    pub name: String,
    /// The target it ran on (empty in records older than targets).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// Case name.
    pub case: String,
    /// Isolated or chained.
    pub mode: Mode,
    /// The module and function invoked.
    pub function: String,
    /// Stage status: the worst of its outputs, or error/skipped.
    pub status: Status,
    /// Set when status is error: the first error of the stage or its outputs.
    pub error: Option<ErrorRecord>,
    /// Set when status is skipped: why (an upstream stage errored, or was not selected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_because: Option<String>,
    /// Milliseconds spent invoking the function (excludes comparison).
    #[serde(with = "crate::float")]
    pub invoke_ms: f64,
    /// Per output, in the function's result order.
    pub outputs: Vec<OutputRecord>,
}

/// One compared output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputRecord {
    /// Output name from the spec.
    pub name: String,
    /// The oracle tensor it was compared against.
    pub oracle: String,
    /// pass or fail (error when the comparison itself could not run).
    pub status: Status,
    /// Production dtype.
    pub dtype: String,
    /// Production shape.
    pub shape: Vec<usize>,
    /// Set when the comparison could not run.
    pub error: Option<ErrorRecord>,
    /// The measured metrics (absent when the comparison errored).
    pub metrics: Option<OutputMetrics>,
    /// Every check made, with the observed value and the smallest passing threshold.
    pub criteria: Vec<CriterionRecord>,
    /// Failing outputs only: the error downsampled over the two main axes,
    /// for the HTML report's heatmap (see [`crate::error_map`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_map: Option<crate::error_map::ErrorMap>,
    /// In a run over several targets, on every target after the first: this
    /// output compared with the first target's, under the same criteria and mask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_target: Option<crate::triangulation_row::CrossTarget>,
}

/// Metrics of one comparison, as stored in the record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputMetrics {
    /// Unmasked elements compared.
    pub count: u64,
    /// Elements excluded by the mask.
    pub masked_out: u64,
    /// Largest |actual - expected|.
    #[serde(with = "crate::float")]
    pub max_abs: f64,
    /// Mean |actual - expected|.
    #[serde(with = "crate::float")]
    pub mean_abs: f64,
    /// Root mean square of the difference.
    #[serde(with = "crate::float")]
    pub rms: f64,
    /// ||actual - expected|| / ||expected||.
    #[serde(with = "crate::float")]
    pub rel_l2: f64,
    /// Cosine similarity.
    #[serde(with = "crate::float")]
    pub cosine: f64,
    /// Largest ULP distance in `ulp_dtype` (null when neither side is a float).
    pub max_ulp: Option<u64>,
    /// The dtype ULPs were counted in.
    pub ulp_dtype: Option<String>,
    /// Median ULP distance.
    pub ulp_p50: Option<u64>,
    /// 99th percentile ULP distance.
    pub ulp_p99: Option<u64>,
    /// Non-empty ULP histogram buckets: `[lo, hi, count]`.
    pub ulp_histogram: Vec<[u64; 3]>,
    /// allclose violations plus NaN/Inf mismatches, plus `nan_both` unless `equal_nan`.
    pub mismatches: u64,
    /// NaN present on one side only.
    pub nan_mismatch: u64,
    /// NaN on both sides at the same place (never equal unless `equal_nan`).
    #[serde(default)]
    pub nan_both: u64,
    /// Whether the output's spec accepted NaN against NaN (`equal_nan: true`).
    #[serde(default)]
    pub equal_nan: bool,
    /// Inf present on one side only, or of opposite sign.
    pub inf_mismatch: u64,
    /// Elements whose bytes differ.
    pub bitwise_mismatches: u64,
    /// Masked elements of the production tensor that are not exactly zero (when asserted).
    pub padded_nonzero: Option<u64>,
    /// The first allclose violation in row-major order.
    pub first_violation: Option<ElementRecord>,
    /// The K elements with the largest absolute difference.
    pub worst: Vec<ElementRecord>,
    /// RMS error of production and oracle against the f64 truth, when one was given.
    pub vs_f64: Option<TruthRecord>,
}

/// One element of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementRecord {
    /// Multi-dimensional index.
    pub index: Vec<usize>,
    /// Production value.
    #[serde(with = "crate::float")]
    pub actual: f64,
    /// Oracle value.
    #[serde(with = "crate::float")]
    pub expected: f64,
}

/// Errors against the f64 ground truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthRecord {
    /// The truth tensor's name.
    pub truth: String,
    /// RMS(production - truth); +inf when `actual_nonfinite` > 0.
    #[serde(with = "crate::float")]
    pub actual_vs_truth: f64,
    /// RMS(oracle - truth); +inf when `expected_nonfinite` > 0.
    #[serde(with = "crate::float")]
    pub expected_vs_truth: f64,
    /// Compared production elements that are NaN or infinite (the truth is finite).
    #[serde(default)]
    pub actual_nonfinite: u64,
    /// Compared oracle elements that are NaN or infinite.
    #[serde(default)]
    pub expected_nonfinite: u64,
}

impl RunRecord {
    /// An empty record of a run of `spec` that started at `started`.
    pub fn new(
        spec: impl Into<String>,
        parity_version: impl Into<String>,
        started: String,
    ) -> Self {
        RunRecord {
            schema: RUN_RECORD_SCHEMA.to_string(),
            status: Status::Pass,
            spec: spec.into(),
            parity_version: parity_version.into(),
            compiler_revision: None,
            started,
            elapsed_s: 0.0,
            first_divergence: None,
            chained_divergence: Vec::new(),
            first_divergent_op: None,
            provenance: Provenance::default(),
            errors: Vec::new(),
            warnings: Vec::new(),
            stages: Vec::new(),
            shard: None,
            targets: Vec::new(),
            triangulation: Vec::new(),
        }
    }

    /// Every error of the record: run-level, then per stage.
    pub fn all_errors(&self) -> impl Iterator<Item = &ErrorRecord> {
        self.errors
            .iter()
            .chain(self.stages.iter().filter_map(|s| s.error.as_ref()))
    }

    /// The status the record's contents imply: error if anything errored,
    /// else fail if any stage failed, else pass. A skip alone is not an
    /// error: it follows an errored upstream stage (already an error) or a
    /// `--stage` selection that left the upstream out.
    pub fn derived_status(&self) -> Status {
        if self.all_errors().next().is_some() {
            Status::Error
        } else if self.stages.iter().any(|s| s.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// Whether the run went over two or more targets (rows then name their target).
    pub fn is_multi_target(&self) -> bool {
        self.targets.len() > 1
    }

    /// The process exit code for this record ([`ExitCode`]'s table).
    pub fn exit_code(&self) -> ExitCode {
        let fail = self
            .stages
            .iter()
            .any(|s| s.status == Status::Fail)
            .then_some(ExitCode::Fail);
        ExitCode::combine(self.all_errors().map(ErrorRecord::exit_code).chain(fail))
    }
}
