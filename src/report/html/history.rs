//! The history section: the runs in order, then one row per stage with its
//! headroom over every run drawn as a small line chart (hand-written SVG,
//! one log scale shared by every stage, the limit as a red line) and the
//! runs where its error grew past the band marked.

use super::esc::esc;
use crate::report::headroom::ratio_text;
use crate::report::history_text::{growth_text, headline, verdict};
use parity_record::{HistoryRecord, StageHistory};
use std::fmt::Write as _;

/// Width of one run's step in a chart, and the chart's height (px).
const STEP: f64 = 44.0;
const HEIGHT: f64 = 90.0;
const PAD: f64 = 8.0;
/// Room on the left for the scale's labels (px).
const AXIS: f64 = 34.0;

/// The common log10 scale: every point's ratio and the limit (1), clamped to 1e-6..1e6.
fn scale(h: &HistoryRecord) -> (f64, f64) {
    let logs = h
        .stages
        .iter()
        .flat_map(|s| s.points.iter().flatten())
        .map(|p| log(p.ratio));
    let (lo, hi) = logs.fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (lo.floor() - 0.5, hi.ceil() + 0.5)
}

fn log(r: f64) -> f64 {
    if r.is_nan() {
        6.0
    } else {
        r.max(1e-6).log10().min(6.0)
    }
}

/// Writes the section.
pub fn section(out: &mut String, h: &HistoryRecord, i: usize) {
    let _ = write!(
        out,
        "<section class=\"history\" id=\"history-{i}\"><div class=\"verdict {0}\">\
         <span class=\"badge {0}\">{1}</span> {2}</div><p class=\"note\">{3}</p>",
        h.status.name(),
        h.status.name().to_uppercase(),
        esc(&verdict(h)),
        esc(&headline(h))
    );
    out.push_str("<h2>Runs, oldest first</h2><table class=\"small history-runs\"><thead><tr><th>#</th><th>run</th><th>file</th><th>started</th><th>status</th></tr></thead><tbody>");
    for (k, r) in h.runs.iter().enumerate() {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td>\
             <td><span class=\"badge {4}\">{4}</span></td></tr>",
            k + 1,
            esc(&r.label),
            esc(&r.file),
            esc(&r.started),
            r.status.name()
        );
    }
    out.push_str("</tbody></table>");
    for s in &h.skipped {
        let _ = write!(
            out,
            "<p class=\"note\">Skipped <code>{}</code>: {}</p>",
            esc(&s.file),
            esc(&s.reason)
        );
    }
    out.push_str(
        "<h2>Headroom of each stage over the runs</h2><p class=\"note\">Each point: the \
         stage's worst output over cases and modes in that run, its error as a fraction of its \
         limit (log scale, shared by every row; the red line is the limit, above it fails). \
         Red rings: the error grew past the band since the run before (the baseline ratchet's \
         rule). Hover a point for its value.</p><div class=\"scroll\">\
         <table class=\"history-table\"><thead><tr><th>stage</th><th>headroom, runs #1 to #",
    );
    let _ = write!(
        out,
        "{}</th><th>newest</th><th>error grew past the band</th></tr></thead><tbody>",
        h.runs.len()
    );
    let domain = scale(h);
    for s in &h.stages {
        row(out, h, s, domain);
    }
    out.push_str("</tbody></table></div></section>");
}

