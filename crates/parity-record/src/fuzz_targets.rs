//! Fuzz triangulation: `parity fuzz --target a,b` runs every invariant's
//! cases on each target and compares each case's outputs between the
//! targets; an invariant whose outcome differs between them (one holds it,
//! another fails or errors), or whose outputs differ beyond its tolerance,
//! is labelled with the vocabulary of stage triangulation
//! ([`crate::triangulation::TriangulationLabel`]). A pure function of the
//! record, so renderers and `parity report` re-derive it.

use crate::common::Status;
use crate::fuzz::{FuzzRecord, InvariantRecord, MovedElement};
use crate::triangulation::TriangulationLabel;
use serde::{Deserialize, Serialize};

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
            crate::triangulation::names_where(&self.targets, |t| t.target.as_str(), pick)
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

/// Labels every invariant of a several-target fuzz record (its invariants
/// carry their `target`) that fails, errors, or leaves the first target's
/// outputs on some target; empty for a record of one target. An invariant
/// skipped on every target (the shapes it needs are not compiled) is not listed.
pub fn triangulate_fuzz(record: &FuzzRecord) -> Vec<FuzzTriangulationRow> {
    if record.targets.len() < 2 {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for i in &record.invariants {
        if !names.contains(&i.name.as_str()) {
            names.push(&i.name);
        }
    }
    let mut rows = Vec::new();
    for name in names {
        let on: Vec<Option<&InvariantRecord>> = record
            .targets
            .iter()
            .map(|t| {
                record
                    .invariants
                    .iter()
                    .find(|i| i.name == name && i.target.as_deref() == Some(t.as_str()))
            })
            .collect();
        let sides: Vec<FuzzTargetSide> = record
            .targets
            .iter()
            .zip(&on)
            .map(|(t, i)| FuzzTargetSide {
                target: t.clone(),
                status: i.map_or(Status::Skipped, |i| i.status),
                seed: record
                    .violations
                    .iter()
                    .find(|v| v.invariant == name && v.target.as_deref() == Some(t.as_str()))
                    .map(|v| v.seed),
                vs_first: i.and_then(|i| i.vs_first.as_ref()).map(|c| c.status),
            })
            .collect();
        let apart = sides.iter().any(|s| s.vs_first == Some(Status::Fail));
        if sides.iter().all(|s| s.status == Status::Skipped)
            || (sides.iter().all(|s| s.status == Status::Pass) && !apart)
        {
            continue;
        }
        let label = if sides
            .iter()
            .any(|s| !matches!(s.status, Status::Pass | Status::Fail))
        {
            TriangulationLabel::Incomplete
        } else if sides.iter().any(|s| s.status == Status::Pass)
            && sides.iter().any(|s| s.status == Status::Fail)
        {
            TriangulationLabel::BackendSpecific
        } else if sides.iter().all(|s| s.status == Status::Fail)
            && !apart
            && sides.windows(2).all(|w| w[0].seed == w[1].seed)
        {
            TriangulationLabel::Port
        } else {
            TriangulationLabel::Undetermined
        };
        let everywhere_pass = sides.iter().all(|s| s.status == Status::Pass);
        let off = sides
            .iter()
            .filter(|s| {
                if everywhere_pass {
                    s.vs_first == Some(Status::Fail)
                } else {
                    s.status == Status::Fail
                }
            })
            .map(|s| s.target.clone())
            .collect();
        rows.push(FuzzTriangulationRow {
            invariant: name.to_string(),
            label,
            off,
            targets: sides,
        });
    }
    rows
}

#[cfg(test)]
#[path = "fuzz_targets_tests.rs"]
mod tests;
