//! The built binary finds its compiler library without `EERIE_PYTHON`: run
//! with every discovery variable removed and no venv on `PATH`, `parity check`
//! on examples/basic compiles (fresh cache, so the compiler is really loaded)
//! and passes, and `parity points` reads a module.
//!
//! The library then comes from the venv recorded at build time or the
//! checkout's `.venv` (crates/parity-iree/src/discover.rs); ci/setup.sh makes both.

mod common;

use common::{basic_copy, repo};
use std::process::{Command, Output};

/// `parity <args>` in `cwd` with EERIE_PYTHON / PARITY_IREE_COMPILER_LIB unset and
/// every PATH entry inside a virtualenv dropped (so no `python` on PATH has the compiler).
fn bare_parity(cwd: &std::path::Path, args: &[&str]) -> Output {
    let path = std::env::var("PATH").unwrap_or_default();
    let path: Vec<&str> = path
        .split(':')
        .filter(|p| !p.contains("venv") && !p.is_empty())
        .collect();
    Command::new(env!("CARGO_BIN_EXE_parity"))
        .args(args)
        .current_dir(cwd)
        .env_remove("EERIE_PYTHON")
        .env_remove("PARITY_IREE_COMPILER_LIB")
        .env_remove("VIRTUAL_ENV")
        .env("PATH", path.join(":"))
        .env("NO_COLOR", "1")
        .output()
        .expect("spawn parity")
}

#[test]
fn check_passes_without_eerie_python() {
    let dir = basic_copy();
    let cache = dir.path().join("fresh-cache");
    let out = bare_parity(
        dir.path(),
        &[
            "check",
            "stages.yaml",
            "--out-dir",
            "out",
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/run.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "pass");
    // The modules were compiled in this run, not taken from a cache.
    assert!(std::fs::read_dir(&cache).unwrap().count() > 0);

    let out = bare_parity(&repo(), &["points", "examples/basic/model.mlir"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("@masked_softmax"));
}
