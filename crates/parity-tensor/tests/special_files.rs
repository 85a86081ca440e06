//! FIFOs and other non-regular files are refused, never opened for a read that
//! would block forever. The FIFOs are real (made with mkfifo(1)); each call
//! runs on a thread with a deadline so a regression fails instead of hanging.

use parity_tensor::{load_tensor, read_regular, OracleStore, TensorError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `f` on a thread and returns its result, or panics if it blocks for 10 s.
fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("blocked on a non-regular file")
}

fn fifo_in(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    mkfifo(&path);
    path
}

#[test]
fn tensor_files_that_are_fifos_are_refused_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.npy", "b.npz", "c.safetensors"] {
        let path = fifo_in(dir.path(), name);
        let err = within_deadline(move || load_tensor(&path, None).unwrap_err());
        assert!(matches!(err, TensorError::Io { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains(name) && text.contains("not a regular file (it is a FIFO)"),
            "{text}"
        );
    }
}

#[test]
fn a_directory_or_device_is_refused_too() {
    let dir = tempfile::tempdir().unwrap();
    let as_dir = dir.path().join("d.npy");
    std::fs::create_dir(&as_dir).unwrap();
    let err = load_tensor(&as_dir, None).unwrap_err().to_string();
    assert!(err.contains("it is a directory"), "{err}");
    let err = within_deadline(|| read_regular(Path::new("/dev/zero")).unwrap_err());
    assert!(err.to_string().contains("character device"), "{err}");
}

#[test]
fn a_fifo_manifest_or_dump_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = fifo_in(dir.path(), "manifest.json");
    let store_dir = dir.path().to_path_buf();
    let err = within_deadline(move || OracleStore::open(&store_dir).unwrap_err()).to_string();
    assert!(
        err.contains("manifest.json") && err.contains("FIFO"),
        "{err}"
    );

    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(
        &manifest,
        r#"{"schema": "parity.oracle-manifest/1",
            "tensors": {"x": {"file": "x.npy", "dtype": "float32", "shape": [2]}}}"#,
    )
    .unwrap();
    fifo_in(dir.path(), "x.npy");
    let store_dir = dir.path().to_path_buf();
    let err = within_deadline(move || OracleStore::open(&store_dir).unwrap().get("x").unwrap_err())
        .to_string();
    assert!(err.contains("x.npy") && err.contains("FIFO"), "{err}");
}
