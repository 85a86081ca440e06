//! The report's main table: one row per stage output, case and mode (a
//! stage that errored or was skipped gets one row), isolated beside chained.
//! Cells carry `data-v` sort keys for the page's script.

use super::esc::esc;
use crate::report::headroom;
use crate::report::stage_lines::StageLine;
use parity_record::{Divergence, Mode, OutputRecord, RunRecord, StageRecord, Status};
use std::fmt::Write as _;

/// One table row.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    /// Position of the stage in dependency order.
    pub depth: usize,
    /// The stage run.
    pub stage: &'a StageRecord,
    /// The output, or `None` for a stage with no compared output.
    pub output: Option<&'a OutputRecord>,
}

/// Stage names in the order the run executed them (dependency order).
pub fn stage_order(run: &RunRecord) -> Vec<&str> {
    let mut order: Vec<&str> = Vec::new();
    for s in &run.stages {
        if !order.contains(&s.name.as_str()) {
            order.push(&s.name);
        }
    }
    order
}

/// Every row, ordered by depth, target (a stage's rows on one target stay
/// together), case, output, then isolated before chained.
pub fn rows(run: &RunRecord) -> Vec<Row<'_>> {
    let order = stage_order(run);
    let case_order: Vec<&str> = run.stages.iter().fold(Vec::new(), |mut v, s| {
        if !v.contains(&s.case.as_str()) {
            v.push(&s.case);
        }
        v
    });
    let target_order: Vec<&str> = run.stages.iter().fold(Vec::new(), |mut v, s| {
        if !v.contains(&s.target.as_str()) {
            v.push(&s.target);
        }
        v
    });
    // Sort key: (stage depth, target), case, output, mode.
    type Keyed<'r> = ((usize, usize), usize, usize, Mode, Row<'r>);
    let mut rows: Vec<Keyed> = Vec::new();
    for s in &run.stages {
        let depth = order.iter().position(|n| *n == s.name).unwrap_or(0);
        let target = target_order.iter().position(|t| *t == s.target);
        let group = (depth, target.unwrap_or(0));
        let case = case_order.iter().position(|c| *c == s.case).unwrap_or(0);
        let row = |output| Row {
            depth,
            stage: s,
            output,
        };
        if s.outputs.is_empty() {
            rows.push((group, case, 0, s.mode, row(None)));
        }
        for (k, o) in s.outputs.iter().enumerate() {
            rows.push((group, case, k, s.mode, row(Some(o))));
        }
    }
    rows.sort_by_key(|r| (r.0, r.1, r.2, r.3));
    rows.into_iter().map(|r| r.4).collect()
}

/// The tightest criterion's error as a fraction of its limit
/// ([`headroom::ratio`]: a lower bound such as `cosine_min` by its distance
/// from 1, so that above 1 fails for every criterion).
pub fn worst_ratio(o: &OutputRecord) -> Option<f64> {
    headroom::tightest(o).map(|(_, r)| r)
}

/// Formats a float compactly (as the terminal table does).
pub fn num(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        crate::report::table::num(x)
    }
}

