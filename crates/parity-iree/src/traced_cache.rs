//! Traced artifacts in the on-disk artifact cache: a traced compile of the
//! bundled subject's 30 stages is most of `parity dispatches`' time, and
//! the same program traced again (another case, another run) is the same
//! artifact.

use crate::cache::{write_atomic, ArtifactCache, CacheOutcome};
use crate::compiler::{CompileOptions, IreeCompiler};
use crate::error::IreeError;
use crate::traced::{TracedArtifact, TRACE_PASS};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bumped when what a traced entry holds changes.
const TRACED_SCHEMA: &str = "parity-traced/1";

/// What a traced entry keeps beside its vmfb (`<key>.traced.json`).
#[derive(Serialize, Deserialize)]
struct TracedSide {
    schema: String,
    flow_ir: String,
    unmatched_substitutions: Vec<String>,
}

impl ArtifactCache {
    /// A traced compile ([`IreeCompiler::compile_traced`]) from the cache,
    /// or compiled and stored. Its key is the untraced compile's key with
    /// the trace pass added; the vmfb is an ordinary entry and the flow IR
    /// lies beside it. A cache that cannot be written costs only the reuse.
    pub fn get_or_compile_traced(
        &self,
        compiler: &IreeCompiler,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<(TracedArtifact, CacheOutcome), IreeError> {
        let base = self.key(compiler, mlir, options)?;
        let mut h = Sha256::new();
        for part in [TRACED_SCHEMA, TRACE_PASS, base.as_str()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let key = hex::encode(h.finalize());
        let side_path = self.dir().join(format!("{key}.traced.json"));
        if !options.writes_files() {
            if let (Some(vmfb), _) = self.read_key(&key) {
                let side = std::fs::read(&side_path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<TracedSide>(&b).ok())
                    .filter(|s| s.schema == TRACED_SCHEMA);
                if let Some(side) = side {
                    let artifact = TracedArtifact {
                        vmfb,
                        flow_ir: side.flow_ir,
                        unmatched_substitutions: side.unmatched_substitutions,
                    };
                    return Ok((artifact, CacheOutcome::Hit));
                }
            }
        }
        let artifact = compiler.compile_traced(source_name, mlir, options)?;
        let side = TracedSide {
            schema: TRACED_SCHEMA.to_string(),
            flow_ir: artifact.flow_ir.clone(),
            unmatched_substitutions: artifact.unmatched_substitutions.clone(),
        };
        // The side file first: an entry without it is a miss, never a
        // module without its flow IR.
        let written = std::fs::create_dir_all(self.dir())
            .ok()
            .and_then(|_| serde_json::to_vec(&side).ok())
            .is_some_and(|json| write_atomic(&side_path, &json).is_ok());
        if written {
            let _ = self.insert(compiler, &key, source_name, mlir, options, &artifact.vmfb);
        }
        Ok((artifact, CacheOutcome::Miss))
    }
}
