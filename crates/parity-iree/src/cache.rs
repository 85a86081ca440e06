//! A content-addressed cache of compiled vmfb artifacts.
//!
//! The key is a sha256 over everything that can change the compiler's output: the
//! compiler revision, the compiler library's own sha256 (a rebuilt library with the
//! same revision string still changes the key), the target backend, every flag in
//! order, and the MLIR bytes. Each entry is `<key>.vmfb` with a header carrying the
//! key itself, the payload length and its sha256, so an entry copied under another
//! key, truncated or corrupted is detected and recompiled (with a warning), never
//! loaded; `<key>.json` records the key's components for humans.
//!
//! The cache is an optimisation: a cache that cannot be read or written (an
//! entry that is a FIFO or directory, a read-only or missing directory, a full
//! disk) never fails a compile. Each such problem becomes a warning in
//! [`Cached::warnings`] and the module is used from memory. Temp files left by
//! killed runs are swept when the cache is first written to (see
//! [`parity_tensor::remove_stale_temp_files`]).

use crate::compiler::{CompileOptions, IreeCompiler};
use crate::error::IreeError;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

/// Env var overriding the default cache directory.
pub const CACHE_DIR_ENV: &str = "PARITY_CACHE_DIR";

/// Version of the key derivation and entry layout; bump to invalidate old entries.
const KEY_SCHEMA: &str = "parity.vmfb-cache/2";
/// First bytes of every entry file.
const MAGIC: &[u8; 8] = b"PARVMFB2";
/// Length of a key: hex sha256.
const KEY_LEN: usize = 64;
/// Magic, key (64 hex bytes), payload length (u64 LE), payload sha256.
const HEADER_LEN: usize = 8 + KEY_LEN + 8 + 32;

/// Whether an artifact came from the cache or was just compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// A valid entry was found; the compiler did not run.
    Hit,
    /// No valid entry (absent or corrupt); the compiler ran and the entry was written.
    Miss,
}

/// A compiled artifact and how it was had.
#[derive(Clone, Debug)]
pub struct Cached {
    /// The vmfb bytes.
    pub vmfb: Vec<u8>,
    /// Whether they came from the cache.
    pub outcome: CacheOutcome,
    /// Cache problems that did not stop the compile (bad entry, failed write),
    /// each naming the path; the caller shows them to the user.
    pub warnings: Vec<String>,
}

/// What [`ArtifactCache::lookup`] found.
#[derive(Clone, Debug)]
pub struct Lookup {
    /// The compilation's cache key.
    pub key: String,
    /// The cached vmfb, when a valid entry exists.
    pub found: Option<Vec<u8>>,
    /// Problems with an entry that was there but unusable (it was removed).
    pub warnings: Vec<String>,
}

/// The key's components, written beside each entry as `<key>.json`.
#[derive(Debug, Serialize)]
struct KeyRecord<'a> {
    schema: &'a str,
    key: &'a str,
    source_name: &'a str,
    compiler_revision: &'a str,
    compiler_library: String,
    compiler_library_sha256: &'a str,
    target_backend: &'a str,
    flags: &'a [String],
    effective_flags: Vec<String>,
    mlir_sha256: String,
    mlir_bytes: usize,
    vmfb_sha256: String,
    vmfb_bytes: usize,
}

