//! The run record: everything a run measured, in the versioned JSON schema
//! `parity.run-record/1` (documented in docs/run-record.md). Reports are pure
//! functions of this record, so it derives both Serialize and Deserialize.

use serde::{Deserialize, Serialize};

/// The schema identifier written at the top of every run record.
pub const RUN_RECORD_SCHEMA: &str = "parity.run-record/1";

/// How a stage's arguments were fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every argument from the oracle: the stage's local error.
    Isolated,
    /// Arguments from upstream production outputs where they exist: accumulated error.
    Chained,
}

impl Mode {
    /// The lowercase name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Isolated => "isolated",
            Mode::Chained => "chained",
        }
    }
}

/// Outcome of one output, one stage, or the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every criterion held.
    Pass,
    /// At least one criterion failed.
    Fail,
    /// The stage could not be evaluated (bad input, compile or runtime failure).
    Error,
    /// Not run because something it depends on errored.
    Skipped,
}

impl Status {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

/// What kind of problem an errored stage hit; decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// Invalid input: missing or malformed tensor, shape/dtype mismatch, bad mask (exit 2).
    Input,
    /// IREE compile, load or invocation failure (exit 3).
    Execution,
}

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
    pub elapsed_s: f64,
    /// The first stage in dependency order whose isolated check failed.
    pub first_divergence: Option<Divergence>,
    /// Per case: the first stage in chained mode whose accumulated error crossed its tolerance.
    pub chained_divergence: Vec<Divergence>,
    /// `parity check --bisect`: the operation the first divergence was localised
    /// to (the `first_divergent_op` of the bisect report, `parity.bisect/1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergent_op: Option<serde_json::Value>,
    /// Problems not tied to one stage (oracle store, weights, compile of a module).
    pub errors: Vec<RunError>,
    /// One entry per (stage, case, mode), in execution order.
    pub stages: Vec<StageRecord>,
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
}

/// A problem not tied to a single stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunError {
    /// Input or execution.
    pub kind: ErrorKind,
    /// The message, naming the file and tensor involved.
    pub message: String,
}

/// One stage run in one case and mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// Stage name from the spec.
    pub name: String,
    /// Case name.
    pub case: String,
    /// Isolated or chained.
    pub mode: Mode,
    /// The module and function invoked.
    pub function: String,
    /// Stage status: the worst of its outputs, or error/skipped.
    pub status: Status,
    /// Set when status is error or skipped.
    pub error: Option<String>,
    /// Set when status is error.
    pub error_kind: Option<ErrorKind>,
    /// Milliseconds spent invoking the function (excludes comparison).
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
    pub error: Option<String>,
    /// The measured metrics (absent when the comparison errored).
    pub metrics: Option<OutputMetrics>,
    /// Every criterion checked, with the observed value and the smallest passing threshold.
    pub criteria: Vec<CriterionRecord>,
    /// Failing outputs only: the error downsampled over the two main axes,
    /// for the HTML report's heatmap (see `run::error_map`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_map: Option<crate::run::error_map::ErrorMap>,
}

/// Metrics of one comparison, as stored in the record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputMetrics {
    /// Unmasked elements compared.
    pub count: u64,
    /// Elements excluded by the mask.
    pub masked_out: u64,
    /// Largest |actual - expected|.
    pub max_abs: f64,
    /// Mean |actual - expected|.
    pub mean_abs: f64,
    /// Root mean square of the difference.
    pub rms: f64,
    /// ||actual - expected|| / ||expected||.
    pub rel_l2: f64,
    /// Cosine similarity.
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
    /// allclose violations plus NaN/Inf mismatches.
    pub mismatches: u64,
    /// NaN present on one side only.
    pub nan_mismatch: u64,
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
    pub actual: f64,
    /// Oracle value.
    pub expected: f64,
}

/// Errors against the f64 ground truth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthRecord {
    /// The truth tensor's name.
    pub truth: String,
    /// RMS(production - truth).
    pub actual_vs_truth: f64,
    /// RMS(oracle - truth).
    pub expected_vs_truth: f64,
}

/// One tolerance criterion's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriterionRecord {
    /// The criterion as written in the spec (its serde form).
    pub criterion: serde_json::Value,
    /// Whether it held.
    pub passed: bool,
    /// The observed value of the criterion's statistic.
    pub observed: f64,
    /// The threshold it was checked against.
    pub threshold: f64,
    /// The smallest threshold that would have passed.
    pub min_passing: f64,
    /// Explanation where the numbers need one.
    pub note: Option<String>,
}

impl RunRecord {
    /// The process exit code for this record: 2 invalid input, 3 execution
    /// failure, 1 parity failure, 0 all pass. Input errors win over execution
    /// errors, which win over parity failures, since each makes the next less
    /// trustworthy.
    pub fn exit_code(&self) -> i32 {
        let kinds = self
            .errors
            .iter()
            .map(|e| e.kind)
            .chain(self.stages.iter().filter_map(|s| s.error_kind));
        let (mut input, mut execution) = (false, false);
        for kind in kinds {
            match kind {
                ErrorKind::Input => input = true,
                ErrorKind::Execution => execution = true,
            }
        }
        if input {
            2
        } else if execution {
            3
        } else if self.stages.iter().any(|s| s.status == Status::Fail) {
            1
        } else {
            0
        }
    }
}
