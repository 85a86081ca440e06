//! Fuzz target bodies for parity's readers, one `pub fn(&[u8])` per reader.
//!
//! Each body feeds arbitrary bytes to a reader the way parity uses it and then
//! exercises what the reader returned; the readers must answer every input with
//! a value or an error, so any panic here is a reader bug. The cargo-fuzz crate
//! in `fuzz/` (outside the workspace) only wraps these functions, and
//! `tests/replay.rs` runs every file of `fuzz/corpus/<target>/` through them
//! under `cargo test`, with bounded time and peak heap per input. See
//! `docs/fuzzing.md`.

#![warn(missing_docs)]

use parity_tensor::{checked_nbytes, Tensor};
use std::io::Write;
use std::path::{Path, PathBuf};

mod text;

// `parity-iree` links the IREE runtime (eerie-sys builds it with CMake), which a
// sanitizer-coverage build would have to rebuild from scratch; the vmfb reader
// is self-contained pure Rust, so the fuzz build compiles its very source file.
#[path = "../../parity-iree/src/vmfb.rs"]
mod vmfb;

pub use text::{mlir, spec};

/// A fuzz target: a name (the directory under `fuzz/corpus/`) and its body.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The target's name, as `cargo fuzz run <name>` and `fuzz/corpus/<name>/` spell it.
    pub name: &'static str,
    /// The body: must return for every input, never panic.
    pub run: fn(&[u8]),
}

/// Every target, in the order the replay test visits them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "npy",
        run: npy,
    },
    Target {
        name: "npz",
        run: npz,
    },
    Target {
        name: "safetensors",
        run: safetensors,
    },
    Target {
        name: "spec",
        run: spec,
    },
    Target {
        name: "mlir",
        run: mlir,
    },
    Target {
        name: "vmfb",
        run: vmfb,
    },
];

/// The directory holding the committed corpora (`fuzz/corpus/<target>/`).
pub fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// `.npy` bytes, both parsed in memory and read back from a mapped file: the
/// two paths must agree on the tensor, or both refuse.
pub fn npy(data: &[u8]) {
    let in_memory = parity_tensor::parse_npy_bytes(data, Path::new("fuzz.npy"));
    with_file(data, ".npy", |path| {
        let mapped = parity_tensor::read_npy(path);
        match (&in_memory, &mapped) {
            (Ok(a), Ok(b)) => {
                check(a);
                check(b);
                assert_eq!(
                    (a.dtype(), a.shape(), a.bytes()),
                    (b.dtype(), b.shape(), b.bytes()),
                    "parse_npy_bytes and read_npy read different tensors"
                );
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("parse_npy_bytes and read_npy disagree: {a:?} vs {b:?}"),
        }
    });
}

/// `.npz` bytes: open the archive, then decode every member it lists.
pub fn npz(data: &[u8]) {
    with_file(data, ".npz", |path| {
        let Ok(archive) = parity_tensor::read_npz(path) else {
            return;
        };
        for key in archive.keys() {
            assert!(
                archive.contains(key),
                "npz lists `{key}` but does not contain it"
            );
            if let Ok(t) = archive.get(key) {
                check(&t);
            }
        }
    });
}

/// `.safetensors` bytes: open (which validates the header), then decode every tensor.
pub fn safetensors(data: &[u8]) {
    with_file(data, ".safetensors", |path| {
        let Ok(file) = parity_tensor::read_safetensors(path) else {
            return;
        };
        let _ = file.metadata().len();
        for name in file.names() {
            assert!(
                file.contains(name),
                "safetensors lists `{name}` but does not contain it"
            );
            if let Ok(t) = file.get(name) {
                check(&t);
            }
        }
    });
}

/// vmfb bytes: the FlatBuffer reader behind "unknown function" errors.
/// Exports may share one string (FlatBuffers deduplicates), so only each
/// string, not their sum, is bounded by the file (x3: invalid UTF-8 becomes U+FFFD).
pub fn vmfb(data: &[u8]) {
    if let Some(info) = vmfb::inspect(data) {
        let limit = 3 * data.len();
        assert!(info.name.len() <= limit, "module name longer than the file");
        for e in &info.exports {
            assert!(e.name.len() <= limit, "export name longer than the file");
            let declaration = e.declaration.as_ref().map_or(0, String::len);
            assert!(declaration <= limit, "declaration longer than the file");
        }
    }
}

/// What a tensor must satisfy whatever file it came from.
fn check(t: &Tensor) {
    let nbytes = checked_nbytes(t.shape(), t.dtype());
    assert_eq!(
        nbytes,
        Some(t.bytes().len()),
        "tensor {:?} {:?} holds {} bytes",
        t.dtype(),
        t.shape(),
        t.bytes().len()
    );
    let n = t.numel();
    if n > 0 {
        let _ = t.get_f64(0);
        let _ = t.get_f64(n - 1);
    }
}

/// Writes `data` to a fresh temporary file named `*<suffix>` and runs `f` on its
/// path (the readers under test map files); None when the file cannot be made.
fn with_file<R>(data: &[u8], suffix: &str, f: impl FnOnce(&Path) -> R) -> Option<R> {
    let mut file = tempfile::Builder::new()
        .prefix("parity-fuzz-")
        .suffix(suffix)
        .tempfile()
        .ok()?;
    file.write_all(data).ok()?;
    file.flush().ok()?;
    Some(f(file.path()))
}
