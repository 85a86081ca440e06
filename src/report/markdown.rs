//! A Markdown summary for CI step summaries (GitHub's `$GITHUB_STEP_SUMMARY`
//! holds at most 1 MiB per step): the verdict, the first divergence and
//! where it was localised, the errors, and a table of every output that did
//! not pass. Stays under its byte budget, saying what it left out.

use super::sanitize;
use super::table::num;
use super::{Renderer, ReportError};
use parity_record::{AnyRecord, BisectRecord, CompareRecord, Localisation, RunRecord, Status};
use std::fmt::Write as _;

/// GitHub's limit for one step summary.
pub const STEP_SUMMARY_LIMIT: usize = 1 << 20;

/// Markdown, at most `budget` bytes.
#[derive(Clone, Copy, Debug)]
pub struct Markdown {
    /// The most bytes the document may take.
    pub budget: usize,
}

impl Default for Markdown {
    fn default() -> Self {
        // Leave room for whatever else the job appends to the same summary.
        Markdown {
            budget: STEP_SUMMARY_LIMIT - (64 << 10),
        }
    }
}

impl Renderer for Markdown {
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, ReportError> {
        let (head, rows, tail) = match record {
            AnyRecord::Run(r) => run_parts(r),
            AnyRecord::Bisect(b) => (bisect_head(b), Vec::new(), String::new()),
            AnyRecord::Compare(c) => (compare_head(c), Vec::new(), String::new()),
            AnyRecord::Tokens(t) => (tokens_head(t), Vec::new(), String::new()),
            AnyRecord::Serving(s) => (super::serving_text::markdown(s), Vec::new(), String::new()),
            AnyRecord::Baseline(b) => (super::baseline::markdown(b), Vec::new(), String::new()),
            AnyRecord::Fuzz(f) => (super::fuzz_text::markdown(f), Vec::new(), String::new()),
            AnyRecord::History(h) => (super::history_text::markdown(h), Vec::new(), String::new()),
            AnyRecord::Dispatches(d) => (
                super::dispatches_text::markdown(d),
                Vec::new(),
                String::new(),
            ),
        };
        Ok(assemble(self.budget, head, &rows, &tail).into_bytes())
    }
}

/// Text safe inside Markdown (and a table cell): no controls, no HTML, no
/// markup characters, one line.
pub fn md(s: &str) -> String {
    let clean = sanitize::xml(s);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' | '\t' => out.push(' '),
            '|' | '*' | '_' | '[' | ']' | '`' | '\\' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `head`, then as many `rows` as fit, then a note on what was left out, then `tail`.
fn assemble(budget: usize, head: String, rows: &[String], tail: &str) -> String {
    let mut text = head;
    let reserve = tail.len() + 200;
    let mut shown = 0;
    for row in rows {
        if text.len() + row.len() + reserve > budget {
            break;
        }
        text.push_str(row);
        shown += 1;
    }
    if shown < rows.len() {
        let _ = writeln!(
            text,
            "\n_{} of {} rows left out to stay under {} bytes; the JSON record has them all._",
            rows.len() - shown,
            rows.len(),
            budget
        );
    }
    if text.len() + tail.len() <= budget {
        text.push_str(tail);
    }
    text
}

fn localisation_line(l: &Localisation) -> String {
    format!("**Localised to** {}\n", md(&super::localised::line(l)))
}

fn run_parts(r: &RunRecord) -> (String, Vec<String>, String) {
    let mut head = String::new();
    let outputs = r.stages.iter().map(|s| s.outputs.len()).sum::<usize>();
    let _ = writeln!(
        head,
        "## parity: {}\n\n{} stage runs, {} outputs compared, {:.2}s, spec {}\n",
        r.status.name().to_uppercase(),
        r.stages.len(),
        outputs,
        r.elapsed_s,
        md(&r.spec)
    );
    if let Some(shard) = &r.shard {
        let _ = writeln!(
            head,
            "**Shard {}/{}:** this shard's stage runs only; merge the shards for the whole run's verdict\n",
            shard.index, shard.count
        );
    }
    match &r.first_divergence {
        Some(d) => {
            let _ = writeln!(
                head,
                "**First divergence:** stage {} output {} (case {}, {}){}\n",
                md(&d.stage),
                md(&d.output),
                md(&d.case),
                d.mode.name(),
                md(&d.on_target())
            );
        }
        None => head.push_str("**First divergence:** none in isolated mode\n\n"),
    }
    if let Some(l) = &r.first_divergent_op {
        head.push_str(&localisation_line(l));
        head.push('\n');
    }
    for d in &r.chained_divergence {
        let _ = writeln!(
            head,
            "- chained: accumulated error first crosses tolerance at {} output {} (case {}){}",
            md(&d.stage),
            md(&d.output),
            md(&d.case),
            md(&d.on_target())
        );
    }
    if let Some(line) = super::triangulation_text::headline(r) {
        let _ = writeln!(head, "\n**{}**\n", md(&line));
        let (listed, left) = super::triangulation_text::listed(r);
        for t in listed {
            let _ = writeln!(head, "- {}", md(&super::triangulation_text::row_line(t)));
        }
        if left > 0 {
            let _ = writeln!(head, "- ... and {left} more (run.json: triangulation)");
        }
        head.push('\n');
    }
    let multi = r.is_multi_target();
    for e in r.all_errors() {
        let _ = writeln!(head, "- error ({}): {}", e.kind.name(), md(&e.message));
    }
    for t in &r.provenance.weight_transforms {
        let _ = writeln!(head, "- weight transformed at load: {}", md(&t.describe()));
    }
    if !r.stages.is_empty() {
        head.push_str("\n### Stages: the worst output of each, and its headroom\n\n");
        head.push_str(&super::stage_lines::markdown(r));
    }
    let mut rows = Vec::new();
    for s in &r.stages {
        if s.outputs.is_empty() && s.status != Status::Pass {
            let why = s
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .or(s.skipped_because.as_deref())
                .unwrap_or("");
            rows.push(format!(
                "| {} | {} | {} | - | {} | | {} |\n",
                md(&s.display_name(multi)),
                md(&s.case),
                s.mode.name(),
                s.status.name(),
                md(why)
            ));
        }
        for o in s.outputs.iter().filter(|o| o.status != Status::Pass) {
            let max_abs = o.metrics.as_ref().map_or(String::new(), |m| num(m.max_abs));
            // Escaped once, in the row below.
            let why = match &o.error {
                Some(e) => e.message.clone(),
                None => super::table::failed_criteria(o),
            };
            rows.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                md(&s.display_name(multi)),
                md(&s.case),
                s.mode.name(),
                md(&o.name),
                o.status.name(),
                max_abs,
                md(&why)
            ));
        }
    }
    if rows.is_empty() {
        head.push_str("\nEvery output passed.\n");
    } else {
        head.push_str("\n| stage | case | mode | output | status | max_abs | why |\n|---|---|---|---|---|---|---|\n");
    }
    let passed = r
        .stages
        .iter()
        .flat_map(|s| &s.outputs)
        .filter(|o| o.status == Status::Pass)
        .count();
    let tail = format!("\n{passed} outputs passed.\n");
    (head, rows, tail)
}

