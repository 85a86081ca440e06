//! `parity fuzz`: the mask fuzzer over a spec's `fuzz:` section.

use crate::fuzz::{self, FuzzOptions};
use crate::run::{self, RunOptions};
use parity_record::{AnyRecord, ErrorRecord, FuzzRecord, Location};
use std::path::PathBuf;

/// Arguments of `parity fuzz`.
#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// The spec with a `fuzz:` section (e.g. subject/gemma3n/fuzz.yaml).
    spec: PathBuf,
    /// Cases per invariant (default: the spec's `fuzz.cases`); 0 replays the persisted seeds only.
    #[arg(long)]
    cases: Option<usize>,
    /// The run's seed (default: the spec's `fuzz.seed`); printed, so any run can be repeated.
    #[arg(long)]
    seed: Option<u64>,
    /// Run only this invariant (repeatable): malformed, pad_content, bucket,
    /// batch_order, batch_company, history, lengths.
    #[arg(long = "only")]
    only: Vec<String>,
    /// Run only this case, INVARIANT:SEED (repeatable), e.g. from a VIOLATION line.
    #[arg(long = "replay", value_parser = parse_replay)]
    replay: Vec<(String, u64)>,
    /// The file of persisted failing seeds (default: the spec's `fuzz.regressions`).
    #[arg(long)]
    regressions: Option<PathBuf>,
    /// Do not append new failing seeds to the regressions file.
    #[arg(long)]
    no_persist: bool,
    /// Check one batch from an npz (`mel`, `mask` or `mel_mask`, optional `lengths`):
    /// refused with exit 2 when malformed, else checked for pad-content invariance.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Directory for fuzz.json, fuzz.html and fuzz-junit.xml.
    #[arg(long, default_value = "reports")]
    out_dir: PathBuf,
    /// The reports (default: fuzz.json, fuzz-junit.xml and fuzz.html in
    /// --out-dir; each flag moves one, `-` prints it on stdout instead of the text).
    #[command(flatten)]
    exports: super::emit::ExportArgs,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec's targets to run on (`subject.targets` names; default: the
    /// first). With two or more (`--target cpu,vulkan`), every case runs on
    /// each, its outputs are compared between the targets, and an invariant
    /// whose outcome differs is labelled backend-specific, port, undetermined
    /// or incomplete.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    target: Vec<String>,
}

fn parse_replay(s: &str) -> Result<(String, u64), String> {
    let (inv, seed) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not INVARIANT:SEED"))?;
    let seed = seed
        .parse::<u64>()
        .map_err(|_| format!("`{seed}` is not an unsigned 64-bit seed"))?;
    Ok((inv.to_string(), seed))
}

/// Runs `parity fuzz`: prints the result, then writes the reports.
pub fn run(args: FuzzArgs) -> anyhow::Result<i32> {
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let record = match parity_spec::Spec::load(&args.spec) {
        Ok(spec) => {
            let options = FuzzOptions {
                run: RunOptions {
                    cache_dir: args.cache_dir,
                    compiler_lib: args.iree_compiler_lib,
                    target: None,
                    ..RunOptions::default()
                },
                cases: args.cases,
                seed: args.seed,
                only: args.only,
                replay: args.replay,
                regressions: args.regressions,
                persist: !args.no_persist,
                input: args.input,
            };
            fuzz::execute_targets(&spec, &options, &args.target)
        }
        Err(e) => {
            let file = args.spec.display().to_string();
            let mut record = FuzzRecord::new(&file, env!("CARGO_PKG_VERSION"), run::now_rfc3339());
            record.errors.push(
                ErrorRecord::input(format!("invalid spec: {e}"))
                    .at(Location::from_diagnostic(&file, &e.to_string())),
            );
            record.status = record.derived_status();
            record
        }
    };
    let record = AnyRecord::Fuzz(Box::new(record));
    let outputs = args.exports.in_dir(&args.out_dir, "fuzz");
    super::emit::emit(&record, &outputs)
}
