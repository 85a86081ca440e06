//! File plumbing shared by the readers and writers: opening only regular
//! files, read-only memory maps and atomic (temp file + rename) writes.

use crate::error::TensorError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

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

/// Largest MLIR text parity inflates from a `.gz` module (a corrupt or
/// hostile stream stops here instead of filling memory).
pub const MAX_INFLATED_MODULE: u64 = 1 << 31;

/// A module file's bytes: as stored, or inflated when the name ends in `.gz`
/// (gzip; MLIR text compresses about tenfold, which keeps committed fixtures
/// small). A damaged stream, or one inflating past [`MAX_INFLATED_MODULE`],
/// is an `InvalidData` error.
pub fn read_module_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let raw = read_regular(path)?;
    if path.extension().and_then(|e| e.to_str()) != Some("gz") {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .take(MAX_INFLATED_MODULE + 1)
        .read_to_end(&mut out)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("gzip: {e}")))?;
    if out.len() as u64 > MAX_INFLATED_MODULE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("gzip: inflates past {MAX_INFLATED_MODULE} bytes"),
        ));
    }
    Ok(out)
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

/// How every temp file parity writes is named: this prefix, the writing
/// process's pid, `-`, then anything. [`remove_stale_temp_files`] relies on it.
pub const TEMP_PREFIX: &str = ".parity-tmp-";

/// Temp files older than this are stale even when their pid is alive (pids are reused).
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(24 * 3600);

/// Removes the temp files a killed parity run left in `dir`: regular files
/// named [`TEMP_PREFIX`]`<pid>-...` whose process no longer exists, and any
/// such file (pid or not) older than [`STALE_TEMP_AGE`]. Returns what it removed.
///
/// A live writer's temp file is kept: its pid is alive and it is seconds old.
/// Files that cannot be removed are skipped; only an unreadable `dir` is an error.
pub fn remove_stale_temp_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let now = SystemTime::now();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else {
            continue;
        };
        // symlink_metadata: never follow a link out of the directory.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let dead = rest
            .split('-')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !process_alive(pid));
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > STALE_TEMP_AGE);
        if (dead || old) && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// Whether a process with this pid exists (signal 0 checks without sending).
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if pid <= 0 {
            return false;
        }
        // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
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
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    builder.prefix(&prefix);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_files_carry_the_writer_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        write_atomic(&path, |out| {
            let names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            let own = format!("{TEMP_PREFIX}{}-", std::process::id());
            assert!(names.iter().any(|n| n.starts_with(&own)), "{names:?}");
            // A live writer's temp file survives a sweep.
            assert!(remove_stale_temp_files(dir.path()).unwrap().is_empty());
            write_all(out, &path, b"x")
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }

    #[test]
    fn leftovers_of_dead_processes_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A real process that has exited: its pid is no longer alive.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let leftover = dir
            .path()
            .join(format!("{TEMP_PREFIX}{dead}-run.json.AbC123"));
        let live = dir
            .path()
            .join(format!("{TEMP_PREFIX}{}-junit.xml.XyZ", std::process::id()));
        let unrelated = dir.path().join("run.json");
        let no_pid = dir.path().join(format!("{TEMP_PREFIX}AbCdEf"));
        for p in [&leftover, &live, &unrelated, &no_pid] {
            std::fs::write(p, b"partial").unwrap();
        }
        let removed = remove_stale_temp_files(dir.path()).unwrap();
        assert_eq!(removed, vec![leftover.clone()]);
        assert!(!leftover.exists() && live.exists() && unrelated.exists() && no_pid.exists());
        // Past the age limit even a file without a pid goes.
        let old = SystemTime::now() - STALE_TEMP_AGE - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&no_pid)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(remove_stale_temp_files(dir.path()).unwrap(), vec![no_pid]);
    }
}

#[cfg(test)]
mod module_bytes_tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gz_modules_inflate_and_plain_ones_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let text = b"module {}\n".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        std::fs::write(dir.path().join("m.mlir.gz"), &gz).unwrap();
        std::fs::write(dir.path().join("m.mlir"), &text).unwrap();
        assert_eq!(
            read_module_bytes(&dir.path().join("m.mlir.gz")).unwrap(),
            text
        );
        assert_eq!(read_module_bytes(&dir.path().join("m.mlir")).unwrap(), text);
        std::fs::write(dir.path().join("bad.mlir.gz"), &gz[..gz.len() - 9]).unwrap();
        let e = read_module_bytes(&dir.path().join("bad.mlir.gz")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    }
}