/// A directory of compiled artifacts keyed by compiler, flags and source.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    /// A cache in `dir`, created on first write.
    pub fn new(dir: impl Into<PathBuf>) -> ArtifactCache {
        ArtifactCache { dir: dir.into() }
    }

    /// The default cache directory: `$PARITY_CACHE_DIR` if set, else `<repo_root>/.parity-cache`.
    pub fn default_dir(repo_root: &Path) -> PathBuf {
        match std::env::var_os(CACHE_DIR_ENV).filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => repo_root.join(".parity-cache"),
        }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry file for a key.
    pub fn entry_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.vmfb"))
    }

    /// The cache key (hex sha256) for compiling `mlir` with `options` on `compiler`.
    pub fn key(
        &self,
        compiler: &IreeCompiler,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<String, IreeError> {
        let lib_sha = library_sha256(compiler.library_path())?;
        Ok(compute_key(&compiler.revision(), &lib_sha, mlir, options))
    }

    /// Returns the cached vmfb for this compilation, or compiles and stores it.
    /// Only the compiler (or hashing its library) can fail this; cache
    /// problems are warnings in the result.
    pub fn get_or_compile(
        &self,
        compiler: &IreeCompiler,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<Cached, IreeError> {
        let Lookup {
            key,
            found,
            mut warnings,
        } = self.lookup(compiler, mlir, options)?;
        if let Some(vmfb) = found {
            return Ok(Cached {
                vmfb,
                outcome: CacheOutcome::Hit,
                warnings,
            });
        }
        let vmfb = compiler.compile(source_name, mlir, options)?;
        warnings.extend(self.insert(compiler, &key, source_name, mlir, options, &vmfb));
        Ok(Cached {
            vmfb,
            outcome: CacheOutcome::Miss,
            warnings,
        })
    }

    /// The key of this compilation and its cached vmfb when there is a valid
    /// entry, with warnings about an entry that was there but unusable.
    pub fn lookup(
        &self,
        compiler: &IreeCompiler,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<Lookup, IreeError> {
        let key = self.key(compiler, mlir, options)?;
        // A compile that writes files (`--iree-hal-dump-executable-sources-to`
        // and the like) is run every time: a hit would skip the files.
        let (found, warnings) = if options.writes_files() {
            (None, Vec::new())
        } else {
            self.read_key(&key)
        };
        Ok(Lookup {
            key,
            found,
            warnings,
        })
    }

    /// The cached vmfb of `key`, if a valid entry exists, with warnings about
    /// an entry that was there but unusable (it is removed).
    pub fn read_key(&self, key: &str) -> (Option<Vec<u8>>, Vec<String>) {
        match read_entry(&self.entry_path(key), key) {
            Ok(found) => (found, Vec::new()),
            Err(warning) => (None, vec![warning]),
        }
    }

    /// Stores `vmfb`, compiled elsewhere (a child process) from `mlir` with
    /// `options` on `compiler`, under `key` (from [`ArtifactCache::lookup`]).
    /// Returns a warning when the cache could not be written.
    pub fn insert(
        &self,
        compiler: &IreeCompiler,
        key: &str,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
        vmfb: &[u8],
    ) -> Option<String> {
        let lib_sha = match library_sha256(compiler.library_path()) {
            Ok(sha) => sha,
            Err(e) => return Some(format!("artifact cache not written: {e}")),
        };
        let record = KeyRecord {
            schema: KEY_SCHEMA,
            key,
            source_name,
            compiler_revision: &compiler.revision(),
            compiler_library: compiler.library_path().display().to_string(),
            compiler_library_sha256: &lib_sha,
            target_backend: &options.target_backend,
            flags: &options.flags,
            effective_flags: options.effective_flags(),
            mlir_sha256: hex::encode(Sha256::digest(mlir)),
            mlir_bytes: mlir.len(),
            vmfb_sha256: hex::encode(Sha256::digest(vmfb)),
            vmfb_bytes: vmfb.len(),
        };
        self.store(key, vmfb, &record).err().map(|e| {
            format!("artifact cache not written, using the compiled module from memory: {e}")
        })
    }

    /// Writes the entry and its key record, sweeping stale temp files first.
    fn store(&self, key: &str, vmfb: &[u8], record: &KeyRecord<'_>) -> Result<(), IreeError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| cache_err(&self.dir, "create", e))?;
        // Best effort: a sweep that cannot list the directory changes nothing.
        let _ = parity_tensor::remove_stale_temp_files(&self.dir);
        write_atomic(&self.entry_path(key), &encode_entry(key, vmfb))?;
        let json_path = self.dir.join(format!("{key}.json"));
        let json = serde_json::to_vec_pretty(record).map_err(|e| IreeError::Cache {
            path: json_path.clone(),
            message: format!("serialising key record: {e}"),
        })?;
        write_atomic(&json_path, &json)
    }
}

/// sha256 over length-prefixed key components, so no two component lists collide.
fn compute_key(revision: &str, lib_sha: &str, mlir: &[u8], options: &CompileOptions) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(KEY_SCHEMA.as_bytes());
    field(revision.as_bytes());
    field(lib_sha.as_bytes());
    field(options.target_backend.as_bytes());
    field(&(options.flags.len() as u64).to_le_bytes());
    for flag in &options.flags {
        field(flag.as_bytes());
    }
    // A substituted executable is part of the artifact: key on its bytes,
    // so an edited replacement file is a miss, not the old module.
    for sub in options.substitutions().unwrap_or_default() {
        field(sub.executable.as_bytes());
        field(&std::fs::read(&sub.file).unwrap_or_default());
    }
    // `--iree-llvmcpu-target-cpu=host` (and friends) tie the artifact to this
    // CPU: key it on the CPU too, so a cache shared between machines never
    // hands one host's code to another.
    if options.flags.iter().any(|f| f.ends_with("=host")) {
        field(host_cpu_identity().as_bytes());
    }
    field(mlir);
    hex::encode(h.finalize())
}

/// The CPU model and feature flags of this machine, from /proc/cpuinfo
/// (empty where that file does not exist).
fn host_cpu_identity() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .filter(|l| {
            let key = l.split(':').next().unwrap_or("").trim();
            matches!(
                key,
                "vendor_id" | "model name" | "flags" | "Features" | "CPU part"
            )
        })
        .take(5)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The entry file: magic, key, payload length, payload sha256, payload.
fn encode_entry(key: &str, vmfb: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + vmfb.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(vmfb.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(vmfb));
    out.extend_from_slice(vmfb);
    out
}

/// The payload of a complete, intact entry for `key`, or what is wrong with it.
fn decode_entry<'a>(bytes: &'a [u8], key: &str) -> Result<&'a [u8], &'static str> {
    let (header, payload) = bytes
        .split_at_checked(HEADER_LEN)
        .ok_or("shorter than an entry header")?;
    let (magic, rest) = header.split_at(8);
    let (stored_key, rest) = rest.split_at(KEY_LEN);
    let (len, sha) = rest.split_at(8);
    if magic != MAGIC {
        return Err("not a parity cache entry of this version");
    }
    if stored_key != key.as_bytes() {
        return Err("the entry was written for another key (copied or renamed)");
    }
    let len = len
        .try_into()
        .map(u64::from_le_bytes)
        .map_err(|_| "bad header")?;
    if u64::try_from(payload.len()).ok() != Some(len) {
        return Err("truncated or extended (payload length differs from the header)");
    }
    if Sha256::digest(payload).as_slice() != sha {
        return Err("corrupt (payload sha256 differs from the header)");
    }
    Ok(payload)
}

