//! The HTML report: one self-contained page (inline CSS, JS and SVG; a
//! Content-Security-Policy that forbids every network fetch and any script
//! but the page's own) rendered from run and bisect records only.
//!
//! Layout: verdict and first divergence; the overview grid (stages by
//! cases, coloured by headroom); error against pipeline depth; a sortable,
//! filterable table of every stage output and mode, one row per stage until
//! a stage is expanded (or a filter or sort shows the rows); ULP
//! histograms; error heatmaps of failing outputs; the `vs_f64` arbitration;
//! the bisect result; provenance. Large runs are summarised (a bounded
//! number of histograms and heatmaps) and the page says what it left out.

mod bisect;
mod charts;
mod details;
pub(crate) mod dispatches;
mod error_page;
pub mod esc;
mod fuzz;
mod history;
mod overview;
mod set;
pub use set::RecordSet;
mod table;
mod tokens;
mod triangulation;

use esc::{esc, json_script};
use parity_record::{
    AnyRecord, BaselineRecord, BisectRecord, FuzzRecord, HistoryRecord, Localisation, Mode,
    RunRecord, ServingRecord, Status, TokensRecord,
};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Most ULP histograms drawn per run (failing outputs first).
pub const MAX_HISTOGRAMS: usize = 12;
/// Most error heatmaps drawn per run (the first divergence first).
pub const MAX_HEATMAPS: usize = 4;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// What one page shows: any number of run records and bisect records.
#[derive(Clone, Copy, Debug, Default)]
pub struct HtmlInput<'a> {
    /// Run records (`parity.run-record/1`), each with its own section.
    pub runs: &'a [RunRecord],
    /// Bisect records (`parity.bisect/1`).
    pub bisects: &'a [BisectRecord],
    /// Tokens records (`parity.tokens/1`), each with its step-stage run.
    pub tokens: &'a [TokensRecord],
    /// Baseline comparisons (`parity.baseline/1`).
    pub baselines: &'a [BaselineRecord],
    /// Serving records (`parity.serving/1`), each with its timeline.
    pub servings: &'a [ServingRecord],
    /// Mask fuzzer records (`parity.fuzz/1`).
    pub fuzzes: &'a [FuzzRecord],
    /// Histories of saved runs (`parity.history/1`).
    pub histories: &'a [HistoryRecord],
    /// Dispatch diffs between two targets (`parity.dispatches/1`).
    pub dispatches: &'a [parity_record::DispatchesRecord],
}

/// The HTML page of one record, behind the [`super::Renderer`] trait (several
/// records on one page: [`render`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Html;

impl super::Renderer for Html {
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, super::ReportError> {
        let page = match record {
            AnyRecord::Run(r) => render(&HtmlInput {
                runs: std::slice::from_ref(r),
                ..HtmlInput::default()
            }),
            AnyRecord::Bisect(b) => render(&HtmlInput {
                bisects: std::slice::from_ref(b),
                ..HtmlInput::default()
            }),
            AnyRecord::Tokens(t) => render(&HtmlInput {
                tokens: std::slice::from_ref(&**t),
                ..HtmlInput::default()
            }),
            AnyRecord::Baseline(b) => render(&HtmlInput {
                baselines: std::slice::from_ref(b),
                ..HtmlInput::default()
            }),
            AnyRecord::Fuzz(f) => render(&HtmlInput {
                fuzzes: std::slice::from_ref(&**f),
                ..HtmlInput::default()
            }),
            AnyRecord::History(h) => render(&HtmlInput {
                histories: std::slice::from_ref(&**h),
                ..HtmlInput::default()
            }),
            AnyRecord::Dispatches(d) => render(&HtmlInput {
                dispatches: std::slice::from_ref(&**d),
                ..HtmlInput::default()
            }),
            AnyRecord::Serving(s) => render(&HtmlInput {
                servings: std::slice::from_ref(&**s),
                ..HtmlInput::default()
            }),
            AnyRecord::Compare(c) => page(
                "parity compare",
                &format!(
                    "<h1>parity compare</h1><pre class=\"code\">{}</pre>",
                    esc(&serde_json::to_string_pretty(c).unwrap_or_default())
                ),
            ),
        };
        Ok(page.into_bytes())
    }
}

