//! The triangulation section of a run over several targets: which side is
//! off for every output that fails on at least one target.

use super::esc::esc;
use super::table::num;
use parity_record::RunRecord;
use std::fmt::Write as _;

/// Renders the section (nothing for a run on one target).
pub fn render(out: &mut String, run: &RunRecord) {
    let Some(headline) = crate::report::triangulation_text::headline(run) else {
        return;
    };
    let _ = write!(
        out,
        "<h2>Triangulation</h2><p class=\"triangulation-summary\">{}</p>",
        esc(&headline)
    );
    if run.triangulation.is_empty() {
        out.push_str("<p class=\"note\">Every output passes on every target.</p>");
        return;
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"triangulation\"><thead><tr><th>label</th>\
         <th>stage</th><th>output</th><th>case</th><th>mode</th>",
    );
    for t in &run.targets {
        let _ = write!(
            out,
            "<th>{} ({} on {})</th>",
            esc(&t.name),
            esc(&t.backend),
            esc(&t.device)
        );
    }
    out.push_str("<th>why</th></tr></thead><tbody>");
    for r in &run.triangulation {
        let _ = write!(
            out,
            "<tr class=\"{0}\" data-label=\"{0}\"><td><span class=\"badge {0}\">{0}</span></td>\
             <td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td>",
            r.label.name(),
            esc(&r.stage),
            esc(&r.output),
            esc(&r.case),
            r.mode.name()
        );
        for t in &r.targets {
            let vs = match t.vs_first {
                Some(s) => format!(", vs {}: {}", esc(&run.targets[0].name), s.name()),
                None => String::new(),
            };
            let abs = t
                .max_abs
                .map(|v| format!(" max_abs {}", num(v)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<td class=\"{}\" data-target=\"{}\">{}{abs}{vs}</td>",
                t.status.name(),
                esc(&t.target),
                t.status.name()
            );
        }
        let _ = write!(out, "<td class=\"why\">{}</td></tr>", esc(&r.explain()));
    }
    out.push_str("</tbody></table></div>");
}
