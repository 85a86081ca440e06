//! `parity check`: run a stage graph, print the table, write the JSON, JUnit
//! (and, when asked, Markdown) reports.

use super::StrategyArg;
use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use crate::run::{self, RunOptions};
use parity_record::{AnyRecord, ErrorRecord, ExitCode, Location, Mode, RunRecord};
use std::io::Write;
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
    /// Run only shard I of N (e.g. 2/3): a deterministic part of the
    /// (stage, case, mode) runs; isolated runs are dealt round-robin, chained
    /// runs go by case. `parity report --merge` puts the shards' run.json back together.
    #[arg(long, value_name = "I/N")]
    shard: Option<parity_record::Shard>,
    /// Directory for run.json, junit.xml and report.html.
    #[arg(long, default_value = "reports")]
    out_dir: PathBuf,
    /// Write the JSON run record here (default: <out-dir>/run.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write JUnit XML here (default: <out-dir>/junit.xml).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Also write a Markdown summary here (under 1 MiB), e.g. "$GITHUB_STEP_SUMMARY".
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the self-contained HTML report here (default: <out-dir>/report.html).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Compiled-artifact cache directory.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
    /// The spec's targets to run on (`subject.targets` names; default: the
    /// first). With two or more (`--target cpu,vulkan`), every output is also
    /// compared between the targets and each failure is labelled
    /// backend-specific, port, or oracle.
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',')]
    target: Vec<String>,
    /// After the run, localise the first isolated divergence to one StableHLO
    /// operation (as `parity bisect` does) and add `first_divergent_op` to run.json.
    #[arg(long)]
    bisect: bool,
    /// With --bisect: tap placement.
    #[arg(long, value_enum, default_value = "auto")]
    strategy: StrategyArg,
    /// Print only the errors (the run's, and each errored stage's message) and the
    /// closing summary, not the table.
    #[arg(long, short)]
    quiet: bool,
    /// Print every row of the table (every output, case and mode), not one
    /// line per stage and the rows that did not pass.
    #[arg(long, short)]
    verbose: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ModeArg {
    Isolated,
    Chained,
    Both,
}

