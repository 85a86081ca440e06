//! A tokens run over several targets as lines: each labelled case with what
//! its label rests on, and per target where its first mismatch is. Text,
//! Markdown and HTML share them.

use parity_record::{Status, TokensRecord};

/// `token triangulation (cpu, vulkan):` then one line per labelled case;
/// empty for a run on one target.
pub fn lines(r: &TokensRecord) -> Vec<String> {
    if r.targets.len() < 2 {
        return Vec::new();
    }
    let mut out = vec![format!("token triangulation ({}):", r.targets.join(", "))];
    if r.triangulation.is_empty() {
        out.push("  every case passes on every target".to_string());
    }
    for row in &r.triangulation {
        let sides: Vec<String> = row
            .targets
            .iter()
            .map(|t| match (t.status, t.step, t.production_token) {
                (Status::Fail, Some(step), Some(token)) => {
                    format!("{} fail at step {step} (token {token})", t.target)
                }
                (status, _, _) => format!("{} {}", t.target, status.name()),
            })
            .collect();
        out.push(format!(
            "  case {}: {} ({}): {}",
            row.case,
            row.label.name(),
            sides.join("; "),
            row.explain()
        ));
    }
    out
}

/// ` @target` after a case name in a run over several targets, else empty.
pub fn at(target: Option<&str>) -> String {
    target.map(|t| format!(" @{t}")).unwrap_or_default()
}
