//! `parity check`: run a stage graph, print the table, write the JSON, JUnit
//! (and, when asked, Markdown) reports.

use super::emit::{Dest, Outputs};
use super::StrategyArg;
use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use crate::run::{self, RunOptions};
use parity_record::{AnyRecord, BisectRecord, ExitCode, Mode, RunRecord};
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
    /// The reports (default: run.json, junit.xml and report.html in --out-dir,
    /// no Markdown; each flag moves one, `-` prints it on stdout instead of the table).
    #[command(flatten)]
    exports: super::emit::ExportArgs,
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
    if let Err(why) = args.exports.check() {
        return super::emit::refuse(&why);
    }
    let tail = ReportTail::of(&args);
    let spec = match parity_spec::Spec::load(&args.spec) {
        Ok(s) => s,
        Err(e) => {
            let record = run::spec_error_record(&args.spec, &e, args.shard);
            return Ok(tail.invalid_spec(record));
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
    let bisected = if args.bisect {
        let options = crate::bisect::BisectOptions {
            // bisect runs on the target the first divergence was found on.
            run: options.on_divergence_target(&record),
            strategy: args.strategy.into(),
            repro_dir: args.out_dir.join("bisect"),
        };
        crate::bisect::bisect_into_record(&spec, &options, &mut record)
    } else {
        None
    };
    tail.finish(&record, bisected.as_ref())
}

/// Where `parity check`'s output goes and how its text reads: the reports
/// (defaults filled in from `--out-dir`), and whether the terminal text is
/// printed at all (not when an export goes to stdout).
struct ReportTail {
    /// run.json, junit.xml, report.html and the Markdown summary.
    outputs: Outputs,
    /// The output directory, for the `--bisect` files.
    out_dir: PathBuf,
    /// Whether the terminal text is printed.
    text: bool,
    /// How the terminal text is printed.
    terminal: Terminal,
}

impl ReportTail {
    /// The tail `args` ask for.
    fn of(args: &CheckArgs) -> ReportTail {
        let in_dir = |given: &Option<Dest>, name: &str| {
            given
                .clone()
                .unwrap_or_else(|| Dest::File(args.out_dir.join(name)))
        };
        ReportTail {
            outputs: Outputs {
                json: in_dir(&args.exports.json, "run.json"),
                junit: in_dir(&args.exports.junit, "junit.xml"),
                html: in_dir(&args.exports.html, "report.html"),
                markdown: args.exports.markdown.clone(),
            },
            out_dir: args.out_dir.clone(),
            text: !args.exports.to_stdout(),
            terminal: Terminal {
                colour: Colour::detect(),
                quiet: args.quiet,
                verbose: args.verbose,
            },
        }
    }

    /// Prints why the spec is invalid and writes `record` (its error) to
    /// every report anyway, the HTML page too: it says what is wrong and
    /// where, and replaces the previous run's, which CI would otherwise
    /// publish as this run's. Returns the exit code.
    fn invalid_spec(&self, record: RunRecord) -> i32 {
        eprintln!(
            "parity: {}",
            report::sanitize::terminal(&record.errors[0].message)
        );
        let record = AnyRecord::Run(record);
        let mut outcome = self.write_reports(&record);
        if let Err(e) = self.outputs.html.render(&report::Html, &record) {
            outcome = outcome.and(Err(e));
        }
        exit_with(record.exit_code(), outcome)
    }

    /// Prints the run (and its bisect record), then writes the reports and,
    /// with a bisect record, its files; returns the exit code.
    fn finish(&self, run: &RunRecord, bisected: Option<&BisectRecord>) -> anyhow::Result<i32> {
        let record = AnyRecord::Run(run.clone());
        let mut stdout = std::io::stdout().lock();
        if self.text {
            let _ = stdout.write_all(&self.terminal.render(&record)?);
        }
        // (stdout's lock is reentrant: an export to `-` writes under it.)
        let mut outcome = self.write_reports(&record);
        let files: Vec<String> = [&self.outputs.json, &self.outputs.junit]
            .iter()
            .filter_map(|d| d.file().map(|p| p.display().to_string()))
            .collect();
        if self.text && outcome.is_ok() && !files.is_empty() {
            let _ = writeln!(stdout, "reports: {}", files.join(" "));
        }
        let mut code = record.exit_code();
        if let Some(bisect) = bisected {
            let b = AnyRecord::Bisect(bisect.clone());
            if self.text {
                let _ = writeln!(stdout);
                let _ = stdout.write_all(&self.terminal.render(&b)?);
            }
            outcome = outcome.and(self.write_bisect(&mut stdout, bisect));
            code = code.worst(b.exit_code());
        }
        // The HTML page shows the run and, with --bisect, its bisect record.
        let page = report::check_outputs::run_page(run, bisected);
        match (
            self.outputs.html.deliver(page.as_bytes()),
            self.outputs.html.file(),
        ) {
            (Ok(()), Some(path)) if self.text => {
                let _ = writeln!(stdout, "report: {}", path.display());
            }
            (Ok(()), _) => {}
            (Err(e), _) => outcome = outcome.and(Err(e)),
        }
        drop(stdout);
        Ok(exit_with(code, outcome))
    }

    /// Writes the bisect record's files and names bisect.json on `stdout`
    /// when it was written; the first failure.
    fn write_bisect(&self, stdout: &mut impl Write, bisect: &BisectRecord) -> Result<(), String> {
        let files = report::check_outputs::write_bisect_files(&self.out_dir, bisect);
        if let (true, Some(path)) = (self.text, &files.json) {
            let _ = writeln!(stdout, "report: {}", path.display());
        }
        files.written
    }

    /// The JSON record, JUnit and (when asked) Markdown of `record`.
    fn write_reports(&self, record: &AnyRecord) -> Result<(), String> {
        let o = &self.outputs;
        write_reports(record, &o.json, &o.junit, o.markdown.as_ref())
    }
}

/// Writes the JSON record, JUnit and (when asked) Markdown; on failure, the
/// messages of every write that failed.
pub(super) fn write_reports(
    record: &AnyRecord,
    json: &Dest,
    junit: &Dest,
    markdown: Option<&Dest>,
) -> Result<(), String> {
    let mut jobs: Vec<(&Dest, &dyn Renderer)> = vec![(json, &Json), (junit, &Junit)];
    let md = Markdown::default();
    if let Some(dest) = markdown {
        jobs.push((dest, &md));
    }
    let failures: Vec<String> = jobs
        .into_iter()
        .filter_map(|(dest, r)| dest.render(r, record).err())
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
