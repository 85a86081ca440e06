//! A content-addressed cache of compiled vmfb artifacts.
//!
//! The key is a sha256 over everything that can change the compiler's output: the
//! compiler revision, the compiler library's own sha256 (a rebuilt library with the
//! same revision string still changes the key), the target backend, every flag in
//! order, and the MLIR bytes. Each entry is `<key>.vmfb` with a header carrying the
//! payload length and sha256, so a truncated or corrupted entry is detected and
//! recompiled, never trusted; `<key>.json` records the key's components for humans.

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
const KEY_SCHEMA: &str = "parity.vmfb-cache/1";
/// First bytes of every entry file.
const MAGIC: &[u8; 8] = b"PARVMFB1";
/// Magic, payload length (u64 LE), payload sha256.
const HEADER_LEN: usize = 8 + 8 + 32;

/// Whether an artifact came from the cache or was just compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// A valid entry was found; the compiler did not run.
    Hit,
    /// No valid entry (absent or corrupt); the compiler ran and the entry was written.
    Miss,
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
    pub fn get_or_compile(
        &self,
        compiler: &IreeCompiler,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<(Vec<u8>, CacheOutcome), IreeError> {
        let revision = compiler.revision();
        let lib_sha = library_sha256(compiler.library_path())?;
        let key = compute_key(&revision, &lib_sha, mlir, options);
        let path = self.entry_path(&key);
        if let Some(vmfb) = read_entry(&path)? {
            return Ok((vmfb, CacheOutcome::Hit));
        }
        let vmfb = compiler.compile(source_name, mlir, options)?;
        std::fs::create_dir_all(&self.dir).map_err(|e| cache_err(&self.dir, "create", e))?;
        write_atomic(&path, &encode_entry(&vmfb))?;
        let record = KeyRecord {
            schema: KEY_SCHEMA,
            key: &key,
            source_name,
            compiler_revision: &revision,
            compiler_library: compiler.library_path().display().to_string(),
            compiler_library_sha256: &lib_sha,
            target_backend: &options.target_backend,
            flags: &options.flags,
            effective_flags: options.effective_flags(),
            mlir_sha256: hex::encode(Sha256::digest(mlir)),
            mlir_bytes: mlir.len(),
            vmfb_sha256: hex::encode(Sha256::digest(&vmfb)),
            vmfb_bytes: vmfb.len(),
        };
        let json = serde_json::to_vec_pretty(&record).map_err(|e| IreeError::Cache {
            path: path.clone(),
            message: format!("serialising key record: {e}"),
        })?;
        write_atomic(&self.dir.join(format!("{key}.json")), &json)?;
        Ok((vmfb, CacheOutcome::Miss))
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

fn encode_entry(vmfb: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + vmfb.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(vmfb.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(vmfb));
    out.extend_from_slice(vmfb);
    out
}

/// The payload of a valid entry; None when the bytes are not a complete, intact entry.
fn decode_entry(bytes: &[u8]) -> Option<&[u8]> {
    let (header, payload) = bytes.split_at_checked(HEADER_LEN)?;
    let (magic, rest) = header.split_at(8);
    let (len, sha) = rest.split_at(8);
    let len = u64::from_le_bytes(len.try_into().ok()?);
    let ok = magic == MAGIC
        && u64::try_from(payload.len()).ok()? == len
        && Sha256::digest(payload).as_slice() == sha;
    ok.then_some(payload)
}

/// Reads an entry. Absent or corrupt entries are a miss; a corrupt file is removed
/// so it cannot be mistaken for valid later.
fn read_entry(path: &Path) -> Result<Option<Vec<u8>>, IreeError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cache_err(path, "read", e)),
    };
    match decode_entry(&bytes) {
        Some(payload) => Ok(Some(payload.to_vec())),
        None => {
            // Another process may already have replaced it; either way we recompile.
            let _ = std::fs::remove_file(path);
            Ok(None)
        }
    }
}

/// Writes through a unique temp file in the same directory, then renames, so readers
/// see either the old entry or the complete new one.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IreeError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".tmp-{}-{}-{}",
        name.unwrap_or_default(),
        std::process::id(),
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

fn cache_err(path: &Path, what: &str, e: std::io::Error) -> IreeError {
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
    fn entry_round_trips_and_rejects_damage() {
        let payload = b"vmfb bytes".to_vec();
        let entry = encode_entry(&payload);
        assert_eq!(decode_entry(&entry), Some(&payload[..]));
        assert_eq!(decode_entry(&entry[..entry.len() - 1]), None);
        assert_eq!(decode_entry(&entry[..10]), None);
        assert_eq!(decode_entry(&[]), None);
        let mut flipped = entry.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(decode_entry(&flipped), None);
        let mut extended = entry;
        extended.push(0);
        assert_eq!(decode_entry(&extended), None);
    }

    #[test]
    fn corrupt_entry_is_removed_and_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.vmfb");
        std::fs::write(&path, b"PARVMFB1garbage").unwrap();
        assert_eq!(read_entry(&path).unwrap(), None);
        assert!(!path.exists());
        write_atomic(&path, &encode_entry(b"ok")).unwrap();
        assert_eq!(read_entry(&path).unwrap(), Some(b"ok".to_vec()));
    }
}
