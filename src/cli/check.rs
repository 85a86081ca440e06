//! `parity check`: run a stage graph and write the table, JSON and JUnit reports.

use super::{EXIT_INPUT, EXIT_PASS};
use crate::report::{self, table::Colour};
use crate::run::{self, record::Mode, RunOptions};
use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Arguments of `parity check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The stage graph to run.
    #[arg(default_value = "stages.yaml")]
    spec: PathBuf,
    /// Which modes to run: isolated (oracle inputs: local error), chained
    /// (upstream production outputs: accumulated error), or both.
    #[arg(long, value_enum, default_value = "both")]
    mode: ModeArg,
    /// Run only this case (repeatable).
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Run only this stage (repeatable); in chained mode its upstream must be selected too.
    #[arg(long = "stage")]
    stages: Vec<String>,
    /// Directory for run.json, junit.xml and report.html.
    #[arg(long, default_value = "reports")]
    out_dir: PathBuf,
    /// Write the JSON run record here (default: <out-dir>/run.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write JUnit XML here (default: <out-dir>/junit.xml).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the self-contained HTML report here (default: <out-dir>/report.html).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// After the run, localise the first isolated divergence to one StableHLO
    /// operation (as `parity bisect` does) and add `first_divergent_op` to run.json.
    #[arg(long)]
    bisect: bool,
    /// With --bisect: tap placement.
    #[arg(long, value_enum, default_value = "auto")]
    strategy: super::StrategyArg,
    /// Print only the closing summary, not the table.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ModeArg {
    Isolated,
    Chained,
    Both,
}

/// Runs `parity check`.
pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let spec = match parity_spec::Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("parity: invalid spec: {e}");
            return Ok(EXIT_INPUT);
        }
    };
    let options = RunOptions {
        modes: match args.mode {
            ModeArg::Isolated => vec![Mode::Isolated],
            ModeArg::Chained => vec![Mode::Chained],
            ModeArg::Both => vec![Mode::Isolated, Mode::Chained],
        },
        cache_dir: args.cache_dir,
        compiler_lib: args.iree_compiler_lib,
        cases: args.cases,
        stages: args.stages,
    };
    let show_progress = std::io::stderr().is_terminal();
    let mut progress = |p: run::Progress| {
        if show_progress {
            let mut err = std::io::stderr();
            let _ = write!(
                err,
                "\r\x1b[2K[{}/{}] {} ({}, {}): {}",
                p.done,
                p.total,
                p.stage.name,
                p.stage.case,
                p.stage.mode.name(),
                p.stage.status.name()
            );
            if p.done == p.total {
                let _ = writeln!(err);
            }
        }
    };
    let mut record = run::execute(&spec, &options, &mut progress);
    let bisected = if args.bisect && record.first_divergence.is_some() {
        let b = crate::bisect::bisect_record(
            &spec,
            &crate::bisect::BisectOptions {
                run: options.clone(),
                strategy: args.strategy.into(),
                repro_dir: args.out_dir.join("bisect"),
            },
            &record,
        );
        record.first_divergent_op = b.localisation();
        Some(b)
    } else {
        None
    };

    // Reports first, so no computed result is lost if printing fails.
    let json_path = args.json.unwrap_or_else(|| args.out_dir.join("run.json"));
    let junit_path = args.junit.unwrap_or_else(|| args.out_dir.join("junit.xml"));
    report::write_atomic(&json_path, report::json::render(&record).as_bytes())
        .with_context(|| format!("writing {}", json_path.display()))?;
    report::write_atomic(&junit_path, report::junit::render(&record).as_bytes())
        .with_context(|| format!("writing {}", junit_path.display()))?;
    let html_path = args
        .html
        .unwrap_or_else(|| args.out_dir.join("report.html"));
    let page = report::html::render(&report::html::HtmlInput {
        runs: std::slice::from_ref(&record),
        bisects: bisected.as_slice(),
    });
    report::write_atomic(&html_path, page.as_bytes())
        .with_context(|| format!("writing {}", html_path.display()))?;

    let text = if args.quiet {
        report::table::summary(&record)
    } else {
        report::table::render(&record, Colour::detect())
    };
    print!("{text}");
    println!(
        "reports: {} {} {}",
        json_path.display(),
        junit_path.display(),
        html_path.display()
    );
    if let Some(b) = &bisected {
        println!();
        super::bisect::write_and_print(b, &args.out_dir.join("bisect.json"))?;
    }
    let code = record.exit_code().code();
    Ok(if code == EXIT_PASS { EXIT_PASS } else { code })
}
