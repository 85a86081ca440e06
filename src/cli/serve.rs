//! `parity serve SCENARIO`: many requests through the production slot entry
//! points on IREE, as a continuous-batching server runs them; every request
//! judged against the oracle and its solo run (docs/serving.md).

use crate::run::RunOptions;
use crate::serve::{TargetApi, TargetChoice};
use parity_record::AnyRecord;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `parity serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The scenario file (`*scenario*.yaml`).
    scenario: PathBuf,
    /// Directory for serving.json, serving.html and serving-junit.xml.
    #[arg(long, default_value = "reports")]
    out_dir: PathBuf,
    /// The reports (default: serving.json, serving-junit.xml with one test case
    /// per request, and serving.html with the slots x steps timeline, in
    /// --out-dir; each flag moves one, `-` prints it on stdout instead of the text).
    #[command(flatten)]
    exports: super::emit::ExportArgs,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec targets the in-process engine serves on, one after the
    /// other (`--target cpu,vulkan`: each request labelled backend-specific,
    /// port, undetermined or incomplete where it fails on some target);
    /// default: the spec's first. An http:// or https:// URL here is the
    /// older spelling of --server.
    #[arg(long, value_name = "NAME[,NAME...]")]
    target: Option<String>,
    /// Check a running server instead of the in-process engine: an
    /// OpenAI-compatible endpoint on loopback, e.g. http://127.0.0.1:8080
    /// (POST /v1/completions; docs/serving-blackbox.md).
    #[arg(long, value_name = "URL", conflicts_with = "target_command")]
    server: Option<String>,
    /// Check a command instead of the in-process engine: run once per
    /// request, `{request}` replaced by the request's JSON file (stdin
    /// without it), JSON lines out (docs/serving-blackbox.md).
    #[arg(long, value_name = "TEMPLATE")]
    target_command: Option<String>,
    /// With --server: the request form the server takes. `openai` (token-id
    /// prompts, integer logprobs) or `mlx-lm` (mlx_lm.server: text prompts
    /// through the scenario's `tokenizer:`, checked to give back the prompt's
    /// ids; boolean logprobs); docs/serving-blackbox.md.
    #[arg(long, value_name = "API", default_value = "openai", value_parser = parse_api)]
    target_api: TargetApi,
    /// With --server or --target-command: one wall-clock deadline per
    /// request, in seconds, from connect (or start) to the last byte (or
    /// exit), whatever arrives in between; past it the request is an
    /// execution error (the command's process group is killed).
    #[arg(
        long,
        value_name = "SECONDS",
        env = "PARITY_REQUEST_TIMEOUT",
        default_value = "120",
        value_parser = parse_timeout
    )]
    request_timeout: Duration,
}

/// `openai` or `mlx-lm`.
fn parse_api(text: &str) -> Result<TargetApi, String> {
    match text {
        "openai" => Ok(TargetApi::OpenAi),
        "mlx-lm" => Ok(TargetApi::MlxLm),
        _ => Err(format!("`{text}`: expected `openai` or `mlx-lm`")),
    }
}

/// A positive, finite number of seconds (at most a day).
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(s > 0.0 && s <= 86_400.0) {
        return Err(format!("`{text}`: expected seconds in (0, 86400]"));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Runs `parity serve`: prints the table, then writes the reports.
pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let options = RunOptions {
        cache_dir: args.cache_dir,
        compiler_lib: args.iree_compiler_lib,
        ..RunOptions::default()
    };
    // `--target URL` is the older spelling of `--server URL`; any other
    // value names spec targets, as in every other command.
    let (server, targets) = match args.target {
        Some(t) if t.starts_with("http://") || t.starts_with("https://") => (Some(t), Vec::new()),
        Some(t) => (args.server, t.split(',').map(str::to_string).collect()),
        None => (args.server, Vec::new()),
    };
    if server.is_some() && args.target_command.is_some() {
        return super::emit::refuse(
            "--server and --target-command each name the one target under test; give one",
        );
    }
    let choice = match (server, args.target_command) {
        (Some(url), _) => TargetChoice::Http(url, args.target_api),
        (None, Some(template)) => TargetChoice::Command(template),
        (None, None) => TargetChoice::InProcess,
    };
    let record = AnyRecord::Serving(Box::new(crate::serve::execute_targets(
        &args.scenario,
        &options,
        &choice,
        args.request_timeout,
        &targets,
    )));
    let outputs = args.exports.in_dir(&args.out_dir, "serving");
    super::emit::emit(&record, &outputs)
}
