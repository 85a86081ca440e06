//! The overview grid, what a run's page opens on: stages (rows, in
//! dependency order; `stage @target` in a run over several targets) by
//! cases (columns), each cell coloured by the stage's worst headroom ratio
//! over its outputs and modes in that case (the error as a fraction of the
//! limit, [`crate::report::headroom`]), the first divergence marked, the
//! value and where it was measured in the cell's title (on hover).

use super::esc::esc;
use super::table::stage_order;
use crate::report::headroom::{ratio_text, versus};
use parity_record::{CriterionRecord, RunRecord, StageRecord, Status};
use std::fmt::Write as _;

/// One cell: a stage's runs (modes) in one case.
#[derive(Default)]
struct Cell<'a> {
    /// Its runs.
    runs: Vec<&'a StageRecord>,
    /// The largest ratio, with the output, the run and the criterion.
    worst: Option<(f64, &'a str, &'a StageRecord, &'a CriterionRecord)>,
}

impl Cell<'_> {
    fn status(&self) -> Status {
        let rank = |s: Status| match s {
            Status::Pass => 0,
            Status::Skipped => 1,
            Status::Fail => 2,
            Status::Error => 3,
        };
        self.runs
            .iter()
            .map(|s| s.status)
            .max_by_key(|s| rank(*s))
            .unwrap_or(Status::Skipped)
    }
}

/// The background of a cell whose worst ratio is `r`: green far below the
/// limit through amber at it (hue 130 to 45, light, on a log scale over
/// 1e-4..1, where the resolution matters), then red past it, darker the
/// further past (hue 10 to 0, lightness 62% to 35%, log scale over 1..1e6).
/// Hue plus lightness falls as the ratio grows, so the colours order by ratio.
pub fn colour(r: f64) -> (f64, f64, f64) {
    let log = if r.is_nan() {
        6.0
    } else {
        r.max(1e-12).log10()
    };
    if r <= 1.0 {
        let t = ((log + 4.0) / 4.0).clamp(0.0, 1.0);
        (130.0 - 85.0 * t, 55.0, 80.0)
    } else {
        let u = (log / 6.0).clamp(0.0, 1.0);
        (10.0 - 10.0 * u, 70.0, 62.0 - 27.0 * u)
    }
}

fn style(r: f64) -> String {
    let (h, s, l) = colour(r);
    let ink = if l < 50.0 { ";color:#fff" } else { "" };
    format!("background:hsl({h:.1},{s:.0}%,{l:.1}%){ink}")
}

