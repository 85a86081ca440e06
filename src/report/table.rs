//! The terminal table: one row per stage output and mode, then a closing line
//! naming the first divergence. Every user string is shown with its control
//! characters escaped.

use super::sanitize::terminal as clean;
use comfy_table::{presets, Cell, Color, ContentArrangement, Table};
use parity_record::{OutputRecord, RunRecord, StageRecord, Status};

/// Whether to colour the status column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// ANSI colours.
    On,
    /// Plain text (NO_COLOR, pipes, files).
    Off,
}

impl Colour {
    /// Colour when stdout is a terminal and NO_COLOR is unset or empty
    /// (https://no-color.org).
    pub fn detect() -> Colour {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && std::io::stdout().is_terminal() {
            Colour::On
        } else {
            Colour::Off
        }
    }
}

/// The status as a cell, coloured when `colour` is on.
pub(super) fn status_cell(status: Status, colour: Colour) -> Cell {
    let cell = Cell::new(status.name().to_uppercase());
    match (colour, status) {
        (Colour::Off, _) => cell,
        (Colour::On, Status::Pass) => cell.fg(Color::Green),
        (Colour::On, Status::Fail) => cell.fg(Color::Red),
        (Colour::On, Status::Error) => cell.fg(Color::Magenta),
        (Colour::On, Status::Skipped) => cell.fg(Color::Yellow),
    }
}

/// Largest magnitude [`num`] prints as an integer when the value is one.
const INTEGER_LIMIT: f64 = 1e10;

/// Formats a float compactly: 0, an integer as an integer (ULPs, counts:
/// `512`, not `512.0000`), else 4 decimals or 3 significant digits in
/// e-notation.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.is_nan() {
        "NaN".into()
    } else if x.fract() == 0.0 && x.abs() < INTEGER_LIMIT {
        format!("{x:.0}")
    } else if (1e-3..1e4).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

/// Failed criteria of an output, each a true statement
/// (`max_abs 0.25 > 1.000e-5`, `cosine_min 0.99 < 0.9999`) with the
/// threshold that would pass.
pub fn failed_criteria(out: &OutputRecord) -> String {
    out.criteria
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            let verdict = super::headroom::failed(c);
            let passes = super::headroom::value(c, c.min_passing);
            // A non-finite min_passing means no setting passes; the note says why.
            match (c.min_passing.is_finite(), &c.note) {
                (true, None) => format!("{verdict} (passes at {passes})"),
                (true, Some(note)) => format!("{verdict} (passes at {passes}; {note})"),
                (false, Some(note)) => format!("{verdict} (no threshold passes: {note})"),
                (false, None) => format!("{verdict} (no threshold passes)"),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a stage without outputs has none: its error or why it was skipped.
fn stage_note(s: &StageRecord) -> &str {
    s.error
        .as_ref()
        .map(|e| e.message.as_str())
        .or(s.skipped_because.as_deref())
        .unwrap_or("")
}

/// Adds the rows of stage run `s` whose status `keep` accepts (`multi`: name its target).
fn stage_rows(
    table: &mut Table,
    s: &StageRecord,
    colour: Colour,
    keep: fn(Status) -> bool,
    multi: bool,
) {
    let name = s.display_name(multi);
    if s.outputs.is_empty() {
        if !keep(s.status) {
            return;
        }
        table.add_row(vec![
            Cell::new(clean(&name)),
            Cell::new(clean(&s.case)),
            Cell::new(s.mode.name()),
            Cell::new("-"),
            status_cell(s.status, colour),
            Cell::new(""),
            Cell::new(""),
            Cell::new(""),
            Cell::new(""),
            Cell::new(clean(stage_note(s))),
        ]);
        return;
    }
    for out in s.outputs.iter().filter(|o| keep(o.status)) {
        let (max_abs, rms, ulp, mism) = match &out.metrics {
            Some(m) => (
                num(m.max_abs),
                num(m.rms),
                m.max_ulp.map_or("-".to_string(), |u| u.to_string()),
                format!("{}/{}", m.mismatches, m.count),
            ),
            None => Default::default(),
        };
        let note = match out.status {
            Status::Error => out
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default(),
            _ => failed_criteria(out),
        };
        table.add_row(vec![
            Cell::new(clean(&name)),
            Cell::new(clean(&s.case)),
            Cell::new(s.mode.name()),
            Cell::new(clean(&out.name)),
            status_cell(out.status, colour),
            Cell::new(max_abs),
            Cell::new(rms),
            Cell::new(ulp),
            Cell::new(mism),
            Cell::new(clean(&note)),
        ]);
    }
}

/// Renders the closing lines after, by default, one line per stage and
/// every row that did not pass, or (`verbose`) every row.
pub fn render(record: &RunRecord, colour: Colour, verbose: bool) -> String {
    let mut text = if verbose {
        rows_table(record, colour, |_| true)
    } else {
        overview(record, colour)
    };
    text.push('\n');
    for e in &record.errors {
        text.push_str(&format!("error: {}\n", clean(&e.message)));
    }
    text.push_str(&transform_lines(record));
    text.push_str(&summary(record));
    text
}

/// The default view: one line per stage, then every failing or erroring row
/// in full (a pass of a large spec is 30 lines, not 600).
fn overview(record: &RunRecord, colour: Colour) -> String {
    let mut text = super::stage_lines::table(record, colour);
    text.push('\n');
    let bad = |st: Status| matches!(st, Status::Fail | Status::Error);
    let rows = record
        .stages
        .iter()
        .flat_map(|s| {
            let outputs = s.outputs.iter().map(|o| o.status);
            let own = s.outputs.is_empty().then_some(s.status);
            outputs.chain(own)
        })
        .filter(|st| bad(*st))
        .count();
    if rows > 0 {
        text.push_str(&format!("{rows} failing or erroring rows:\n"));
        text.push_str(&rows_table(record, colour, bad));
        text.push('\n');
    }
    text.push_str(
        "(one line per stage: its worst output over cases and modes; -v prints every row)",
    );
    text
}

/// An empty terminal table with `header`, in the report's style (no
/// colour codes when `colour` is off).
pub fn terminal_table(header: &[&str], colour: Colour) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.to_vec());
    if colour == Colour::Off {
        table.force_no_tty();
    }
    table
}

