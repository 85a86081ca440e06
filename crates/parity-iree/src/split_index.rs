//! The split index: for a whole module (its bytes, flags and compiler), the
//! cache key of each of its per-function artifacts, so a run whose module has
//! not changed finds every artifact without normalising and splitting the
//! module again.
//!
//! Stored beside the entries as `<index key>.index.json`; like the entries it
//! is an optimisation: one that is missing, unreadable or malformed is a miss
//! (the module is split again and the index rewritten).

use crate::cache::{cache_err, write_atomic, ArtifactCache};
use crate::compiler::{CompileOptions, IreeCompiler};
use crate::error::IreeError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the index layout; bump to invalidate old indexes.
const INDEX_SCHEMA: &str = "parity.split-index/1";

/// Function name -> cache key of its artifact.
pub type SplitIndex = BTreeMap<String, String>;

#[derive(Serialize, Deserialize)]
struct IndexFile {
    schema: String,
    key: String,
    source_name: String,
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
        let path = self.dir().join(format!("{key}.index.json"));
        let bytes = parity_tensor::read_regular(&path).ok()?;
        let file: IndexFile = serde_json::from_slice(&bytes).ok()?;
        (file.schema == INDEX_SCHEMA && file.key == key).then_some(file.functions)
    }

    /// Writes the split index under `key`.
    pub fn write_index(
        &self,
        key: &str,
        source_name: &str,
        functions: &SplitIndex,
    ) -> Result<(), IreeError> {
        let dir = self.dir();
        std::fs::create_dir_all(dir).map_err(|e| cache_err(dir, "create", e))?;
        let path = dir.join(format!("{key}.index.json"));
        let file = IndexFile {
            schema: INDEX_SCHEMA.to_string(),
            key: key.to_string(),
            source_name: source_name.to_string(),
            functions: functions.clone(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(|e| IreeError::Cache {
            path: path.clone(),
            message: format!("serialising the split index: {e}"),
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
        let index = SplitIndex::from([("f".to_string(), "k1".to_string())]);
        assert!(cache.read_index("abc").is_none());
        cache.write_index("abc", "m.mlir", &index).unwrap();
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
}
