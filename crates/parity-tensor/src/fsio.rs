//! File plumbing shared by the readers and writers: read-only memory maps and
//! atomic (temp file + rename) writes.

use crate::error::TensorError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

/// Maps `path` read-only.
///
/// Mapping (rather than reading) keeps multi-GB oracle dumps out of the heap;
/// tensors borrow their bytes from the shared map.
pub(crate) fn map_file(path: &Path) -> Result<Arc<memmap2::Mmap>, TensorError> {
    let file = File::open(path).map_err(|e| TensorError::io(path, "cannot open", e))?;
    let meta = file
        .metadata()
        .map_err(|e| TensorError::io(path, "cannot stat", e))?;
    if !meta.is_file() {
        return Err(TensorError::io(
            path,
            "cannot map",
            std::io::Error::other("not a regular file"),
        ));
    }
    // SAFETY: the map is read-only. Another process truncating or rewriting the
    // file while we hold the map is outside our control (as for every mmap
    // reader); parity's own writers never modify in place, they rename a new
    // file over the old one, which leaves existing maps intact.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| TensorError::io(path, "cannot map", e))?;
    Ok(Arc::new(map))
}

/// Writes `path` atomically: `write` fills a temp file in the same directory,
/// which is then flushed, synced and renamed over `path`.
///
/// Readers therefore never see a half-written dump, and a failed write leaves
/// any previous file untouched.
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), TensorError>,
) -> Result<(), TensorError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".parity-tmp-");
    // tempfile creates 0600 files; dumps are meant to be shared like any file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let tmp = builder
        .tempfile_in(dir)
        .map_err(|e| TensorError::io(path, "cannot create temp file for", e))?;
    let file = tmp
        .reopen()
        .map_err(|e| TensorError::io(path, "cannot open temp file for", e))?;
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    let file = out
        .into_inner()
        .map_err(|e| TensorError::io(path, "cannot write", e.into_error()))?;
    file.sync_all()
        .map_err(|e| TensorError::io(path, "cannot sync", e))?;
    tmp.persist(path)
        .map_err(|e| TensorError::io(path, "cannot rename temp file onto", e.error))?;
    Ok(())
}

/// Writes all of `bytes`, naming `path` on failure.
pub(crate) fn write_all(
    out: &mut impl Write,
    path: &Path,
    bytes: &[u8],
) -> Result<(), TensorError> {
    out.write_all(bytes)
        .map_err(|e| TensorError::io(path, "cannot write", e))
}

/// Writes `bytes` to `path` atomically (temp file in the same directory,
/// synced, renamed; mode 0644): the writer parity's reports share with the
/// tensor writers.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), TensorError> {
    write_atomic(path, |out| write_all(out, path, bytes))
}
