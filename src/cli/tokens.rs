//! `parity tokens`: decode through IREE and compare token by token (greedy)
//! and logits step by step (teacher-forced) with the oracle; localise the
//! first divergent token to a layer and an operation.

use super::StrategyArg;
use crate::bisect::BisectOptions;
use crate::run::{self, RunOptions};
use crate::tokens::{self, TokensOptions};
use parity_record::{AnyRecord, ErrorRecord, Location, TokenMode, TokensRecord};
use std::path::PathBuf;

/// Arguments of `parity tokens`.
#[derive(clap::Args, Debug)]
pub struct TokensArgs {
    /// The spec with a `tokens:` section.
    #[arg(default_value = "stages.yaml")]
    spec: PathBuf,
    /// greedy (decode with the production's own tokens), teacher-forced (feed
    /// the oracle's tokens, compare every step's logits), or both.
    #[arg(long, value_enum, default_value = "both")]
    mode: TokenModeArg,
    /// Run only this token case (repeatable).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Directory for tokens.json, tokens.html, tokens-junit.xml and the bisect reproducer.
    #[arg(long, default_value = "reports")]
    out_dir: PathBuf,
    /// The reports (default: tokens.json, tokens-junit.xml and tokens.html in
    /// --out-dir; each flag moves one, `-` prints it on stdout instead of the text).
    #[command(flatten)]
    exports: super::emit::ExportArgs,
    /// Do not run the divergent step's stage chain or bisect.
    #[arg(long)]
    no_localise: bool,
    /// Tap placement for bisecting the first divergent layer.
    #[arg(long, value_enum, default_value = "auto")]
    strategy: StrategyArg,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec's targets to run on (`subject.targets` names; default: the
    /// first). With two or more (`--target cpu,vulkan`), every token case runs
    /// on each, and a case that fails on some target is labelled
    /// backend-specific, port or oracle.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    target: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum TokenModeArg {
    Greedy,
    TeacherForced,
    Both,
}

/// Runs `parity tokens`: prints the result, then writes the reports.
pub fn run(args: TokensArgs) -> anyhow::Result<i32> {
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let record = match parity_spec::Spec::load(&args.spec) {
        Ok(spec) => {
            let options = TokensOptions {
                modes: match args.mode {
                    TokenModeArg::Greedy => vec![TokenMode::Greedy],
                    TokenModeArg::TeacherForced => vec![TokenMode::TeacherForced],
                    TokenModeArg::Both => vec![TokenMode::Greedy, TokenMode::TeacherForced],
                },
                bisect: BisectOptions {
                    run: RunOptions {
                        cache_dir: args.cache_dir,
                        compiler_lib: args.iree_compiler_lib,
                        cases: args.cases,
                        target: None,
                        ..RunOptions::default()
                    },
                    strategy: args.strategy.into(),
                    repro_dir: args.out_dir.join("tokens-repro"),
                },
                localise: !args.no_localise,
            };
            tokens::execute_targets(&spec, &options, &args.target)
        }
        Err(e) => {
            let file = args.spec.display().to_string();
            let mut record =
                TokensRecord::new(&file, env!("CARGO_PKG_VERSION"), run::now_rfc3339());
            record.errors.push(
                ErrorRecord::input(format!("invalid spec: {e}"))
                    .at(Location::from_diagnostic(&file, &e.to_string())),
            );
            record.status = record.derived_status();
            record
        }
    };
    let record = AnyRecord::Tokens(Box::new(record));
    let outputs = args.exports.in_dir(&args.out_dir, "tokens");
    super::emit::emit(&record, &outputs)
}
