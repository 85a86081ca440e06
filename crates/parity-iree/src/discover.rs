//! Finding `libIREECompiler.so` when nothing names it: in the virtualenv of the
//! Python the build was set up with (`EERIE_PYTHON` at build time, recorded by
//! build.rs), then in the checkout's own `.venv`. Only a venv holding
//! iree-base-compiler of the pinned version counts.
//!
//! The overrides come first (see [`crate::IreeCompiler::load`]): an explicit
//! path, `$PARITY_IREE_COMPILER_LIB`, `$EERIE_PYTHON`; after these built-in
//! places, eerie's discovery through `python`/`python3` on `PATH`.

use std::path::{Path, PathBuf};

/// The iree-base-compiler version parity is built against.
pub const COMPILER_VERSION: &str = "3.13.0";

/// The Python `EERIE_PYTHON` named when this crate was built, if any.
const BUILD_PYTHON: Option<&str> = option_env!("PARITY_BUILD_EERIE_PYTHON");

/// File names of the compiler library by platform.
const LIBRARY_NAMES: [&str; 3] = [
    "libIREECompiler.so",
    "libIREECompiler.dylib",
    "IREECompiler.dll",
];

/// The compiler library of the first built-in place that has one, with a
/// description of where it came from (for messages).
pub fn built_in_library() -> Option<(PathBuf, String)> {
    let mut venvs = Vec::new();
    if let Some(python) = BUILD_PYTHON {
        // <venv>/bin/python: the venv is two levels up (not canonicalised: the
        // interpreter is usually a symlink out of the venv).
        if let Some(venv) = Path::new(python).parent().and_then(Path::parent) {
            venvs.push((
                venv.to_path_buf(),
                format!("the build's EERIE_PYTHON={python}"),
            ));
        }
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv");
    venvs.push((
        checkout.clone(),
        format!("the checkout's {}", checkout.display()),
    ));
    venvs
        .into_iter()
        .find_map(|(venv, origin)| venv_library(&venv).map(|lib| (lib, origin)))
}

/// `libIREECompiler` inside `venv` (`lib/python*/site-packages/iree/compiler/_mlir_libs/`),
/// when that site-packages holds iree-base-compiler [`COMPILER_VERSION`].
pub fn venv_library(venv: &Path) -> Option<PathBuf> {
    let mut libs: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .collect();
    libs.sort();
    libs.into_iter().find_map(|site| {
        let dist = site.join(format!("iree_base_compiler-{COMPILER_VERSION}.dist-info"));
        if !dist.is_dir() {
            return None;
        }
        let dir = site.join("iree/compiler/_mlir_libs");
        LIBRARY_NAMES
            .iter()
            .map(|name| dir.join(name))
            .find(|lib| lib.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_venv(version: &str, with_lib: bool) -> tempfile::TempDir {
        let venv = tempfile::tempdir().unwrap();
        let site = venv.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(site.join(format!("iree_base_compiler-{version}.dist-info")))
            .unwrap();
        let libs = site.join("iree/compiler/_mlir_libs");
        std::fs::create_dir_all(&libs).unwrap();
        if with_lib {
            std::fs::write(libs.join("libIREECompiler.so"), b"").unwrap();
        }
        venv
    }

    #[test]
    fn a_venv_counts_only_with_the_pinned_version_and_the_library() {
        let good = fake_venv(COMPILER_VERSION, true);
        let lib = venv_library(good.path()).unwrap();
        assert!(lib.ends_with("site-packages/iree/compiler/_mlir_libs/libIREECompiler.so"));
        assert_eq!(venv_library(fake_venv("3.12.0", true).path()), None);
        assert_eq!(
            venv_library(fake_venv(COMPILER_VERSION, false).path()),
            None
        );
        assert_eq!(venv_library(Path::new("/nonexistent/venv")), None);
    }
}
