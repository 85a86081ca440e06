//! `parity.fuzz/1`: what `parity fuzz` found. One entry per invariant (did
//! it hold over the generated cases, within which tolerance, and did its
//! negative control fire), and every violation with its shrunk minimal case
//! and its seed, from which the case is regenerated.

use crate::common::{ErrorRecord, Status};
use crate::exit::ExitCode;
use crate::triangulation_row::TriangulationLabel;
use serde::{Deserialize, Serialize};

/// The schema tag of [`FuzzRecord`].
pub const FUZZ_SCHEMA: &str = "parity.fuzz/1";

/// The result of one `parity fuzz` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuzzRecord {
    /// Always [`FUZZ_SCHEMA`].
    pub schema: String,
    /// pass: every invariant held and every negative control fired; fail: a
    /// violation (or a control that did not fire); error: anything errored.
    pub status: Status,
    /// The spec file.
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
    /// The run's seed: case `i` of invariant `k` is generated from a seed derived from it.
    pub seed: u64,
    /// Generated cases per invariant.
    pub cases: usize,
    /// Persisted failing seeds replayed before the generated cases.
    pub replayed: Vec<ReplayRecord>,
    /// One entry per invariant, in the order they ran.
    pub invariants: Vec<InvariantRecord>,
    /// Every violation found, with its minimal case.
    pub violations: Vec<Violation>,
    /// Problems that stopped a check (bad spec or input, IREE failures).
    pub errors: Vec<ErrorRecord>,
    /// Problems that did not change the result (a regressions file that could not be written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The targets run (`--target a,b`), in order; empty for a run on one target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// With two or more targets: each invariant whose outcome differs between
    /// the targets, or fails on any, labelled with which side is off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triangulation: Vec<FuzzTriangulationRow>,
}

/// One persisted seed replayed first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// The invariant it was persisted for.
    pub invariant: String,
    /// The case seed.
    pub seed: u64,
    /// Whether it still violates the invariant.
    pub still_fails: bool,
    /// The target it ran on (several-target runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// One invariant over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvariantRecord {
    /// `pad_content`, `bucket`, `batch_order`, `batch_company`, `history`, `lengths`.
    pub name: String,
    /// pass, fail, error, or skipped (the shapes it needs are not compiled).
    pub status: Status,
    /// What is compared with what.
    pub description: String,
    /// The tolerance applied (`exact` or `max_abs X`).
    pub tolerance: String,
    /// Cases checked (replayed ones included).
    pub cases_run: usize,
    /// Cases that violated it (before shrinking).
    pub cases_failed: usize,
    /// Largest difference seen over the passing cases (0 when bit for bit), null when none ran.
    #[serde(default, with = "crate::float::option")]
    pub max_diff: Option<f64>,
    /// The negative control: the same comparison on inputs that must differ.
    pub control: Option<ControlRecord>,
    /// Why it was skipped, or what limits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The target it ran on (several-target runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Its cases' outputs against the first target's (a later target of a
    /// several-target run only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<FuzzCross>,
}

impl InvariantRecord {
    /// An invariant about to run: passing, no case run yet, on no named target.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        tolerance: impl Into<String>,
    ) -> Self {
        InvariantRecord {
            name: name.into(),
            status: Status::Pass,
            description: description.into(),
            tolerance: tolerance.into(),
            cases_run: 0,
            cases_failed: 0,
            max_diff: None,
            control: None,
            note: None,
            target: None,
            vs_first: None,
        }
    }
}

/// A negative control: proof that the comparison of an invariant can fail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ControlRecord {
    /// What was changed (e.g. "mask of clip 0 shortened by 16 frames").
    pub description: String,
    /// Whether the outputs changed, as they must.
    pub fired: bool,
    /// The difference it produced.
    #[serde(with = "crate::float")]
    pub max_diff: f64,
}

/// One violated invariant, shrunk to a minimal case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The invariant.
    pub invariant: String,
    /// The seed of the original failing case (`parity fuzz --replay SEED`).
    pub seed: u64,
    /// Shrinking steps accepted on the way to the minimal case.
    pub shrink_steps: usize,
    /// The minimal case.
    pub case: MinimalCase,
    /// The first output element that moved.
    pub moved: MovedElement,
    /// One sentence: which frames, which values, which output moves.
    pub summary: String,
    /// The target it was found on (several-target runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A case as generated: the batch and what was changed in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinimalCase {
    /// The entry point called (the reference run's).
    pub function: String,
    /// Clips per batch.
    pub clips: usize,
    /// Frames per clip.
    pub bucket: usize,
    /// Valid frames per clip.
    pub valid: Vec<usize>,
    /// Where each clip's valid frames are in its bucket, as runs (`0..3, 5..6`);
    /// empty in records written before masks with holes were generated.
    #[serde(default)]
    pub valid_frames: Vec<String>,
    /// Where each clip's valid frames come from (`tensor[clip] frames a..b`).
    pub sources: Vec<String>,
    /// What the compared run changed (padded frames written, bucket, order, company).
    pub change: String,
}

