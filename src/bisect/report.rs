//! The bisect report (`parity.bisect/1`): what was found and the evidence.
//! Built by the bisector, rendered by `render`, written as JSON by the CLI.

use super::Strategy;
use crate::run::record::{ErrorKind, RunError, Status};
use serde::{Deserialize, Serialize};

/// Schema tag of the bisect report.
pub const BISECT_SCHEMA: &str = "parity.bisect/1";

/// The bisect report (JSON `parity.bisect/1`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BisectReport {
    /// Always [`BISECT_SCHEMA`].
    pub schema: String,
    /// pass (nothing diverges), fail (localised to an op or a region), error.
    pub status: Status,
    /// The stage bisected.
    pub stage: Option<String>,
    /// The case bisected.
    pub case: Option<String>,
    /// The function (in the normalised module) the stage runs or slices.
    pub function: Option<String>,
    /// The failing stage output bisect started from.
    pub output: Option<String>,
    /// The tap placement used for the oracle checkpoints.
    pub strategy: Option<Strategy>,
    /// The operation the divergence was localised to, when one was.
    pub first_divergent_op: Option<DivergentOp>,
    /// The region between the passing and failing checkpoints.
    pub region: Option<Region>,
    /// Every checkpoint with a verdict, in program order.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Per-operation shadow errors in the region (when the shadow ran).
    pub shadow: Vec<ShadowRow>,
    /// Variants built and run.
    pub probes: usize,
    /// One line per probe.
    pub probe_log: Vec<String>,
    /// Probes whose tapped build changed the stage's own results.
    pub observer_effect: Vec<String>,
    /// The reproducer directory, once written.
    pub reproducer: Option<String>,
    /// What people should know (an honest region, a fallback).
    pub notes: Vec<String>,
    /// What went wrong, with its kind (input: exit 2, execution: exit 3).
    pub errors: Vec<RunError>,
}

/// `first_divergent_op`: stage, function, op, evidence, probes, metrics.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DivergentOp {
    /// The stage.
    pub stage: String,
    /// The function in the normalised module.
    pub function: String,
    /// Index among the function body's top-level operations.
    pub op_index: usize,
    /// e.g. `stablehlo.slice`.
    pub op_name: String,
    /// The location's named-scope path (e.g. `conformer_1/attention/rel_shift/sliced/slice`),
    /// or `file:line:col` for MLIR without named locations.
    pub loc: String,
    /// The raw MLIR location.
    pub loc_raw: String,
    /// "oracle" (bounded by oracle tensors) or "inferred" (the f64 shadow).
    pub evidence: String,
    /// Probes spent in all.
    pub probes: usize,
    /// The operation's MLIR text (generic form).
    pub text: String,
    /// Operand types, in order.
    pub operand_types: Vec<String>,
    /// Result types, in order.
    pub result_types: Vec<String>,
    /// Error at its inputs and output.
    pub metrics: OpMetrics,
}

/// Error at an operation's inputs and output.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpMetrics {
    /// One per operand.
    pub inputs: Vec<ValueMetrics>,
    /// One per float result.
    pub output: Vec<ValueMetrics>,
}

/// One value compared with a reference.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ValueMetrics {
    /// SSA name in the normalised function.
    pub value: String,
    /// What it was compared with: `oracle:<name>`, `shadow`, `constant`, `input`.
    pub against: String,
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Root mean square difference.
    pub rms: f64,
    /// Largest |reference|.
    pub max_ref: f64,
    /// `max_abs` in ULPs of the budget dtype at `max_ref`.
    pub ulps_at_max: f64,
}

impl ValueMetrics {
    /// A value that needs no comparison (a constant, a stage input).
    pub fn exact(value: String, against: String) -> Self {
        ValueMetrics {
            value,
            against,
            max_abs: 0.0,
            rms: 0.0,
            max_ref: 0.0,
            ulps_at_max: 0.0,
        }
    }
}

/// The localised region.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Region {
    /// Oracle tensors of the passing checkpoints it starts from.
    pub passing: Vec<String>,
    /// Oracle tensor of the failing checkpoint it ends at.
    pub failing: String,
    /// Operations in it (not counting constants).
    pub ops: usize,
    /// One line per operation.
    pub op_list: Vec<String>,
}

/// One checkpoint and its verdict.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Oracle tensor name.
    pub oracle: String,
    /// SSA name of the value.
    pub value: String,
    /// Index of the operation defining it.
    pub op_index: Option<usize>,
    /// Location of that operation.
    pub loc: String,
    /// `stage-output` or `convention`.
    pub kind: String,
    /// Its verdict.
    pub passed: bool,
    /// Where the verdict comes from: `run`, `probe`, or `implied` (a passing
    /// checkpoint that depends on it vouches for it during bisection).
    pub verdict_from: String,
    /// Metrics, when a probe measured it.
    pub metrics: Option<ValueMetrics>,
}

/// One operation of the region under the f64 shadow.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShadowRow {
    /// Index of the operation.
    pub op_index: usize,
    /// e.g. `stablehlo.reduce`.
    pub op_name: String,
    /// Its location.
    pub loc: String,
    /// Its first result's type.
    pub result_type: String,
    /// Production vs shadow, accumulated through the region (ULPs at max).
    pub accumulated_ulps: f64,
    /// The op alone in production precision on the shadow's inputs vs shadow (ULPs at max).
    pub local_ulps: Option<f64>,
    /// The first operation whose local error exceeds the budget.
    pub flagged: bool,
}

impl BisectReport {
    /// An empty report (nothing diverges yet).
    pub fn new() -> Self {
        BisectReport {
            schema: BISECT_SCHEMA.to_string(),
            status: Status::Pass,
            stage: None,
            case: None,
            function: None,
            output: None,
            strategy: None,
            first_divergent_op: None,
            region: None,
            checkpoints: Vec::new(),
            shadow: Vec::new(),
            probes: 0,
            probe_log: Vec::new(),
            observer_effect: Vec::new(),
            reproducer: None,
            notes: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Exit code: 0 nothing diverges, 1 localised, 2 input error, 3 execution error.
    pub fn exit_code(&self) -> i32 {
        if self.errors.iter().any(|e| e.kind == ErrorKind::Input) {
            2
        } else if !self.errors.is_empty() {
            3
        } else if self.status == Status::Fail {
            1
        } else {
            0
        }
    }
}

impl Default for BisectReport {
    fn default() -> Self {
        Self::new()
    }
}