/// Writes the filter bar and the table: each stage's summary row (its worst
/// output over cases and modes), then its rows, which the page's script
/// keeps collapsed until the stage is expanded, a filter is typed or a
/// column sorted (then every matching row shows, as one flat table).
pub fn render(out: &mut String, run: &RunRecord, rows: &[Row]) {
    out.push_str(
        "<h2>Every stage output and mode</h2><div class=\"filters\">\
         <input type=\"search\" class=\"filter-text\" placeholder=\"filter: stage, output, case...\" aria-label=\"filter rows\">\
         <select class=\"filter-status\" aria-label=\"status\"><option value=\"\">any status</option>\
         <option>pass</option><option>fail</option><option>error</option><option>skipped</option></select>\
         <select class=\"filter-mode\" aria-label=\"mode\"><option value=\"\">both modes</option>\
         <option>isolated</option><option>chained</option></select> \
         <button type=\"button\" class=\"expand-all\">expand every stage</button> \
         <button type=\"button\" class=\"regroup\">one row per stage</button> \
         <span class=\"shown\"></span></div>\
         <div class=\"scroll\"><table class=\"results sortable grouped\"><thead><tr>",
    );
    let heads = [
        ("depth", "n"),
        ("stage", "s"),
        ("output", "s"),
        ("case", "s"),
        ("mode", "s"),
        ("status", "n"),
        ("criteria (observed / limit, x limit, passes at)", "n"),
        ("max |err|", "n"),
        ("mean |err|", "n"),
        ("RMS", "n"),
        ("rel L2", "n"),
        ("cosine", "n"),
        ("max ULP", "n"),
        ("p99 ULP", "n"),
        ("NaN", "n"),
        ("Inf", "n"),
        ("worst index", "s"),
        ("actual", "n"),
        ("expected", "n"),
    ];
    for (h, kind) in heads {
        let _ = write!(
            out,
            "<th data-kind=\"{kind}\" tabindex=\"0\">{}</th>",
            esc(h)
        );
    }
    out.push_str("</tr></thead><tbody>");
    let lines = crate::report::stage_lines::lines(run);
    let mut group = None;
    let mut order = 0;
    for r in rows {
        let key = (r.stage.name.as_str(), r.stage.target.as_str());
        let g = lines
            .iter()
            .position(|l| (l.stage, l.target) == key)
            .unwrap_or(0);
        if group != Some(g) {
            group = Some(g);
            let n = rows
                .iter()
                .filter(|x| (x.stage.name.as_str(), x.stage.target.as_str()) == key)
                .count();
            if let Some(line) = lines.get(g) {
                summary(out, run, r.depth, g, line, n, order);
                order += 1;
            }
        }
        row(out, run, r, g, order);
        order += 1;
    }
    out.push_str("</tbody></table></div>");
}

/// A stage's summary row: its worst output over cases and modes.
fn summary(
    out: &mut String,
    run: &RunRecord,
    depth: usize,
    group: usize,
    line: &StageLine,
    rows: usize,
    order: usize,
) {
    let first = run.first_divergence.as_ref().is_some_and(|d| {
        d.stage == line.stage && d.target.as_deref().is_none_or(|t| t == line.target)
    });
    let _ = write!(
        out,
        "<tr class=\"stage-sum {0}\" data-group=\"{group}\" data-order=\"{order}\" \
         data-status=\"{0}\" aria-expanded=\"false\"{1}><td data-v=\"{depth}\">{depth}</td>\
         <td data-v=\"{2}\"><button type=\"button\" class=\"toggle\" aria-label=\"show the rows of {2}\">\
         &#9656;</button> <b>{2}</b>{3}</td>",
        line.status.name(),
        if first { " data-first-stage" } else { "" },
        esc(&line.name()),
        if first {
            " <span class=\"marker\">&#9873; first divergence</span>"
        } else {
            ""
        }
    );
    let (output, case, mode, crit) = match &line.worst {
        Some(w) => (
            esc(w.output),
            esc(&w.run.case),
            w.run.mode.name().to_string(),
            format!(
                "worst: {} ({}x limit)",
                esc(&headroom::versus(w.criterion)),
                headroom::ratio_text(w.ratio)
            ),
        ),
        None => ("-".into(), "-".into(), "-".into(), String::new()),
    };
    let _ = write!(
        out,
        "<td>{output}</td><td>{case}</td><td>{mode}</td>\
         <td><span class=\"badge {0}\">{0}</span></td><td>{crit}</td>\
         <td colspan=\"12\" class=\"sum-note\">{1}; {rows} row{2}</td></tr>",
        line.status.name(),
        esc(&line.runs_text()),
        if rows == 1 { "" } else { "s" }
    );
}