/// Reads the entry for `key`: Ok(None) when absent, Err(warning) when present
/// but unusable. An unusable entry is removed (a FIFO or damaged file alike) so
/// the fresh one can take its place; if that fails the write reports it.
fn read_entry(path: &Path, key: &str) -> Result<Option<Vec<u8>>, String> {
    let bytes = match parity_tensor::read_regular(path) {
        Ok(b) => b,
        // No directory (or a file where it should be) means no entry; the write will say why.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None)
        }
        Err(e) => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
                let _ = std::fs::remove_file(path);
            }
            return Err(format!(
                "artifact cache entry {} unreadable ({e}); recompiling",
                path.display()
            ));
        }
    };
    match decode_entry(&bytes, key) {
        Ok(payload) => Ok(Some(payload.to_vec())),
        Err(problem) => {
            // Another process may already have replaced it; either way we recompile.
            let _ = std::fs::remove_file(path);
            Err(format!(
                "artifact cache entry {} ignored: {problem}; recompiling",
                path.display()
            ))
        }
    }
}

/// Writes through a unique temp file in the same directory, then renames, so readers
/// see either the old entry or the complete new one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IreeError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    // The pid goes first, in the naming parity-tensor's writer uses, so the
    // same sweep removes what a killed run left behind.
    let tmp = dir.join(format!(
        "{}{}-{}-{}",
        parity_tensor::TEMP_PREFIX,
        std::process::id(),
        name.unwrap_or_default(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(cache_err(&tmp, "write", e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        cache_err(path, "rename into place", e)
    })
}

pub(crate) fn cache_err(path: &Path, what: &str, e: std::io::Error) -> IreeError {
    IreeError::Cache {
        path: path.to_path_buf(),
        message: format!("{what} failed: {e}"),
    }
}

/// (mtime, size) -> sha256 of a compiler library, memoised per path for the process.
type LibraryHashes = HashMap<PathBuf, (Option<SystemTime>, u64, String)>;
static LIBRARY_HASHES: Mutex<Option<LibraryHashes>> = Mutex::new(None);

/// The sha256 of the compiler library, computed once per process for each
/// (path, mtime, size); hashing ~100 MB on every compile would dominate cache hits.
pub fn library_sha256(path: &Path) -> Result<String, IreeError> {
    let meta = std::fs::metadata(path).map_err(|e| cache_err(path, "stat compiler library", e))?;
    let (mtime, size) = (meta.modified().ok(), meta.len());
    {
        let guard = LIBRARY_HASHES.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((m, s, sha)) = guard.as_ref().and_then(|map| map.get(path)) {
            if *m == mtime && *s == size {
                return Ok(sha.clone());
            }
        }
    }
    let mut file =
        std::fs::File::open(path).map_err(|e| cache_err(path, "open compiler library", e))?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h).map_err(|e| cache_err(path, "hash compiler library", e))?;
    let sha = hex::encode(h.finalize());
    let mut guard = LIBRARY_HASHES.lock().unwrap_or_else(|p| p.into_inner());
    guard
        .get_or_insert_with(HashMap::new)
        .insert(path.to_path_buf(), (mtime, size, sha.clone()));
    Ok(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(flags: &[&str]) -> CompileOptions {
        CompileOptions::new("llvm-cpu", flags.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn host_cpu_flag_keys_on_the_cpu() {
        let with_host = opts(&["--iree-llvmcpu-target-cpu=host"]);
        let k1 = compute_key("r", "l", b"m", &with_host);
        assert_eq!(k1, compute_key("r", "l", b"m", &with_host));
        assert!(
            !host_cpu_identity().is_empty(),
            "Linux exposes /proc/cpuinfo"
        );
        assert_ne!(
            k1,
            compute_key(
                "r",
                "l",
                b"m",
                &opts(&["--iree-llvmcpu-target-cpu=generic"])
            )
        );
    }

    #[test]
    fn key_changes_with_every_component() {
        let base = compute_key("3.13.0", "ab", b"mlir", &opts(&["--a", "--b"]));
        assert_eq!(base.len(), 64);
        assert_eq!(
            base,
            compute_key("3.13.0", "ab", b"mlir", &opts(&["--a", "--b"]))
        );
        assert_ne!(
            base,
            compute_key("3.13.1", "ab", b"mlir", &opts(&["--a", "--b"]))
        );
        assert_ne!(
            base,
            compute_key("3.13.0", "ac", b"mlir", &opts(&["--a", "--b"]))
        );
        assert_ne!(
            base,
            compute_key("3.13.0", "ab", b"mlis", &opts(&["--a", "--b"]))
        );
        assert_ne!(
            base,
            compute_key("3.13.0", "ab", b"mlir", &opts(&["--b", "--a"]))
        );
        assert_ne!(
            base,
            compute_key("3.13.0", "ab", b"mlir", &opts(&["--a--b"]))
        );
        let vmvx = CompileOptions::new("vmvx", vec!["--a".into(), "--b".into()]);
        assert_ne!(base, compute_key("3.13.0", "ab", b"mlir", &vmvx));
    }

    #[test]
    fn a_compile_that_dumps_files_is_never_a_hit() {
        assert!(opts(&["--iree-hal-dump-executable-sources-to=d"]).writes_files());
        assert!(opts(&["--dump-compilation-phases-to=d"]).writes_files());
        assert!(!opts(&["--iree-opt-level=O2"]).writes_files());
    }

    #[test]
    fn key_changes_with_a_substituted_executables_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub.mlir");
        std::fs::write(&file, "hal.executable public @x {}").unwrap();
        let flag = format!(
            "--iree-hal-substitute-executable-source=x={}",
            file.display()
        );
        let before = compute_key("r", "l", b"m", &opts(&[flag.as_str()]));
        assert_eq!(before, compute_key("r", "l", b"m", &opts(&[flag.as_str()])));
        std::fs::write(&file, "hal.executable public @x { }").unwrap();
        assert_ne!(before, compute_key("r", "l", b"m", &opts(&[flag.as_str()])));
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const OTHER: &str = "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn entry_round_trips_and_rejects_damage() {
        let payload = b"vmfb bytes".to_vec();
        let entry = encode_entry(KEY, &payload);
        assert_eq!(decode_entry(&entry, KEY), Ok(&payload[..]));
        assert!(decode_entry(&entry[..entry.len() - 1], KEY).is_err());
        assert!(decode_entry(&entry[..10], KEY).is_err());
        assert!(decode_entry(&[], KEY).is_err());
        let mut flipped = entry.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(decode_entry(&flipped, KEY).unwrap_err().contains("sha256"));
        let mut extended = entry;
        extended.push(0);
        assert!(decode_entry(&extended, KEY).is_err());
    }

    #[test]
    fn an_entry_is_bound_to_its_key() {
        let entry = encode_entry(KEY, b"vmfb bytes");
        let err = decode_entry(&entry, OTHER).unwrap_err();
        assert!(err.contains("another key"), "{err}");
        // A version-1 entry (no key in the header) is never trusted.
        let mut v1 = b"PARVMFB1".to_vec();
        v1.extend_from_slice(&entry[8..]);
        assert!(decode_entry(&v1, KEY).is_err());
    }

    #[test]
    fn a_copied_entry_is_a_warned_miss_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join(format!("{KEY}.vmfb"));
        let copy = dir.path().join(format!("{OTHER}.vmfb"));
        write_atomic(&good, &encode_entry(KEY, b"ok")).unwrap();
        std::fs::copy(&good, &copy).unwrap();
        assert_eq!(read_entry(&good, KEY), Ok(Some(b"ok".to_vec())));
        let warning = read_entry(&copy, OTHER).unwrap_err();
        assert!(
            warning.contains(OTHER) && warning.contains("another key"),
            "{warning}"
        );
        assert!(!copy.exists());
    }

    #[test]
    fn corrupt_entry_is_removed_and_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.vmfb");
        std::fs::write(&path, b"PARVMFB2garbage").unwrap();
        assert!(read_entry(&path, KEY).is_err());
        assert!(!path.exists());
        assert_eq!(read_entry(&path, KEY), Ok(None));
        write_atomic(&path, &encode_entry(KEY, b"ok")).unwrap();
        assert_eq!(read_entry(&path, KEY), Ok(Some(b"ok".to_vec())));
    }

    #[test]
    fn a_fifo_entry_is_refused_without_blocking_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{KEY}.vmfb"));
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let warning = read_entry(&path, KEY).unwrap_err();
        assert!(warning.contains("FIFO"), "{warning}");
        assert!(
            !path.exists(),
            "the FIFO is removed so the entry can be rewritten"
        );
        write_atomic(&path, &encode_entry(KEY, b"ok")).unwrap();
        assert_eq!(read_entry(&path, KEY), Ok(Some(b"ok".to_vec())));
    }
}
