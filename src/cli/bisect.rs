//! `parity bisect`: localise the first divergence to one StableHLO operation.

use super::StrategyArg;
use super::EXIT_INPUT;
use crate::bisect::{self, BisectOptions};
use crate::report;
use crate::report::bisect_text;
use crate::run::RunOptions;
use anyhow::Context;
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
    /// Write the JSON report (`parity.bisect/2`) here; the HTML report and
    /// Model Explorer node data go next to it (`.html`, `.node-data.json`).
    #[arg(long, default_value = "reports/bisect.json")]
    json: PathBuf,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
}

/// Runs `parity bisect`.
pub fn run(args: BisectArgs) -> anyhow::Result<i32> {
    let spec = match parity_spec::Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("parity: invalid spec: {e}");
            return Ok(EXIT_INPUT);
        }
    };
    let options = BisectOptions {
        run: RunOptions {
            cache_dir: args.cache_dir,
            compiler_lib: args.iree_compiler_lib,
            cases: args.cases,
            stages: args.stages,
            ..RunOptions::default()
        },
        strategy: args.strategy.into(),
        repro_dir: args.repro_dir,
    };
    let report_ = bisect::bisect(&spec, &options);
    write_and_print(&report_, &args.json)
}

/// Writes the JSON report and the HTML one next to it (`.html`), prints the
/// text one, returns the exit code.
pub fn write_and_print(r: &bisect::BisectRecord, json: &std::path::Path) -> anyhow::Result<i32> {
    let body = serde_json::to_string_pretty(r).context("serialising the bisect report")?;
    report::write_atomic(json, body.as_bytes())
        .with_context(|| format!("writing {}", json.display()))?;
    let html = json.with_extension("html");
    let page = report::html::render(&report::html::HtmlInput {
        runs: &[],
        bisects: std::slice::from_ref(r),
    });
    report::write_atomic(&html, page.as_bytes())
        .with_context(|| format!("writing {}", html.display()))?;
    let node_data = json.with_extension("node-data.json");
    if let Some(text) = report::node_data::render(r) {
        report::write_atomic(&node_data, text.as_bytes())
            .with_context(|| format!("writing {}", node_data.display()))?;
    }
    print!("{}", bisect_text::text(r));
    println!("report: {} {}", json.display(), html.display());
    Ok(r.exit_code().code())
}
