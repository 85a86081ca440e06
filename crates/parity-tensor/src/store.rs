//! The oracle store: a directory of dump files indexed by `manifest.json`
//! (schema `parity.oracle-manifest/1`, see docs/design.md).
//!
//! Opening reads only the manifest; each dump file is opened (mapped) the
//! first time one of its tensors is asked for, then kept for the store's life.

use crate::dtype::DType;
use crate::error::TensorError;
use crate::json_unique::UniqueMap;
use crate::load::{open_tensor_file, TensorFile};
use crate::tensor::Tensor;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The manifest schema identifier this reader understands.
pub const MANIFEST_SCHEMA: &str = "parity.oracle-manifest/1";

/// The manifest file name inside a store directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// What the manifest says about one tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// Dump file, relative to the store directory.
    pub file: PathBuf,
    /// Array name inside an `.npz` / `.safetensors` (None for `.npy`).
    pub key: Option<String>,
    /// Declared element type.
    pub dtype: DType,
    /// Declared shape.
    pub shape: Vec<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    schema: String,
    #[serde(default)]
    provenance: serde_json::Value,
    tensors: UniqueMap<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    file: PathBuf,
    #[serde(default)]
    key: Option<String>,
    dtype: String,
    shape: Vec<usize>,
}

/// An opened oracle store. Safe to share across threads.
#[derive(Debug)]
pub struct OracleStore {
    dir: PathBuf,
    manifest: PathBuf,
    provenance: serde_json::Value,
    names: Vec<String>,
    entries: HashMap<String, ManifestEntry>,
    /// Opened dump files by manifest `file` value; the lock makes "once per store" hold under threads.
    files: Mutex<HashMap<PathBuf, TensorFile>>,
}

impl OracleStore {
    /// Reads and validates `dir/manifest.json`; dump files are opened lazily.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, TensorError> {
        let dir = dir.as_ref().to_path_buf();
        let manifest = dir.join(MANIFEST_FILE);
        let text = crate::fsio::read_regular(&manifest)
            .map_err(|e| TensorError::io(&manifest, "cannot read oracle manifest", e))?;
        let bad = |reason: String| TensorError::Manifest {
            manifest: manifest.clone(),
            reason,
        };
        let raw: RawManifest =
            serde_json::from_slice(&text).map_err(|e| bad(format!("invalid manifest: {e}")))?;
        if raw.schema != MANIFEST_SCHEMA {
            return Err(bad(format!(
                "schema is `{}`, expected `{MANIFEST_SCHEMA}`",
                raw.schema
            )));
        }
        let mut names = Vec::with_capacity(raw.tensors.0.len());
        let mut entries = HashMap::with_capacity(raw.tensors.0.len());
        for (name, e) in raw.tensors.0 {
            let dtype = e
                .dtype
                .parse::<DType>()
                .map_err(|err| bad(format!("tensor `{name}`: {err}")))?;
            if e.file.as_os_str().is_empty() {
                return Err(bad(format!("tensor `{name}`: empty `file`")));
            }
            names.push(name.clone());
            entries.insert(
                name,
                ManifestEntry {
                    file: e.file,
                    key: e.key,
                    dtype,
                    shape: e.shape,
                },
            );
        }
        let provenance = match raw.provenance {
            serde_json::Value::Null => serde_json::Value::Object(Default::default()),
            p => p,
        };
        Ok(OracleStore {
            dir,
            manifest,
            provenance,
            names,
            entries,
            files: Mutex::new(HashMap::new()),
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest path.
    pub fn manifest_path(&self) -> &Path {
        &self.manifest
    }

    /// Tensor names in manifest order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when the manifest lists `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The manifest's `provenance` object (an empty object when absent).
    pub fn provenance(&self) -> &serde_json::Value {
        &self.provenance
    }

    /// The store's cases: the first `/` component of every name that has one.
    pub fn cases(&self) -> Vec<&str> {
        let mut cases: Vec<&str> = self
            .names
            .iter()
            .filter_map(|n| n.split_once('/').map(|(case, _)| case))
            .collect();
        cases.sort_unstable();
        cases.dedup();
        cases
    }

    /// Why `name` (not in the store) may be missing: its case is none of the
    /// store's. Empty when the case exists or the name has none.
    fn case_hint(&self, name: &str) -> String {
        let Some((case, _)) = name.split_once('/') else {
            return String::new();
        };
        let cases = self.cases();
        if cases.is_empty() || cases.contains(&case) {
            return String::new();
        }
        const SHOWN: usize = 12;
        let mut listed = cases[..cases.len().min(SHOWN)].join(", ");
        if cases.len() > SHOWN {
            listed.push_str(&format!(", ... ({} in all)", cases.len()));
        }
        let default = if case == "default" {
            " (`default` is the one case of a spec without `cases:`: list the store's cases under `cases:`)"
        } else {
            ""
        };
        format!("; the store has no case `{case}`{default}; its cases: {listed}")
    }

    /// The manifest entry for `name`, without touching its file.
    pub fn entry(&self, name: &str) -> Option<&ManifestEntry> {
        self.entries.get(name)
    }

    /// Loads `name`, checking the file's dtype and shape against the manifest.
    pub fn get(&self, name: &str) -> Result<Tensor, TensorError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| TensorError::UnknownTensor {
                manifest: self.manifest.clone(),
                tensor: name.to_string(),
                hint: self.case_hint(name),
            })?;
        let path = self.dir.join(&entry.file);
        let entry_err = |reason: String| TensorError::ManifestEntry {
            manifest: self.manifest.clone(),
            tensor: name.to_string(),
            file: path.clone(),
            reason,
        };
        let file = self
            .file(entry, &path)
            .map_err(|e| entry_err(e.to_string()))?;
        let tensor = file
            .get(entry.key.as_deref(), &path)
            .map_err(|e| entry_err(e.to_string()))?;
        if tensor.dtype() != entry.dtype || tensor.shape() != entry.shape.as_slice() {
            return Err(entry_err(format!(
                "manifest says {} {:?}, file has {} {:?}",
                entry.dtype,
                entry.shape,
                tensor.dtype(),
                tensor.shape()
            )));
        }
        Ok(tensor)
    }

    /// Loads every listed tensor once and returns all failures (empty when the store is sound).
    pub fn verify(&self) -> Vec<TensorError> {
        self.names
            .iter()
            .filter_map(|n| self.get(n).err())
            .collect()
    }

    /// The opened dump file for `entry`, opening it on first use.
    fn file(&self, entry: &ManifestEntry, path: &Path) -> Result<TensorFile, TensorError> {
        // A poisoned lock only means another thread panicked mid-open; the map is still valid.
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = files.get(&entry.file) {
            return Ok(f.clone());
        }
        let opened = open_tensor_file(path)?;
        files.insert(entry.file.clone(), opened.clone());
        Ok(opened)
    }

    /// How many distinct dump files have been opened so far.
    pub fn open_file_count(&self) -> usize {
        self.files
            .lock()
            .map(|f| f.len())
            .unwrap_or_else(|p| p.into_inner().len())
    }
}
