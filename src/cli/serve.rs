//! `parity serve SCENARIO`: many requests through the production slot entry
//! points on IREE, as a continuous-batching server runs them; every request
//! judged against the oracle and its solo run (docs/serving.md).

use crate::report::{self, table::Colour, Json, Junit, Renderer, Terminal};
use crate::run::RunOptions;
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The scenario file (`*scenario*.yaml`).
    scenario: PathBuf,
    /// Write the JSON record (`parity.serving/1`) here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a JUnit XML report here (one test case per request).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the HTML report (slots x steps timeline) here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
}

/// Runs `parity serve`: prints the table, then writes the requested reports.
pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    let options = RunOptions {
        cache_dir: args.cache_dir,
        compiler_lib: args.iree_compiler_lib,
        ..RunOptions::default()
    };
    let record = AnyRecord::Serving(Box::new(crate::serve::execute(&args.scenario, &options)));
    let mut stdout = std::io::stdout().lock();
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
    };
    let _ = stdout.write_all(&terminal.render(&record)?);
    drop(stdout);
    let jobs: Vec<(PathBuf, &dyn Renderer)> = [
        args.json.map(|p| (p, &Json as &dyn Renderer)),
        args.junit.map(|p| (p, &Junit as &dyn Renderer)),
        args.html.map(|p| (p, &report::Html as &dyn Renderer)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let failures: Vec<String> = jobs
        .iter()
        .filter_map(|(path, r)| report::write_report(path, *r, &record).err())
        .map(|e| e.to_string())
        .collect();
    let written = if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    let code: ExitCode = record.exit_code();
    Ok(super::check::exit_with(code, written))
}
