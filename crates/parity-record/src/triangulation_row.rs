//! The vocabulary of triangulation: which side is off for one output
//! ([`TriangulationLabel`]) and what a run record carries for it
//! ([`TriangulationRow`]). Deriving the rows from a run record happens above
//! the record, in `triangulation.rs`.

use crate::common::{Mode, Status};
use serde::{Deserialize, Serialize};

/// One output of a later target compared with the first target's, under the
/// output's own criteria and mask (the oracle's tolerance between two backends).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossTarget {
    /// The target compared with (the run's first target).
    pub target: String,
    /// pass when every criterion held between the two targets' outputs.
    pub status: Status,
    /// Largest |this target - that target|.
    #[serde(with = "crate::float")]
    pub max_abs: f64,
    /// Root mean square of the difference.
    #[serde(with = "crate::float")]
    pub rms: f64,
    /// Largest ULP distance (null when not a float).
    pub max_ulp: Option<u64>,
    /// allclose violations plus NaN/Inf mismatches.
    pub mismatches: u64,
    /// Unmasked elements compared.
    pub count: u64,
}

/// Which side is off, for one output over the run's targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriangulationLabel {
    /// At least one target matches the oracle and another does not: that
    /// backend's codegen or runtime is wrong, not the port.
    BackendSpecific,
    /// Every target misses the oracle, and the targets agree with each other:
    /// the port (the program every backend compiles) is wrong.
    Port,
    /// Every target misses the oracle, and the f64 truth sides with
    /// production on every target: the oracle is wrong.
    Oracle,
    /// Every target misses the oracle and the targets also disagree with each
    /// other beyond the tolerance: both the port and a backend may be wrong.
    Undetermined,
    /// A target errored or did not run this output: nothing to triangulate.
    Incomplete,
}

/// The label of one item (a token case, a served request) over several
/// targets: `incomplete` when some target errored or did not run it,
/// `backend-specific` when some target passes, else `undetermined` when the
/// targets disagree with each other, `oracle` when a truth sides with
/// production on every target, `port` otherwise.
pub fn label_by_status(
    statuses: &[Status],
    targets_agree: bool,
    truth_sides_with_production: bool,
) -> TriangulationLabel {
    if statuses
        .iter()
        .any(|s| matches!(s, Status::Error | Status::Skipped))
    {
        TriangulationLabel::Incomplete
    } else if statuses.contains(&Status::Pass) {
        TriangulationLabel::BackendSpecific
    } else if !targets_agree {
        TriangulationLabel::Undetermined
    } else if truth_sides_with_production {
        TriangulationLabel::Oracle
    } else {
        TriangulationLabel::Port
    }
}

/// The names of the `sides` that `pick` keeps, comma-separated, for the
/// labels' one-line explanations.
pub fn names_where<T>(sides: &[T], name: impl Fn(&T) -> &str, pick: impl Fn(&T) -> bool) -> String {
    sides
        .iter()
        .filter(|t| pick(t))
        .map(name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl TriangulationLabel {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            TriangulationLabel::BackendSpecific => "backend-specific",
            TriangulationLabel::Port => "port",
            TriangulationLabel::Oracle => "oracle",
            TriangulationLabel::Undetermined => "undetermined",
            TriangulationLabel::Incomplete => "incomplete",
        }
    }
}

/// One target's side of a triangulated output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriangulationTarget {
    /// The target's name.
    pub target: String,
    /// Its status against the oracle (skipped when it did not run this output).
    pub status: Status,
    /// Its max |production - oracle|, when measured.
    #[serde(default, with = "crate::float::option")]
    pub max_abs: Option<f64>,
    /// Against the first target (absent on the first target itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<Status>,
    /// RMS of production and oracle against the f64 truth, when one was given:
    /// `[production, oracle]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_f64: Option<[f64; 2]>,
}

/// One output that failed on at least one target, labelled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriangulationRow {
    /// Stage name.
    pub stage: String,
    /// Case name.
    pub case: String,
    /// Isolated or chained.
    pub mode: Mode,
    /// Output name.
    pub output: String,
    /// Which side is off.
    pub label: TriangulationLabel,
    /// The targets that are off (fail against the oracle), in run order.
    pub off: Vec<String>,
    /// Every target's side, in run order.
    pub targets: Vec<TriangulationTarget>,
}

impl TriangulationRow {
    /// One sentence: what the label rests on.
    pub fn explain(&self) -> String {
        let names = |pick: &dyn Fn(&TriangulationTarget) -> bool| {
            names_where(&self.targets, |t| t.target.as_str(), pick)
        };
        match self.label {
            TriangulationLabel::BackendSpecific => format!(
                "{} off, {} match{} the oracle: the backend, not the port",
                names(&|t| t.status == Status::Fail),
                names(&|t| t.status == Status::Pass),
                if self.targets.iter().filter(|t| t.status == Status::Pass).count() == 1 {
                    "es"
                } else {
                    ""
                }
            ),
            TriangulationLabel::Port => format!(
                "every target ({}) misses the oracle and they agree with each other: the port",
                names(&|_| true)
            ),
            TriangulationLabel::Oracle => format!(
                "every target ({}) misses the oracle, and the f64 truth is nearer to production on each: the oracle",
                names(&|_| true)
            ),
            TriangulationLabel::Undetermined => format!(
                "every target ({}) misses the oracle and they disagree with each other: the port and a backend may both be wrong",
                names(&|_| true)
            ),
            TriangulationLabel::Incomplete => format!(
                "not every target has a result ({} did not): nothing to triangulate",
                names(&|t| !matches!(t.status, Status::Pass | Status::Fail))
            ),
        }
    }
}
