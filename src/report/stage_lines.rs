//! One line per stage: its runs' verdict and its worst output over cases and
//! modes, with the headroom of that output's tightest criterion. What a
//! person reads first; the rows behind it are in `-v` and run.json.

use super::headroom;
use super::markdown::md;
use super::sanitize::terminal as clean;
use super::table::{status_cell, Colour};
use comfy_table::Cell;
use parity_record::{CriterionRecord, RunRecord, StageRecord, Status};

/// A stage's runs in brief.
#[derive(Debug)]
pub struct StageLine<'a> {
    /// The stage's name.
    pub stage: &'a str,
    /// The target its runs ran on (empty in records older than targets).
    pub target: &'a str,
    /// Whether the run went over several targets (the line then names its target).
    pub multi: bool,
    /// The worst status of its runs (error, fail, skipped, pass).
    pub status: Status,
    /// Its runs (cases x modes).
    pub runs: usize,
    /// Its runs by status: pass, fail, error, skipped.
    pub counts: [usize; 4],
    /// The output with the largest ratio over every run, when one was compared.
    pub worst: Option<Worst<'a>>,
}

/// The output of a stage closest to (or furthest past) its tolerance.
#[derive(Debug)]
pub struct Worst<'a> {
    /// The output's name.
    pub output: &'a str,
    /// The run it was measured in.
    pub run: &'a StageRecord,
    /// Its tightest criterion.
    pub criterion: &'a CriterionRecord,
    /// That criterion's error as a fraction of its limit ([`headroom::ratio`]).
    pub ratio: f64,
}

impl StageLine<'_> {
    /// `stage`, or `stage @target` in a run over several targets.
    pub fn name(&self) -> String {
        if self.multi && !self.target.is_empty() {
            format!("{} @{}", self.stage, self.target)
        } else {
            self.stage.to_string()
        }
    }
}

fn rank(s: Status) -> u8 {
    match s {
        Status::Pass => 0,
        Status::Skipped => 1,
        Status::Fail => 2,
        Status::Error => 3,
    }
}

/// One line per stage, in the order the stages first ran (dependency order).
pub fn lines(run: &RunRecord) -> Vec<StageLine<'_>> {
    let mut lines: Vec<StageLine> = Vec::new();
    for s in &run.stages {
        let at = match lines
            .iter()
            .position(|l| l.stage == s.name && l.target == s.target)
        {
            Some(i) => i,
            None => {
                lines.push(StageLine {
                    stage: &s.name,
                    target: &s.target,
                    multi: run.is_multi_target(),
                    status: Status::Pass,
                    runs: 0,
                    counts: [0; 4],
                    worst: None,
                });
                lines.len() - 1
            }
        };
        let line = &mut lines[at];
        line.runs += 1;
        line.counts[match s.status {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::Error => 2,
            Status::Skipped => 3,
        }] += 1;
        if rank(s.status) > rank(line.status) {
            line.status = s.status;
        }
        for o in &s.outputs {
            let Some((criterion, ratio)) = headroom::tightest(o) else {
                continue;
            };
            // Ties keep the first (isolated before chained, cases in order).
            if line.worst.as_ref().is_none_or(|w| ratio > w.ratio) {
                line.worst = Some(Worst {
                    output: &o.name,
                    run: s,
                    criterion,
                    ratio,
                });
            }
        }
    }
    lines
}

impl StageLine<'_> {
    /// `10/10 pass`, `8/10 pass, 1 fail, 1 skipped`.
    pub fn runs_text(&self) -> String {
        let [pass, fail, error, skipped] = self.counts;
        let mut text = format!("{pass}/{} pass", self.runs);
        for (n, what) in [(fail, "fail"), (error, "error"), (skipped, "skipped")] {
            if n > 0 {
                text.push_str(&format!(", {n} {what}"));
            }
        }
        text
    }
}

impl Worst<'_> {
    /// `normed (b2, chained)`.
    pub fn place(&self) -> String {
        format!(
            "{} ({}, {})",
            self.output,
            self.run.case,
            self.run.mode.name()
        )
    }
}

/// The per-stage table for a terminal.
pub fn table(run: &RunRecord, colour: Colour) -> String {
    let mut table = super::table::terminal_table(
        &[
            "stage",
            "status",
            "runs",
            "worst output (case, mode)",
            "tightest criterion: observed / limit",
            "x limit",
        ],
        colour,
    );
    for line in lines(run) {
        let (place, criterion, ratio) = match &line.worst {
            Some(w) => (
                w.place(),
                headroom::versus(w.criterion),
                headroom::ratio_text(w.ratio),
            ),
            None => ("-".into(), String::new(), String::new()),
        };
        table.add_row(vec![
            Cell::new(clean(&line.name())),
            status_cell(line.status, colour),
            Cell::new(line.runs_text()),
            Cell::new(clean(&place)),
            Cell::new(criterion),
            Cell::new(ratio),
        ]);
    }
    table.to_string()
}

/// Most stages the Markdown table lists (a step summary has a byte budget,
/// and this table is never cut by it); the rest are counted.
const MARKDOWN_STAGES: usize = 64;

/// The per-stage table in Markdown.
pub fn markdown(run: &RunRecord) -> String {
    let mut text = String::from(
        "| stage | status | runs | worst output (case, mode) | tightest criterion: observed / limit | x limit |\n\
         |---|---|---|---|---|---|\n",
    );
    let all = lines(run);
    let left_out = all.len().saturating_sub(MARKDOWN_STAGES);
    for line in all.into_iter().take(MARKDOWN_STAGES) {
        let (place, criterion, ratio) = match &line.worst {
            Some(w) => (
                md(&w.place()),
                md(&headroom::versus(w.criterion)),
                headroom::ratio_text(w.ratio),
            ),
            None => ("-".into(), String::new(), String::new()),
        };
        text.push_str(&format!(
            "| {} | {} | {} | {place} | {criterion} | {ratio} |\n",
            md(&line.name()),
            line.status.name(),
            line.runs_text()
        ));
    }
    if left_out > 0 {
        text.push_str(&format!(
            "\n_{left_out} more stages left out; the JSON record has them all._\n"
        ));
    }
    text
}
