//! `parity bench --scale CONFIG`: the gate on a subject at the real widths
//! of the Gemma3n audio tower, against the raw IREE floor of the same
//! functions. The subject is generated, seeded, by tools/scale/make_scale.py
//! (weights as IREE parameters, bf16 storage, f32 accumulation; the MLX
//! oracle recorded by python/parity_mlx_recorder) and converted to an .irpa by tools/scale/to_irpa.py, into a
//! work dir (never into git, nothing downloaded); see docs/performance.md.

use crate::run::{self, record::UploadRecord, RunOptions};
use crate::target::Target;
use parity_record::{Mode, RunRecord};
use parity_tensor::Tensor;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The configs `make_scale.py` knows.
pub const CONFIGS: &[&str] = &["small", "e2b", "e4b"];

/// One config's figures.
#[derive(Clone, Debug)]
pub struct ScaleRow {
    /// The config name.
    pub config: String,
    /// Model width, feed-forward width, layers, frames (after subsampling).
    pub shape: (usize, usize, usize, usize),
    /// Bytes of the parameters (bf16 projections, f32 gains).
    pub weight_bytes: u64,
    /// Generating the subject (zero when the work dir already had it).
    pub generate: Duration,
    /// The gate on an empty artifact cache (compile included).
    pub cold: Duration,
    /// The gate again, every artifact cached.
    pub warm: Duration,
    /// Raw IREE: every stage run's function invoked with its input already
    /// on the device (the least of `floor_runs` runs of each), summed over
    /// the gate's stage runs (both modes).
    pub floor: Duration,
    /// This process's peak resident set so far, in bytes.
    pub peak_rss: u64,
    /// The weights plus the largest stage's live tensors (input, widest
    /// intermediate, output), in bytes.
    pub needed: u64,
    /// What the warm gate uploaded.
    pub uploads: UploadRecord,
    /// The warm gate's status.
    pub status: String,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// An unknown config name.
    #[error("unknown --scale config `{0}` (known: small, e2b, e4b)")]
    Config(String),
    /// A generator script failed or could not start.
    #[error("{script}: {message}")]
    Generate {
        /// The script.
        script: String,
        /// What went wrong.
        message: String,
    },
    /// The generated subject does not load or its files cannot be read.
    #[error("{0}")]
    Subject(String),
}

/// The Python that has MLX (`PARITY_TENSOR_PYTHON`, else the fixtures venv).
fn mlx_python(root: &Path) -> PathBuf {
    std::env::var_os("PARITY_TENSOR_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("tools/fixtures/.venv/bin/python"))
}

/// The Python that has IREE's runtime (`EERIE_PYTHON`, else the checkout's venv).
fn iree_python(root: &Path) -> PathBuf {
    std::env::var_os("EERIE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"))
}

/// Runs `python script args...`, failing with its stderr.
fn script(python: &Path, script: &Path, args: &[&std::ffi::OsStr]) -> Result<(), ScaleError> {
    let err = |message: String| ScaleError::Generate {
        script: script.display().to_string(),
        message,
    };
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| err(format!("cannot run {}: {e}", python.display())))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    Ok(())
}

/// The subject of `config` under `work`, generated when it is not there
/// yet (or was made for another frame count); returns its dir and the time
/// generating took.
pub fn prepare(
    root: &Path,
    config: &str,
    frames: Option<usize>,
    work: &Path,
) -> Result<(PathBuf, Duration), ScaleError> {
    if !CONFIGS.contains(&config) {
        return Err(ScaleError::Config(config.to_string()));
    }
    let name = frames.map_or(config.to_string(), |f| format!("{config}-{f}"));
    let dir = work.join(name);
    if dir.join("oracle/manifest.json").is_file() && dir.join("weights.irpa").is_file() {
        return Ok((dir, Duration::ZERO));
    }
    let t = Instant::now();
    let frames_arg = frames.map(|f| f.to_string());
    let mut args: Vec<&std::ffi::OsStr> = vec![config.as_ref(), dir.as_os_str()];
    if let Some(f) = &frames_arg {
        args.push("--frames".as_ref());
        args.push(f.as_ref());
    }
    let tools = root.join("tools/scale");
    script(&mlx_python(root), &tools.join("make_scale.py"), &args)?;
    script(
        &iree_python(root),
        &tools.join("to_irpa.py"),
        &[dir.as_os_str()],
    )?;
    // The weights file was read to convert it; start the gate from disk.
    let _ = std::fs::remove_file(dir.join("weights.safetensors"));
    Ok((dir, t.elapsed()))
}

