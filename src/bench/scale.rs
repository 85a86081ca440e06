//! `parity bench --scale CONFIG`: the gate on a subject at the real widths
//! of the Gemma3n audio tower and a few text decoder layers of E2B / E4B,
//! against the raw IREE floor of the same functions. The subject is
//! generated, seeded, by tools/scale/make_scale.py (audio_tower.py, text_layers.py)
//! (weights as IREE parameters, bf16 storage, f32 accumulation; the MLX
//! oracle recorded by python/parity_mlx_recorder) and converted to an .irpa
//! by tools/scale/to_irpa.py, into a work dir (never into git, nothing
//! downloaded); see docs/performance.md.

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
    /// Audio width, feed-forward width, layers, frames (after subsampling).
    pub shape: (usize, usize, usize, usize),
    /// Text width, feed-forward width, decoder layers generated, tokens.
    pub text: (usize, usize, usize, usize),
    /// Bytes of the parameters (all bf16, as the checkpoint ships them).
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
    /// The warm gate's own peak resident set, in bytes: the process's
    /// peak is reset after the cold gate (the compile, the first loads and
    /// the rows before this one no longer count).
    pub peak_rss: u64,
    /// This process's peak resident set up to the end of the cold gate.
    pub cold_peak_rss: u64,
    /// Whether the peak could be reset (else `peak_rss` is the process's so far).
    pub peak_reset: bool,
    /// The weights plus the largest stage's live tensors (input, widest
    /// intermediate, output; make_scale.py's `live_bytes`), in bytes.
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
    // sscp.mlir: a dir from before the whole audio tower is made again.
    let made = ["oracle/manifest.json", "weights.irpa", "sscp.mlir"];
    if made.iter().all(|f| dir.join(f).is_file()) {
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
    let args = stage_args(&summary).map_err(subject)?;
    let (cold, _) = gate();
    let cold_peak_rss = super::peak_rss();
    let peak_reset = super::reset_peak_rss();
    let (warm, record) = gate();
    let peak_rss = super::peak_rss();
    let floor = floor(&spec, &options, &record, floor_runs, &args).map_err(subject)? * 2; // both modes run every stage
    Ok(ScaleRow {
        config: config.to_string(),
        shape: (hidden, ff, layers, frames),
        text: (
            field("text_hidden") as usize,
            field("text_ff") as usize,
            field("text_layers") as usize,
            field("tokens") as usize,
        ),
        weight_bytes: field("weight_bytes"),
        generate,
        cold,
        warm,
        floor,
        peak_rss,
        cold_peak_rss,
        peak_reset,
        needed: field("weight_bytes") + field("live_bytes"),
        uploads: record
            .provenance
            .uploads
            .first()
            .cloned()
            .unwrap_or_default(),
        status: format!("{:?}", record.derived_status()),
    })
}

/// Every stage's argument shapes (`stage_args` in scale.json), by stage name.
pub fn stage_args(
    summary: &serde_json::Value,
) -> Result<std::collections::BTreeMap<String, Vec<Vec<usize>>>, String> {
    let bad = || "scale.json: `stage_args` is not {stage: [[dims...]...]}".to_string();
    let map = summary["stage_args"].as_object().ok_or_else(bad)?;
    let shape = |v: &serde_json::Value| -> Option<Vec<usize>> {
        v.as_array()?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect()
    };
    map.iter()
        .map(|(stage, args)| {
            let args = args.as_array().ok_or_else(bad)?;
            let shapes = args.iter().map(shape).collect::<Option<Vec<_>>>();
            Ok((stage.clone(), shapes.ok_or_else(bad)?))
        })
        .collect()
}

/// The least time of `runs` calls of every stage's function, summed, with
/// its inputs (`args`: f32 of these shapes) uploaded once before (resident
/// keys) and the same artifacts the gate ran (the warm cache), on a runtime
/// of the target's own.
fn floor(
    spec: &parity_spec::Spec,
    options: &RunOptions,
    record: &RunRecord,
    runs: usize,
    args: &std::collections::BTreeMap<String, Vec<Vec<usize>>>,
) -> Result<Duration, String> {
    let target = Target::ready(spec, None).map_err(|e| e.to_string())?;
    let mut scratch = RunRecord::new(String::new(), "", String::new());
    let compiler = run::load_compiler(options, true, &mut scratch);
    let compiled = run::compile_all(spec, &target, options, &compiler, &mut scratch);
    if let Some(e) = scratch.errors.first().or(record.errors.first()) {
        return Err(e.message.clone());
    }
    let modules = target.load(&compiled);
    let mut total = Duration::ZERO;
    for stage in &spec.stages {
        let shapes = args
            .get(&stage.name)
            .ok_or_else(|| format!("scale.json: no `stage_args` for stage `{}`", stage.name))?;
        let inputs = shapes
            .iter()
            .map(|s| Tensor::from_f32(s.clone(), &vec![0.5; s.iter().product()]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let keys: Vec<Option<String>> = (0..inputs.len())
            .map(|i| Some(format!("bench.floor.{}.{i}", stage.name)))
            .collect();
        let call = || modules.invoke_keyed(&stage.module, &stage.function, &inputs, &keys);
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_subject_from_before_the_whole_audio_tower_is_generated_again() {
        // A work dir as the feed-forward-only generator left it: oracle,
        // .irpa and text modules, no `sscp.mlir`. Reusing it would bench
        // the old subject; prepare makes it again (real make_scale.py and
        // to_irpa.py, the small config: seconds).
        let work = tempfile::tempdir().unwrap();
        let old = work.path().join("small");
        std::fs::create_dir_all(old.join("oracle")).unwrap();
        for f in ["oracle/manifest.json", "weights.irpa", "text_0.mlir"] {
            std::fs::write(old.join(f), "old").unwrap();
        }
        let (dir, took) = prepare(Path::new("."), "small", None, work.path()).unwrap();
        assert_eq!(dir, old);
        assert!(took > Duration::ZERO);
        assert!(dir.join("sscp.mlir").is_file());
        assert_ne!(std::fs::read(dir.join("weights.irpa")).unwrap(), b"old");
        // Made once: a second prepare reuses it.
        let (_, again) = prepare(Path::new("."), "small", None, work.path()).unwrap();
        assert_eq!(again, Duration::ZERO);
    }

    #[test]
    fn stage_args_are_read_per_stage_and_a_malformed_entry_is_refused() {
        let ok = serde_json::json!({"stage_args": {
            "layer_0": [[8, 64]],
            "text_0": [[4, 1, 8, 64], [1, 8, 6, 16]]
        }});
        let args = stage_args(&ok).unwrap();
        assert_eq!(args["layer_0"], vec![vec![8, 64]]);
        assert_eq!(args["text_0"], vec![vec![4, 1, 8, 64], vec![1, 8, 6, 16]]);
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"stage_args": {"text_0": [[4, -1]]}}),
            serde_json::json!({"stage_args": {"text_0": 3}}),
        ] {
            assert_eq!(
                stage_args(&bad).unwrap_err(),
                "scale.json: `stage_args` is not {stage: [[dims...]...]}"
            );
        }
    }
}
