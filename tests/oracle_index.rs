//! `parity oracle index` on real dumps: the committed gemma3n store re-indexed,
//! `.npy` files written by MLX itself, and bad files.
//!
//! The MLX part needs `PARITY_TENSOR_PYTHON` (a Python with mlx and numpy;
//! ci/test.sh exports tools/fixtures/.venv/bin/python). Under CI (env `CI`) a
//! missing variable fails; elsewhere the test says why it skipped that part.

mod common;

use common::{parity, repo};
use parity_tensor::OracleStore;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Copies the store's audio-path dumps and manifest: the language-model dumps
/// (`<case>_lm.npz`) hold step cases (`<case>.s05/...`) and cache aliases
/// that the generic `<stem>/<key>` rule does not produce (build_manifest.py
/// names them).
fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().contains("_lm") {
            continue;
        }
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// The committed manifest's entries for the audio-path dumps only.
fn audio_tensors(committed: &Value) -> Value {
    let mut t = committed["tensors"].as_object().unwrap().clone();
    t.retain(|_, e| !e["file"].as_str().unwrap().contains("_lm"));
    Value::Object(t)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn indexing_the_gemma3n_dumps_reproduces_the_committed_manifest() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("oracle-dumps/gemma3n"), dir.path());
    let committed = read_json(&dir.path().join("manifest.json"));
    let d = dir.path().to_str().unwrap();
    let out = parity(
        &repo(),
        &[
            "oracle",
            "index",
            d,
            "--provenance",
            "producer=re-indexed",
            "--provenance",
            "seeds.weights=0",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("600 tensors from 10 files"));
    let ours = read_json(&dir.path().join("manifest.json"));
    assert_eq!(ours["schema"], committed["schema"]);
    assert_eq!(ours["tensors"], audio_tensors(&committed));
    assert_eq!(
        ours["provenance"],
        serde_json::json!({"producer": "re-indexed", "seeds": {"weights": 0}})
    );
    assert!(OracleStore::open(dir.path()).unwrap().verify().is_empty());

    // --out elsewhere, one case by glob: paths lead back to the dumps.
    let elsewhere = tempfile::tempdir().unwrap();
    let manifest = elsewhere.path().join("manifest.json");
    let out = parity(
        &repo(),
        &[
            "oracle",
            "index",
            d,
            "--out",
            manifest.to_str().unwrap(),
            "--case-pattern",
            "full*",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = OracleStore::open(elsewhere.path()).unwrap();
    assert_eq!(store.names().len(), 120);
    assert!(store.names().iter().all(|n| n.starts_with("full128/")));
    let a = store.get("full128/conformer_0_attention@f64").unwrap();
    let b = OracleStore::open(dir.path())
        .unwrap()
        .get("full128/conformer_0_attention@f64")
        .unwrap();
    assert_eq!(a.bytes(), b.bytes());
}

#[test]
fn bad_files_are_named_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("case.npz"), b"PK\x03\x04truncated").unwrap();
    std::fs::write(
        dir.path().join("x.npy"),
        b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'",
    )
    .unwrap();
    let out = parity(&repo(), &["oracle", "index", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("case.npz") && err.contains("x.npy"), "{err}");
    assert!(
        !dir.path().join("manifest.json").exists(),
        "no manifest from bad dumps"
    );
    let out = parity(
        &repo(),
        &[
            "oracle",
            "index",
            dir.path().to_str().unwrap(),
            "--case-pattern",
            "re:(",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// MLX writes these itself (`mx.save`): 1-D arrays as fortran_order npy, bf16 as `<V2`.
const MLX_DUMP: &str = r#"
import json, sys
import mlx.core as mx
import numpy as np
out = sys.argv[1]
import os
os.makedirs(f"{out}/case_mlx", exist_ok=True)
arrays = {
    "encoder.layers.0": mx.arange(12, dtype=mx.float32).reshape(3, 4) / 7.0,
    "encoder.norm": mx.array([0.5, -1.25, 3.0], dtype=mx.float32),
    "logits": (mx.arange(6, dtype=mx.float32) - 2.5).astype(mx.bfloat16).reshape(2, 3),
    "tokens": mx.array([3, 1, 4, 1], dtype=mx.int32),
    "mask": mx.array([True, False, True]),
}
expected = {}
for name, a in arrays.items():
    mx.save(f"{out}/case_mlx/{name}.npy", a)
    expected[f"case_mlx/{name}"] = np.array(a.astype(mx.float32)).astype(np.float64).ravel().tolist()
mx.savez(f"{out}/case_npz_f64.npz", h=mx.array([1.0, 2.0]))
json.dump(expected, open(f"{out}/expected.json.txt", "w"))
"#;

#[test]
fn npy_files_written_by_mlx_index_and_read_back_equal() {
    let Some(python) = std::env::var_os("PARITY_TENSOR_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "PARITY_TENSOR_PYTHON must name a Python with mlx in CI"
        );
        eprintln!("PARITY_TENSOR_PYTHON not set: skipping the MLX dump check");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(&python)
        .args(["-c", MLX_DUMP])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = parity(&repo(), &["oracle", "index", dir.path().to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = OracleStore::open(dir.path()).unwrap();
    let expected = read_json(&dir.path().join("expected.json.txt"));
    let expected = expected.as_object().unwrap();
    common::assert_store_matches_json(&store, expected);
    let dtype = |n: &str| store.entry(n).unwrap().dtype.name();
    assert_eq!(dtype("case_mlx/logits"), "bf16");
    assert_eq!(dtype("case_mlx/mask"), "bool");
    assert_eq!(
        store.entry("case_mlx/encoder.layers.0").unwrap().shape,
        [3, 4]
    );
    assert_eq!(
        store.get("case_npz/h@f64").unwrap().to_f64_vec(),
        [1.0, 2.0]
    );
    assert_eq!(store.names().len(), expected.len() + 1);
}

/// One folder per precision (`oracle/f32/*.npy`, `oracle/f64/*.npy`): with
/// `--oracle-dir f32 --truth-dir f64` the folders leave the names and the
/// f64 files are the `@f64` truth of their f32 namesakes; without them the
/// two folders would be two cases.
#[test]
fn precision_folders_pair_the_f64_truth_without_renaming() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("oracle");
    for sub in ["f32", "f64"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let f32 = |v: &[f32]| parity_tensor::Tensor::from_f32(vec![v.len()], v).unwrap();
    let f64 = |v: &[f64]| parity_tensor::Tensor::from_f64(vec![v.len()], v).unwrap();
    parity_tensor::write_npy(root.join("f32/mel.npy"), &f32(&[1.0, 2.0])).unwrap();
    parity_tensor::write_npy(root.join("f32/enc.npy"), &f32(&[0.5, 0.25, 0.125])).unwrap();
    parity_tensor::write_npy(root.join("f64/enc.npy"), &f64(&[0.5, 0.25, 0.1251])).unwrap();
    let index = |extra: &[&str]| {
        let mut args = vec!["oracle", "index", "oracle", "--case", "default"];
        args.extend_from_slice(extra);
        let out = parity(dir.path(), &args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let names: Vec<String> = read_json(&root.join("manifest.json"))["tensors"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        (names, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (names, _) = index(&[]);
    assert_eq!(
        names,
        ["default/f32/enc", "default/f32/mel", "default/f64/enc"]
    );

    let (names, stderr) = index(&["--oracle-dir", "f32", "--truth-dir", "f64"]);
    assert_eq!(names, ["default/enc", "default/enc@f64", "default/mel"]);
    assert!(stderr.is_empty(), "{stderr}");
    let store = OracleStore::open(&root).unwrap();
    let truth = store.get("default/enc@f64").unwrap();
    assert_eq!(truth.dtype(), parity_tensor::DType::F64);
    assert_eq!(
        store.entry("default/enc@f64").unwrap().file,
        Path::new("f64/enc.npy")
    );
    assert_eq!(
        store.get("default/enc").unwrap().dtype(),
        parity_tensor::DType::F32
    );

    // The truth folder alone leaves `f32/` in the oracle's names: said, not silent.
    let (names, stderr) = index(&["--truth-dir", "f64"]);
    assert_eq!(
        names,
        ["default/enc@f64", "default/f32/enc", "default/f32/mel"]
    );
    assert!(
        stderr.contains("default/enc@f64") && stderr.contains("--oracle-dir"),
        "{stderr}"
    );
    let out = parity(
        dir.path(),
        &[
            "oracle",
            "index",
            "oracle",
            "--oracle-dir",
            "f64",
            "--truth-dir",
            "f64",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("name the same folder"));
}