/// Renders the page.
pub fn render(input: &HtmlInput) -> String {
    let mut body = String::new();
    let title = match input.runs.first() {
        Some(r) => format!("parity {}: {}", r.status.name().to_uppercase(), r.spec),
        None => match (input.bisects.first(), input.tokens.first()) {
            (Some(b), _) => format!("parity bisect {}", b.status.name().to_uppercase()),
            (None, Some(t)) => format!(
                "parity tokens {}: {}",
                t.status.name().to_uppercase(),
                t.spec
            ),
            (None, None) => match (input.fuzzes, input.servings, input.histories) {
                ([f], [], _) => {
                    format!("parity fuzz {}: {}", f.status.name().to_uppercase(), f.spec)
                }
                ([], [_], _) => "parity serve".to_string(),
                ([], [], []) if input.dispatches.len() == 1 => format!(
                    "parity dispatches {}: {} vs {}",
                    input.dispatches[0].status.name().to_uppercase(),
                    input.dispatches[0].reference,
                    input.dispatches[0].target
                ),
                ([], [], [h]) => format!(
                    "parity history {}: {}",
                    h.status.name().to_uppercase(),
                    h.spec
                ),
                _ => "parity report".to_string(),
            },
        },
    };
    let _ = write!(body, "<h1>{}</h1>", esc(&title));
    // A baseline comparison first: it is what decides a ratchet's verdict.
    for b in input.baselines {
        super::baseline::html(&mut body, b);
    }
    for (i, run) in input.runs.iter().enumerate() {
        run_section(&mut body, run, i);
    }
    for (i, b) in input.bisects.iter().enumerate() {
        let _ = write!(body, "<section id=\"bisect-{i}\"><h2>Bisect</h2>");
        bisect::section(&mut body, b);
        body.push_str("</section>");
    }
    for (i, t) in input.tokens.iter().enumerate() {
        tokens::section(&mut body, t);
        if let Some(l) = &t.localisation {
            let _ = write!(
                body,
                "<h2>Step-stage run of <code>{}</code> (the localised step)</h2>",
                esc(&l.step_case)
            );
            run_section(&mut body, &l.run, input.runs.len() + i);
        }
    }
    for (i, s) in input.servings.iter().enumerate() {
        // The serving body brings its own heading (parity serve STATUS).
        let _ = write!(
            body,
            "<section class=\"serving\" id=\"serving-{i}\">{}</section>",
            super::serving_text::html(s)
        );
    }
    for (i, f) in input.fuzzes.iter().enumerate() {
        fuzz::section(&mut body, f, i);
    }
    for (i, h) in input.histories.iter().enumerate() {
        history::section(&mut body, h, i);
    }
    for (i, d) in input.dispatches.iter().enumerate() {
        dispatches::section(&mut body, d, i);
    }
    if input.runs.is_empty()
        && input.bisects.is_empty()
        && input.baselines.is_empty()
        && input.tokens.is_empty()
        && input.servings.is_empty()
        && input.fuzzes.is_empty()
        && input.histories.is_empty()
        && input.dispatches.is_empty()
    {
        body.push_str("<p>No records were given.</p>");
    }
    page(&title, &body)
}

/// The document around `body`: the CSP admits exactly the inline script's hash.
fn page(title: &str, body: &str) -> String {
    let hash = base64_std(&Sha256::digest(JS.as_bytes()));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{hash}'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>{}</title><style>{CSS}</style></head>\
         <body>{body}<script>{JS}</script></body></html>\n",
        esc(title)
    )
}

