//! `parity.dispatches/1`: where two targets part ways, dispatch by dispatch.
//!
//! `parity dispatches` runs a stage's program, compiled with IREE's dispatch
//! tracing, on a reference target and on the target under test, aligns the
//! two dispatch sequences and compares every traced tensor. The first
//! dispatch whose outputs differ beyond tolerance is named with the
//! StableHLO operations it holds.

use crate::common::{ErrorRecord, Status};
use crate::exit::ExitCode;
use serde::{Deserialize, Serialize};

/// The schema tag of [`DispatchesRecord`].
pub const DISPATCHES_SCHEMA: &str = "parity.dispatches/1";

/// The result of one `parity dispatches` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchesRecord {
    /// Always [`DISPATCHES_SCHEMA`].
    pub schema: String,
    /// pass: no aligned dispatch differs beyond tolerance on any stage;
    /// fail: one does; error: a stage could not be traced.
    pub status: Status,
    /// The spec file.
    pub spec: String,
    /// parity's version.
    pub parity_version: String,
    /// The IREE compiler revision.
    pub compiler_revision: Option<String>,
    /// The reference target (the first `--target`).
    pub reference: String,
    /// The target under test (the second `--target`).
    pub target: String,
    /// Total wall-clock seconds.
    #[serde(with = "crate::float")]
    pub elapsed_s: f64,
    /// One entry per stage and case traced, in run order.
    pub stages: Vec<DispatchStage>,
    /// Problems that stopped a stage (bad spec or input, IREE failures).
    pub errors: Vec<ErrorRecord>,
    /// What the evidence is and is not (one sentence each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One stage and case, traced on both targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchStage {
    /// The stage.
    pub stage: String,
    /// The case whose isolated-mode inputs it ran on.
    pub case: String,
    /// pass, fail (a dispatch differs), error, or skipped.
    pub status: Status,
    /// The tolerance every traced tensor is judged by (the stage output's
    /// criteria from the spec), in words.
    pub criteria: String,
    /// Dispatches the reference target ran.
    pub reference_count: usize,
    /// Dispatches the target under test ran.
    pub target_count: usize,
    /// The aligned dispatches, in the reference target's order.
    pub dispatches: Vec<DispatchRow>,
    /// Index into `dispatches` of the first whose outputs differ, when the
    /// stage's results differ between the targets (the divergence to
    /// explain); None when they agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergent: Option<usize>,
    /// When the stage's results agree between the targets but some
    /// dispatch's outputs do not (a difference absorbed before the output,
    /// e.g. a reduction's order): index into `dispatches` of the first such.
    /// Not a divergence: the stage passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absorbed: Option<usize>,
    /// Inside the first divergent dispatch, when it was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside: Option<InsideDispatch>,
    /// Dispatches of either target that could not be aligned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unaligned: Vec<UnalignedDispatch>,
    /// Whether each target's traced module returned the untraced module's
    /// results bit for bit (tracing must not change numerics).
    pub fidelity: Vec<TraceFidelity>,
    /// Bytes of traced tensors kept to compare (the reference's, and the
    /// tested target's that arrived out of order).
    pub kept_bytes: u64,
    /// The stage's results compared between the targets (one entry per
    /// result): when they differ and no aligned dispatch does, the record
    /// says the divergence is real but could not be placed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<TracedDiff>,
    /// Bytes dropped over the byte budget: the dispatches they belong to
    /// are `skipped`, never passed.
    pub dropped_bytes: u64,
}

/// Inside the first divergent dispatch: its operations cut out and run on
/// both targets from the same inputs, every result tapped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InsideDispatch {
    /// The first operation whose tapped result differs, when one does.
    pub op: Option<DispatchOp>,
    /// Whether the cut-out operations reproduce a difference at all.
    pub reproduced: bool,
    /// Its largest |Δ| (or the largest over all taps when none differs).
    #[serde(default, with = "crate::float::option")]
    pub max_abs: Option<f64>,
    /// What the evidence is.
    pub note: String,
    /// The named operation run alone in f64 on the CPU from the reference
    /// target's operands: which target's result is off the truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_f64: Option<InsideVsF64>,
}

/// Each target's result at the operation named inside a dispatch against
/// the operation's f64 result from the same operands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InsideVsF64 {
    /// The reference target's largest |result - f64|.
    #[serde(with = "crate::float")]
    pub reference_err: f64,
    /// The tested target's largest |result - f64|.
    #[serde(with = "crate::float")]
    pub target_err: f64,
    /// The target at least twice as far from the truth as the other, when
    /// one is; None when they are alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

