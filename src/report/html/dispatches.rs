//! The dispatch section of the HTML report (`parity.dispatches/1`): per
//! stage, the aligned dispatch sequence with the first divergent dispatch
//! marked, and its operations.

use super::esc::esc;
use crate::report::dispatches_text::{num, ops_text, origin};
use parity_record::{DispatchStage, DispatchesRecord, Status};
use std::fmt::Write as _;

/// One section per dispatches record; `i` numbers it on a page with several.
pub fn section(out: &mut String, r: &DispatchesRecord, i: usize) {
    let status = r.status.name();
    let _ = write!(
        out,
        "<section class=\"dispatches\" id=\"dispatches-{i}\"><h2>Dispatches: <code>{}</code> \
         (reference) vs <code>{}</code></h2>\
         <div class=\"verdict {status}\"><span class=\"badge {status}\">{}</span> \
         {} stage run(s), {} with a divergent dispatch (exit code {}), {:.1} s</div>",
        esc(&r.reference),
        esc(&r.target),
        status.to_uppercase(),
        r.stages.len(),
        r.stages.iter().filter(|s| s.status == Status::Fail).count(),
        r.exit_code().code(),
        r.elapsed_s
    );
    for (k, s) in r.stages.iter().enumerate() {
        stage(out, r, s, i, k);
    }
    for e in &r.errors {
        let _ = write!(out, "<p class=\"error\">{}</p>", esc(&e.message));
    }
    for n in &r.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    out.push_str("</section>");
}

/// One stage's sequence (also the dispatch evidence of a bisect section).
pub fn stage(out: &mut String, r: &DispatchesRecord, s: &DispatchStage, i: usize, k: usize) {
    let st = s.status.name();
    let _ = write!(
        out,
        "<h3 id=\"dispatches-{i}-{k}\"><span class=\"badge {st}\">{}</span> {} <small>case {}</small></h3>\
         <p>{} dispatch(es) on {}, {} on {}; {} aligned, {} unaligned. Judged by {}.</p>",
        st.to_uppercase(),
        esc(&s.stage),
        esc(&s.case),
        s.reference_count,
        esc(&r.reference),
        s.target_count,
        esc(&r.target),
        s.dispatches.len(),
        s.unaligned.len(),
        esc(&s.criteria)
    );
    if let Some(d) = s.divergent() {
        let _ = write!(
            out,
            "<div class=\"verdict fail\">First divergent dispatch: <b>#{} <code>{}</code></b>: {}.<br>\
             Operations: {}</div>",
            d.ordinal,
            esc(&d.key),
            esc(&origin(d)),
            esc(&ops_text(d, 12))
        );
        if let Some(i) = &s.inside {
            let what = match &i.op {
                Some(op) => format!(
                    "#{} {} @ {} differs first (max |Δ| {}). ",
                    op.index,
                    op.name,
                    op.loc,
                    num(i.max_abs)
                ),
                None => String::new(),
            };
            let _ = write!(
                out,
                "<p>Inside the dispatch: {}{}</p>",
                esc(&what),
                esc(&i.note)
            );
            if let Some(v) = &i.vs_f64 {
                let _ = write!(
                    out,
                    "<p class=\"vs-f64\">{}</p>",
                    esc(&crate::report::dispatches_text::vs_f64_text(
                        v,
                        &r.reference,
                        &r.target
                    ))
                );
            }
        }
    }
    out.push_str(
        "<table class=\"dispatch-seq\"><thead><tr><th>#</th><th>dispatch</th><th>aligned by</th>\
         <th>status</th><th>inputs max |Δ|</th><th>outputs max |Δ|</th><th>operations</th></tr></thead><tbody>",
    );
    for (n, d) in s.dispatches.iter().enumerate() {
        let first = s.first_divergent == Some(n);
        let worst = d
            .outputs
            .iter()
            .filter_map(|o| o.max_abs)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let _ = write!(
            out,
            "<tr class=\"{}{}\"><td>{}</td><td><code>{}</code></td><td>{}</td>\
             <td><span class=\"badge {}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            d.status.name(),
            if first { " first-divergent" } else { "" },
            d.ordinal,
            esc(&d.key),
            esc(&d.aligned_by),
            d.status.name(),
            if first {
                "FIRST DIVERGENT"
            } else {
                d.status.name()
            },
            num(Some(d.inputs_max_abs)),
            num(worst),
            esc(&ops_text(d, 4))
        );
    }
    out.push_str("</tbody></table>");
    if !s.unaligned.is_empty() {
        out.push_str("<p>Unaligned: ");
        let items: Vec<String> = s
            .unaligned
            .iter()
            .map(|u| {
                format!(
                    "{} #{} <code>{}</code>",
                    esc(&u.target),
                    u.ordinal,
                    esc(&u.key)
                )
            })
            .collect();
        out.push_str(&items.join(", "));
        out.push_str("</p>");
    }
    for f in s.fidelity.iter().filter(|f| !f.bit_identical) {
        let _ = write!(
            out,
            "<p class=\"note\">Tracing changed {}'s results (max |Δ| {}).</p>",
            esc(&f.target),
            num(Some(f.max_abs))
        );
    }
}
