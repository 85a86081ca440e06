//! `parity report`: re-render saved records (run records and bisect
//! records) without running anything.

use super::EXIT_INPUT;
use crate::bisect::{render, BisectReport, BISECT_SCHEMA};
use crate::report::{self, table::Colour};
use crate::run::record::RunRecord;
use anyhow::Context;
use std::path::{Path, PathBuf};

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// JSON records: run records written by `parity check` (`parity.run-record/1`)
    /// and bisect records written by `parity bisect` (`parity.bisect/1`).
    #[arg(required = true)]
    records: Vec<PathBuf>,
    /// Also write JUnit XML here (needs exactly one run record).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write the self-contained HTML report of every record here.
    #[arg(long)]
    html: Option<PathBuf>,
}

/// Runs `parity report`; the exit code is the worst of the records' own
/// (2 input over 3 execution over 1 parity failure over 0).
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let mut runs = Vec::new();
    let mut bisects = Vec::new();
    for path in &args.records {
        match read(path) {
            Ok(Record::Run(r)) => runs.push(*r),
            Ok(Record::Bisect(b)) => bisects.push(*b),
            Err(message) => {
                eprintln!("parity: error: {message}");
                return Ok(EXIT_INPUT);
            }
        }
    }
    if let Some(path) = &args.junit {
        let [run] = runs.as_slice() else {
            eprintln!(
                "parity: error: --junit needs exactly one run record ({} given)",
                runs.len()
            );
            return Ok(EXIT_INPUT);
        };
        report::write_atomic(path, report::junit::render(run).as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let page = report::html::render(&report::html::HtmlInput {
            runs: &runs,
            bisects: &bisects,
        });
        report::write_atomic(path, page.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for run in &runs {
        print!("{}", report::table::render(run, Colour::detect()));
    }
    for b in &bisects {
        print!("{}", render::text(b));
    }
    let codes = runs
        .iter()
        .map(RunRecord::exit_code)
        .chain(bisects.iter().map(BisectReport::exit_code));
    Ok(codes.max_by_key(|&c| precedence(c)).unwrap_or(0))
}

/// Exit-code precedence: input (2) over execution (3) over failure (1) over pass.
fn precedence(code: i32) -> u8 {
    match code {
        2 => 3,
        3 => 2,
        1 => 1,
        _ => 0,
    }
}

enum Record {
    Run(Box<RunRecord>),
    Bisect(Box<BisectReport>),
}

/// Reads one record, telling the kinds apart by their `schema`.
fn read(path: &Path) -> Result<Record, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(BISECT_SCHEMA) => serde_json::from_value(value)
            .map(|b| Record::Bisect(Box::new(b)))
            .map_err(|e| format!("{}: bad bisect record: {e}", path.display())),
        _ => report::json::parse(&text)
            .map(|r| Record::Run(Box::new(r)))
            .map_err(|e| format!("{}: {e}", path.display())),
    }
}
