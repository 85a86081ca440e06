//! Helpers shared by the end-to-end tests: run the real `parity` binary on
//! copies of the committed example subject, against the real IREE compiler
//! and runtime.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A compiled-artifact cache shared by all tests of this build, so each
/// module compiles once per test run.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parity-test-cache")
}

/// Copies examples/basic into a fresh temporary directory the test may mutate.
pub fn basic_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("examples/basic"), dir.path());
    dir
}

/// Copies examples/<name> into a fresh temporary directory the test may mutate.
pub fn example_copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("examples").join(name), dir.path());
    dir
}

/// Copies a directory tree (regular files and directories).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Runs `parity <args>` in `cwd` with colour off and the shared cache.
/// Runs a bisect reproducer's `run.sh` with the pip-installed IREE tools of
/// the checkout's venv on PATH; (exit code, stdout + stderr).
pub fn run_sh(dir: &Path) -> (i32, String) {
    let venv_bin = repo().join(".venv/bin");
    let path = format!(
        "{}:{}",
        venv_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sh")
        .arg(dir.join("run.sh"))
        .env("PATH", path)
        .output()
        .expect("sh run.sh");
    (
        o.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

pub fn parity(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_parity"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env("PARITY_CACHE_DIR", cache_dir())
        .output()
        .expect("spawn parity")
}

/// Runs `parity check <spec>` writing reports into `<cwd>/out`, and returns
/// the exit code, stdout, stderr and the parsed JSON run record (if written).
pub fn check(
    cwd: &Path,
    spec: &str,
    extra: &[&str],
) -> (i32, String, String, Option<serde_json::Value>) {
    check_to(cwd, spec, &cwd.join("out"), extra)
}

/// Like [`check`], with the reports written into `out_dir`.
pub fn check_to(
    cwd: &Path,
    spec: &str,
    out_dir: &Path,
    extra: &[&str],
) -> (i32, String, String, Option<serde_json::Value>) {
    let mut args = vec!["check", spec, "--out-dir", out_dir.to_str().expect("utf8")];
    args.extend_from_slice(extra);
    let out = parity(cwd, &args);
    let json = std::fs::read_to_string(out_dir.join("run.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).expect("run.json is valid JSON"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        json,
    )
}

/// The stage records of a run record matching name and mode.
pub fn stage<'a>(record: &'a serde_json::Value, name: &str, mode: &str) -> &'a serde_json::Value {
    record["stages"]
        .as_array()
        .expect("stages array")
        .iter()
        .find(|s| s["name"] == name && s["mode"] == mode)
        .unwrap_or_else(|| panic!("no stage record {name} ({mode})"))
}

/// Asserts that every tensor of `expected` (name -> list of values, as a
/// Python test wrote them to JSON) is in `store` with those values, in f32.
pub fn assert_store_matches_json(
    store: &parity_tensor::OracleStore,
    expected: &serde_json::Map<String, serde_json::Value>,
) {
    for (name, values) in expected {
        // Every value is exact in f32; serde_json's float parsing may be 1 f64 ulp off.
        let got: Vec<f32> = store
            .get(name)
            .unwrap()
            .to_f64_vec()
            .iter()
            .map(|&v| v as f32)
            .collect();
        let want: Vec<f32> = values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(got, want, "{name}");
    }
}
pub mod fixture_server;

/// `parity fuzz SPEC ARGS` from the repository root, replaying a copy of the
/// committed `seeds` file (so a test never edits the tree); (exit, text, record).
pub fn fuzz(seeds: &str, spec: &str, args: &[&str]) -> (i32, String, serde_json::Value) {
    let out = tempfile::tempdir().expect("tempdir");
    let copy = out.path().join("seeds");
    std::fs::copy(repo().join(seeds), &copy).expect("copy seeds");
    let mut all = vec![
        "fuzz",
        spec,
        "--out-dir",
        out.path().to_str().expect("utf8"),
        "--regressions",
        copy.to_str().expect("utf8"),
    ];
    all.extend_from_slice(args);
    let o = parity(&repo(), &all);
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let json = std::fs::read_to_string(out.path().join("fuzz.json")).expect("fuzz.json");
    (
        o.status.code().unwrap_or(-1),
        text,
        serde_json::from_str(&json).expect("fuzz.json is JSON"),
    )
}

/// The record's entry for invariant `name`.
pub fn invariant<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["invariants"]
        .as_array()
        .expect("invariants")
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no invariant {name}: {r:#}"))
}

/// Writes a one-case oracle store of f32 tensors into `dir`: `NAME.npy` per
/// tensor and the `manifest.json` that lists them.
pub fn write_f32_store(dir: &Path, tensors: &[(&str, &[f32])]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut listed = serde_json::Map::new();
    for (name, data) in tensors {
        let file = format!("{name}.npy");
        parity_tensor::write_npy(
            dir.join(&file),
            &parity_tensor::Tensor::from_f32(vec![data.len()], data).unwrap(),
        )
        .unwrap();
        listed.insert(
            name.to_string(),
            serde_json::json!({"file": file, "dtype": "f32", "shape": [data.len()]}),
        );
    }
    let manifest = serde_json::json!({"schema": "parity.oracle-manifest/1", "tensors": listed});
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

/// `parity bisect SPEC --json DIR/bisect.json --repro-dir DIR/repro` plus
/// `extra` in `dir`: (exit code, stdout then stderr, the bisect record).
pub fn bisect_in(dir: &Path, spec: &str, extra: &[&str]) -> (i32, String, serde_json::Value) {
    let json = dir.join("bisect.json");
    let repro = dir.join("repro");
    let mut args = vec![
        "bisect",
        spec,
        "--json",
        json.to_str().unwrap(),
        "--repro-dir",
        repro.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    parity_with_record(dir, &args, &json)
}

/// `parity ARGS` in `cwd`, then the JSON record it was told to write at
/// `json`: (exit code, stdout then stderr, the record or Null when it is
/// missing or not JSON).
pub fn parity_with_record(
    cwd: &Path,
    args: &[&str],
    json: &Path,
) -> (i32, String, serde_json::Value) {
    let o = parity(cwd, args);
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let record = std::fs::read_to_string(json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (o.status.code().unwrap_or(-1), text, record)
}

/// The older single-target pair of the examples' specs.
pub const LEGACY_TARGET: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";

/// `dir/spec` with `targets:` (the YAML lines under it) in place of its
/// `target_backend` / `driver` pair.
pub fn with_targets(dir: &Path, spec: &str, targets: &str) {
    let path = dir.join(spec);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(LEGACY_TARGET), "{} changed", path.display());
    std::fs::write(
        &path,
        text.replacen(LEGACY_TARGET, &format!("  targets:\n{targets}"), 1),
    )
    .unwrap();
}

/// Compiles `mlir` (named `name`) for `backend` with `flags`, with the real
/// IREE compiler in process: a prebuilt module, as a user's pipeline builds it.
pub fn compile_vmfb(name: &str, mlir: &[u8], backend: &str, flags: &[&str]) -> Vec<u8> {
    let compiler = parity_iree::IreeCompiler::load(None).expect("the IREE compiler");
    let options = parity_iree::CompileOptions::new(
        backend.to_string(),
        flags.iter().map(|f| f.to_string()).collect(),
    );
    compiler
        .compile(name, mlir, &options)
        .unwrap_or_else(|e| panic!("{backend} {flags:?}: {e}"))
}

/// The root spec (`stages.yaml`, the bundled subject) written into `dir`
/// with its subject paths made absolute, so a scenario or spec there can
/// name it; returns its path.
pub fn root_spec_in(dir: &Path) -> PathBuf {
    let root = repo();
    let spec = std::fs::read_to_string(root.join("stages.yaml"))
        .unwrap()
        .replace(
            "subject/gemma3n/",
            &format!("{}/subject/gemma3n/", root.display()),
        );
    let path = dir.join("stages.yaml");
    std::fs::write(&path, spec).unwrap();
    path
}
