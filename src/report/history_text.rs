//! The history of a spec's runs for people and CI: terminal text and
//! Markdown (a table of each stage's headroom over the newest runs, growth
//! marked `↑`), and JUnit (one test case per stage, failing when its error
//! grew in the newest run). The HTML page draws every run: `html/history.rs`.

use super::headroom::ratio_text;
use super::markdown::md;
use super::sanitize::terminal as clean;
use super::table::{num, Colour};
use parity_record::{Growth, HistoryOrder, HistoryRecord, StageHistory};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::fmt::Write as _;

/// Most runs the terminal and Markdown tables show as columns (the newest);
/// the HTML page draws them all.
pub const MAX_COLUMNS: usize = 8;

/// The band and metrics as `+10% +0 on max_abs, rms`.
fn band(h: &HistoryRecord) -> String {
    let pct = format!("{:.4}", h.band.rel * 100.0);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    let names: Vec<_> = h.metrics.iter().map(|m| m.name()).collect();
    format!("+{pct}% +{} on {}", num(h.band.abs), names.join(", "))
}

/// The first line: what was read and how it was ordered.
pub fn headline(h: &HistoryRecord) -> String {
    let order = match h.order {
        HistoryOrder::Started => "ordered by start time",
        HistoryOrder::FileName => "ordered by file name: a record's start time did not parse",
    };
    format!(
        "history of {}: {} runs in {} ({order}), growth band {}",
        h.spec,
        h.runs.len(),
        h.dir,
        band(h)
    )
}

/// The verdict line: which stages grew in the newest run, and how many grew before.
pub fn verdict(h: &HistoryRecord) -> String {
    let newest: Vec<_> = h.grew_in_newest().map(|(s, _)| s.name()).collect();
    let earlier: usize = h
        .stages
        .iter()
        .flat_map(|s| &s.growth)
        .filter(|g| g.run + 1 < h.runs.len())
        .count();
    let run = h
        .runs
        .last()
        .map(|r| format!("#{}, {}", h.runs.len(), r.label))
        .unwrap_or_default();
    let mut text = if newest.is_empty() {
        format!("HISTORY PASS: no stage's error grew in the newest run ({run})")
    } else {
        format!(
            "HISTORY FAIL: {} stage{} grew in the newest run ({run}): {}",
            newest.len(),
            if newest.len() == 1 { "" } else { "s" },
            newest.join(", ")
        )
    };
    if earlier > 0 {
        let _ = write!(
            text,
            "; {earlier} earlier growth{} flagged",
            if earlier == 1 { "" } else { "s" }
        );
    }
    text
}

/// `max_abs 2.000e-7 → 6.000e-7 (limit 2.200e-7), normed (b2, isolated), 6 metrics grew`.
pub fn growth_text(g: &Growth) -> String {
    format!(
        "{} {} → {} (limit {}), {} ({}, {}){}",
        g.metric.label(),
        super::baseline::value(g.metric, g.previous),
        super::baseline::value(g.metric, g.current),
        num(g.limit),
        g.output,
        g.case,
        g.mode.name(),
        if g.regressed > 1 {
            format!(", {} metrics grew", g.regressed)
        } else {
            String::new()
        }
    )
}

/// The run indices the tables show: the newest [`MAX_COLUMNS`].
fn columns(h: &HistoryRecord) -> std::ops::Range<usize> {
    h.runs.len().saturating_sub(MAX_COLUMNS)..h.runs.len()
}

/// A cell: the headroom ratio, `↑` where the error grew past the band, `-` unmeasured.
fn cell(s: &StageHistory, i: usize) -> String {
    let grew = s.growth.iter().any(|g| g.run == i);
    match &s.points[i] {
        Some(p) => format!("{}{}", ratio_text(p.ratio), if grew { " ↑" } else { "" }),
        None => "-".into(),
    }
}