/// Writes the grid (nothing when no stage ran).
pub fn render(out: &mut String, run: &RunRecord) {
    let multi = run.is_multi_target();
    let order = stage_order(run);
    let target_pos = |t: &str| {
        run.targets
            .iter()
            .position(|x| x.name == t)
            .unwrap_or(usize::MAX)
    };
    let mut rows: Vec<(&str, &str)> = Vec::new();
    let mut cases: Vec<&str> = Vec::new();
    for s in &run.stages {
        let target = if multi { s.target.as_str() } else { "" };
        if !rows.contains(&(s.name.as_str(), target)) {
            rows.push((&s.name, target));
        }
        if !cases.contains(&s.case.as_str()) {
            cases.push(&s.case);
        }
    }
    if rows.is_empty() {
        return;
    }
    // Dependency order, then the targets in the order the run names them.
    rows.sort_by_key(|(name, target)| {
        (
            order.iter().position(|n| n == name).unwrap_or(usize::MAX),
            target_pos(target),
        )
    });
    let mut cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|_| cases.iter().map(|_| Cell::default()).collect())
        .collect();
    for s in &run.stages {
        let target = if multi { s.target.as_str() } else { "" };
        let (Some(r), Some(c)) = (
            rows.iter().position(|k| *k == (s.name.as_str(), target)),
            cases.iter().position(|k| *k == s.case),
        ) else {
            continue;
        };
        let cell = &mut cells[r][c];
        cell.runs.push(s);
        for o in &s.outputs {
            let Some((crit, ratio)) = crate::report::headroom::tightest(o) else {
                continue;
            };
            // Ties keep the first (isolated before chained).
            if cell.worst.is_none_or(|w| ratio > w.0) {
                cell.worst = Some((ratio, &o.name, s, crit));
            }
        }
    }
    out.push_str(
        "<h2>Overview: headroom by stage and case</h2><p class=\"note\">Each cell: the stage's \
         worst output over its modes in that case, its tightest criterion's error as a fraction \
         of the limit (<code>cosine_min</code> by 1 &minus; cosine), so below 1 passes; green is \
         far from the limit, amber near it, red past it. &#9873; marks the first divergence. \
         Hover a cell for the value and where it was measured.</p>",
    );
    legend(out);
    out.push_str("<div class=\"scroll\"><table class=\"overview\"><thead><tr><th>stage</th>");
    for c in &cases {
        let _ = write!(out, "<th>{}</th>", esc(c));
    }
    out.push_str("</tr></thead><tbody>");
    let first = run.first_divergence.as_ref();
    for ((name, target), row) in rows.iter().zip(&cells) {
        let label = if target.is_empty() {
            name.to_string()
        } else {
            format!("{name} @{target}")
        };
        let _ = write!(
            out,
            "<tr data-stage=\"{0}\"><th scope=\"row\">{0}</th>",
            esc(&label)
        );
        for (case, cell) in cases.iter().zip(row) {
            let is_first = first.is_some_and(|d| {
                d.stage == *name
                    && d.case == *case
                    && (target.is_empty() || d.target.as_deref().is_none_or(|t| t == *target))
            });
            td(out, &label, case, cell, is_first);
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

fn td(out: &mut String, label: &str, case: &str, cell: &Cell, first: bool) {
    let status = cell.status();
    let mark = if first { "&#9873; " } else { "" };
    let first_attr = if first { " data-first-divergence" } else { "" };
    let class = format!(
        "cell {}{}",
        status.name(),
        if first { " first" } else { "" }
    );
    if cell.runs.is_empty() {
        let _ = write!(
            out,
            "<td class=\"cell none\" data-case=\"{}\" title=\"{} in case {}: not run\">-</td>",
            esc(case),
            esc(label),
            esc(case)
        );
        return;
    }
    let modes: Vec<&str> = cell.runs.iter().map(|s| s.mode.name()).collect();
    let mut title = format!(
        "{label} in case {case} ({}): {}",
        modes.join(", "),
        status.name()
    );
    let (text, style, ratio) = match cell.worst {
        Some((r, output, s, crit)) => {
            let _ = write!(
                title,
                "; worst {output} ({}): {}, {} x limit",
                s.mode.name(),
                versus(crit),
                ratio_text(r)
            );
            (ratio_text(r), self::style(r), format!("{r:e}"))
        }
        None => (status.name().to_string(), String::new(), String::new()),
    };
    if cell.runs.len() > 1 {
        let per_mode: Vec<String> = cell
            .runs
            .iter()
            .filter_map(|s| {
                let r = s
                    .outputs
                    .iter()
                    .filter_map(|o| crate::report::headroom::tightest(o).map(|t| t.1))
                    .reduce(f64::max)?;
                Some(format!("{} {}", s.mode.name(), ratio_text(r)))
            })
            .collect();
        if !per_mode.is_empty() {
            let _ = write!(title, " (by mode: {})", per_mode.join(", "));
        }
    }
    for s in &cell.runs {
        let why = s
            .error
            .as_ref()
            .map(|e| e.message.as_str())
            .or(s.skipped_because.as_deref());
        if let Some(why) = why {
            let _ = write!(title, "; {} {}: {why}", s.mode.name(), s.status.name());
        }
    }
    if first {
        title.push_str("; the first divergence");
    }
    let _ = write!(
        out,
        "<td class=\"{class}\" data-case=\"{}\" data-status=\"{}\" data-ratio=\"{ratio}\"{first_attr} \
         style=\"{style}\" title=\"{}\">{mark}{}</td>",
        esc(case),
        status.name(),
        esc(&title),
        esc(&text)
    );
}

fn legend(out: &mut String) {
    out.push_str("<div class=\"legend\" aria-hidden=\"true\">");
    for (r, label) in [
        (1e-4, "1e-4 or less"),
        (1e-2, "0.01"),
        (0.1, "0.1"),
        (0.5, "0.5"),
        (1.0, "1 = limit"),
        (10.0, "10"),
        (1e3, "1e3"),
        (1e6, "1e6+"),
    ] {
        let _ = write!(out, "<span style=\"{}\">{label}</span>", style(r));
    }
    out.push_str(
        "<span class=\"cell error\">error</span><span class=\"cell skipped\">skipped</span></div>",
    );
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colours_darken_and_redden_as_the_ratio_grows() {
        let ratios = [
            0.0,
            1e-7,
            1e-4,
            0.3,
            1.0,
            1.5,
            100.0,
            1e5,
            1e9,
            f64::INFINITY,
        ];
        let keys: Vec<f64> = ratios
            .iter()
            .map(|r| {
                let (h, _, l) = colour(*r);
                -(h + l)
            })
            .collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{keys:?}");
        // Past the limit is red, at or below it is not.
        assert!(colour(1.0).0 >= 45.0 && colour(1.0001).0 <= 10.0);
    }
}
