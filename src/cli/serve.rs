//! `parity serve SCENARIO`: many requests through the production slot entry
//! points on IREE, as a continuous-batching server runs them; every request
//! judged against the oracle and its solo run (docs/serving.md).

use crate::report::{self, table::Colour, Json, Junit, Renderer, Terminal};
use crate::run::RunOptions;
use crate::serve::TargetChoice;
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
    /// Check a running server instead of the in-process engine: an
    /// OpenAI-compatible endpoint on loopback, e.g. http://127.0.0.1:8080
    /// (POST /v1/completions; docs/serving-blackbox.md).
    #[arg(long, value_name = "URL", conflicts_with = "target_command")]
    target: Option<String>,
    /// Check a command instead of the in-process engine: run once per
    /// request, `{request}` replaced by the request's JSON file (stdin
    /// without it), JSON lines out (docs/serving-blackbox.md).
    #[arg(long, value_name = "TEMPLATE")]
    target_command: Option<String>,
}

/// Runs `parity serve`: prints the table, then writes the requested reports.
pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    let options = RunOptions {
        cache_dir: args.cache_dir,
        compiler_lib: args.iree_compiler_lib,
        ..RunOptions::default()
    };
    let choice = match (args.target, args.target_command) {
        (Some(url), _) => TargetChoice::Http(url),
        (None, Some(template)) => TargetChoice::Command(template),
        (None, None) => TargetChoice::InProcess,
    };
    let record = AnyRecord::Serving(Box::new(crate::serve::execute_on(
        &args.scenario,
        &options,
        &choice,
    )));
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
