//! The bisect record (`parity.bisect/2`, docs/bisect.md): where a stage's
//! divergence was localised, and the evidence.

use crate::common::{ErrorRecord, Status};
use crate::exit::ExitCode;
use serde::{Deserialize, Serialize};

/// Schema tag of the bisect record.
pub const BISECT_SCHEMA: &str = "parity.bisect/2";

/// How taps are placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Mark-all when the taps fit in the memory budget, else bisection.
    Auto,
    /// One tap per probe, about log2(N) probes.
    Bisection,
    /// One build with every tap.
    MarkAll,
}

impl Strategy {
    /// The kebab-case name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Bisection => "bisection",
            Strategy::MarkAll => "mark-all",
        }
    }
}

/// What a localisation rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Evidence {
    /// Bounded by oracle tensors: a passing checkpoint before, a failing one after.
    Oracle,
    /// Named by the f64 shadow: the first operation whose local error exceeds the budget.
    Inferred,
    /// The first operation whose production result holds NaN or an infinity
    /// where all its operands are finite and the f64 shadow's result is finite.
    #[serde(rename = "nonfinite")]
    NonFinite,
    /// Named by the repair search: the edits of the region that make its end
    /// match the oracle are all on this operation.
    Repair,
    /// Only a region: no evidence narrows it to one operation.
    Region,
}

impl Evidence {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Evidence::Oracle => "oracle",
            Evidence::Inferred => "inferred",
            Evidence::NonFinite => "nonfinite",
            Evidence::Repair => "repair",
            Evidence::Region => "region",
        }
    }
}

/// Where a checkpoint's oracle tensor comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckpointKind {
    /// One of the stage's outputs.
    StageOutput,
    /// An oracle tensor named after a scope inside the stage (the naming convention).
    Convention,
    /// An oracle tensor the spec's `checkpoints:` map names a point for.
    Mapped,
}

impl CheckpointKind {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            CheckpointKind::StageOutput => "stage-output",
            CheckpointKind::Convention => "convention",
            CheckpointKind::Mapped => "mapped",
        }
    }
}

/// Where a checkpoint's verdict comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictSource {
    /// The run's own comparison of the stage output.
    Run,
    /// A probe measured it.
    Probe,
    /// A passing checkpoint that depends on it vouches for it during bisection.
    Implied,
}

impl VerdictSource {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            VerdictSource::Run => "run",
            VerdictSource::Probe => "probe",
            VerdictSource::Implied => "implied",
        }
    }
}

/// The bisect record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BisectRecord {
    /// Always [`BISECT_SCHEMA`].
    pub schema: String,
    /// pass (nothing diverges), fail (localised to an op or a region), error.
    pub status: Status,
    /// The stage bisected.
    pub stage: Option<String>,
    /// The case bisected.
    pub case: Option<String>,
    /// The target bisected on, after a run over several (`--target a,b`):
    /// the first whose stage diverged. Absent after a run on one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
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
    /// The confirmation probe of the shadow's candidates (when the shadow
    /// flagged any): an `inferred` operation is named only when it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// The repair search, when it ran and some edit made the region match:
    /// its surviving edits, the op they name (if they name one) and, when
    /// they act at several operations, whether they compute the same
    /// function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairSearch>,
    /// Variants built and run.
    pub probes: usize,
    /// One line per probe.
    pub probe_log: Vec<String>,
    /// Probes whose tapped build changed the stage's own results.
    pub observer_effect: Vec<String>,
    /// The reproducer directory, once written.
    pub reproducer: Option<String>,
    /// The reproducer run by bisect itself: whether it fails as it should.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproducer_check: Option<ReproducerCheck>,
    /// After a run over several targets where the stage matches the oracle
    /// on one and not on another: the stage's dispatches traced on both,
    /// with the first divergent one ([`crate::DispatchEvidence`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<Box<crate::dispatches::DispatchEvidence>>,
    /// What people should know (an honest region, a fallback).
    pub notes: Vec<String>,
    /// What went wrong, with its kind (input: exit 2, execution: exit 3).
    pub errors: Vec<ErrorRecord>,
    /// Model Explorer's node id of each top-level operation of `function`,
    /// by op index (its MLIR adapter numbers every operation, nested ones
    /// included, in program order); the node-data renderer keys values by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ids: Option<Vec<String>>,
}

