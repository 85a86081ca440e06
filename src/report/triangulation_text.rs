//! The triangulation block of a run over several targets, as text lines for
//! the terminal and Markdown (the HTML page has its own section).

use parity_record::{RunRecord, TriangulationLabel, TriangulationRow};

/// Most triangulated outputs listed one by one; the rest are counted.
pub const LISTED: usize = 12;

/// The labels in the order the summary counts them.
const LABELS: [TriangulationLabel; 5] = [
    TriangulationLabel::BackendSpecific,
    TriangulationLabel::Port,
    TriangulationLabel::Oracle,
    TriangulationLabel::Undetermined,
    TriangulationLabel::Incomplete,
];

/// `triangulation over cpu, vulkan: 1 backend-specific, 0 port, ...`; None
/// for a run on one target.
pub fn headline(record: &RunRecord) -> Option<String> {
    if !record.is_multi_target() {
        return None;
    }
    let names: Vec<&str> = record.targets.iter().map(|t| t.name.as_str()).collect();
    let counts: Vec<String> = LABELS
        .iter()
        .map(|l| {
            let n = record
                .triangulation
                .iter()
                .filter(|r| r.label == *l)
                .count();
            format!("{n} {}", l.name())
        })
        .collect();
    Some(format!(
        "triangulation over {}: {} failing output{} ({})",
        names.join(", "),
        record.triangulation.len(),
        if record.triangulation.len() == 1 {
            ""
        } else {
            "s"
        },
        counts.join(", ")
    ))
}

/// One row: `backend-specific: `lm_layer_0` output `out` (two_clips, isolated): vulkan off, cpu matches the oracle; max_abs cpu 5.05e-5, vulkan 2.42e4`.
pub fn row_line(r: &TriangulationRow) -> String {
    let sides: Vec<String> = r
        .targets
        .iter()
        .map(|t| match t.max_abs {
            Some(v) => format!("{} {}", t.target, super::table::num(v)),
            None => format!("{} {}", t.target, t.status.name()),
        })
        .collect();
    format!(
        "{}: `{}` output `{}` ({}, {}): {}; max_abs {}",
        r.label.name(),
        r.stage,
        r.output,
        r.case,
        r.mode.name(),
        r.explain(),
        sides.join(", ")
    )
}

/// The rows worth listing first: isolated before chained (the record's
/// order), at most [`LISTED`]; and how many were left out.
pub fn listed(record: &RunRecord) -> (&[TriangulationRow], usize) {
    let all = &record.triangulation;
    let n = all.len().min(LISTED);
    (&all[..n], all.len() - n)
}
