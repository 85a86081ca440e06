//! `parity dispatches`: the first divergent dispatch between two targets.

use super::emit::{Dest, ExportArgs};
use crate::dispatch::{self, DispatchOptions, DEFAULT_BUDGET};
use crate::report::Json;
use parity_record::{AnyRecord, ExitCode};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity dispatches`.
#[derive(clap::Args, Debug)]
pub struct DispatchesArgs {
    /// The stage graph.
    #[arg(default_value = "stages.yaml")]
    spec: PathBuf,
    /// Two of the spec's targets: the reference, then the target under test
    /// (`--target cpu,vulkan`).
    #[arg(
        long,
        value_name = "REFERENCE,TARGET",
        value_delimiter = ',',
        required = true
    )]
    target: Vec<String>,
    /// Trace this stage only (repeatable; default: every stage).
    #[arg(long = "stage")]
    stages: Vec<String>,
    /// Run this case only (repeatable; default: every case).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Bytes of traced tensors kept per stage and target; dispatches whose
    /// tensors fall over it are not judged (never passed).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_BUDGET)]
    max_trace_bytes: u64,
    /// The reports: the JSON record (`parity.dispatches/1`, default
    /// reports/dispatches.json), the HTML page (default: next to the JSON
    /// file, `.html`), JUnit and Markdown when asked.
    #[command(flatten)]
    exports: ExportArgs,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
}

/// Runs `parity dispatches`.
pub fn run(args: DispatchesArgs) -> anyhow::Result<i32> {
    let [reference, target] = args.target.as_slice() else {
        return super::emit::refuse(&format!(
            "--target {}: name exactly two targets, the reference then the one under test (e.g. --target cpu,vulkan)",
            args.target.join(",")
        ));
    };
    if reference == target {
        return super::emit::refuse(&format!(
            "--target {reference},{target}: the two targets must differ"
        ));
    }
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let Some(spec) = super::emit::load_spec(&args.spec) else {
        return Ok(ExitCode::Input.code());
    };
    let options = DispatchOptions {
        cache_dir: args.cache_dir,
        compiler_lib: args.iree_compiler_lib,
        cases: args.cases,
        stages: args.stages,
        reference: reference.clone(),
        target: target.clone(),
        budget: args.max_trace_bytes,
    };
    let record = AnyRecord::from(dispatch::dispatches(&spec, &options));
    let json = args
        .exports
        .json
        .clone()
        .unwrap_or_else(|| Dest::File(PathBuf::from("reports/dispatches.json")));
    let beside = json.file().map_or_else(
        || PathBuf::from("reports/dispatches.json"),
        |p| p.to_path_buf(),
    );
    let html = args
        .exports
        .html
        .clone()
        .unwrap_or_else(|| Dest::File(beside.with_extension("html")));
    let text = !args.exports.to_stdout();
    if text {
        super::emit::print_text(&record)?;
    }
    let mut written = json.render(&Json, &record);
    if let (true, Ok(()), Some(path)) = (text, &written, json.file()) {
        let _ = writeln!(std::io::stdout().lock(), "report: {}", path.display());
    }
    let exports = ExportArgs {
        json: None,
        html: Some(html),
        ..args.exports
    };
    if let Err(e) = exports.write_all(&record) {
        written = written.and(Err(e));
    }
    Ok(super::check::exit_with(record.exit_code(), written))
}