/// `first_divergent_op`: stage, function, op, evidence, probes, metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// `oracle` (bounded by oracle tensors) or `inferred` (the f64 shadow); never `region`.
    pub evidence: Evidence,
    /// When the repairs that make the region match are proven to compute one
    /// function and sit on two adjacent operations: the other one (this op
    /// feeds it, or it feeds this op). The fix is at one of the two, and no
    /// oracle tensor can tell which: neither is picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<PairedOp>,
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpMetrics {
    /// One per operand.
    pub inputs: Vec<ValueMetrics>,
    /// One per float result.
    pub output: Vec<ValueMetrics>,
}

/// One value compared with a reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValueMetrics {
    /// SSA name in the normalised function.
    pub value: String,
    /// What it was compared with: `oracle:<name>`, `shadow`, `constant`, `input`.
    pub against: String,
    /// Largest absolute difference.
    #[serde(with = "crate::float")]
    pub max_abs: f64,
    /// Root mean square difference.
    #[serde(with = "crate::float")]
    pub rms: f64,
    /// Largest |reference|.
    #[serde(with = "crate::float")]
    pub max_ref: f64,
    /// `max_abs` in ULPs of the budget dtype at `max_ref`.
    #[serde(with = "crate::float")]
    pub ulps_at_max: f64,
    /// Elements that are NaN or infinite in the value where the reference is
    /// finite (max abs and RMS leave them out; `ulps_at_max` is then inf).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nonfinite: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
            nonfinite: 0,
        }
    }
}

/// The localised region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Oracle tensor name.
    pub oracle: String,
    /// SSA name of the value.
    pub value: String,
    /// Index of the operation defining it.
    pub op_index: Option<usize>,
    /// Location of that operation.
    pub loc: String,
    /// A stage output or a scope-named oracle tensor.
    pub kind: CheckpointKind,
    /// Its verdict.
    pub passed: bool,
    /// Where the verdict comes from.
    pub verdict_from: VerdictSource,
    /// Metrics, when a probe measured it.
    pub metrics: Option<ValueMetrics>,
}

/// One operation of the region under the f64 shadow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    #[serde(with = "crate::float")]
    pub accumulated_ulps: f64,
    /// The op alone in production precision on the shadow's inputs vs shadow (ULPs at max).
    #[serde(with = "crate::float::option")]
    pub local_ulps: Option<f64>,
    /// The operation the shadow names: the non-finite origin, or the first
    /// operation over the local budget whose confirmation holds.
    pub flagged: bool,
}

/// The confirmation of the f64 shadow's candidates: the region run in
/// production precision with one candidate's result replaced by the
/// shadow's value (rounded to the result type), its end compared with the
/// oracle tensor at the failing checkpoint. A candidate is confirmed when
/// the end then matches the oracle within the budget and did not before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The budget the region's end is held to (ULPs at max of the budget dtype).
    #[serde(with = "crate::float")]
    pub budget_ulps: f64,
    /// The region's end in production precision, nothing replaced, vs the oracle.
    pub before: ValueMetrics,
    /// Each candidate (operations whose own error exceeds the local budget),
    /// in program order.
    pub candidates: Vec<ConfirmationCandidate>,
    /// The op index of the first candidate that holds, if any.
    pub confirmed: Option<usize>,
    /// Operations over the local budget past the probe's limit, not tried.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub untried: usize,
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// One candidate of the confirmation probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationCandidate {
    /// Index of the operation.
    pub op_index: usize,
    /// e.g. `stablehlo.convert`.
    pub op_name: String,
    /// Its location.
    pub loc: String,
    /// Its own error (the op alone vs the shadow, ULPs at max).
    #[serde(with = "crate::float")]
    pub local_ulps: f64,
    /// The region's end with this op's results taken from the shadow, vs the oracle.
    pub after: ValueMetrics,
    /// Whether the end matches the oracle within the budget (and did not before).
    pub holds: bool,
}