fn row(out: &mut String, h: &HistoryRecord, s: &StageHistory, domain: (f64, f64)) {
    let grew_newest = s.growth.last().is_some_and(|g| g.run + 1 == h.runs.len());
    let _ = write!(
        out,
        "<tr class=\"stage-history{}{}\" data-stage=\"{}\" data-growth=\"{}\"><td>{}</td><td>",
        if s.growth.is_empty() { "" } else { " grew" },
        if grew_newest { " grew-newest" } else { "" },
        esc(&s.name()),
        s.growth
            .iter()
            .map(|g| g.run.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        esc(&s.name())
    );
    chart(out, h, s, domain);
    let newest = s.points.last().and_then(|p| p.as_ref());
    let _ = write!(
        out,
        "</td><td class=\"num {}\">{}</td><td>",
        newest.map_or("", |p| if p.ratio > 1.0 { "fail" } else { "pass" }),
        newest.map_or("-".into(), |p| ratio_text(p.ratio))
    );
    for g in &s.growth {
        let label = h.runs.get(g.run).map_or("", |r| r.label.as_str());
        let _ = write!(
            out,
            "<div class=\"growth\">#{} ({}): {}</div>",
            g.run + 1,
            esc(label),
            esc(&growth_text(g))
        );
    }
    out.push_str("</td></tr>");
}

fn chart(out: &mut String, h: &HistoryRecord, s: &StageHistory, (lo, hi): (f64, f64)) {
    let n = h.runs.len();
    let width = AXIS + PAD * 2.0 + STEP * (n.max(2) - 1) as f64;
    let x = |i: usize| AXIS + PAD + STEP * i as f64;
    let y = |r: f64| PAD + (hi - log(r)) / (hi - lo) * (HEIGHT - 2.0 * PAD);
    let _ = write!(
        out,
        "<svg class=\"spark\" width=\"{width}\" height=\"{HEIGHT}\" viewBox=\"0 0 {width} {HEIGHT}\" \
         role=\"img\" aria-label=\"headroom of {} over {n} runs\">\
         <line class=\"limit\" x1=\"{AXIS}\" x2=\"{width}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#c62828\" \
         stroke-dasharray=\"4 3\"/>",
        esc(&s.name()),
        y(1.0)
    );
    // Labels at the scale's ends and at the limit, where they do not collide.
    let mut ticks = vec![0i32];
    for e in [lo.ceil() as i32, hi.floor() as i32] {
        if ticks
            .iter()
            .all(|t| (y(10f64.powi(*t)) - y(10f64.powi(e))).abs() >= 12.0)
        {
            ticks.push(e);
        }
    }
    for e in ticks {
        let label = if e == 0 {
            "1".to_string()
        } else {
            format!("1e{e}")
        };
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#555\">{label}</text>",
            AXIS - 2.0,
            y(10f64.powi(e)) + 3.5
        );
    }
    // A line through consecutive measured runs; a run without a point breaks it.
    let mut path = String::new();
    let mut pen_down = false;
    for (i, p) in s.points.iter().enumerate() {
        match p {
            Some(p) => {
                let _ = write!(
                    path,
                    "{}{:.1},{:.1} ",
                    if pen_down { "L" } else { "M" },
                    x(i),
                    y(p.ratio)
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    if !path.is_empty() {
        let _ = write!(
            out,
            "<path d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>",
            path.trim_end()
        );
    }
    for (i, p) in s.points.iter().enumerate() {
        let Some(p) = p else { continue };
        let grew = s.growth.iter().find(|g| g.run == i);
        let run = &h.runs[i];
        let mut title = format!(
            "#{} ({}): {} x limit, {} of {} ({}, {}), {}",
            i + 1,
            run.label,
            ratio_text(p.ratio),
            p.criterion,
            p.output,
            p.case,
            p.mode.name(),
            p.status.name()
        );
        if let Some(g) = grew {
            let _ = write!(title, "; grew: {}", growth_text(g));
        }
        let _ = write!(
            out,
            "<circle class=\"pt{}\" data-run=\"{i}\" data-ratio=\"{:e}\" cx=\"{:.1}\" cy=\"{:.1}\" \
             r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"2\"><title>{}</title></circle>",
            if grew.is_some() { " grew" } else { "" },
            p.ratio,
            x(i),
            y(p.ratio),
            if grew.is_some() { 5 } else { 3 },
            if p.ratio > 1.0 { "#c62828" } else { "#1f77b4" },
            if grew.is_some() { "#c62828" } else { "none" },
            esc(&title)
        );
    }
    out.push_str("</svg>");
}
