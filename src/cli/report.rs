//! `parity report`: re-render saved records (run records and bisect
//! records) without running anything.

use super::EXIT_INPUT;
use crate::report::{self, bisect_text, table::Colour};
use parity_record::{AnyRecord, ExitCode};
use std::path::PathBuf;

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// JSON records: run records written by `parity check` (`parity.run-record/2`)
    /// and bisect records written by `parity bisect` (`parity.bisect/2`).
    #[arg(required = true)]
    records: Vec<PathBuf>,
    /// Also write JUnit XML here (needs exactly one run record).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write the self-contained HTML report of every record here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also write Model Explorer node data (per-op error, keyed by the
    /// explorer's node ids) for the bisect record here (needs exactly one).
    #[arg(long)]
    node_data: Option<PathBuf>,
}

/// Runs `parity report`; the exit code is the worst of the records' own
/// (2 input over 3 execution over 1 parity failure over 0).
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let mut runs = Vec::new();
    let mut bisects = Vec::new();
    let mut codes = Vec::new();
    for path in &args.records {
        let record = match AnyRecord::read(path) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("parity: error: {e}");
                return Ok(EXIT_INPUT);
            }
        };
        codes.push(record.exit_code());
        match record {
            AnyRecord::Run(r) => runs.push(r),
            AnyRecord::Bisect(b) => bisects.push(b),
            AnyRecord::Compare(_) => {
                eprintln!(
                    "parity: error: {}: compare records have no report of their own yet",
                    path.display()
                );
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
        report::write_atomic(path, report::junit::render(run).as_bytes())?;
    }
    if let Some(path) = &args.html {
        let page = report::html::render(&report::html::HtmlInput {
            runs: &runs,
            bisects: &bisects,
        });
        report::write_atomic(path, page.as_bytes())?;
    }
    if let Some(path) = &args.node_data {
        let [b] = bisects.as_slice() else {
            eprintln!(
                "parity: error: --node-data needs exactly one bisect record ({} given)",
                bisects.len()
            );
            return Ok(EXIT_INPUT);
        };
        let Some(text) = report::node_data::render(b) else {
            eprintln!("parity: error: the bisect record names no function with node ids");
            return Ok(EXIT_INPUT);
        };
        report::write_atomic(path, text.as_bytes())?;
    }
    for run in &runs {
        print!("{}", report::table::render(run, Colour::detect()));
    }
    for b in &bisects {
        print!("{}", bisect_text::text(b));
    }
    Ok(ExitCode::combine(codes).code())
}
