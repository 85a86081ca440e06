//! Command-line parsing and dispatch. Each subcommand lives in its own file
//! and only calls the library.

mod bench;
mod bisect;
mod check;
mod compare;
mod dispatches;
mod doctor;
mod emit;
mod fuzz;
mod oracle;
mod points;
mod points_cuts;
mod points_params;
mod points_propose;
mod progress;
mod report;
mod report_history;
mod serve;
mod tokens;

use clap::{Parser, Subcommand};

/// `--strategy` on the command line; converted into the record's [`parity_record::Strategy`].
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum StrategyArg {
    /// Mark-all when the taps fit in 512 MiB, else bisection.
    Auto,
    /// One tap per probe, about log2(N) probes.
    Bisection,
    /// One build with every tap.
    MarkAll,
}

impl From<StrategyArg> for parity_record::Strategy {
    fn from(s: StrategyArg) -> Self {
        match s {
            StrategyArg::Auto => parity_record::Strategy::Auto,
            StrategyArg::Bisection => parity_record::Strategy::Bisection,
            StrategyArg::MarkAll => parity_record::Strategy::MarkAll,
        }
    }
}

use parity_record::ExitCode;

/// Differential parity testing of IREE-compiled models against an oracle.
///
/// Exit codes: 0 all pass, 1 parity failure, 2 invalid input or spec,
/// 3 execution failure (IREE compile or runtime).
#[derive(Parser, Debug)]
#[command(name = "parity", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every stage of a stages.yaml on IREE and compare with the oracle.
    Check(check::CheckArgs),
    /// Compare two tensors from npy / npz / safetensors files.
    Compare(compare::CompareArgs),
    /// Localise the first divergence to one StableHLO operation, with a reproducer.
    Bisect(bisect::BisectArgs),
    /// Decode through IREE and compare tokens (greedy) and logits (teacher-forced)
    /// with the oracle; localise the first divergent token to a layer and an op.
    Tokens(tokens::TokensArgs),
    /// Fuzz a padded-batch entry point's masks: malformed input refused before IREE;
    /// pad-content, bucket, batch-order, batch-company and history invariance, shrunk.
    Fuzz(fuzz::FuzzArgs),
    /// Serve a scenario's requests through the production slot functions on IREE
    /// (continuous batching) and check each against the oracle and its solo run.
    Serve(serve::ServeArgs),
    /// Re-render a saved JSON run record (table, JUnit) without running anything.
    Report(report::ReportArgs),
    /// List where a function can be cut: its named scopes, with the value and type of each point.
    Points(points::PointsArgs),
    /// Print timings: compare GB/s beside the memory-read rate; with --spec, cold / warm / one-function-edited gate times.
    Bench(bench::BenchArgs),
    /// What this machine can run: drivers and devices, the compiler and its
    /// targets, the cache; with a spec, whether each of its targets is ready.
    Doctor(doctor::DoctorArgs),
    /// Trace a stage's dispatches on two targets (IREE's own dispatches, the
    /// program unchanged) and name the first whose outputs differ, with its
    /// StableHLO operations: `--target REFERENCE,TARGET`.
    Dispatches(dispatches::DispatchesArgs),
    /// Oracle stores: `parity oracle index DIR` writes DIR/manifest.json.
    #[command(subcommand)]
    Oracle(oracle::OracleCommand),
    /// Internal: a compiler child process of parity's own (requests on stdin).
    #[command(name = "__compile", hide = true)]
    CompileWorker(CompileWorkerArgs),
}

/// Arguments of the hidden `parity __compile` (see `run::compile_pool`).
#[derive(clap::Args, Debug)]
struct CompileWorkerArgs {
    /// The compiler library the parent process loaded.
    #[arg(long)]
    compiler_lib: Option<std::path::PathBuf>,
    /// Compile without MLIR's thread pool (unless `PARITY_COMPILE_THREADS=many`).
    #[arg(long)]
    single_threaded: bool,
}

/// Parses the command line, runs the subcommand, and returns the exit code.
pub fn main() -> i32 {
    crate::run::compile_pool::enable_child_processes();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            if let Some(hint) = emit::old_spelling_hint(&e) {
                eprintln!("parity: {hint}");
            }
            return if e.use_stderr() {
                ExitCode::Input.code()
            } else {
                ExitCode::Pass.code()
            };
        }
    };
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Bisect(args) => bisect::run(args),
        Command::Tokens(args) => tokens::run(args),
        Command::Fuzz(args) => fuzz::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Points(args) => points::run(args),
        Command::Oracle(command) => oracle::run(command),
        Command::Bench(args) => bench::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Dispatches(args) => dispatches::run(args),
        Command::CompileWorker(args) => {
            return crate::run::compile_pool::serve(
                args.compiler_lib.as_deref(),
                args.single_threaded,
            )
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "parity: error: {}",
                crate::report::sanitize::terminal(&format!("{e:#}"))
            );
            ExitCode::Input.code()
        }
    }
}
