//! The one error type of the tensor readers, writers and the oracle store.
//!
//! Every variant names the file it is about, and the array key or tensor name
//! where there is one, because these errors reach users as-is.

use crate::tensor::ByteLengthMismatch;
use std::path::PathBuf;

/// Anything that can go wrong reading or writing tensor files or an oracle store.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    /// The file could not be opened, mapped, read or written.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done (e.g. "cannot open", "cannot write").
        action: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The file (or an archive member) is not a valid file of its format.
    #[error("{path}: malformed {what}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The format and, inside archives, the member (e.g. "npz member `x.npy`").
        what: String,
        /// What is wrong.
        reason: String,
    },

    /// The file stores an element type parity does not support.
    #[error("{path}: {what}: unsupported dtype `{dtype}` (supported: bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)")]
    UnsupportedDType {
        /// The file.
        path: PathBuf,
        /// The format and, inside archives, the member or tensor.
        what: String,
        /// The dtype as the file spells it.
        dtype: String,
    },

    /// A named array is not in the file.
    #[error("{path}: no array `{key}` (available: {available})")]
    MissingKey {
        /// The file.
        path: PathBuf,
        /// The key asked for.
        key: String,
        /// The keys the file does have, comma separated.
        available: String,
    },

    /// A key was required (multi-array file) or given where none is allowed (`.npy`).
    #[error("{path}: {reason}")]
    KeyUsage {
        /// The file.
        path: PathBuf,
        /// What is wrong with the key.
        reason: String,
    },

    /// The file extension does not name a supported format.
    #[error("{path}: unknown tensor file extension (expected .npy, .npz or .safetensors)")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },

    /// A tensor given to a writer is invalid for that format (bad name, duplicate name).
    #[error("{path}: cannot write `{name}`: {reason}")]
    InvalidWrite {
        /// The file being written.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// Why.
        reason: String,
    },

    /// The zip container of an `.npz` is unreadable or unwritable.
    #[error("{path}: zip error{member}: {source}")]
    Zip {
        /// The archive.
        path: PathBuf,
        /// ` in member `x.npy`` or empty.
        member: String,
        /// The zip error.
        #[source]
        source: zip::result::ZipError,
    },

    /// Data length disagrees with the declared dtype and shape.
    #[error("{path}: {what}: {source}")]
    ByteLength {
        /// The file.
        path: PathBuf,
        /// The format and, inside archives, the member or tensor.
        what: String,
        /// The mismatch.
        #[source]
        source: ByteLengthMismatch,
    },

    /// The oracle manifest itself is invalid (bad JSON, schema, duplicate names).
    #[error("oracle manifest {manifest}: {reason}")]
    Manifest {
        /// The manifest.json path.
        manifest: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A tensor name is not listed in the oracle manifest.
    #[error("oracle manifest {manifest}: no tensor named `{tensor}`{hint}")]
    UnknownTensor {
        /// The manifest.json path.
        manifest: PathBuf,
        /// The tensor name asked for.
        tensor: String,
        /// `; the store has no case ...` when the name's case is not one of
        /// the store's, else empty.
        hint: String,
    },

    /// A manifest entry does not agree with its file, or its file failed to load.
    #[error("oracle manifest {manifest}: tensor `{tensor}` (file {file}): {reason}")]
    ManifestEntry {
        /// The manifest.json path.
        manifest: PathBuf,
        /// The tensor name.
        tensor: String,
        /// The dump file the entry points to.
        file: PathBuf,
        /// What is wrong (includes the underlying file error).
        reason: String,
    },
}

impl TensorError {
    /// Shorthand for [`TensorError::Io`].
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        source: std::io::Error,
    ) -> Self {
        TensorError::Io {
            path: path.into(),
            action,
            source,
        }
    }

    /// Shorthand for [`TensorError::Malformed`].
    pub(crate) fn malformed(
        path: impl Into<PathBuf>,
        what: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        TensorError::Malformed {
            path: path.into(),
            what: what.into(),
            reason: reason.into(),
        }
    }
}
