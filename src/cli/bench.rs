//! `parity bench`: prints comparison throughput beside the memory-read rate
//! and, given a spec, the gate's cold / warm / one-function-edited times.

use crate::bench::{gate, load_average, throughput};
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `parity bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Elements per side of the in-memory f32 pair (default 64M: 256 MiB a side).
    #[arg(long, default_value_t = 64 << 20)]
    elems: usize,
    /// Runs of each throughput case (every run is printed, with min and median).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Also time the gate on this stages.yaml: cold, warm, one function edited.
    #[arg(long)]
    spec: Option<PathBuf>,
    /// With --spec: the gate on these spec targets in one run (`cpu,vulkan`),
    /// then each target's warm gate alone, to set one run over several
    /// targets against the runs one after the other.
    #[arg(long, value_delimiter = ',')]
    target: Vec<String>,
    /// The public function to edit for the third gate run (default: the first one).
    #[arg(long)]
    function: Option<String>,
    /// Directory for the gate runs' artifact cache and edited module (default: a temporary one, removed after).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Also run the bisect fault matrix on a bundled subject (`gemma3n`, the
    /// default, or `basic`): seeded faults of every kind, bisect on each, a
    /// table of outcomes (exact, pair, ambiguous and how many of those are one
    /// function, region, wrong, crash, masked), the reproducers that fail as
    /// they should (of those bisect wrote), probes and wall time per kind.
    /// `corpus`: the porting-bug corpus (examples/porting-bugs/corpus.json,
    /// hand-made faults citing public bug reports), scored the same way per class.
    #[arg(long, num_args = 0..=1, default_missing_value = "gemma3n")]
    bisect: Option<String>,
    /// Seeds per fault kind for `--bisect`.
    #[arg(long, default_value_t = 2)]
    bisect_seeds: u64,
    /// Only these fault kinds for `--bisect` (default: all); with `--bisect
    /// corpus`, entry names or classes.
    #[arg(long = "bisect-kind")]
    bisect_kinds: Vec<String>,
    /// The gate at real size (tools/scale/make_scale.py): `small`, `e2b`,
    /// `e4b`, or several comma-separated (a row each, then their growth).
    /// The subject is generated once into `--work-dir` (default:
    /// `<cache-dir>/scale`), seeded, nothing downloaded.
    #[arg(long, value_delimiter = ',')]
    scale: Vec<String>,
    /// Frames after subsampling for `--scale` (default: 128 for e2b/e4b,
    /// 512 mel frames; 8 for small).
    #[arg(long)]
    scale_frames: Option<usize>,
    /// Runs of each function for `--scale`'s raw IREE floor (the least is kept).
    #[arg(long, default_value_t = 3)]
    scale_runs: usize,
    /// Compiled-artifact cache for `--bisect`'s runs.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: EERIE_PYTHON, else the venv the build used or the checkout's .venv).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
}

/// Runs `parity bench` and prints its tables on stdout.
pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let load = |_: ()| load_average().map_or("unknown".to_string(), |l| format!("{l:.2}"));
    if args.elems == 0 {
        return after_throughput(&args, &mut out);
    }
    let (actual, expected) = throughput::make_pair(args.elems)
        .with_context(|| format!("cannot build a {}-element f32 pair", args.elems))?;
    let load_before = load(());
    let rows = throughput::measure(&actual, &expected, args.reps);
    drop((actual, expected));
    writeln!(
        out,
        "compare throughput: f32 pair, {} elements a side ({} MiB), {} threads, load {} -> {}",
        args.elems,
        (args.elems * 4) >> 20,
        rayon::current_num_threads(),
        load_before,
        load(())
    )?;
    writeln!(
        out,
        "{:<31} {:>7} {:>7} {:>6} {:>8} {:>7} {:>8} {:>7}  runs (wall ms)",
        "case", "min ms", "med ms", "GB/s", "med GB/s", "vs read", "GB/cpu-s", "vs read"
    )?;
    let read = rows.first().map(|r| r.gbs(r.timings.min())).unwrap_or(0.0);
    let read_cpu = rows
        .first()
        .map(|r| r.gbs(r.timings.min_cpu()))
        .unwrap_or(0.0);
    for r in &rows {
        let (min, med, cpu) = (r.timings.min(), r.timings.median(), r.timings.min_cpu());
        writeln!(
            out,
            "{:<31} {:>7.1} {:>7.1} {:>6.2} {:>8.2} {:>7.2} {:>8.2} {:>7.2}  {}",
            r.case,
            min.as_secs_f64() * 1e3,
            med.as_secs_f64() * 1e3,
            r.gbs(min),
            r.gbs(med),
            r.gbs(min) / read.max(1e-12),
            r.gbs(cpu),
            r.gbs(cpu) / read_cpu.max(1e-12),
            r.timings.all_ms()
        )?;
    }
    after_throughput(&args, &mut out)
}

