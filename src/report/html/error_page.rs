//! The page of a run that stopped before any stage (an invalid spec, an
//! oracle store that cannot be opened): each error with its file, line and
//! column, and no table or charts that would suggest a verdict.

use super::esc::esc;
use parity_record::RunRecord;
use std::fmt::Write as _;

/// A run that stopped before any stage: each error with where it is, and what to do.
pub fn render(out: &mut String, run: &RunRecord) {
    out.push_str(
        "<h2>Nothing ran</h2><p class=\"note\" data-error-page>The errors above stopped the \
         run before any stage: no output was compared and no verdict on parity exists. \
         Fix them and run again.</p><table class=\"error-locations\"><thead><tr><th>kind</th>\
         <th>file</th><th>line</th><th>column</th><th>message</th></tr></thead><tbody>",
    );
    for e in &run.errors {
        let at = e.location.as_deref().cloned().unwrap_or_default();
        let n = |x: Option<u64>| x.map_or(String::new(), |x| x.to_string());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            e.kind.name(),
            esc(at.file.as_deref().unwrap_or(&run.spec)),
            n(at.line),
            n(at.col),
            esc(&e.message)
        );
    }
    out.push_str("</tbody></table>");
    let _ = write!(
        out,
        "<p class=\"note\">spec {}, parity {}, started {}.</p>",
        esc(&run.spec),
        esc(&run.parity_version),
        esc(&run.started)
    );
}