/// The latest growth of a stage, with the run it happened in.
fn last_growth(h: &HistoryRecord, s: &StageHistory) -> String {
    match s.growth.last() {
        Some(g) => {
            let label = h.runs.get(g.run).map_or("", |r| r.label.as_str());
            let more = s.growth.len() - 1;
            format!(
                "#{} ({label}): {}{}",
                g.run + 1,
                growth_text(g),
                if more > 0 {
                    format!(" (and {more} earlier)")
                } else {
                    String::new()
                }
            )
        }
        None => String::new(),
    }
}

/// Terminal text.
pub fn text(h: &HistoryRecord, colour: Colour) -> String {
    let mut s = format!("{}\n", headline(h));
    let cols = columns(h);
    if cols.start > 0 {
        let _ = writeln!(
            s,
            "(the newest {} runs; #1-#{} are left out here, the HTML page draws every run)",
            cols.len(),
            cols.start
        );
    }
    for i in cols.clone() {
        let r = &h.runs[i];
        let _ = writeln!(
            s,
            "  #{} ({}): {} started {}, {}",
            i + 1,
            r.label,
            r.file,
            r.started,
            r.status.name()
        );
    }
    let mut head = vec!["stage".to_string()];
    head.extend(cols.clone().map(|i| format!("#{}", i + 1)));
    head.push("error grew past the band".into());
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut table = super::table::terminal_table(&head, colour);
    for st in &h.stages {
        let mut row = vec![st.name()];
        row.extend(cols.clone().map(|i| cell(st, i)));
        row.push(last_growth(h, st));
        table.add_row(row);
    }
    let _ = writeln!(
        s,
        "{table}\n(each cell: the stage's worst output over cases and modes, its error as a \
         fraction of its limit; above 1 fails; ↑ its error grew past the band since the run \
         before)"
    );
    for k in &h.skipped {
        let _ = writeln!(s, "skipped {}: {}", k.file, k.reason);
    }
    let _ = writeln!(s, "{}", verdict(h));
    clean(&s).into_owned()
}

/// A Markdown section (for a CI step summary).
pub fn markdown(h: &HistoryRecord) -> String {
    let mut s = format!(
        "## parity history: {}\n\n{}\n\n",
        h.status.name().to_uppercase(),
        md(&headline(h))
    );
    let cols = columns(h);
    s.push_str("| stage |");
    for i in cols.clone() {
        let _ = write!(s, " #{} ({}) |", i + 1, md(&h.runs[i].label));
    }
    s.push_str(" error grew past the band |\n|---|");
    s.push_str(&"---|".repeat(cols.len() + 1));
    s.push('\n');
    for st in &h.stages {
        let _ = write!(s, "| {} |", md(&st.name()));
        for i in cols.clone() {
            let c = cell(st, i);
            if c.ends_with('↑') {
                let _ = write!(s, " **{c}** |");
            } else {
                let _ = write!(s, " {c} |");
            }
        }
        let _ = writeln!(s, " {} |", md(&last_growth(h, st)));
    }
    if cols.start > 0 {
        let _ = writeln!(
            s,
            "\n_The newest {} runs; the HTML page draws all {}._",
            cols.len(),
            h.runs.len()
        );
    }
    for k in &h.skipped {
        let _ = writeln!(s, "\n- skipped {}: {}", md(&k.file), md(&k.reason));
    }
    let _ = writeln!(s, "\n{}", md(&verdict(h)));
    s
}

/// JUnit: one suite, one test case per stage, failing when it grew in the newest run.
pub fn junit(h: &HistoryRecord) -> Report {
    let x = |t: &str| super::sanitize::xml(t).into_owned();
    let mut suite = TestSuite::new("parity history");
    let newest = h.runs.len().checked_sub(1);
    for st in &h.stages {
        let status = match st.growth.last().filter(|g| Some(g.run) == newest) {
            Some(g) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_message(x(&format!("error grew past the band: {}", growth_text(g))))
                    .set_type("parity-history");
                status
            }
            None => TestCaseStatus::success(),
        };
        suite.add_test_case(TestCase::new(x(&st.name()), status));
    }
    let mut report = Report::new("parity history");
    report.add_test_suite(suite);
    report
}
