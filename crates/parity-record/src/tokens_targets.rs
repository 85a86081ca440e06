//! Token triangulation: `parity tokens --target a,b` runs every token case
//! on each target, and each case that fails or errors on one labels which
//! side is off, as stage triangulation does ([`crate::triangulation`]): a
//! pure function of the record, so renderers and `parity report` re-derive it.

use crate::common::Status;
use crate::tokens::{TokenCaseRecord, TokensRecord};
pub use crate::tokens::{TokenTargetSide, TokenTriangulationRow};

/// Labels every case of a several-target tokens record (cases carry their
/// `target`) that fails or errors on at least one target; empty for a
/// record of one target.
pub fn triangulate_tokens(record: &TokensRecord) -> Vec<TokenTriangulationRow> {
    if record.targets.len() < 2 {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for c in &record.cases {
        if !names.contains(&c.case.as_str()) {
            names.push(&c.case);
        }
    }
    let mut rows = Vec::new();
    for name in names {
        let on: Vec<(&str, Option<&TokenCaseRecord>)> = record
            .targets
            .iter()
            .map(|t| {
                let case = record
                    .cases
                    .iter()
                    .find(|c| c.case == name && c.target.as_deref() == Some(t.as_str()));
                (t.as_str(), case)
            })
            .collect();
        let sides: Vec<TokenTargetSide> = on
            .iter()
            .map(|(t, c)| TokenTargetSide {
                target: t.to_string(),
                status: c.map_or(Status::Skipped, |c| c.status),
                step: c.and_then(|c| c.first_divergent_token.as_ref().map(|d| d.step)),
                production_token: c
                    .and_then(|c| c.first_divergent_token.as_ref().map(|d| d.production_token)),
                verdict: c.and_then(|c| c.first_divergent_token.as_ref().map(|d| d.verdict)),
            })
            .collect();
        if sides.iter().all(|s| s.status == Status::Pass) {
            continue;
        }
        let cases: Vec<&TokenCaseRecord> = on.iter().filter_map(|(_, c)| *c).collect();
        let statuses: Vec<Status> = sides.iter().map(|s| s.status).collect();
        let truth_sides_with_production = cases.iter().all(|c| {
            c.first_divergent_token
                .as_ref()
                .is_some_and(|d| d.truth_token == Some(d.production_token))
        });
        let label = crate::triangulation::label_by_status(
            &statuses,
            agree(&cases),
            truth_sides_with_production,
        );
        rows.push(TokenTriangulationRow {
            case: name.to_string(),
            label,
            off: sides
                .iter()
                .filter(|s| s.status == Status::Fail)
                .map(|s| s.target.clone())
                .collect(),
            targets: sides,
        });
    }
    rows
}

/// Whether every target produced the same tokens (greedy and teacher-forced).
fn agree(cases: &[&TokenCaseRecord]) -> bool {
    cases.windows(2).all(|w| {
        w[0].greedy_tokens == w[1].greedy_tokens
            && w[0].teacher_forced_tokens == w[1].teacher_forced_tokens
    })
}

#[cfg(test)]
#[path = "tokens_targets_tests.rs"]
mod tests;
