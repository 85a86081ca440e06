//! `parity report`: re-render saved records without running anything.

use crate::report::{self, table::Colour, Junit, Markdown, Renderer, Terminal};
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A JSON record written by parity (`parity.run-record/2`, `parity.bisect/2`, `parity.compare/1`).
    record: PathBuf,
    /// Also write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write a Markdown summary here (under 1 MiB), e.g. "$GITHUB_STEP_SUMMARY".
    #[arg(long)]
    markdown: Option<PathBuf>,
}

/// Runs `parity report`; the exit code is the record's own.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let record = match AnyRecord::read(&args.record) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "parity: error: {}",
                report::sanitize::terminal(&e.to_string())
            );
            return Ok(ExitCode::Input.code());
        }
    };
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
    };
    let _ = std::io::stdout()
        .lock()
        .write_all(&terminal.render(&record)?);
    let md = Markdown::default();
    let mut jobs: Vec<(&PathBuf, &dyn Renderer)> = Vec::new();
    if let Some(p) = &args.junit {
        jobs.push((p, &Junit));
    }
    if let Some(p) = &args.markdown {
        jobs.push((p, &md));
    }
    let failures: Vec<String> = jobs
        .into_iter()
        .filter_map(|(p, r)| report::write_report(p, r, &record).err())
        .map(|e| e.to_string())
        .collect();
    let written = if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    Ok(super::check::exit_with(record.exit_code(), written))
}
