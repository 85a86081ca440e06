//! Compiles the parts of IREE's runtime that eerie-sys's CMake build leaves
//! out (the parameter index, its file-format parsers, the io-parameters VM
//! module and what they need) from the IREE sources shipped inside the
//! eerie-sys crate, against its headers, with the defines its CMake build
//! uses. The objects resolve everything else against eerie-sys's
//! `libeerie_runtime.a`, which rustc links after this archive (this crate
//! depends on eerie-sys). About 1.5 s of C on one core.

use std::path::{Path, PathBuf};

/// The eerie-sys version whose sources are compiled (Cargo.toml pins it).
const EERIE_SYS: &str = "eerie-sys-0.5.0";

/// IREE runtime sources, relative to `iree/runtime/src/iree` of eerie-sys.
const SOURCES: &[&str] = &[
    "io/parameter_index.c",
    "io/parameter_index_provider.c",
    "io/parameter_provider.c",
    "io/scope_map.c",
    "io/formats/parser_registry.c",
    "io/formats/irpa/irpa_parser.c",
    "io/formats/safetensors/safetensors_parser.c",
    "io/formats/gguf/gguf_parser.c",
    "modules/io/parameters/module.c",
    "hal/utils/file_cache.c",
    // The safetensors parser reads its JSON header with these.
    "base/internal/json.c",
    "base/internal/unicode.c",
    "base/internal/unicode_tables.c",
];

fn main() {
    println!("cargo:rerun-if-env-changed=PARITY_EERIE_SYS_DIR");
    println!("cargo:rerun-if-env-changed=CARGO_HOME");
    println!("cargo:rerun-if-changed=csrc/layout_check.c");
    let eerie_sys = match find_eerie_sys() {
        Ok(dir) => dir,
        Err(searched) => panic!(
            "parity-iree-io: cannot find the {EERIE_SYS} crate sources (searched {searched}); \
             set PARITY_EERIE_SYS_DIR to its directory (the one holding iree/runtime/src)"
        ),
    };
    let src = eerie_sys.join("iree/runtime/src");
    let mut build = cc::Build::new();
    build
        .include(&src)
        .std("gnu11")
        // The defines of eerie-sys's CMake build (its compile_commands.json), so
        // structs shared with libeerie_runtime.a have the same layout.
        .define("IREE_ALLOCATOR_SYSTEM_CTL", "iree_allocator_libc_ctl")
        .define("IREE_THREADING_ENABLE", "1")
        .define("NDEBUG", None)
        .flag_if_supported("-fvisibility=hidden")
        .warnings(false)
        .opt_level(2);
    for file in SOURCES {
        let path = src.join("iree").join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        build.file(path);
    }
    // Fails the build if the index entry's layout is not the one src/ffi.rs reads.
    build.file("csrc/layout_check.c");
    build.compile("parity_iree_io");
}

/// The eerie-sys crate directory: `PARITY_EERIE_SYS_DIR`, else Cargo's
/// registry sources (`$CARGO_HOME`, default `~/.cargo`), else a vendored
/// copy next to the workspace (`vendor/eerie-sys`). Err: where it looked.
fn find_eerie_sys() -> Result<PathBuf, String> {
    let has_sources = |dir: &Path| dir.join("iree/runtime/src/iree/io").is_dir();
    if let Some(dir) = std::env::var_os("PARITY_EERIE_SYS_DIR").map(PathBuf::from) {
        return if has_sources(&dir) {
            Ok(dir)
        } else {
            Err(format!("PARITY_EERIE_SYS_DIR={}", dir.display()))
        };
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let mut searched = Vec::new();
    if let Some(home) = cargo_home {
        let registry = home.join("registry/src");
        searched.push(format!("{}/*/{EERIE_SYS}", registry.display()));
        if let Ok(indexes) = std::fs::read_dir(&registry) {
            let mut found: Vec<PathBuf> = indexes
                .flatten()
                .map(|e| e.path().join(EERIE_SYS))
                .filter(|d| has_sources(d))
                .collect();
            found.sort();
            if let Some(dir) = found.into_iter().next() {
                return Ok(dir);
            }
        }
    }
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let vendored = manifest.join("../../vendor/eerie-sys");
    searched.push(vendored.display().to_string());
    if has_sources(&vendored) {
        return Ok(vendored);
    }
    Err(searched.join(", "))
}