/// Where a divergence was localised, as the run record holds it
/// (`first_divergent_op` of `parity.run-record/2`). JSON: the variant's
/// fields with `"kind": "op"` or `"kind": "region"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Localisation {
    /// One operation (oracle or inferred evidence).
    Op(DivergentOp),
    /// A region no evidence narrows further.
    Region(RegionOutcome),
}

/// A divergence localised to a region only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegionOutcome {
    /// The stage.
    pub stage: String,
    /// The function in the normalised module.
    pub function: String,
    /// The region.
    pub region: Region,
    /// Probes spent in all.
    pub probes: usize,
    /// Why it stops at a region.
    pub notes: Vec<String>,
    /// The repair search, when its edits act at several operations
    /// (ambiguous): what the one-line summary says instead of a region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairSearch>,
}

impl Localisation {
    /// The evidence it rests on.
    pub fn evidence(&self) -> Evidence {
        match self {
            Localisation::Op(op) => op.evidence,
            Localisation::Region(_) => Evidence::Region,
        }
    }
}

impl BisectRecord {
    /// An empty record (nothing diverges yet).
    pub fn new() -> Self {
        BisectRecord {
            schema: BISECT_SCHEMA.to_string(),
            status: Status::Pass,
            stage: None,
            case: None,
            target: None,
            function: None,
            output: None,
            strategy: None,
            first_divergent_op: None,
            region: None,
            checkpoints: Vec::new(),
            shadow: Vec::new(),
            confirmation: None,
            repair: None,
            probes: 0,
            probe_log: Vec::new(),
            observer_effect: Vec::new(),
            reproducer: None,
            reproducer_check: None,
            dispatch: None,
            notes: Vec::new(),
            errors: Vec::new(),
            node_ids: None,
        }
    }

    /// Where the divergence was localised: the operation, else the region
    /// (when the bisection failed, neither).
    pub fn localisation(&self) -> Option<Localisation> {
        if self.status != Status::Fail {
            return None;
        }
        if let Some(op) = &self.first_divergent_op {
            return Some(Localisation::Op(op.clone()));
        }
        let region = self.region.clone()?;
        Some(Localisation::Region(RegionOutcome {
            stage: self.stage.clone().unwrap_or_default(),
            function: self.function.clone().unwrap_or_default(),
            region,
            probes: self.probes,
            notes: self.notes.clone(),
            repair: self.repair.clone().filter(|r| r.claimed.is_none()),
        }))
    }

    /// Exit code: 0 nothing diverges, 1 localised, 2 input error, 3 execution error.
    pub fn exit_code(&self) -> ExitCode {
        let fail = (self.status == Status::Fail).then_some(ExitCode::Fail);
        ExitCode::combine(self.errors.iter().map(ErrorRecord::exit_code).chain(fail))
    }
}

impl Default for BisectRecord {
    fn default() -> Self {
        Self::new()
    }
}

/// The reproducer's own check (its `@check` on its inputs against its
/// expected values and thresholds), run by bisect after writing it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReproducerCheck {
    /// Whether it fails as it should: some result beyond its threshold.
    pub reproduces: bool,
    /// One entry per result, in order.
    pub outputs: Vec<ReproducerOutput>,
}

/// One reproducer result against its expected value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReproducerOutput {
    /// Largest absolute difference over elements finite on both sides.
    #[serde(with = "crate::float")]
    pub max_abs: f64,
    /// The threshold it is held to (0 for an exact comparison).
    #[serde(with = "crate::float")]
    pub threshold: f64,
    /// Elements where one side is NaN/Inf and the other is not the same value.
    pub nonfinite: u64,
}

