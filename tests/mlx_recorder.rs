//! The MLX recorder (python/parity_mlx_recorder) on a tiny mlx.nn model: its
//! own test checks every recorded tensor against the module's output
//! recomputed; here the store it wrote opens with parity's OracleStore with
//! the same values, and `parity oracle index` rebuilds the same manifest.
//!
//! Needs `PARITY_TENSOR_PYTHON`, a Python with mlx and numpy (ci/test.sh
//! exports tools/fixtures/.venv/bin/python); fails, saying so, without it.
//! The package is put on PYTHONPATH rather than pip-installed, so the test
//! leaves the environment untouched.

mod common;

use common::{parity, repo};
use parity_tensor::OracleStore;
use serde_json::Value;
use std::process::Command;

#[test]
fn recorded_store_opens_with_the_recomputed_values() {
    let python = std::env::var_os("PARITY_TENSOR_PYTHON").expect(
        "PARITY_TENSOR_PYTHON must name a Python with mlx and numpy \
         (e.g. tools/fixtures/.venv/bin/python; ci/test.sh exports it)",
    );
    let package = repo().join("python/parity_mlx_recorder");
    let store = tempfile::tempdir().unwrap();
    let run = Command::new(&python)
        .arg(package.join("tests/test_recorder.py"))
        .arg(store.path())
        .env("PYTHONPATH", package.join("src"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run PARITY_TENSOR_PYTHON={python:?}: {e}"));
    assert!(
        run.status.success(),
        "recorder test failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );

    let opened = OracleStore::open(store.path()).unwrap();
    assert!(opened.verify().is_empty(), "{:?}", opened.verify());
    let expected: Value =
        serde_json::from_slice(&std::fs::read(store.path().join("expected.json.txt")).unwrap())
            .unwrap();
    let expected = expected.as_object().unwrap();
    let mut names: Vec<&str> = opened.names().iter().map(String::as_str).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = expected.keys().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    assert!(names.contains(&"case_a/layers.0") && names.contains(&"case_b/cache~1"));
    common::assert_store_matches_json(&opened, expected);
    assert_eq!(opened.entry("case_a/tiny.1").unwrap().dtype.name(), "bf16");
    assert_eq!(opened.provenance()["producer"], "parity_mlx_recorder");

    // parity oracle index over the same files gives the recorder's tensors.
    let reindexed = store.path().join("reindexed.json");
    let out = parity(
        &repo(),
        &[
            "oracle",
            "index",
            store.path().to_str().unwrap(),
            "--out",
            reindexed.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    assert_eq!(
        read(&reindexed)["tensors"],
        read(&store.path().join("manifest.json"))["tensors"]
    );
}
