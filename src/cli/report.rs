//! `parity report`: re-render saved records without running anything; merge
//! shards; compare a run with a baseline.

use super::emit::Dest;
use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use parity_record::{AnyRecord, Band, BaselineRecord, ExitCode, Metric, RunRecord};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `parity report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// JSON records written by parity (`parity.run-record/2`, `parity.bisect/2`,
    /// `parity.compare/1`, `parity.baseline/1`, `parity.tokens/1`, `parity.serving/1`,
    /// `parity.fuzz/1`); the HTML page shows them all (compare records excepted),
    /// one section per record. A record whose verdict its own parts contradict
    /// (an edited `status`) is refused, exit 2.
    #[arg(required_unless_present = "history")]
    records: Vec<PathBuf>,
    /// Draw each stage's headroom over the run records saved in DIR
    /// (`DIR/*.json`, `DIR/*/run.json`; e.g. one per commit in CI), oldest
    /// first by their start time (else by file name), and flag the stages
    /// whose error grew past the noise band (`--band`, `--band-abs`,
    /// `--metric`: the baseline ratchet's rule) since the run before. Exit 1
    /// when a stage grew in the newest run; exit 2 for an empty DIR or a file
    /// in it that is not a run record; runs of another spec than the newest
    /// run's are skipped, with a message. The exports render the history
    /// (`parity.history/1`).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["records", "merge", "baseline", "node_data"])]
    history: Option<PathBuf>,
    /// Merge the run records of every shard of one run (`parity check --shard i/n`)
    /// into the record of the whole, which the other options then render.
    /// Refuses (exit 2) shards of different specs or parity versions,
    /// overlapping shards, missing ones, and a shard that does not hold
    /// exactly the stage runs the plan assigns to it.
    #[arg(long)]
    merge: bool,
    /// The exports: `--json`, `--junit` and `--markdown` need exactly one
    /// record (e.g. with --merge; with --baseline, the comparison follows the
    /// Markdown summary), `--html` shows every record; none by default.
    #[command(flatten)]
    pub(super) exports: super::emit::ExportArgs,
    /// Also write Model Explorer node data (per-op error keyed by the explorer's
    /// node ids) here: of the bisect record (every op of the bisected region),
    /// or of the run record (the op producing each stage output, with its
    /// worst ULP error; the modules the record names are read and normalised
    /// by the IREE compiler). Needs exactly one bisect record or one run record.
    #[arg(long)]
    node_data: Option<PathBuf>,
    /// Compare the run (exactly one run record, or the merged shards) with this
    /// earlier run record: every watched metric's change, exit 1 when an error
    /// grew past the noise band even within tolerance (a ratchet); exit 2 when
    /// the two have no output in common (a baseline of another spec).
    #[arg(long, value_name = "BASE.json")]
    baseline: Option<PathBuf>,
    /// With --baseline or --history: relative growth allowed, as a fraction of
    /// the earlier value (default: the spec's `baseline.band`, else 0.1).
    #[arg(long, value_name = "FRACTION")]
    pub(super) band: Option<f64>,
    /// With --baseline or --history: absolute growth allowed on top (default:
    /// the spec's `baseline.band_abs`, else 0).
    #[arg(long, value_name = "ABS")]
    pub(super) band_abs: Option<f64>,
    /// With --baseline or --history: a metric to watch (repeatable; default: the spec's
    /// `baseline.metrics`, else max_abs, rms, rel_l2, cosine, max_ulp, mismatches).
    #[arg(long = "metric", value_name = "NAME")]
    pub(super) metrics: Vec<String>,
    /// With --baseline or --history: the spec whose `baseline:` section sets band and
    /// metrics (default: the (newest) run record's `spec`, when that file exists).
    #[arg(long)]
    pub(super) spec: Option<PathBuf>,
    /// With --baseline: also write the comparison (`parity.baseline/1`) here.
    #[arg(long, value_name = "OUT.json")]
    baseline_json: Option<PathBuf>,
    /// Print every row of a run's table, not one line per stage and the
    /// rows that did not pass.
    #[arg(long, short)]
    pub(super) verbose: bool,
}

fn input_error(message: String) -> anyhow::Result<i32> {
    eprintln!("parity: error: {}", report::sanitize::terminal(&message));
    Ok(ExitCode::Input.code())
}

/// Runs `parity report`; the exit code is the worst of the records' own
/// (input over execution over parity failure over pass), the baseline
/// comparison's included.
pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    if let Err(why) = args.exports.check() {
        return input_error(why);
    }
    if let Some(dir) = &args.history {
        return super::report_history::run(&args, dir);
    }
    let mut records = Vec::new();
    for path in &args.records {
        match AnyRecord::read(path) {
            Ok(r) => records.push(r),
            Err(e) => return input_error(e.to_string()),
        }
    }
    if args.merge {
        let mut runs = Vec::new();
        for (path, record) in args.records.iter().zip(records) {
            let file = path.display().to_string();
            match record {
                AnyRecord::Run(r) => runs.push((file, r)),
                _ => return input_error(format!("{file}: --merge takes run records only")),
            }
        }
        match parity_record::merge(&runs) {
            Ok(merged) => records = vec![AnyRecord::Run(merged)],
            Err(e) => return input_error(e.to_string()),
        }
    }
    let baseline = match &args.baseline {
        None => None,
        Some(path) => match compare_with_baseline(&args, &records, path) {
            Ok(b) => Some(b),
            Err(m) => return input_error(m),
        },
    };
    let single = || match records.as_slice() {
        [one] => Ok(one),
        _ => Err(format!(
            "--json, --junit and --markdown need exactly one record ({} given)",
            records.len()
        )),
    };
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
        verbose: args.verbose,
    };
    let exports = &args.exports;
    if !exports.to_stdout() {
        let mut stdout = std::io::stdout().lock();
        for r in records.iter().chain(baseline.as_ref()) {
            let _ = stdout.write_all(&terminal.render(r)?);
        }
    }
    let mut failures: Vec<String> = Vec::new();
    let mut jobs: Vec<(&Dest, &dyn Renderer)> = Vec::new();
    if let Some(d) = &exports.json {
        jobs.push((d, &Json));
    }
    if let Some(d) = &exports.junit {
        jobs.push((d, &Junit));
    }
    if !jobs.is_empty() || exports.markdown.is_some() {
        let record = match single() {
            Ok(r) => r,
            Err(m) => return input_error(m),
        };
        failures.extend(
            jobs.into_iter()
                .filter_map(|(d, r)| d.render(r, record).err()),
        );
        if let Some(dest) = &exports.markdown {
            let mut text = Markdown::default().render(record)?;
            if let Some(AnyRecord::Baseline(b)) = &baseline {
                text.push(b'\n');
                text.extend_from_slice(report::baseline::markdown(b).as_bytes());
            }
            if let Err(e) = dest.deliver(&text) {
                failures.push(e);
            }
        }
    }
    if let (Some(path), Some(b)) = (&args.baseline_json, &baseline) {
        if let Err(e) = report::write_report(path, &Json, b) {
            failures.push(e.to_string());
        }
    }
    // Every record on one page (the baseline comparison made here too).
    let set = report::html::RecordSet::of(records.iter().chain(baseline.as_ref()));
    if let Some(dest) = &exports.html {
        let page = report::html::render(&set.input());
        if let Err(e) = dest.deliver(page.as_bytes()) {
            failures.push(e);
        }
    }
    if let Some(path) = &args.node_data {
        let text = match (set.bisects.as_slice(), set.runs.as_slice()) {
            ([b], []) => report::node_data::render(b)
                .ok_or("the bisect record names no function with node ids".to_string()),
            ([], [r]) => run_node_data(r),
            _ => Err(format!(
                "--node-data needs exactly one bisect record or one run record ({} bisect, {} run given)",
                set.bisects.len(),
                set.runs.len()
            )),
        };
        let text = match text {
            Ok(t) => t,
            Err(e) => return input_error(e),
        };
        if let Err(e) = report::write_atomic(path, text.as_bytes()) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    let written = if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    let code = ExitCode::combine(
        records
            .iter()
            .chain(baseline.as_ref())
            .map(AnyRecord::exit_code),
    );
    Ok(super::check::exit_with(code, written))
}

/// The baseline comparison of the one run record in `records` with the run
/// record in `path`; band and metrics from the flags, else the spec's
/// `baseline:` section, else the defaults.
fn compare_with_baseline(
    args: &ReportArgs,
    records: &[AnyRecord],
    path: &Path,
) -> Result<AnyRecord, String> {
    let (run_file, run) = match (records, args.records.as_slice()) {
        ([AnyRecord::Run(r)], [file]) => (file.display().to_string(), r),
        ([AnyRecord::Run(r)], files) if args.merge => (
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(" + "),
            r,
        ),
        _ => return Err("--baseline needs exactly one run record (or --merge)".into()),
    };
    let base = match AnyRecord::read(path).map_err(|e| e.to_string())? {
        AnyRecord::Run(b) => b,
        other => {
            return Err(format!(
                "{}: --baseline needs a run record, not {}",
                path.display(),
                other.schema()
            ))
        }
    };
    let (band, metrics) = band_and_metrics(args, &run.spec)?;
    let base_file = path.display().to_string();
    BaselineRecord::compare(run, &run_file, &base, &base_file, band, &metrics)
        .map(AnyRecord::Baseline)
        .map_err(|e| e.to_string())
}

/// The noise band and the metrics watched for growth: the flags, else the
/// `baseline:` section of the spec (`--spec`, else `record_spec` when that
/// file exists), else the defaults.
pub(super) fn band_and_metrics(
    args: &ReportArgs,
    record_spec: &str,
) -> Result<(Band, Vec<Metric>), String> {
    let spec_path = args
        .spec
        .clone()
        .unwrap_or_else(|| PathBuf::from(record_spec));
    let section = if args.spec.is_some() || spec_path.is_file() {
        parity_spec::Spec::load(&spec_path)
            .map_err(|e| format!("the band comes from the `baseline:` section of the spec: {e}"))?
            .baseline
    } else {
        parity_spec::BaselineSpec::default()
    };
    let defaults = Band::default();
    let band = Band {
        rel: args.band.or(section.band).unwrap_or(defaults.rel),
        abs: args.band_abs.or(section.band_abs).unwrap_or(defaults.abs),
    };
    for (flag, x) in [("--band", band.rel), ("--band-abs", band.abs)] {
        if !(x.is_finite() && x >= 0.0) {
            return Err(format!("{flag} must be a finite number >= 0, not {x}"));
        }
    }
    let names = if args.metrics.is_empty() {
        section.metrics.unwrap_or_default()
    } else {
        args.metrics.clone()
    };
    let metrics = if names.is_empty() {
        Metric::DEFAULT.to_vec()
    } else {
        names
            .iter()
            .map(|n| {
                Metric::parse(n).ok_or_else(|| {
                    let known: Vec<_> = Metric::ALL.iter().map(|m| m.name()).collect();
                    format!("unknown metric `{n}` (known: {})", known.join(", "))
                })
            })
            .collect::<Result<_, _>>()?
    };
    Ok((band, metrics))
}

/// Node data of a run record: reads and normalises every `.mlir` module the
/// record names (its provenance), maps each public function's results to the
/// explorer node ids of the ops producing them, and renders.
fn run_node_data(run: &RunRecord) -> Result<String, String> {
    let compiler = parity_iree::IreeCompiler::load(None).map_err(|e| e.to_string())?;
    let mut nodes = std::collections::BTreeMap::new();
    for m in &run.provenance.modules {
        if m.name.contains('#') || m.cache_key.is_none() {
            continue; // generated slice modules and vmfb files have no source graph
        }
        let (module, _) = crate::run::slices::read_normalised(&compiler, Path::new(&m.source))
            .map_err(|e| format!("node data for module `{}`: {e}", m.name))?;
        for f in module.functions.iter().filter(|f| f.public) {
            let ids = crate::bisect::node_ids::model_explorer_ids(f);
            let results = f
                .results
                .iter()
                .map(|&v| f.op_of(v).and_then(|o| ids.get(o).cloned()))
                .collect();
            nodes.insert(format!("{}.{}", m.name, f.name), results);
        }
    }
    report::node_data::render_run(run, &nodes)
        .ok_or_else(|| "no stage output of the run record maps onto a module operation".to_string())
}