/// Runs `parity check`: the result is printed first, then the reports are
/// written, so a failing disk never hides a verdict.
pub fn run(args: CheckArgs) -> anyhow::Result<i32> {
    let json_path = args
        .json
        .clone()
        .unwrap_or_else(|| args.out_dir.join("run.json"));
    let junit_path = args
        .junit
        .clone()
        .unwrap_or_else(|| args.out_dir.join("junit.xml"));
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: args.quiet,
        verbose: args.verbose,
    };
    let spec = match parity_spec::Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            // Reports anyway: an error record replaces the previous run's,
            // which CI would otherwise publish as this run's.
            let file = args.spec.display().to_string();
            let message = format!("invalid spec: {e}");
            let mut record = RunRecord::new(&file, env!("CARGO_PKG_VERSION"), run::now_rfc3339());
            record.errors.push(
                ErrorRecord::input(message).at(Location::from_diagnostic(&file, &e.to_string())),
            );
            record.status = record.derived_status();
            record.shard = args.shard.map(|s| parity_record::ShardRecord {
                index: s.index,
                count: s.count,
                spec_sha256: run::spec_sha256(&args.spec),
                plan: parity_record::RunPlan::default(),
            });
            eprintln!(
                "parity: {}",
                report::sanitize::terminal(&record.errors[0].message)
            );
            let record = AnyRecord::Run(record);
            let mut outcome =
                write_reports(&record, &json_path, &junit_path, args.markdown.as_ref());
            // The HTML page too: it says what is wrong and where, and replaces
            // a previous run's page.
            let html_path = args
                .html
                .clone()
                .unwrap_or_else(|| args.out_dir.join("report.html"));
            if let Err(e) = report::write_report(&html_path, &report::Html, &record) {
                outcome = outcome.and(Err(e.to_string()));
            }
            return Ok(exit_with(record.exit_code(), outcome));
        }
    };
    if args.bisect && args.shard.is_some() {
        eprintln!(
            "parity: error: --bisect cannot be combined with --shard: a shard does not know \
             the whole run's first divergence; merge the shards (`parity report --merge`) and \
             run `parity bisect` on it"
        );
        return Ok(ExitCode::Input.code());
    }
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
        shard: args.shard,
        target: args.target.first().cloned(),
    };
    let bar = super::progress::Bar::for_stderr();
    let mut record = run::execute_targets(&spec, &options, &args.target, &mut |p| bar.update(&p));
    bar.finish();
    // bisect runs on the target the first divergence was found on.
    let options = RunOptions {
        target: record
            .first_divergence
            .as_ref()
            .and_then(|d| d.target.clone())
            .or(options.target),
        ..options
    };
    let bisected = args.bisect.then(|| {
        crate::bisect::bisect_into_record(
            &spec,
            &crate::bisect::BisectOptions {
                run: options.clone(),
                strategy: args.strategy.into(),
                repro_dir: args.out_dir.join("bisect"),
            },
            &mut record,
        )
    });
    let record = AnyRecord::Run(record);

    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&terminal.render(&record)?);
    let mut outcome = write_reports(&record, &json_path, &junit_path, args.markdown.as_ref());
    if outcome.is_ok() {
        let _ = writeln!(
            stdout,
            "reports: {} {}",
            json_path.display(),
            junit_path.display()
        );
    }
    let mut code = record.exit_code();
    if let Some(Some(b)) = &bisected {
        let _ = writeln!(stdout);
        let b = AnyRecord::Bisect(b.clone());
        let _ = stdout.write_all(&terminal.render(&b)?);
        let path = args.out_dir.join("bisect.json");
        match report::write_report(&path, &Json, &b) {
            Ok(()) => {
                let _ = writeln!(stdout, "report: {}", path.display());
            }
            Err(e) => outcome = outcome.and(Err(e.to_string())),
        }
        code = code.worst(b.exit_code());
        let html = path.with_extension("html");
        if let Err(e) = report::write_report(&html, &report::Html, &b) {
            outcome = outcome.and(Err(e.to_string()));
        }
        if let AnyRecord::Bisect(b) = &b {
            if let Some(text) = report::node_data::render(b) {
                let path = args.out_dir.join("bisect.node-data.json");
                if let Err(e) = report::write_atomic(&path, text.as_bytes()) {
                    outcome = outcome.and(Err(format!("cannot write {}: {e}", path.display())));
                }
            }
        }
    }
    // The HTML page shows the run and, with --bisect, its bisect record.
    if let AnyRecord::Run(run) = &record {
        let html_path = args
            .html
            .clone()
            .unwrap_or_else(|| args.out_dir.join("report.html"));
        let bisects: Vec<_> = bisected.iter().flatten().cloned().collect();
        let page = report::html::render(&report::html::HtmlInput {
            runs: std::slice::from_ref(run),
            bisects: &bisects,
            ..Default::default()
        });
        match report::write_atomic(&html_path, page.as_bytes()) {
            Ok(()) => {
                let _ = writeln!(stdout, "report: {}", html_path.display());
            }
            Err(e) => {
                outcome = outcome.and(Err(format!("cannot write {}: {e}", html_path.display())))
            }
        }
    }
    drop(stdout);
    Ok(exit_with(code, outcome))
}

/// Writes the JSON record, JUnit and (when asked) Markdown; on failure, the
/// messages of every write that failed.
pub(super) fn write_reports(
    record: &AnyRecord,
    json: &std::path::Path,
    junit: &std::path::Path,
    markdown: Option<&PathBuf>,
) -> Result<(), String> {
    let mut jobs: Vec<(&std::path::Path, &dyn Renderer)> = vec![(json, &Json), (junit, &Junit)];
    let md = Markdown::default();
    if let Some(path) = markdown {
        jobs.push((path, &md));
    }
    let failures: Vec<String> = jobs
        .into_iter()
        .filter_map(|(path, r)| report::write_report(path, r, record).err())
        .map(|e| e.to_string())
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// The exit code of a run whose report writes came out as `written`: the
/// run's own code when it is not a pass (a FAIL stays 1), else 2 when a
/// report could not be written. The message says both.
pub(super) fn exit_with(code: ExitCode, written: Result<(), String>) -> i32 {
    let Err(why) = written else {
        return code.code();
    };
    let (outcome, exit) = match code {
        ExitCode::Pass => ("pass", ExitCode::Input),
        ExitCode::Fail => ("parity failure", code),
        ExitCode::Input => ("input error", code),
        ExitCode::Execution => ("execution error", code),
    };
    eprintln!(
        "parity: error: reports not written: {} (the run itself: {outcome}; exit {})",
        report::sanitize::terminal(&why),
        exit.code()
    );
    exit.code()
}
