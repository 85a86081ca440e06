//! The compile preflight: a target's compile flags are tried on a tiny
//! module before any stage compiles, so a flag the compiler rejects for that
//! target (an unknown option, a CUDA SM it has no target for) is one input
//! error naming the target, its spec position and what to do, not one
//! compile error per stage. A success is remembered in the artifact cache
//! (keyed by the compiler revision, backend and flags), so it costs one tiny
//! compile per flag set, once.

use super::{Target, TargetError};
use parity_iree::IreeCompiler;
use std::path::Path;

/// The probe: one StableHLO op, enough for every backend to build an executable.
const PROBE: &str = "func.func @parity_probe(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = stablehlo.add %x, %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n";

/// The CUDA targets IREE 3.13's compiler accepts, as measured (docs/gpu.md).
const CUDA_ACCEPTED: &str = "sm_80, sm_89, sm_120 and sm_121";

impl Target {
    /// Compiles a one-op probe with this target's flags (the subject's, then
    /// the target's); a rejection is [`TargetError::Flags`]. `cache_dir`
    /// remembers a success.
    pub fn preflight_compile(
        &self,
        compiler: &IreeCompiler,
        cache_dir: &Path,
    ) -> Result<(), TargetError> {
        let options = self.compile_options(&[]);
        let marker = cache_dir.join("preflight").join(marker_name(
            &compiler.revision(),
            &options.target_backend,
            &options.effective_flags(),
        ));
        if marker.is_file() {
            return Ok(());
        }
        match compiler.compile("parity-preflight.mlir", PROBE.as_bytes(), &options) {
            Ok(_) => {
                // A marker that cannot be written only costs the next run a probe.
                let _ = marker
                    .parent()
                    .map(std::fs::create_dir_all)
                    .and_then(Result::ok)
                    .map(|()| std::fs::write(&marker, b"ok\n"));
                Ok(())
            }
            Err(e) => Err(TargetError::Flags {
                at: self.at(),
                target: self.spec.name.clone(),
                backend: self.spec.backend.clone(),
                message: explain(&self.spec.flags, &e.to_string()),
            }),
        }
    }

    /// `spec:line:col` of the target's declaration.
    pub(super) fn at(&self) -> String {
        format!(
            "{}:{}:{}",
            self.spec_path.display(),
            self.spec.location.line,
            self.spec.location.col
        )
    }
}

/// The marker file's name: hex sha256 of what decides the probe's outcome.
fn marker_name(revision: &str, backend: &str, flags: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in std::iter::once(revision)
        .chain(std::iter::once(backend))
        .chain(flags.iter().map(String::as_str))
    {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What the compiler said, shortened, and what to do.
fn explain(target_flags: &[String], diagnostics: &str) -> String {
    let said: Vec<&str> = diagnostics
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    let said = said.join(" ");
    let cuda = target_flags
        .iter()
        .find_map(|f| f.strip_prefix("--iree-cuda-target="));
    if let (Some(sm), true) = (cuda, diagnostics.contains("missing GPU target")) {
        return format!(
            "the compiler has no CUDA target `{sm}` (--iree-cuda-target={sm}); IREE 3.13 accepts {CUDA_ACCEPTED}. \
             For a GB10 (compute capability 12.1) use sm_121; for Hopper (sm_90) use sm_89, whose PTX the \
             driver JIT-compiles at load. (The compiler said: {said})"
        );
    }
    format!(
        "the compiler rejects this target's flags: {said}; fix the target's `flags:` \
         (only session options can be given per target; `iree-compile --help` lists them)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_cuda_target_names_the_sm_and_the_alternatives() {
        let m = explain(
            &["--iree-cuda-target=sm_90a".to_string()],
            "error: missing GPU target in #hal.executable.target",
        );
        assert!(m.contains("no CUDA target `sm_90a`"), "{m}");
        assert!(m.contains("use sm_121") && m.contains("use sm_89"), "{m}");
    }

    #[test]
    fn other_rejections_quote_the_compiler() {
        let m = explain(&[], "Error parsing flags:\n  option not found: iree-foo\n");
        assert!(m.contains("option not found: iree-foo"), "{m}");
        assert!(m.contains("fix the target's `flags:`"), "{m}");
    }

    #[test]
    fn markers_differ_by_revision_backend_and_flags() {
        let a = marker_name("r1", "llvm-cpu", &["--x".into()]);
        assert_ne!(a, marker_name("r2", "llvm-cpu", &["--x".into()]));
        assert_ne!(a, marker_name("r1", "cuda", &["--x".into()]));
        assert_ne!(a, marker_name("r1", "llvm-cpu", &["--y".into()]));
        // No ambiguity from joining: ["ab"] is not ["a", "b"].
        assert_ne!(
            marker_name("r", "b", &["ab".into()]),
            marker_name("r", "b", &["a".into(), "b".into()])
        );
    }
}
