//! `parity bisect`: localise the first divergence to one StableHLO operation.

use super::emit::{Dest, ExportArgs};
use super::StrategyArg;
use crate::bisect::{self, BisectOptions};
use crate::report::{self, Json, Junit, Markdown, Renderer};
use crate::run::RunOptions;
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// The reports: the JSON record (`parity.bisect/2`, default
    /// reports/bisect.json), the HTML page (default: next to the JSON file,
    /// `.html`), JUnit and Markdown when asked; the Model Explorer node data
    /// goes next to the JSON file (`.node-data.json`).
    #[command(flatten)]
    exports: super::emit::ExportArgs,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec's targets to run on (`subject.targets` names; default: the
    /// first). With two or more (`--target cpu,vulkan`), the stages run on
    /// each and bisect runs on the first target whose stage diverges.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    target: Vec<String>,
}

/// Runs `parity bisect`.
pub fn run(args: BisectArgs) -> anyhow::Result<i32> {
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let Some(spec) = super::emit::load_spec(&args.spec) else {
        return Ok(ExitCode::Input.code());
    };
    let options = BisectOptions {
        run: RunOptions {
            cache_dir: args.cache_dir,
            compiler_lib: args.iree_compiler_lib,
            cases: args.cases,
            stages: args.stages,
            target: None,
            ..RunOptions::default()
        },
        strategy: args.strategy.into(),
        repro_dir: args.repro_dir,
    };
    let report_ = bisect::bisect_targets(&spec, &options, &args.target);
    write_and_print(&report_, &args.exports)
}

/// Prints the bisect record (unless an export goes to stdout), then writes
/// its exports; returns the exit code (a failed write keeps a
/// localisation's 1, else exits 2; see `check`).
fn write_and_print(r: &bisect::BisectRecord, exports: &ExportArgs) -> anyhow::Result<i32> {
    let record = AnyRecord::Bisect(r.clone());
    // The HTML page and the Model Explorer node data go next to the JSON
    // file; with the JSON on stdout, in reports/.
    let json = exports
        .json
        .clone()
        .unwrap_or_else(|| Dest::File(PathBuf::from("reports/bisect.json")));
    let beside = json
        .file()
        .map_or_else(|| PathBuf::from("reports/bisect.json"), Path::to_path_buf);
    let html = exports
        .html
        .clone()
        .unwrap_or_else(|| Dest::File(beside.with_extension("html")));
    let text = !exports.to_stdout();
    if text {
        super::emit::print_text(&record)?;
    }
    let mut written = json.render(&Json, &record);
    if let (true, Ok(()), Some(path)) = (text, &written, json.file()) {
        let _ = writeln!(std::io::stdout().lock(), "report: {}", path.display());
    }
    let md = Markdown::default();
    let more: [(Option<&Dest>, &dyn Renderer); 3] = [
        (Some(&html), &report::Html),
        (exports.junit.as_ref(), &Junit),
        (exports.markdown.as_ref(), &md),
    ];
    for (dest, renderer) in more {
        if let Some(Err(e)) = dest.map(|d| d.render(renderer, &record)) {
            written = written.and(Err(e));
        }
    }
    if let Some(text) = report::node_data::render(r) {
        let path = beside.with_extension("node-data.json");
        if let Err(e) = report::write_atomic(&path, text.as_bytes()) {
            written = written.and(Err(format!("cannot write {}: {e}", path.display())));
        }
    }
    Ok(super::check::exit_with(record.exit_code(), written))
}