/// Generates (if needed) and measures `config`: cold and warm gate, the
/// raw IREE floor (`floor_runs` runs of each function), peak RSS.
pub fn measure(
    root: &Path,
    config: &str,
    frames: Option<usize>,
    work: &Path,
    compiler_lib: Option<PathBuf>,
    floor_runs: usize,
) -> Result<ScaleRow, ScaleError> {
    let (dir, generate) = prepare(root, config, frames, work)?;
    let subject = |e: String| ScaleError::Subject(format!("{}: {e}", dir.display()));
    let summary: serde_json::Value = std::fs::read_to_string(dir.join("scale.json"))
        .map_err(|e| subject(e.to_string()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| subject(e.to_string())))?;
    let field = |k: &str| summary[k].as_u64().unwrap_or(0);
    let (hidden, ff, layers, frames) = (
        field("hidden") as usize,
        field("ff") as usize,
        field("layers") as usize,
        field("frames") as usize,
    );
    let spec =
        parity_spec::Spec::load(dir.join("stages.yaml")).map_err(|e| subject(e.to_string()))?;
    let cache_dir = dir.join("cache");
    let _ = std::fs::remove_dir_all(&cache_dir);
    let options = RunOptions {
        modes: vec![Mode::Isolated, Mode::Chained],
        cache_dir,
        compiler_lib,
        ..RunOptions::default()
    };
    let gate = || {
        let t = Instant::now();
        let record = run::execute(&spec, &options, &mut |_| {});
        (t.elapsed(), record)
    };
    let (cold, _) = gate();
    let (warm, record) = gate();
    let floor = floor(&spec, &options, &record, floor_runs, frames, hidden).map_err(subject)? * 2; // both modes run every stage
    let f32s = |n: usize| (n * 4) as u64;
    Ok(ScaleRow {
        config: config.to_string(),
        shape: (hidden, ff, layers, frames),
        weight_bytes: field("weight_bytes"),
        generate,
        cold,
        warm,
        floor,
        peak_rss: super::peak_rss(),
        needed: field("weight_bytes") + f32s(frames * hidden) * 2 + f32s(frames * ff),
        uploads: record
            .provenance
            .uploads
            .first()
            .cloned()
            .unwrap_or_default(),
        status: format!("{:?}", record.derived_status()),
    })
}

/// The least time of `runs` calls of every stage's function, summed, with
/// the input uploaded once before (a resident key) and the same artifacts
/// the gate ran (the warm cache), on a runtime of the target's own.
fn floor(
    spec: &parity_spec::Spec,
    options: &RunOptions,
    record: &RunRecord,
    runs: usize,
    frames: usize,
    hidden: usize,
) -> Result<Duration, String> {
    let target = Target::ready(spec, None).map_err(|e| e.to_string())?;
    let mut scratch = RunRecord::new(String::new(), "", String::new());
    let compiler = run::load_compiler(options, true, &mut scratch);
    let compiled = run::compile_all(spec, &target, options, &compiler, &mut scratch);
    if let Some(e) = scratch.errors.first().or(record.errors.first()) {
        return Err(e.message.clone());
    }
    let modules = target.load(&compiled);
    let x = Tensor::from_f32(vec![frames, hidden], &vec![0.5; frames * hidden])
        .map_err(|e| e.to_string())?;
    let keys = [Some("bench.floor.x".to_string())];
    let mut total = Duration::ZERO;
    for stage in &spec.stages {
        let call = || {
            modules.invoke_keyed(
                &stage.module,
                &stage.function,
                std::slice::from_ref(&x),
                &keys,
            )
        };
        call().map_err(|e| e.to_string())?; // uploads the input; loads the artifact
        let mut best = Duration::MAX;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            call().map_err(|e| e.to_string())?;
            best = best.min(t.elapsed());
        }
        total += best;
    }
    Ok(total)
}