fn bisect_head(b: &BisectRecord) -> String {
    let mut s = format!(
        "## parity bisect: {}\n\n",
        match b.status {
            Status::Pass => "no divergence",
            Status::Fail => "localised",
            _ => "error",
        }
    );
    if let (Some(stage), Some(case)) = (&b.stage, &b.case) {
        let _ = writeln!(
            s,
            "Stage {} case {} output {}, {} probes\n",
            md(stage),
            md(case),
            md(b.output.as_deref().unwrap_or("?")),
            b.probes
        );
    }
    if let Some(l) = b.localisation() {
        s.push_str(&localisation_line(&l));
    }
    if let Some(r) = b.repair.as_ref().filter(|r| r.claimed.is_none()) {
        let ops: std::collections::BTreeSet<String> = r
            .candidates
            .iter()
            .map(|c| format!("#{} {}", c.op_index, c.op_name))
            .collect();
        let eq = match &r.equivalence {
            Some(eq) if eq.holds() => format!(
                "; they compute one function on {} perturbed inputs, so only an oracle tensor \
                 between them can separate them",
                eq.inputs
            ),
            Some(eq) if eq.unedited_differs => format!(
                "; {} of them differ from the first on {} perturbed inputs",
                eq.differ.len(),
                eq.inputs
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "\nRepair search: ambiguous between {} edits at {}{eq}.",
            r.candidates.len(),
            md(&ops.into_iter().collect::<Vec<_>>().join(", "))
        );
    }
    if let Some(c) = b.repair.as_ref().and_then(|r| r.cross_case.as_ref()) {
        let _ = writeln!(
            s,
            "\nRepair search, {}.",
            md(&super::localised::cross_case_line(c))
        );
    }
    if let Some(e) = &b.dispatch {
        let _ = writeln!(
            s,
            "\n```text\n{}```",
            super::sanitize::xml(&super::dispatches_text::evidence_text(e)).replace("```", "'''")
        );
    }
    if let Some(dir) = &b.reproducer {
        let _ = writeln!(s, "\nReproducer: {} (run.sh, stages.yaml)", md(dir));
    }
    for e in &b.errors {
        let _ = writeln!(s, "- error ({}): {}", e.kind.name(), md(&e.message));
    }
    s
}

fn compare_head(c: &CompareRecord) -> String {
    let mut s = format!(
        "## parity compare: {}\n\n{} vs {}\n\n",
        c.status.name().to_uppercase(),
        md(&c.actual.file),
        md(&c.expected.file)
    );
    if let Some(m) = &c.metrics {
        let _ = writeln!(
            s,
            "| count | max_abs | rms | max_ulp | mismatches |\n|---|---|---|---|---|\n| {} | {} | {} | {} | {} |",
            m.count,
            num(m.max_abs),
            num(m.rms),
            m.max_ulp.map_or("-".into(), |u| u.to_string()),
            m.mismatches
        );
    }
    for e in &c.errors {
        let _ = writeln!(s, "- error ({}): {}", e.kind.name(), md(&e.message));
    }
    s
}

/// The tokens record: verdict, first divergent token, layer and op, then the
/// aligned streams as a text block (backticks replaced, so the fence holds).
fn tokens_head(t: &parity_record::TokensRecord) -> String {
    let mut text = format!("## parity tokens: {}\n\n", t.status.name().to_uppercase());
    match &t.first_divergent_token {
        Some(d) => {
            let _ = writeln!(
                text,
                "- **first divergent token**{}: {}",
                md(&super::tokens_targets_text::at(
                    t.divergence_target.as_deref()
                )),
                md(&super::tokens_text::token_line(d))
            );
        }
        None => text.push_str("- no token differs from the oracle\n"),
    }
    // The triangulation head as a bullet, each labelled case under it.
    for line in super::tokens_targets_text::lines(t) {
        let indent = if line.starts_with(' ') { "  " } else { "" };
        let _ = writeln!(text, "{indent}- {}", md(line.trim_start()));
    }
    for line in super::tokens_text::localisation_lines(t) {
        let _ = writeln!(text, "- {}", md(&line));
    }
    let body = super::tokens_text::text(t).replace('`', "'");
    let _ = write!(text, "\n```text\n{}\n```\n", sanitize::xml(&body));
    text
}
