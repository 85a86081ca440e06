//! `parity report`: re-render a saved run record.

use super::EXIT_INPUT;
use crate::report::{self, table::Colour};
use std::path::PathBuf;

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A JSON run record written by `parity check`.
    record: PathBuf,
    /// Also write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
}

/// Runs `parity report`; the exit code is the record's own.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let text = match std::fs::read_to_string(&args.record) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("parity: error: cannot read {}: {e}", args.record.display());
            return Ok(EXIT_INPUT);
        }
    };
    let record = match report::json::parse(&text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("parity: error: {}: {e}", args.record.display());
            return Ok(EXIT_INPUT);
        }
    };
    if let Some(path) = &args.junit {
        report::write_atomic(path, report::junit::render(&record).as_bytes())?;
    }
    print!("{}", report::table::render(&record, Colour::detect()));
    Ok(record.exit_code().code())
}
