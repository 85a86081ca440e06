//! The baseline comparison for people: terminal text, Markdown and the HTML
//! section. Text shows every metric that changed (regressions first) and
//! counts the unchanged; HTML shows every metric in a sortable table.

use super::html::esc::esc;
use super::markdown::md;
use super::sanitize::terminal as clean;
use super::table::num;
use comfy_table::{presets, ContentArrangement, Table};
use parity_record::{BaselineRecord, Change, Metric, MetricChange, OutputChange};
use std::fmt::Write as _;

/// The relative change `current / baseline - 1` as a percentage ("+inf%" from 0).
pub fn percent(m: &MetricChange) -> String {
    if m.baseline == m.current || (m.baseline.is_nan() && m.current.is_nan()) {
        return "0%".into();
    }
    if m.baseline == 0.0 {
        return if m.current > 0.0 { "+inf%" } else { "-inf%" }.into();
    }
    let p = (m.current / m.baseline - 1.0) * 100.0;
    if p.is_nan() {
        "NaN".into()
    } else {
        format!("{p:+.1}%")
    }
}

/// The band as `+10% +0`.
fn band(b: &BaselineRecord) -> String {
    let pct = format!("{:.4}", b.band.rel * 100.0);
    let pct = pct.trim_end_matches('0').trim_end_matches('.');
    format!("+{pct}% +{}", num(b.band.abs))
}

/// A metric's value: counts (ULPs, mismatches) as integers, the rest as [`num`].
pub fn value(metric: Metric, x: f64) -> String {
    let count = matches!(metric, Metric::MaxUlp | Metric::UlpP99 | Metric::Mismatches);
    if count && x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        num(x)
    }
}

/// Changed metrics, regressions first, then in the run's order.
fn changed(b: &BaselineRecord) -> Vec<(&OutputChange, &MetricChange)> {
    let mut rows: Vec<_> = b
        .outputs
        .iter()
        .flat_map(|o| o.metrics.iter().map(move |m| (o, m)))
        .filter(|(_, m)| m.change != Change::Same)
        .collect();
    rows.sort_by_key(|(_, m)| m.change != Change::Regressed);
    rows
}

fn counts(b: &BaselineRecord) -> (usize, usize, usize) {
    let all = b.outputs.iter().map(|o| o.metrics.len()).sum();
    let regressed = b.regressions().count();
    let same = b
        .outputs
        .iter()
        .flat_map(|o| &o.metrics)
        .filter(|m| m.change == Change::Same)
        .count();
    (all, regressed, same)
}

fn headline(b: &BaselineRecord) -> String {
    let (all, regressed, same) = counts(b);
    let names: Vec<_> = b.metrics.iter().map(|m| m.name()).collect();
    format!(
        "{} outputs, {all} metrics ({}), band {}: {regressed} regressed, {same} unchanged",
        b.outputs.len(),
        names.join(", "),
        band(b)
    )
}

/// Terminal text.
pub fn text(b: &BaselineRecord) -> String {
    let mut s = format!("baseline: {} against {}\n", b.run, b.baseline);
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header([
            "output", "metric", "baseline", "now", "change", "limit", "verdict",
        ]);
    let rows = changed(b);
    for (o, m) in &rows {
        table.add_row([
            o.label(),
            m.metric.label().to_string(),
            value(m.metric, m.baseline),
            value(m.metric, m.current),
            percent(m),
            num(m.limit),
            m.change.name().to_string(),
        ]);
    }
    if !rows.is_empty() {
        let _ = writeln!(s, "{table}");
    }
    tail(&mut s, b, |x| x.to_string());
    let _ = writeln!(
        s,
        "BASELINE {}: {}",
        b.status.name().to_uppercase(),
        headline(b)
    );
    clean(&s).into_owned()
}

/// Notes and outputs found on one side only, one line each.
fn tail(s: &mut String, b: &BaselineRecord, quote: impl Fn(&str) -> String) {
    for n in &b.notes {
        let _ = writeln!(s, "note: {}", quote(n));
    }
    for (side, list) in [
        ("only in the run", &b.only_in_run),
        ("only in the baseline", &b.only_in_baseline),
    ] {
        if !list.is_empty() {
            let names: Vec<_> = list.iter().map(|l| quote(l)).collect();
            let _ = writeln!(s, "{side} (not compared): {}", names.join(", "));
        }
    }
}

/// A Markdown section (for a CI step summary).
pub fn markdown(b: &BaselineRecord) -> String {
    let mut s = format!(
        "## baseline: {}\n\n{} against {}: {}\n\n",
        b.status.name().to_uppercase(),
        md(&b.run),
        md(&b.baseline),
        headline(b)
    );
    let rows = changed(b);
    if !rows.is_empty() {
        s.push_str("| output | metric | baseline | now | change | limit | verdict |\n");
        s.push_str("|---|---|---|---|---|---|---|\n");
        for (o, m) in rows {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                md(&o.label()),
                m.metric.label(),
                value(m.metric, m.baseline),
                value(m.metric, m.current),
                percent(m),
                num(m.limit),
                if m.change == Change::Regressed {
                    "**REGRESSED**".to_string()
                } else {
                    m.change.name().to_string()
                }
            );
        }
        s.push('\n');
    }
    let mut t = String::new();
    tail(&mut t, b, md);
    for line in t.lines() {
        let _ = writeln!(s, "- {line}");
    }
    s
}

/// The HTML section: the headline and every metric in a sortable table.
pub fn html(out: &mut String, b: &BaselineRecord) {
    let _ = write!(
        out,
        "<section class=\"baseline\"><h2>Baseline: <span class=\"badge {0}\">{0}</span></h2>\
         <p>{1} against {2}: {3}</p>",
        b.status.name(),
        esc(&b.run),
        esc(&b.baseline),
        esc(&headline(b))
    );
    out.push_str(
        "<div class=\"scroll\"><table class=\"baseline-table sortable\"><thead><tr>\
         <th>output</th><th>metric</th><th data-kind=\"n\">baseline</th>\
         <th data-kind=\"n\">now</th><th data-kind=\"n\">change</th>\
         <th data-kind=\"n\">limit</th><th>verdict</th></tr></thead><tbody>",
    );
    // Regressions first, then every other metric in the run's order.
    let mut rows: Vec<_> = b
        .outputs
        .iter()
        .flat_map(|o| o.metrics.iter().map(move |m| (o, m)))
        .collect();
    rows.sort_by_key(|(_, m)| m.change != Change::Regressed);
    for (o, m) in rows {
        let ratio = if m.baseline == 0.0 {
            if m.current == 0.0 {
                0.0
            } else {
                f64::MAX
            }
        } else {
            m.current / m.baseline - 1.0
        };
        let class = match m.change {
            Change::Regressed => "fail",
            Change::Improved => "pass",
            _ => "",
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td>\
                 <td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td>\
                 <td data-v=\"{ratio}\">{}</td><td data-v=\"{}\">{}</td><td>{}</td></tr>",
            esc(&o.label()),
            m.metric.label(),
            sort_key(m.baseline),
            value(m.metric, m.baseline),
            sort_key(m.current),
            value(m.metric, m.current),
            percent(m),
            sort_key(m.limit),
            num(m.limit),
            m.change.name()
        );
    }
    out.push_str("</tbody></table></div>");
    let mut t = String::new();
    tail(&mut t, b, |x| x.to_string());
    for line in t.lines() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(line));
    }
    out.push_str("</section>");
}

/// A number for `data-v` (JavaScript's parseFloat reads `NaN` and `Infinity`).
fn sort_key(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{x:e}")
    }
}