/// One run record: verdict, table, charts, arbitration, bisect, provenance.
fn run_section(out: &mut String, run: &RunRecord, i: usize) {
    let _ = write!(out, "<section class=\"run\" id=\"run-{i}\">");
    verdict(out, run);
    if run.stages.is_empty() && !run.errors.is_empty() {
        // An invalid spec (or a store that cannot be opened): nothing ran.
        error_page::render(out, run);
        out.push_str("</section>");
        return;
    }
    let rows = table::rows(run);
    let data = serde_json::json!({
        "rows": rows.len(),
        "status": run.status.name(),
        "first_divergence": run.first_divergence,
    });
    let _ = write!(
        out,
        "<script type=\"application/json\" class=\"parity-data\">{}</script>",
        json_script(&data)
    );
    // What a person wants first: where each stage stands against its
    // tolerance, case by case; then error against depth; then every row.
    overview::render(out, run);
    depth_section(out, run);
    triangulation::render(out, run);
    table::render(out, run, &rows);
    let mut omitted = Vec::new();
    details::histograms(out, run, &mut omitted);
    details::heatmaps(out, run, &mut omitted);
    details::arbitration(out, run);
    match &run.first_divergent_op {
        Some(Localisation::Op(op)) => {
            out.push_str("<h2>Localised operation (<code>parity check --bisect</code>)</h2>");
            bisect::op(out, op);
        }
        Some(Localisation::Region(r)) => {
            out.push_str("<h2>Localised region (<code>parity check --bisect</code>)</h2>");
            if let Some(line) = r.repair.as_ref().and_then(super::localised::ambiguity) {
                let _ = write!(out, "<p class=\"ambiguous\"><b>{}</b></p>", esc(&line));
            }
            bisect::region(out, &r.region);
            for n in &r.notes {
                let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
            }
        }
        None => {}
    }
    details::provenance(out, run);
    if !omitted.is_empty() {
        out.push_str("<h2>Left out of this page</h2><ul class=\"omitted\">");
        for line in omitted {
            let _ = write!(out, "<li>{}</li>", esc(&line));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

fn verdict(out: &mut String, run: &RunRecord) {
    let status = run.status.name();
    let (pass, fail, error, skipped) =
        run.stages.iter().fold((0, 0, 0, 0), |c, s| match s.status {
            Status::Pass => (c.0 + 1, c.1, c.2, c.3),
            Status::Fail => (c.0, c.1 + 1, c.2, c.3),
            Status::Error => (c.0, c.1, c.2 + 1, c.3),
            Status::Skipped => (c.0, c.1, c.2, c.3 + 1),
        });
    let _ = write!(
        out,
        "<div class=\"verdict {status}\"><span class=\"badge {status}\">{}</span> \
         {} stage runs: {pass} pass, {fail} fail, {error} error, {skipped} skipped \
         (exit code {})</div>",
        status.to_uppercase(),
        run.stages.len(),
        run.exit_code().code()
    );
    if let Some(shard) = &run.shard {
        let _ = write!(
            out,
            "<p class=\"note\">Shard {}/{}: only this shard's stage runs; the verdict and \
             first divergence below are this shard's (<code>parity report --merge</code> \
             gives the whole run's).</p>",
            shard.index, shard.count
        );
    }
    match &run.first_divergence {
        Some(d) => {
            let _ = write!(
                out,
                "<p class=\"first-divergence\" data-first-divergence>First divergence: stage \
                 <b>{}</b>, output <b>{}</b>, case {} ({}){}.</p>",
                esc(&d.stage),
                esc(&d.output),
                esc(&d.case),
                d.mode.name(),
                esc(&d.on_target())
            );
        }
        None => out.push_str("<p class=\"no-divergence\">No isolated divergence.</p>"),
    }
    for d in &run.chained_divergence {
        let _ = write!(
            out,
            "<p class=\"chained\">Chained, case {}: accumulated error first crosses its tolerance at \
             stage <b>{}</b>, output <b>{}</b>{}.</p>",
            esc(&d.case),
            esc(&d.stage),
            esc(&d.output),
            esc(&d.on_target())
        );
    }
    if !run.errors.is_empty() {
        out.push_str("<ul class=\"errors\">");
        for e in &run.errors {
            let _ = write!(
                out,
                "<li><b>{} error</b>: {}</li>",
                e.kind.name(),
                esc(&e.message)
            );
        }
        out.push_str("</ul>");
    }
}

fn depth_section(out: &mut String, run: &RunRecord) {
    let order = table::stage_order(run);
    let mut points: Vec<charts::DepthPoint> = order
        .iter()
        .map(|s| charts::DepthPoint {
            stage: s.to_string(),
            isolated: None,
            chained: None,
        })
        .collect();
    for s in &run.stages {
        let Some(d) = order.iter().position(|n| *n == s.name) else {
            continue;
        };
        for o in &s.outputs {
            let Some(r) = table::worst_ratio(o) else {
                continue;
            };
            let slot = match s.mode {
                Mode::Isolated => &mut points[d].isolated,
                Mode::Chained => &mut points[d].chained,
            };
            *slot = Some(slot.map_or(r, |v: f64| v.max(r)));
        }
    }
    let first = run
        .first_divergence
        .as_ref()
        .and_then(|d| order.iter().position(|n| *n == d.stage));
    out.push_str("<h2>Error against pipeline depth</h2>");
    if points
        .iter()
        .all(|p| p.isolated.is_none() && p.chained.is_none())
    {
        out.push_str("<p>No output was compared.</p>");
        return;
    }
    match charts::depth_chart(&points, first) {
        Ok(svg) => {
            let _ = write!(
                out,
                "<p class=\"note\">x: pipeline depth (stages in dependency order); y: per stage, the \
                 worst criterion's observed / threshold over every case and output (for \
                 cosine_min: (1 - cosine) / (1 - min); log scale; above 1 fails; 0 and \
                 infinity are drawn at the edges).</p><div class=\"chart\">{svg}</div>"
            );
        }
        Err(e) => {
            let _ = write!(out, "<p class=\"errors\">{}</p>", esc(&e));
        }
    }
}

/// Standard base64 with padding (for the CSP script hash).
fn base64_std(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        assert_eq!(base64_std(b""), "");
        assert_eq!(base64_std(b"f"), "Zg==");
        assert_eq!(base64_std(b"fo"), "Zm8=");
        assert_eq!(base64_std(b"foo"), "Zm9v");
        assert_eq!(base64_std(b"foobar"), "Zm9vYmFy");
    }
}