impl ReproducerOutput {
    /// Whether this result is beyond its threshold.
    pub fn fails(&self) -> bool {
        self.nonfinite > 0 || self.max_abs > self.threshold
    }
}

/// The other op of a `pair` answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairedOp {
    /// Index among the function body's top-level operations.
    pub op_index: usize,
    /// e.g. `stablehlo.logistic`.
    pub op_name: String,
    /// Its location label.
    pub loc: String,
}

/// The repair search's survivors (docs/bisect.md, "repair").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairSearch {
    /// Edits tried (enumerated plus fitted).
    pub tried: usize,
    /// Whether the wide catalogue (every op of the same arity, missing
    /// binary ops) was searched: only when the common confusions found nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wide: bool,
    /// Edits of the wide catalogue over its bound, not tried.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub cut: usize,
    /// What "match" meant: the stage output's criteria, or the ULP budget.
    pub judged_by: String,
    /// The edits that make the region's end match the oracle, best first.
    pub candidates: Vec<RepairCandidate>,
    /// The op every candidate acts at, when there is one (evidence `repair`);
    /// none when they act at several operations (ambiguous).
    pub claimed: Option<usize>,
    /// When no op is claimed: the candidates run on perturbed copies of the
    /// oracle's inputs and compared with the first one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<Equivalence>,
    /// When the survivors act at several operations: the other cases of the
    /// stage (same function) they were judged on, and the ones they failed
    /// there (dropped from `candidates`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_case: Option<CrossCase>,
}

/// The surviving repairs carried to other cases of the same stage and
/// function, each judged against that case's own oracle tensors under the
/// same acceptance, the fitted values held as fitted on the failing case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossCase {
    /// Cases whose oracle judged the repairs.
    pub cases: Vec<String>,
    /// Cases not used, each with why (another function, a missing oracle
    /// tensor, every repair failing there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Repairs that failed on one of `cases`: no longer candidates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedRepair>,
    /// Repairs not carried to a case of another function (no unique
    /// counterpart op or edit there), each with the case and why: not
    /// judged there, so still candidates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncarried: Vec<String>,
}

/// A repair that matched the failing case but not another one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DroppedRepair {
    /// The repair as it was found on the failing case.
    pub candidate: RepairCandidate,
    /// The case it fails on.
    pub case: String,
    /// That case's region end against its oracle, in ULPs at max.
    #[serde(with = "crate::float")]
    pub ulps: f64,
}

/// One surviving edit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairCandidate {
    /// The op it is reported on.
    pub op_index: usize,
    /// e.g. `stablehlo.multiply`.
    pub op_name: String,
    /// Its location.
    pub loc: String,
    /// The edit, for people (with its fitted value).
    pub edit: String,
    /// The region's end against the oracle after the edit, in ULPs at max.
    #[serde(with = "crate::float")]
    pub ulps: f64,
}

/// Whether ambiguous repairs compute the same function: each candidate and
/// the unedited region run on perturbed copies of the oracle's inputs (every
/// float element times its own factor in [0.5, 1.5], seeded; integers and
/// booleans kept), and compared with the first candidate's result by the
/// same acceptance as the search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Equivalence {
    /// Perturbed inputs run.
    pub inputs: usize,
    /// Candidates (indices into `candidates`) whose result matched the first
    /// candidate's on every perturbed input (the first included).
    pub agree: Vec<usize>,
    /// Candidates that differed from the first on some perturbed input.
    pub differ: Vec<usize>,
    /// Whether the unedited region differed from the first candidate on some
    /// perturbed input: without that, the inputs do not exercise the fault
    /// and agreement says nothing.
    pub unedited_differs: bool,
}

impl Equivalence {
    /// The candidates are the same function as far as these inputs can
    /// tell, and the inputs exercise the fault.
    pub fn holds(&self) -> bool {
        self.differ.is_empty() && self.unedited_differs
    }
}
