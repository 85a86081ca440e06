//! File plumbing shared by the readers and writers: opening only regular
//! files, read-only memory maps and atomic (temp file + rename) writes.

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
    let file = open_regular(path).map_err(|e| TensorError::io(path, "cannot open", e))?;
    // SAFETY: the map is read-only. Another process truncating or rewriting the
    // file while we hold the map is outside our control (as for every mmap
    // reader); parity's own writers never modify in place, they rename a new
    // file over the old one, which leaves existing maps intact.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| TensorError::io(path, "cannot map", e))?;
    Ok(Arc::new(map))
}

/// Opens `path` for reading only if it is a regular file.
///
/// A FIFO given as a tensor file, manifest or spec would otherwise block the
/// open (and then the read) forever, and a device such as /dev/zero would be
/// read without end. The open is non-blocking (O_NONBLOCK has no effect on
/// regular files) and the check is an fstat of the opened descriptor, so the
/// file cannot be swapped between the check and the use.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("not a regular file (it is {})", describe_kind(kind)),
    ))
}

/// Reads all of the regular file `path` (see [`open_regular`]).
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a non-regular file is, for error messages.
fn describe_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
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