/// The gate and bisect sections, when asked for.
fn after_throughput(args: &BenchArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    let load = |_: ()| load_average().map_or("unknown".to_string(), |l| format!("{l:.2}"));
    if let Some(subject) = &args.bisect {
        bisect_matrix(args, subject, out)?;
    }
    if !args.scale.is_empty() {
        scale(args, out)?;
    }
    let Some(spec_path) = &args.spec else {
        return Ok(0);
    };
    let spec = parity_spec::Spec::load(spec_path)
        .with_context(|| format!("invalid spec {}", spec_path.display()))?;
    let (_temp, work) = work_dir(args)?;
    let (edit, gate_rows) = gate::measure(
        &spec,
        &work,
        args.function.as_deref(),
        args.iree_compiler_lib.clone(),
        &args.target,
    )?;
    writeln!(
        out,
        "\ngate: {} (isolated and chained), load {}; edited: `{}` in module `{}` ({})",
        spec_path.display(),
        load(()),
        edit.function,
        edit.module,
        edit.change
    )?;
    writeln!(
        out,
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6}  status",
        "run", "wall s", "vs cold", "CPU s", "compiled", "in cache", "load"
    )?;
    let cold = gate_rows.first().map_or(1.0, |r| r.wall.as_secs_f64());
    for r in &gate_rows {
        writeln!(
            out,
            "{:<22} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>10} {:>6}  {:?}",
            r.run,
            r.wall.as_secs_f64(),
            r.wall.as_secs_f64() / cold.max(1e-9),
            r.cpu.as_secs_f64(),
            r.compiled,
            r.entries,
            r.load.map_or("?".to_string(), |l| format!("{l:.1}")),
            r.status
        )?;
    }
    if args.target.len() > 1 {
        let warm = gate_rows.get(1).map_or(0.0, |r| r.wall.as_secs_f64());
        let apart: f64 = gate_rows[3..].iter().map(|r| r.wall.as_secs_f64()).sum();
        writeln!(
            out,
            "targets {} in one run, warm: {warm:.2} s; one after the other: {apart:.2} s ({:.2}x)",
            args.target.join(","),
            warm / apart.max(1e-9)
        )?;
    }
    Ok(0)
}

/// `--scale`: the real-size gate, one row per config.
fn scale(args: &BenchArgs, out: &mut impl Write) -> anyhow::Result<()> {
    use crate::bench::scale;
    let root = std::env::current_dir().context("no current directory")?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| args.cache_dir.join("scale"));
    let mut rows = Vec::new();
    for config in &args.scale {
        rows.push(scale::measure(
            &root,
            config,
            args.scale_frames,
            &work,
            args.iree_compiler_lib.clone(),
            args.scale_runs,
        )?);
    }
    let load = load_average().map_or("unknown".to_string(), |l| format!("{l:.2}"));
    writeln!(
        out,
        "\nscale: the audio tower (SSCP, input projection, Conformer blocks) and the first text \
         decoder layers as IREE parameters (bf16, f32 accumulation), isolated and chained, {} \
         under {}, load {load}",
        args.scale.join(","),
        work.display()
    )?;
    write!(out, "{}", crate::bench::scale_table::table(&rows))?;
    Ok(())
}

/// `--bisect`: the fault matrix on a bundled subject, one row per fault, then
/// the table per kind.
fn bisect_matrix(args: &BenchArgs, subject: &str, out: &mut impl Write) -> anyhow::Result<()> {
    use crate::bench::bisect as matrix;
    use crate::bisect::inject::FaultKind;
    let root = std::env::current_dir().context("no current directory")?;
    let lib = args.iree_compiler_lib.as_deref();
    let (_temp, work) = work_dir(args)?;
    if subject == "corpus" {
        return bisect_corpus(args, &root, &work, out);
    }
    let kinds: Vec<FaultKind> = if args.bisect_kinds.is_empty() {
        FaultKind::ALL.to_vec()
    } else {
        args.bisect_kinds
            .iter()
            .map(|k| {
                FaultKind::parse(k).with_context(|| {
                    format!(
                        "unknown fault kind `{k}` (one of: {})",
                        FaultKind::ALL.map(|k| k.name()).join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let prepared = matrix::prepare(matrix::bundled_subject(&root, subject)?, lib)?;
    writeln!(
        out,
        "\nbisect fault matrix: {subject}, {} kinds x {} seeds, load {}",
        kinds.len(),
        args.bisect_seeds,
        load_average().map_or("unknown".to_string(), |l| format!("{l:.2}"))
    )?;
    let mut rows = Vec::new();
    for kind in kinds {
        for seed in 0..args.bisect_seeds {
            let dir = work.join(format!("{}-{seed}", kind.name()));
            let row = prepared.run_one(kind, seed, &dir, &args.cache_dir, lib);
            writeln!(out, "{}", row.line())?;
            rows.push(row);
        }
    }
    writeln!(out, "\n{}", matrix::table(&rows))?;
    Ok(())
}

/// `--bisect corpus`: the porting-bug corpus (hand-made faults with
/// citations), one row per bug, then the table per class.
fn bisect_corpus(
    args: &BenchArgs,
    root: &std::path::Path,
    work: &std::path::Path,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    use crate::bench::bisect::corpus;
    let mut entries = corpus::load(&root.join(corpus::CORPUS))?;
    if !args.bisect_kinds.is_empty() {
        entries.retain(|e| {
            args.bisect_kinds.contains(&e.name) || args.bisect_kinds.contains(&e.class)
        });
    }
    writeln!(
        out,
        "\nbisect on the porting-bug corpus ({}): {} bugs, load {}",
        corpus::CORPUS,
        entries.len(),
        load_average().map_or("unknown".to_string(), |l| format!("{l:.2}"))
    )?;
    let mut failed = None;
    let rows = corpus::run_all(
        root,
        &entries,
        work,
        &args.cache_dir,
        args.iree_compiler_lib.as_deref(),
        |row| {
            if let Err(e) = writeln!(out, "{}", row.line()) {
                failed.get_or_insert(e);
            }
        },
    )?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    writeln!(out, "\n{}", corpus::table(&rows))?;
    Ok(())
}

/// `--work-dir`, else a temporary directory (removed when the guard drops).
fn work_dir(args: &BenchArgs) -> anyhow::Result<(Option<tempfile::TempDir>, PathBuf)> {
    Ok(match &args.work_dir {
        Some(dir) => (None, dir.clone()),
        None => {
            let temp = tempfile::tempdir().context("cannot create a temporary directory")?;
            let path = temp.path().to_path_buf();
            (Some(temp), path)
        }
    })
}
