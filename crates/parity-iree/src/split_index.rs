//! Where each function's compiled code is.
//!
//! A public function's *function key* is the cache key of its own piece of
//! the module (its text with everything it references, the flags and the
//! compiler, as [`ArtifactCache::key`] computes it). Its code may be in an
//! artifact of its own or in a group artifact compiled from several
//! functions at once; a *function entry* (`<function key>.fn.json`) says which
//! artifact holds it and under which symbol. A change to one function changes
//! its key alone, so every other function still finds its entry.
//!
//! The *split index* (`<index key>.index.json`, keyed by the whole module's
//! bytes, flags and compiler) lists every function's entry, so a run whose
//! module has not changed finds its artifacts without normalising and
//! splitting the module again.
//!
//! Both are optimisations, like the entries: one that is missing, unreadable
//! or malformed is a miss (the function is compiled again and the files
//! rewritten).

use crate::cache::{cache_err, write_atomic, ArtifactCache};
use crate::compiler::{CompileOptions, IreeCompiler};
use crate::error::IreeError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the index layout; bump to invalidate old indexes.
const INDEX_SCHEMA: &str = "parity.split-index/3";

/// Version of the function entry layout.
const FUNCTION_SCHEMA: &str = "parity.function-artifact/1";

/// Where one function's code is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionEntry {
    /// The function key: the cache key of the function's own piece.
    pub key: String,
    /// The cache key of the artifact holding its code (`key` itself when it
    /// was compiled alone).
    pub artifact: String,
    /// The function's name in that artifact.
    pub symbol: String,
}

/// Function name -> where its code is.
pub type SplitIndex = BTreeMap<String, FunctionEntry>;

#[derive(Serialize, Deserialize)]
struct FunctionFile {
    schema: String,
    #[serde(flatten)]
    entry: FunctionEntry,
}

#[derive(Serialize, Deserialize)]
struct IndexFile {
    schema: String,
    key: String,
    source_name: String,
    /// Every public function of the module, compiled or not: a run that
    /// wants all of them uses the index only when it holds all of them.
    public: Vec<String>,
    functions: SplitIndex,
}

impl ArtifactCache {
    /// The key of the split index of the whole module `mlir` compiled with `options`.
    pub fn index_key(
        &self,
        compiler: &IreeCompiler,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<String, IreeError> {
        let whole = self.key(compiler, mlir, options)?;
        let mut h = Sha256::new();
        h.update(INDEX_SCHEMA.as_bytes());
        h.update([0]);
        h.update(whole.as_bytes());
        Ok(hex::encode(h.finalize()))
    }

    /// The split index stored under `key`, or None (absent or unusable).
    pub fn read_index(&self, key: &str) -> Option<SplitIndex> {
        self.read_index_with_public(key).map(|(index, _)| index)
    }

    /// The split index stored under `key` with the module's public
    /// functions (the index may hold entries for only some of them).
    pub fn read_index_with_public(&self, key: &str) -> Option<(SplitIndex, Vec<String>)> {
        let path = self.dir().join(format!("{key}.index.json"));
        let bytes = parity_tensor::read_regular(&path).ok()?;
        let file: IndexFile = serde_json::from_slice(&bytes).ok()?;
        (file.schema == INDEX_SCHEMA && file.key == key).then_some((file.functions, file.public))
    }

    /// Writes the split index under `key`.
    pub fn write_index(
        &self,
        key: &str,
        source_name: &str,
        public: &[String],
        functions: &SplitIndex,
    ) -> Result<(), IreeError> {
        let dir = self.dir();
        std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, "create", e))?;
        let path = dir.join(format!("{key}.index.json"));
        let file = IndexFile {
            schema: INDEX_SCHEMA.to_string(),
            key: key.to_string(),
            source_name: source_name.to_string(),
            public: public.to_vec(),
            functions: functions.clone(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(|e| IreeError::Cache {
            path: path.clone(),
            message: format!("serialising the split index: {e}"),
        })?;
        write_atomic(&path, &json)
    }

    /// The function entry of function key `key`, or None (absent or unusable).
    pub fn read_function(&self, key: &str) -> Option<FunctionEntry> {
        let path = self.dir().join(format!("{key}.fn.json"));
        let bytes = parity_tensor::read_regular(&path).ok()?;
        let file: FunctionFile = serde_json::from_slice(&bytes).ok()?;
        (file.schema == FUNCTION_SCHEMA && file.entry.key == key).then_some(file.entry)
    }

    /// Writes a function entry under its function key.
    pub fn write_function(&self, entry: &FunctionEntry) -> Result<(), IreeError> {
        let dir = self.dir();
        std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, "create", e))?;
        let path = dir.join(format!("{}.fn.json", entry.key));
        let file = FunctionFile {
            schema: FUNCTION_SCHEMA.to_string(),
            entry: entry.clone(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(|e| IreeError::Cache {
            path: path.clone(),
            message: format!("serialising the function entry: {e}"),
        })?;
        write_atomic(&path, &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_round_trips_and_is_bound_to_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::new(dir.path().join("c"));
        let index = SplitIndex::from([("f".to_string(), entry("k1", "g1"))]);
        assert!(cache.read_index("abc").is_none());
        cache
            .write_index("abc", "m.mlir", &["f".to_string()], &index)
            .unwrap();
        assert_eq!(cache.read_index("abc"), Some(index));
        std::fs::copy(
            dir.path().join("c/abc.index.json"),
            dir.path().join("c/abd.index.json"),
        )
        .unwrap();
        assert!(
            cache.read_index("abd").is_none(),
            "copied under another key"
        );
        std::fs::write(dir.path().join("c/abc.index.json"), b"{").unwrap();
        assert!(cache.read_index("abc").is_none(), "malformed");
    }

    fn entry(key: &str, artifact: &str) -> FunctionEntry {
        FunctionEntry {
            key: key.to_string(),
            artifact: artifact.to_string(),
            symbol: "f".to_string(),
        }
    }

    #[test]
    fn a_function_entry_round_trips_and_is_bound_to_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::new(dir.path().join("c"));
        assert!(cache.read_function("k1").is_none());
        cache.write_function(&entry("k1", "g1")).unwrap();
        assert_eq!(cache.read_function("k1"), Some(entry("k1", "g1")));
        std::fs::copy(
            dir.path().join("c/k1.fn.json"),
            dir.path().join("c/k2.fn.json"),
        )
        .unwrap();
        assert!(
            cache.read_function("k2").is_none(),
            "copied under another key"
        );
        std::fs::write(dir.path().join("c/k1.fn.json"), b"[]").unwrap();
        assert!(cache.read_function("k1").is_none(), "malformed");
    }
}
