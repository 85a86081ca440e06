//! `parity bisect`: localise the first divergence to one StableHLO operation.

use super::StrategyArg;
use crate::bisect::{self, BisectOptions};
use crate::report::{self, table::Colour, Json, Renderer, Terminal};
use crate::run::RunOptions;
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity bisect`.
#[derive(clap::Args, Debug)]
pub struct BisectArgs {
    /// The stage graph.
    #[arg(default_value = "stages.yaml")]
    spec: PathBuf,
    /// Bisect this case only (default: the first divergent case).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Bisect this stage only (default: the first divergent stage).
    #[arg(long = "stage")]
    stages: Vec<String>,
    /// Tap placement: bisection (about log2(N) probes), mark-all (one build with
    /// every tap), or auto (mark-all when the taps fit in 512 MiB).
    #[arg(long, value_enum, default_value = "auto")]
    strategy: StrategyArg,
    /// Directory for the reproducer (slice.mlir, .npy files, run.sh, stages.yaml).
    #[arg(long, default_value = "reports/bisect")]
    repro_dir: PathBuf,
    /// Write the JSON record (`parity.bisect/2`) here; the HTML report and the
    /// Model Explorer node data go next to it (`.html`, `.node-data.json`).
    #[arg(long, default_value = "reports/bisect.json")]
    json: PathBuf,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec's target to run on (a `subject.targets` name; default: the first).
    #[arg(long, value_name = "NAME")]
    target: Option<String>,
}

/// Runs `parity bisect`.
pub fn run(args: BisectArgs) -> anyhow::Result<i32> {
    let spec = match parity_spec::Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "parity: invalid spec: {}",
                report::sanitize::terminal(&e.to_string())
            );
            return Ok(ExitCode::Input.code());
        }
    };
    let options = BisectOptions {
        run: RunOptions {
            cache_dir: args.cache_dir,
            compiler_lib: args.iree_compiler_lib,
            cases: args.cases,
            stages: args.stages,
            target: args.target,
            ..RunOptions::default()
        },
        strategy: args.strategy.into(),
        repro_dir: args.repro_dir,
    };
    let report_ = bisect::bisect(&spec, &options);
    write_and_print(&report_, &args.json)
}

/// Prints the bisect record, then writes it as JSON; returns the exit code
/// (a failed write keeps a localisation's 1, else exits 2; see `check`).
pub fn write_and_print(r: &bisect::BisectRecord, json: &std::path::Path) -> anyhow::Result<i32> {
    let record = AnyRecord::Bisect(r.clone());
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
        verbose: false,
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&terminal.render(&record)?);
    let mut written = report::write_report(json, &Json, &record).map_err(|e| e.to_string());
    if written.is_ok() {
        let _ = writeln!(stdout, "report: {}", json.display());
    }
    // The HTML page and Model Explorer node data go next to the JSON.
    let html = json.with_extension("html");
    if let Err(e) = report::write_report(&html, &report::Html, &record) {
        written = written.and(Err(e.to_string()));
    }
    if let Some(text) = report::node_data::render(r) {
        let path = json.with_extension("node-data.json");
        if let Err(e) = report::write_atomic(&path, text.as_bytes()) {
            written = written.and(Err(format!("cannot write {}: {e}", path.display())));
        }
    }
    drop(stdout);
    Ok(super::check::exit_with(record.exit_code(), written))
}
