//! `parity report`: re-render saved records without running anything.

use crate::report::{self, table::Colour, Junit, Markdown, Renderer, Terminal};
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// JSON records written by parity (`parity.run-record/2`, `parity.bisect/2`,
    /// `parity.compare/1`, `parity.tokens/1`); the HTML page shows them all.
    #[arg(required = true)]
    records: Vec<PathBuf>,
    /// Also write JUnit XML here (needs exactly one record).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write a Markdown summary here (under 1 MiB), e.g. "$GITHUB_STEP_SUMMARY"
    /// (needs exactly one record).
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Also write the self-contained HTML report of every record here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Also write Model Explorer node data (per-op error keyed by the explorer's
    /// node ids) for the bisect record here (needs exactly one bisect record).
    #[arg(long)]
    node_data: Option<PathBuf>,
}

/// Runs `parity report`; the exit code is the worst of the records' own
/// (input over execution over parity failure over pass).
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let input_error = |message: String| {
        eprintln!("parity: error: {}", report::sanitize::terminal(&message));
        Ok(ExitCode::Input.code())
    };
    let mut records = Vec::new();
    for path in &args.records {
        match AnyRecord::read(path) {
            Ok(r) => records.push(r),
            Err(e) => return input_error(e.to_string()),
        }
    }
    let single = || match records.as_slice() {
        [one] => Ok(one),
        _ => Err(format!(
            "--junit and --markdown need exactly one record ({} given)",
            records.len()
        )),
    };
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
    };
    {
        let mut stdout = std::io::stdout().lock();
        for r in &records {
            let _ = stdout.write_all(&terminal.render(r)?);
        }
    }
    let md = Markdown::default();
    let mut jobs: Vec<(&PathBuf, &dyn Renderer)> = Vec::new();
    if let Some(p) = &args.junit {
        jobs.push((p, &Junit));
    }
    if let Some(p) = &args.markdown {
        jobs.push((p, &md));
    }
    let mut failures: Vec<String> = Vec::new();
    if !jobs.is_empty() {
        let record = match single() {
            Ok(r) => r,
            Err(m) => return input_error(m),
        };
        failures.extend(
            jobs.into_iter()
                .filter_map(|(p, r)| report::write_report(p, r, record).err())
                .map(|e| e.to_string()),
        );
    }
    let runs: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            AnyRecord::Run(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    let bisects: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            AnyRecord::Bisect(b) => Some(b.clone()),
            _ => None,
        })
        .collect();
    let tokens: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            AnyRecord::Tokens(t) => Some((**t).clone()),
            _ => None,
        })
        .collect();
    if let Some(path) = &args.html {
        let page = report::html::render(&report::html::HtmlInput {
            runs: &runs,
            bisects: &bisects,
            tokens: &tokens,
        });
        if let Err(e) = report::write_atomic(path, page.as_bytes()) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    if let Some(path) = &args.node_data {
        let [b] = bisects.as_slice() else {
            return input_error(format!(
                "--node-data needs exactly one bisect record ({} given)",
                bisects.len()
            ));
        };
        let Some(text) = report::node_data::render(b) else {
            return input_error("the bisect record names no function with node ids".into());
        };
        if let Err(e) = report::write_atomic(path, text.as_bytes()) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    let written = if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    let code = ExitCode::combine(records.iter().map(AnyRecord::exit_code));
    Ok(super::check::exit_with(code, written))
}
