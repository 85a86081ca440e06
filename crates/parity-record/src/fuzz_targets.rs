//! Fuzz triangulation: `parity fuzz --target a,b` runs every invariant's
//! cases on each target and compares each case's outputs between the
//! targets; an invariant whose outcome differs between them (one holds it,
//! another fails or errors), or whose outputs differ beyond its tolerance,
//! is labelled with the vocabulary of stage triangulation
//! ([`crate::triangulation::TriangulationLabel`]). A pure function of the
//! record, so renderers and `parity report` re-derive it.

use crate::common::Status;
pub use crate::fuzz::{FuzzCross, FuzzTargetSide, FuzzTriangulationRow};
use crate::fuzz::{FuzzRecord, InvariantRecord};
use crate::triangulation::TriangulationLabel;

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