/// The output element the minimal case moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MovedElement {
    /// Output name.
    pub output: String,
    /// Index of the element in the output (row-major).
    pub index: Vec<usize>,
    /// The reference value.
    #[serde(with = "crate::float")]
    pub expected: f64,
    /// The value in the compared run.
    #[serde(with = "crate::float")]
    pub actual: f64,
    /// Largest difference over the output's valid region.
    #[serde(with = "crate::float")]
    pub max_diff: f64,
    /// Elements of the valid region that differ.
    pub differing: usize,
}

impl FuzzRecord {
    /// An empty record (status pass) for `spec`.
    pub fn new(spec: impl Into<String>, version: impl Into<String>, started: String) -> Self {
        FuzzRecord {
            schema: FUZZ_SCHEMA.to_string(),
            status: Status::Pass,
            spec: spec.into(),
            parity_version: version.into(),
            compiler_revision: None,
            started,
            elapsed_s: 0.0,
            seed: 0,
            cases: 0,
            replayed: Vec::new(),
            invariants: Vec::new(),
            violations: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            targets: Vec::new(),
            triangulation: Vec::new(),
        }
    }

    fn failed(&self) -> bool {
        !self.violations.is_empty()
            || self.invariants.iter().any(|i| {
                i.status == Status::Fail
                    || i.control.as_ref().is_some_and(|c| !c.fired)
                    // Targets whose outputs differ beyond the invariant's tolerance.
                    || i.vs_first.as_ref().is_some_and(|c| c.status == Status::Fail)
            })
    }

    /// error when anything errored, fail on a violation or a silent control, else pass.
    pub fn derived_status(&self) -> Status {
        if !self.errors.is_empty() {
            Status::Error
        } else if self.failed() {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// 0 pass, 1 a violation, 2 input error, 3 execution error (2 over 3 over 1).
    pub fn exit_code(&self) -> ExitCode {
        let fail = self.failed().then_some(ExitCode::Fail);
        ExitCode::combine(self.errors.iter().map(ErrorRecord::exit_code).chain(fail))
    }
}

/// One invariant's cases on a later target against the same cases on the
/// run's first target: each case's reference batch, compared over every
/// output's valid region under the invariant's tolerance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuzzCross {
    /// The target compared with (the run's first target).
    pub target: String,
    /// pass when every case's outputs agree within the tolerance.
    pub status: Status,
    /// Cases compared (those that ran on both targets).
    pub cases: usize,
    /// Largest difference over the compared cases.
    #[serde(with = "crate::float")]
    pub max_diff: f64,
    /// The first case whose outputs differ beyond the tolerance, by seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Its first element beyond the tolerance (expected: the first target's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<MovedElement>,
}

/// One target's side of a triangulated invariant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuzzTargetSide {
    /// The target's name.
    pub target: String,
    /// The invariant's status on it (skipped when it did not run there).
    pub status: Status,
    /// The seed of its violation, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Against the first target (absent on the first target itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<Status>,
}

/// One invariant whose outcome is not the same clean pass on every target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FuzzTriangulationRow {
    /// The invariant.
    pub invariant: String,
    /// Which side is off.
    pub label: TriangulationLabel,
    /// The targets on which it fails (or whose outputs leave the first
    /// target's), in run order.
    pub off: Vec<String>,
    /// Every target's side, in run order.
    pub targets: Vec<FuzzTargetSide>,
}

impl FuzzTriangulationRow {
    /// One sentence: what the label rests on.
    pub fn explain(&self) -> String {
        let names = |pick: &dyn Fn(&FuzzTargetSide) -> bool| {
            crate::triangulation_row::names_where(&self.targets, |t| t.target.as_str(), pick)
        };
        let all = names(&|_| true);
        match self.label {
            TriangulationLabel::BackendSpecific => format!(
                "{} violate{} it, {} keep{} it: the backend, not the port",
                names(&|t| t.status == Status::Fail),
                if self.off.len() == 1 { "s" } else { "" },
                names(&|t| t.status == Status::Pass),
                if self.targets.iter().filter(|t| t.status == Status::Pass).count() == 1 {
                    "s"
                } else {
                    ""
                }
            ),
            TriangulationLabel::Port => format!(
                "every target ({all}) violates it on the same case and their outputs agree: the port"
            ),
            // Fuzz invariants compare production with itself: no oracle to blame.
            TriangulationLabel::Oracle => format!("every target ({all}) sides against the oracle"),
            TriangulationLabel::Undetermined => {
                if self.targets.iter().all(|t| t.status == Status::Pass) {
                    format!(
                        "every target ({all}) keeps it, but {} compute{} outputs beyond its tolerance of the first target's: a backend differs, which one needs the oracle (`parity check --target`)",
                        self.off.join(", "),
                        if self.off.len() == 1 { "s" } else { "" }
                    )
                } else {
                    format!(
                        "every target ({all}) violates it, on different cases or with different outputs: the port and a backend may both be wrong"
                    )
                }
            }
            TriangulationLabel::Incomplete => format!(
                "not every target has a result ({} did not): nothing to triangulate",
                names(&|t| !matches!(t.status, Status::Pass | Status::Fail))
            ),
        }
    }
}