fn row(out: &mut String, run: &RunRecord, r: &Row, group: usize, order: usize) {
    let s = r.stage;
    let status = r.output.map_or(s.status, |o| o.status);
    let is = |d: &Divergence| r.output.is_some_and(|o| d.is_at(s, &o.name));
    let first = run.first_divergence.as_ref().is_some_and(is);
    let chained = run.chained_divergence.iter().any(is);
    let _ = write!(
        out,
        "<tr class=\"out {}{}{}\" data-group=\"{group}\" data-order=\"{order}\" \
         data-status=\"{}\" data-mode=\"{}\"{}>",
        status.name(),
        if first { " first" } else { "" },
        if chained { " chained-first" } else { "" },
        status.name(),
        s.mode.name(),
        if first { " data-first-divergence" } else { "" }
    );
    let cell = |out: &mut String, v: String, text: String| {
        let _ = write!(out, "<td data-v=\"{}\">{text}</td>", esc(&v));
    };
    let numcell = |out: &mut String, v: Option<f64>| match v {
        Some(v) => cell(out, format!("{v:e}"), num(v)),
        None => cell(out, String::new(), "-".into()),
    };
    cell(out, r.depth.to_string(), r.depth.to_string());
    let mut stage_text = esc(&s.name);
    if run.is_multi_target() {
        let _ = write!(
            stage_text,
            " <span class=\"target\">@{}</span>",
            esc(&s.target)
        );
    }
    if first {
        stage_text.push_str(
            " <span class=\"marker\" title=\"first divergence\">&#9873; first divergence</span>",
        );
    } else if chained {
        stage_text.push_str(" <span class=\"marker chained\">&#9873; chained divergence</span>");
    }
    cell(out, s.name.clone(), stage_text);
    let out_name = r.output.map_or("-", |o| o.name.as_str());
    cell(out, out_name.to_string(), esc(out_name));
    cell(out, s.case.clone(), esc(&s.case));
    cell(out, s.mode.name().into(), s.mode.name().into());
    let badge = format!("<span class=\"badge {0}\">{0}</span>", status.name());
    cell(out, status_rank(status).to_string(), badge);
    let Some(o) = r.output else {
        let why = s
            .error
            .as_ref()
            .map(|e| e.message.as_str())
            .or(s.skipped_because.as_deref())
            .unwrap_or("no output compared");
        let _ = write!(
            out,
            "<td colspan=\"13\" class=\"why\">{}</td></tr>",
            esc(why)
        );
        return;
    };
    let mut crit = String::new();
    if let Some(e) = &o.error {
        crit = esc(&e.message);
    }
    for c in &o.criteria {
        // A lower bound (cosine_min) reads as its distance from 1, so that
        // the ratio is the headroom it is for every other criterion.
        let _ = write!(
            crit,
            "<div class=\"crit {}\">{} {} ({}x limit), passes at {}{}</div>",
            if c.passed { "ok" } else { "bad" },
            if c.passed { "&#10003;" } else { "&#10007;" },
            esc(&headroom::versus(c)),
            headroom::ratio_text(headroom::ratio(c)),
            headroom::value(c, c.min_passing),
            c.note
                .as_deref()
                .map(|n| format!(" <i>{}</i>", esc(n)))
                .unwrap_or_default()
        );
    }
    let ratio = worst_ratio(o).map(|v| format!("{v:e}")).unwrap_or_default();
    cell(out, ratio, crit);
    let m = o.metrics.as_ref();
    numcell(out, m.map(|m| m.max_abs));
    numcell(out, m.map(|m| m.mean_abs));
    numcell(out, m.map(|m| m.rms));
    numcell(out, m.map(|m| m.rel_l2));
    // A cosine of 0.9999999 is not "1.0000" beside an exact 1.
    match m.map(|m| m.cosine) {
        Some(c) => cell(out, format!("{c:e}"), headroom::near_one(c)),
        None => cell(out, String::new(), "-".into()),
    }
    numcell(out, m.and_then(|m| m.max_ulp).map(|v| v as f64));
    numcell(out, m.and_then(|m| m.ulp_p99).map(|v| v as f64));
    numcell(out, m.map(|m| m.nan_mismatch as f64));
    numcell(out, m.map(|m| m.inf_mismatch as f64));
    let worst = m.and_then(|m| m.worst.first());
    let idx = worst.map_or_else(|| "-".to_string(), |w| format!("{:?}", w.index));
    cell(out, idx.clone(), esc(&idx));
    numcell(out, worst.map(|w| w.actual));
    numcell(out, worst.map(|w| w.expected));
    out.push_str("</tr>");
}

/// Sort key of a status: the worst first when sorted descending.
fn status_rank(s: Status) -> u8 {
    match s {
        Status::Pass => 0,
        Status::Skipped => 1,
        Status::Fail => 2,
        Status::Error => 3,
    }
}
