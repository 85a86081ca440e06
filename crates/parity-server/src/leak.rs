//! The leaking variants (`--leak`), for parity's negative controls: the
//! server serves one of the production leak modules exported beside the
//! honest serving module (tools/fixtures/production/serve_export.py), so
//! slot state leaks exactly as it does in `parity serve`'s leak scenarios.

use std::path::{Path, PathBuf};

/// Which slot state leaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Leak {
    /// `gemma3n_serving_leak_kv_f32`: slot reuse does not reset the slot's
    /// KV region, and decode positions a slot by its stale stored length.
    Kv,
    /// `gemma3n_serving_leak_ple_f32`: decode feeds slot s the dense PLE of
    /// slot (s+1) mod S while that slot is active (needs two busy slots).
    Ple,
    /// `gemma3n_serving_leak_mask_f32`: decode masks slot s's attention with
    /// the effective length of slot (s+1) mod S while that slot is active.
    Mask,
}

impl Leak {
    /// The leak module next to the honest `module`
    /// (`gemma3n_serving_f32.mlir.gz` -> `gemma3n_serving_leak_kv_f32.mlir.gz`).
    pub fn module(self, module: &Path) -> PathBuf {
        let name = module
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tag = match self {
            Leak::Kv => "kv",
            Leak::Ple => "ple",
            Leak::Mask => "mask",
        };
        let leaky = match name.split_once("_serving_") {
            Some((head, tail)) => format!("{head}_serving_leak_{tag}_{tail}"),
            None => format!("leak_{tag}_{name}"),
        };
        module.with_file_name(leaky)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leak_modules_sit_beside_the_honest_one() {
        let m = Path::new("subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz");
        assert_eq!(
            Leak::Kv.module(m),
            Path::new("subject/gemma3n/serving/gemma3n_serving_leak_kv_f32.mlir.gz")
        );
        assert_eq!(
            Leak::Mask.module(m),
            Path::new("subject/gemma3n/serving/gemma3n_serving_leak_mask_f32.mlir.gz")
        );
    }
}