/// The table `parity bench --scale` prints: one row per config, then how
/// each figure grows from the first config's.
pub fn table(rows: &[ScaleRow]) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let s = |d: Duration| d.as_secs_f64();
    let mut out = format!(
        "{:<6} {:>22} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7} {:>10} {:>10}  status\n",
        "config",
        "hidden/ff/layers/T",
        "weights",
        "cold s",
        "warm s",
        "floor s",
        "overhead",
        "peak MB",
        "need MB",
        "x need",
        "upload MB",
        "param ld"
    );
    for r in rows {
        let (h, f, l, t) = r.shape;
        out.push_str(&format!(
            "{:<6} {:>22} {:>9.1} {:>8.3} {:>8.3} {:>8.3} {:>8.0}% {:>9.1} {:>9.1} {:>7.2} {:>10.2} {:>10}  {}\n",
            r.config,
            format!("{h}/{f}/{l}/{t}"),
            mb(r.weight_bytes),
            s(r.cold),
            s(r.warm),
            s(r.floor),
            (s(r.warm) / s(r.floor).max(1e-9) - 1.0) * 100.0,
            mb(r.peak_rss),
            mb(r.needed),
            r.peak_rss as f64 / r.needed.max(1) as f64,
            mb(r.uploads.weight_bytes + r.uploads.other_bytes),
            r.uploads.parameter_loads,
            r.status
        ));
    }
    if let (Some(first), true) = (rows.first(), rows.len() > 1) {
        out.push_str(&format!("growth from {}:\n", first.config));
        for r in &rows[1..] {
            let x = |a: f64, b: f64| a / b.max(1e-12);
            out.push_str(&format!(
                "{:<6} weights x{:.0}, cold x{:.1}, warm x{:.1}, floor x{:.1}, peak RSS x{:.1}\n",
                r.config,
                x(mb(r.weight_bytes), mb(first.weight_bytes)),
                x(s(r.cold), s(first.cold)),
                x(s(r.warm), s(first.warm)),
                x(s(r.floor), s(first.floor)),
                x(mb(r.peak_rss), mb(first.peak_rss)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(config: &str, weights: u64, secs: f64, rss: u64) -> ScaleRow {
        ScaleRow {
            config: config.to_string(),
            shape: (64, 256, 2, 8),
            weight_bytes: weights,
            generate: Duration::ZERO,
            cold: Duration::from_secs_f64(2.0 * secs),
            warm: Duration::from_secs_f64(1.1 * secs),
            floor: Duration::from_secs_f64(secs),
            peak_rss: rss,
            needed: weights,
            uploads: UploadRecord {
                weight_bytes: 1_000_000,
                other_bytes: 500_000,
                parameter_loads: 2,
                ..UploadRecord::default()
            },
            status: "Pass".to_string(),
        }
    }

    #[test]
    fn the_table_has_overhead_rss_ratio_uploads_and_growth() {
        let text = table(&[
            row("small", 1_000_000, 1.0, 2_000_000),
            row("e2b", 900_000_000, 10.0, 1_200_000_000),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        let small: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            small,
            [
                "small",
                "64/256/2/8",
                "1.0",
                "2.000",
                "1.100",
                "1.000",
                "10%",
                "2.0",
                "1.0",
                "2.00",
                "1.50",
                "2",
                "Pass"
            ]
        );
        assert!(lines[2].starts_with("e2b "), "{text}");
        assert_eq!(lines[3], "growth from small:");
        assert_eq!(
            lines[4],
            "e2b    weights x900, cold x10.0, warm x10.0, floor x10.0, peak RSS x600.0"
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn an_unknown_config_is_refused_before_anything_runs() {
        let work = tempfile::tempdir().unwrap();
        let err = prepare(Path::new("."), "e9b", None, work.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown --scale config `e9b` (known: small, e2b, e4b)"
        );
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    }
}