/// Dispatch-level evidence in a bisect record (`parity bisect --target
/// a,b`, `parity check --bisect --target a,b`): the divergent stage traced
/// on a target that matches the oracle there and on the one that fails.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchEvidence {
    /// The target whose stage matches the oracle.
    pub reference: String,
    /// The target the stage diverges on.
    pub target: String,
    /// The stage traced on both.
    pub stage: DispatchStage,
}

/// One dispatch of the reference target and its counterpart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchRow {
    /// Its position in the reference target's sequence.
    pub ordinal: usize,
    /// Its counterpart's position on the target under test.
    pub target_ordinal: usize,
    /// `EXECUTABLE::ENTRY_POINT`, as the trace names it.
    pub key: String,
    /// How the counterpart was found: `key` (same executable and order) or
    /// `ops` (same source operations).
    pub aligned_by: String,
    /// The StableHLO operations it holds (from the locations in the
    /// dispatch's source), in program order.
    pub ops: Vec<DispatchOp>,
    /// pass, fail, or skipped (a tensor over the byte budget).
    pub status: Status,
    /// Whether its inputs already differed beyond tolerance: a failing
    /// dispatch with equal inputs is `local`, else `accumulated`.
    pub inputs_differ: bool,
    /// Largest |Δ| over its inputs (0 when bit for bit).
    #[serde(with = "crate::float")]
    pub inputs_max_abs: f64,
    /// One entry per output tensor.
    pub outputs: Vec<TracedDiff>,
}

/// One StableHLO operation a dispatch holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatchOp {
    /// Its index in the stage function (the `#N` bisect uses).
    pub index: usize,
    /// Its name, e.g. `stablehlo.dot_general`.
    pub name: String,
    /// Its location, brief.
    pub loc: String,
}

/// One traced tensor compared between the two targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracedDiff {
    /// Its position among the dispatch's outputs.
    pub index: usize,
    /// dtype and shape, e.g. `f32[4,16]`.
    pub ty: String,
    /// pass, fail, or skipped.
    pub status: Status,
    /// Largest |Δ|, null when not compared.
    #[serde(default, with = "crate::float::option")]
    pub max_abs: Option<f64>,
    /// Largest distance in units in the last place, when the dtype is a float.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<u64>,
    /// Elements outside the tolerance.
    pub mismatched: u64,
}

/// A dispatch one target ran that has no counterpart on the other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnalignedDispatch {
    /// The target that ran it.
    pub target: String,
    /// Its position in that target's sequence.
    pub ordinal: usize,
    /// Its trace key.
    pub key: String,
}

/// Whether tracing changed a target's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceFidelity {
    /// The target.
    pub target: String,
    /// The traced module's results equal the untraced module's, bit for bit.
    pub bit_identical: bool,
    /// Largest |Δ| between them (0 when bit identical).
    #[serde(with = "crate::float")]
    pub max_abs: f64,
}

impl DispatchesRecord {
    /// An empty record for `spec`, reference and target.
    pub fn new(spec: &str, reference: &str, target: &str) -> Self {
        DispatchesRecord {
            schema: DISPATCHES_SCHEMA.to_string(),
            status: Status::Pass,
            spec: spec.to_string(),
            parity_version: env!("CARGO_PKG_VERSION").to_string(),
            compiler_revision: None,
            reference: reference.to_string(),
            target: target.to_string(),
            elapsed_s: 0.0,
            stages: Vec::new(),
            errors: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The status its parts give: error when anything errored, fail when a
    /// stage has a divergent dispatch, else pass.
    pub fn derived_status(&self) -> Status {
        if !self.errors.is_empty() || self.stages.iter().any(|s| s.status == Status::Error) {
            Status::Error
        } else if self.stages.iter().any(|s| s.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// The process exit code: 1 for a divergent dispatch, the errors' own
    /// codes (2 input, 3 execution) when something could not run.
    pub fn exit_code(&self) -> ExitCode {
        let fail = self
            .stages
            .iter()
            .any(|s| s.status == Status::Fail)
            .then_some(ExitCode::Fail);
        ExitCode::combine(self.errors.iter().map(ErrorRecord::exit_code).chain(fail))
    }
}

impl DispatchStage {
    /// The first divergent dispatch, if any.
    pub fn divergent(&self) -> Option<&DispatchRow> {
        self.first_divergent.and_then(|i| self.dispatches.get(i))
    }
}