/// The table of every row of `record` whose status `keep` accepts.
fn rows_table(record: &RunRecord, colour: Colour, keep: fn(Status) -> bool) -> String {
    let mut table = terminal_table(
        &[
            "stage",
            "case",
            "mode",
            "output",
            "status",
            "max_abs",
            "rms",
            "max_ulp",
            "mismatch",
            "failed criteria",
        ],
        colour,
    );
    for s in &record.stages {
        stage_rows(&mut table, s, colour, keep, record.is_multi_target());
    }
    table.to_string()
}

/// Most transformed weights the terminal lists one by one; the rest are counted.
const TRANSFORM_LINES: usize = 5;

/// `weights transformed at load: ...` lines (none when no weight was).
fn transform_lines(record: &RunRecord) -> String {
    let all = &record.provenance.weight_transforms;
    if all.is_empty() {
        return String::new();
    }
    let mut text = format!("weights transformed at load: {}\n", all.len());
    for t in all.iter().take(TRANSFORM_LINES) {
        text.push_str(&format!("  {}\n", clean(&t.describe())));
    }
    if all.len() > TRANSFORM_LINES {
        text.push_str(&format!(
            "  ... and {} more (run.json: provenance.weight_transforms)\n",
            all.len() - TRANSFORM_LINES
        ));
    }
    text
}

/// Most errored stage runs `-q` lists one by one; the rest are counted.
const QUIET_ERROR_LINES: usize = 20;

/// The `-q` text: the run's errors and each errored stage run's error
/// message (a user must see why a stage errored without the table), then the
/// closing lines of [`summary`].
pub fn quiet(record: &RunRecord) -> String {
    let mut text = String::new();
    for e in &record.errors {
        text.push_str(&format!("error: {}\n", clean(&e.message)));
    }
    let errored: Vec<&StageRecord> = record
        .stages
        .iter()
        .filter(|s| s.status == Status::Error)
        .collect();
    for s in errored.iter().take(QUIET_ERROR_LINES) {
        let message = s
            .error
            .as_ref()
            .or_else(|| s.outputs.iter().find_map(|o| o.error.as_ref()))
            .map_or("(no error message recorded)", |e| e.message.as_str());
        // Most messages already name the stage and case; do not say it twice.
        let line = if message.contains(&format!("stage `{}`", s.name)) {
            format!("error ({}): {}\n", s.mode.name(), clean(message))
        } else {
            format!(
                "error: stage `{}` ({}, {}): {}\n",
                clean(&s.name),
                clean(&s.case),
                s.mode.name(),
                clean(message)
            )
        };
        text.push_str(&line);
    }
    if errored.len() > QUIET_ERROR_LINES {
        text.push_str(&format!(
            "error: ... and {} more errored stage runs (see the full table or run.json)\n",
            errored.len() - QUIET_ERROR_LINES
        ));
    }
    text.push_str(&transform_lines(record));
    text.push_str(&summary(record));
    text
}

/// The closing lines: verdict, first divergence, chained divergences.
pub fn summary(record: &RunRecord) -> String {
    let count = |st: Status| record.stages.iter().filter(|s| s.status == st).count();
    let mut text = format!(
        "{}: {} stage runs, {} pass, {} fail, {} error, {} skipped in {:.2}s\n",
        record.status.name().to_uppercase(),
        record.stages.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::Error),
        count(Status::Skipped),
        record.elapsed_s
    );
    if let Some(shard) = &record.shard {
        text.push_str(&format!(
            "shard {}/{}: this record holds only its shard's stage runs; the first divergence \
             below is that of this shard (merge the shards with `parity report --merge`)\n",
            shard.index, shard.count
        ));
    }
    match &record.first_divergence {
        Some(d) => text.push_str(&format!(
            "first divergence: stage `{}` output `{}` (case {}, {}){}\n",
            d.stage,
            d.output,
            d.case,
            d.mode.name(),
            d.on_target()
        )),
        None => text.push_str("first divergence: none in isolated mode\n"),
    }
    for d in &record.chained_divergence {
        text.push_str(&format!(
            "chained: accumulated error first crosses tolerance at `{}` output `{}` (case {}){}\n",
            d.stage,
            d.output,
            d.case,
            d.on_target()
        ));
    }
    if let Some(head) = super::triangulation_text::headline(record) {
        text.push_str(&head);
        text.push('\n');
        let (rows, left) = super::triangulation_text::listed(record);
        for r in rows {
            text.push_str(&format!("  {}\n", super::triangulation_text::row_line(r)));
        }
        if left > 0 {
            text.push_str(&format!(
                "  ... and {left} more (run.json: triangulation)\n"
            ));
        }
    }
    if let Some(l) = &record.first_divergent_op {
        text.push_str(&format!("localised to: {}\n", super::localised::line(l)));
    }
    clean(&text).into_owned()
}
