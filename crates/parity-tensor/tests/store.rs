//! OracleStore against real files written by this crate's writers.

use parity_tensor::{
    write_npy, write_npz, write_safetensors, DType, OracleStore, Tensor, TensorError,
};
use std::path::Path;

fn store_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let conv = Tensor::from_f32(vec![1, 2, 2], &[1.0, -2.0, 3.5, 0.25]).unwrap();
    let conv64 = Tensor::from_f64(vec![1, 2, 2], &[1.0, -2.0, 3.5, 0.25]).unwrap();
    let mask = Tensor::from_f64_as(DType::Bool, vec![3], &[1.0, 1.0, 0.0]).unwrap();
    write_npz(
        dir.path().join("full128.npz"),
        &[("conv", &conv), ("mask", &mask)],
        false,
    )
    .unwrap();
    write_npy(dir.path().join("conv64.npy"), &conv64).unwrap();
    write_safetensors(dir.path().join("w.safetensors"), &[("w", &conv)], None).unwrap();
    dir
}

fn write_manifest(dir: &Path, tensors: &str) {
    let text = format!(
        r#"{{"schema": "parity.oracle-manifest/1",
            "provenance": {{"producer": "test", "versions": {{"mlx": "0.32.4"}}}},
            "tensors": {{{tensors}}}}}"#
    );
    std::fs::write(dir.join("manifest.json"), text).unwrap();
}

const GOOD: &str = r#"
    "full128/conv": {"file": "full128.npz", "key": "conv", "dtype": "f32", "shape": [1, 2, 2]},
    "full128/mask": {"file": "full128.npz", "key": "mask", "dtype": "bool", "shape": [3]},
    "full128/conv@f64": {"file": "conv64.npy", "dtype": "float64", "shape": [1, 2, 2]},
    "w": {"file": "w.safetensors", "key": "w", "dtype": "f32", "shape": [1, 2, 2]}"#;

#[test]
fn loads_checked_tensors_and_opens_each_file_once() {
    let dir = store_dir();
    write_manifest(dir.path(), GOOD);
    let store = OracleStore::open(dir.path()).unwrap();
    assert_eq!(
        store.names(),
        ["full128/conv", "full128/mask", "full128/conv@f64", "w"]
    );
    assert!(store.contains("w") && !store.contains("x"));
    assert_eq!(store.provenance()["versions"]["mlx"], "0.32.4");
    assert_eq!(
        store.get("full128/conv").unwrap().to_f64_vec(),
        vec![1.0, -2.0, 3.5, 0.25]
    );
    assert_eq!(
        store.get("full128/mask").unwrap().to_f64_vec(),
        vec![1.0, 1.0, 0.0]
    );
    assert_eq!(
        store.open_file_count(),
        1,
        "both npz tensors share one opened file"
    );
    let t64 = store.get("full128/conv@f64").unwrap();
    assert_eq!((t64.dtype(), t64.get_f64(2)), (DType::F64, 3.5));
    assert!(store.get("w").unwrap().is_mapped());
    assert_eq!(store.open_file_count(), 3);
    assert!(store.verify().is_empty());
}

fn get_err(tensors: &str, name: &str) -> String {
    let dir = store_dir();
    write_manifest(dir.path(), tensors);
    let store = OracleStore::open(dir.path()).unwrap();
    let err = store.get(name).unwrap_err();
    assert!(matches!(
        err,
        TensorError::ManifestEntry { .. } | TensorError::UnknownTensor { .. }
    ));
    err.to_string()
}

#[test]
fn mismatches_and_missing_parts_name_manifest_tensor_and_file() {
    let cases = [
        (
            r#""t": {"file": "full128.npz", "key": "conv", "dtype": "f64", "shape": [1, 2, 2]}"#,
            "manifest says f64 [1, 2, 2], file has f32 [1, 2, 2]",
        ),
        (
            r#""t": {"file": "full128.npz", "key": "conv", "dtype": "f32", "shape": [4]}"#,
            "manifest says f32 [4], file has f32 [1, 2, 2]",
        ),
        (
            r#""t": {"file": "gone.npz", "key": "conv", "dtype": "f32", "shape": [4]}"#,
            "gone.npz",
        ),
        (
            r#""t": {"file": "full128.npz", "key": "nope", "dtype": "f32", "shape": [4]}"#,
            "no array `nope` (available: conv, mask)",
        ),
        (
            r#""t": {"file": "full128.npz", "dtype": "f32", "shape": [4]}"#,
            "a key is required",
        ),
        (
            r#""t": {"file": "conv64.npy", "key": "k", "dtype": "f64", "shape": [1, 2, 2]}"#,
            "single unnamed array",
        ),
    ];
    for (tensors, expected) in cases {
        let err = get_err(tensors, "t");
        assert!(
            err.contains("manifest.json") && err.contains("tensor `t`"),
            "{err}"
        );
        assert!(err.contains(expected), "{err}");
    }
    let err = get_err(GOOD, "absent");
    assert!(
        err.contains("manifest.json") && err.contains("`absent`"),
        "{err}"
    );
}

#[test]
fn invalid_manifests_are_rejected_at_open() {
    let cases = [
        (format!(r#"{{"schema": "parity.oracle-manifest/1", "tensors": {{{GOOD}, "w": {{"file": "a.npy", "dtype": "f32", "shape": []}}}}}}"#), "duplicate key `w`"),
        (r#"{"schema": "parity.oracle-manifest/2", "tensors": {}}"#.to_string(), "parity.oracle-manifest/2"),
        (r#"{"schema": "parity.oracle-manifest/1", "tensors": {"t": {"file": "a.npy", "dtype": "f33", "shape": []}}}"#.to_string(), "f33"),
        (r#"{"schema": "parity.oracle-manifest/1", "tensors": {"t": {"file": "a.npy", "dtype": "f32", "shape": [-1]}}}"#.to_string(), "invalid manifest"),
        (r#"{"schema": "parity.oracle-manifest/1""#.to_string(), "invalid manifest"),
    ];
    for (text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.json"), &text).unwrap();
        let err = OracleStore::open(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("manifest.json") && err.contains(expected),
            "{err}"
        );
    }
    let missing = tempfile::tempdir().unwrap();
    let err = OracleStore::open(missing.path()).unwrap_err().to_string();
    assert!(err.contains("manifest.json"), "{err}");
}

#[test]
fn store_and_files_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<OracleStore>();
    shareable::<Tensor>();
    shareable::<parity_tensor::NpzArchive>();
    shareable::<parity_tensor::SafetensorsFile>();
    let dir = store_dir();
    write_manifest(dir.path(), GOOD);
    let store = OracleStore::open(dir.path()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(store.get("full128/conv").unwrap().get_f64(2), 3.5));
        }
    });
    assert_eq!(store.open_file_count(), 1);
}
