//! The in-process IREE compiler: finds `libIREECompiler.so`, holds the options a
//! compile takes and the lock every compile holds, and keeps the compiler's
//! diagnostics in the error instead of on stderr. Compiling to a vmfb
//! ([`IreeCompiler::compile`]) sits above the phased compiles it may hand off to.

use crate::error::IreeError;
use std::path::{Path, PathBuf};

/// Env var naming the compiler library (file or directory), checked before Python discovery.
pub const COMPILER_LIB_ENV: &str = "PARITY_IREE_COMPILER_LIB";

/// Target backends the local CPU device can host (they use the newer device flags).
const LOCAL_BACKENDS: [&str; 2] = ["llvm-cpu", "vmvx"];

/// Flag prefixes that mean the user chose the target device themselves.
const TARGET_FLAG_PREFIXES: [&str; 3] = [
    "--iree-hal-target-backends",
    "--iree-hal-target-device",
    "--iree-hal-local-target-device-backends",
];

/// How to compile one MLIR module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// IREE target backend, e.g. `llvm-cpu` (the default) or `vmvx`.
    pub target_backend: String,
    /// Extra compiler flags, passed in order after the derived ones.
    pub flags: Vec<String>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            target_backend: "llvm-cpu".to_string(),
            flags: Vec::new(),
        }
    }
}

impl CompileOptions {
    /// Options for `target_backend` with extra `flags`.
    pub fn new(target_backend: impl Into<String>, flags: Vec<String>) -> Self {
        CompileOptions {
            target_backend: target_backend.into(),
            flags,
        }
    }

    /// The full flag list handed to the compiler: the derived target flags and
    /// `--iree-input-type=stablehlo` (each unless the user set that flag), then
    /// the user's flags in order.
    pub fn effective_flags(&self) -> Vec<String> {
        let user_sets = |prefix: &str| self.flags.iter().any(|f| f.starts_with(prefix));
        let mut out = Vec::with_capacity(self.flags.len() + 3);
        if !user_sets("--iree-input-type") {
            out.push("--iree-input-type=stablehlo".to_string());
        }
        if !TARGET_FLAG_PREFIXES.iter().any(|p| user_sets(p)) {
            let backend = self.target_backend.as_str();
            if LOCAL_BACKENDS.contains(&backend) {
                // IREE 3.x spelling; `--iree-hal-target-backends` still works but is deprecated.
                out.push("--iree-hal-target-device=local".to_string());
                out.push(format!("--iree-hal-local-target-device-backends={backend}"));
            } else {
                // Non-local backends (cuda, vulkan-spirv, rocm, ...) have device-specific
                // spellings; the legacy flag accepts them all in IREE 3.13.
                out.push(format!("--iree-hal-target-backends={backend}"));
            }
        }
        out.extend(self.flags.iter().cloned());
        out
    }

    /// Whether the flags make the compiler write files beside the module
    /// (IREE's `--...-dump-...-to=DIR` flags): such a compile is not
    /// answered from the artifact cache, which would skip the files.
    pub fn writes_files(&self) -> bool {
        self.flags
            .iter()
            .any(|f| f.starts_with("--") && f.contains("dump") && f.contains("-to="))
    }

    /// Rejects options that cannot be passed to the compiler at all.
    pub(crate) fn validate(&self, source_name: &str) -> Result<(), IreeError> {
        let bad = |message: String| IreeError::InvalidOptions {
            source_name: source_name.to_string(),
            message,
        };
        let b = &self.target_backend;
        if b.is_empty()
            || b.chars()
                .any(|c| c.is_whitespace() || c == '=' || c == '\0')
        {
            return Err(bad(format!("target backend `{b}` is not a backend name")));
        }
        for flag in &self.flags {
            if !flag.starts_with("--") || flag.contains('\0') {
                return Err(bad(format!(
                    "flag `{flag}` must start with `--` and contain no NUL byte"
                )));
            }
        }
        Ok(())
    }
}

/// A loaded IREE compiler. Cheap to clone; usable from any thread.
///
/// eerie loads one compiler library per process, so a second `load` with a
/// different library fails.
#[derive(Clone, Debug)]
pub struct IreeCompiler {
    pub(crate) inner: eerie::compiler::Compiler,
}

impl IreeCompiler {
    /// Loads the compiler library: `explicit_lib` (file or directory) if given,
    /// else `$PARITY_IREE_COMPILER_LIB`, else eerie's discovery through the Python
    /// named by `$EERIE_PYTHON`, else the library in the venv the build was set up
    /// with or in the checkout's `.venv` ([`crate::discover`]), else eerie's
    /// discovery through `python`/`python3` on `PATH`; iree-base-compiler==3.13.0.
    pub fn load(explicit_lib: Option<&Path>) -> Result<IreeCompiler, IreeError> {
        let from_env = std::env::var_os(COMPILER_LIB_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let eerie_python = std::env::var_os("EERIE_PYTHON").is_some_and(|v| !v.is_empty());
        let (chosen, origin) = match (explicit_lib, &from_env) {
            (Some(p), _) => (Some(p.to_path_buf()), "explicit path".to_string()),
            (None, Some(p)) => (Some(p.clone()), format!("${COMPILER_LIB_ENV}")),
            (None, None) if eerie_python => (None, python_origin()),
            (None, None) => match crate::discover::built_in_library() {
                Some((lib, origin)) => (Some(lib), origin),
                None => (None, python_origin()),
            },
        };
        let loaded = match &chosen {
            Some(path) => eerie::compiler::Compiler::with_library(path),
            None => eerie::compiler::Compiler::new(),
        };
        let inner = loaded.map_err(|e| IreeError::CompilerNotFound {
            details: format!("{origin}: {e}"),
        })?;
        Ok(IreeCompiler { inner })
    }

    /// The compiler's build revision (the release tag for wheels), or empty if unknown.
    pub fn revision(&self) -> String {
        self.inner.get_revision().unwrap_or_default()
    }

    /// The HAL target backends this compiler can compile for (`llvm-cpu`,
    /// `vulkan-spirv`, `cuda`, ...), sorted.
    pub fn target_backends(&self) -> Vec<String> {
        let mut targets = self.inner.get_registered_hal_target_backends();
        targets.sort();
        targets
    }

    /// The shared library actually loaded.
    pub fn library_path(&self) -> &Path {
        self.inner.library_path()
    }
}

impl IreeCompiler {
    /// Turns MLIR's own thread pool off for every later compile of this
    /// process (`--mlir-disable-threading`, a process-wide option): for a
    /// compile process that runs beside others on few cores. Output is the
    /// same either way (the vmfb does not depend on the threading). Returns
    /// whether threading is now off: process-wide options are set once, so
    /// not after a [`IreeCompiler::normalize`] in this process.
    pub fn disable_threading(&self) -> bool {
        self.global_flags(&["--mlir-disable-threading"])
    }

    /// Sets the process-wide options once: the printing flags
    /// [`IreeCompiler::normalize`] needs (they change only how IR is printed)
    /// and `extra`. Returns whether `extra` took effect.
    pub(crate) fn global_flags(&self, extra: &[&str]) -> bool {
        let extra_set = *GLOBAL_FLAGS.get_or_init(|| {
            let mut inner = self.inner.clone();
            let flags = [
                "parity",
                "--mlir-print-op-generic",
                "--mlir-print-debuginfo",
                "--mlir-print-local-scope",
            ]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
            inner.setup_global_cl(flags).is_ok() && !extra.is_empty()
        });
        extra_set && !extra.is_empty()
    }

    /// Parses MLIR (pretty or generic form, text or bytecode), inlines every call
    /// and drops the private functions left unused, and prints the module back in
    /// MLIR's generic form with every location inline
    /// (`--mlir-print-op-generic --mlir-print-debuginfo --mlir-print-local-scope`):
    /// one regular syntax for every dialect, which `parity-mlir` reads.
    ///
    /// The printing flags are process-wide compiler options (set once, on the first
    /// call); they change only how IR is printed, never what is compiled (a test
    /// compiles the same module before and after and compares the vmfb bytes).
    pub fn normalize(&self, source_name: &str, mlir: &[u8]) -> Result<String, IreeError> {
        let _one_at_a_time = COMPILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: eerie::compiler::CompilerError| IreeError::Normalize {
            source_name: source_name.to_string(),
            diagnostics: diagnostics_text(&e, source_name),
        };
        // Already set (by an embedding application, or without threading
        // first) is fine: the output is checked for generic form below.
        self.global_flags(&[]);
        let session = self.inner.create_session();
        let source = session.create_source_from_buf(mlir).map_err(fail)?;
        let mut invocation = session.create_invocation();
        let mut output = eerie::compiler::MemBufferOutput::new(&self.inner).map_err(fail)?;
        invocation
            .parse_source(source)
            .map_err(fail)?
            .set_verify_ir(true)
            .run_pass_pipeline("inline, symbol-dce")
            .map_err(fail)?
            .output_ir(&mut output)
            .map_err(fail)?;
        let bytes = output.map_memory().map_err(fail)?;
        // The compiler names an in-memory source `buffer`; file locations then
        // read `loc("buffer":12:5)`. Name the real source instead, so an op
        // without a named location still points at its line in the user's file.
        let text = String::from_utf8_lossy(bytes)
            .replace("loc(\"buffer\":", &format!("loc({source_name:?}:"));
        if !text.trim_start().starts_with("\"builtin.module\"") {
            return Err(IreeError::Normalize {
                source_name: source_name.to_string(),
                diagnostics: "the compiler printed pretty-form IR although generic form was \
                              requested (were the process-wide MLIR printing flags set by \
                              someone else?)"
                    .to_string(),
            });
        }
        Ok(text)
    }
}

/// Set once the compiler's process-wide flags are (once only per process):
/// whether they included extra flags (MLIR's threading off).
static GLOBAL_FLAGS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Held for the duration of every compilation; see [`IreeCompiler::compile`].
pub(crate) static COMPILE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Names the Python interpreter discovery will use, for the error message.
fn python_origin() -> String {
    match std::env::var_os("EERIE_PYTHON") {
        Some(p) => format!("discovery via EERIE_PYTHON={}", p.to_string_lossy()),
        None => "discovery via python/python3 on PATH (EERIE_PYTHON unset)".to_string(),
    }
}

/// Flattens eerie's compiler error into diagnostic lines. eerie wraps buffers under
/// the name `buffer`; the locations are renamed to the real source so that
/// `model.mlir:3:5: error: ...` points somewhere useful.
pub(crate) fn diagnostics_text(err: &eerie::compiler::CompilerError, source_name: &str) -> String {
    use eerie::compiler::CompilerError as E;
    let raw = match err {
        E::IREECompilerDiagnosticsError(diags) => diags.to_string(),
        E::IREECompilerError(e, diags) => {
            let d = diags.to_string();
            if d.trim().is_empty() {
                e.to_string()
            } else {
                format!("{e}\n{d}")
            }
        }
        other => other.to_string(),
    };
    let text = crate::diagnostics::bound(rename_buffer_locations(&raw, source_name).trim_end());
    if text.is_empty() {
        "the compiler reported failure without diagnostics".to_string()
    } else {
        text
    }
}

/// Replaces the `buffer` in `buffer:LINE:COL` locations (quoted or not) by the source
/// name; `buffer` anywhere else (e.g. `!hal.buffer:`) is left alone.
fn rename_buffer_locations(text: &str, source_name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("buffer") {
        let (before, after) = rest.split_at(i);
        let after = &after["buffer".len()..];
        let quoted = before.ends_with('"') && after.starts_with("\":");
        let location_start = before.is_empty()
            || before.ends_with(|c: char| c.is_whitespace() || c == '(' || c == '"');
        let tail = if quoted { &after[1..] } else { after };
        let is_location = location_start
            && tail.starts_with(':')
            && tail[1..].starts_with(|c: char| c.is_ascii_digit());
        out.push_str(before);
        out.push_str(if is_location { source_name } else { "buffer" });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_only_buffer_locations() {
        let t = "Error: buffer:2:8: bad\nloc(\"buffer\":3:1) !hal.buffer: x buffer:y mybuffer:1";
        assert_eq!(
            rename_buffer_locations(t, "m.mlir"),
            "Error: m.mlir:2:8: bad\nloc(\"m.mlir\":3:1) !hal.buffer: x buffer:y mybuffer:1"
        );
    }

    #[test]
    fn derives_target_and_input_flags() {
        let o = CompileOptions::new("llvm-cpu", vec!["--iree-opt-level=O2".into()]);
        assert_eq!(
            o.effective_flags(),
            vec![
                "--iree-input-type=stablehlo",
                "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                "--iree-opt-level=O2",
            ]
        );
    }

    #[test]
    fn user_input_type_and_target_win() {
        let o = CompileOptions::new(
            "llvm-cpu",
            vec![
                "--iree-input-type=auto".into(),
                "--iree-hal-target-backends=vmvx".into(),
            ],
        );
        assert_eq!(
            o.effective_flags(),
            vec!["--iree-input-type=auto", "--iree-hal-target-backends=vmvx"]
        );
    }

    #[test]
    fn non_local_backend_uses_legacy_flag() {
        let o = CompileOptions::new("cuda", vec![]);
        assert_eq!(
            o.effective_flags(),
            vec![
                "--iree-input-type=stablehlo",
                "--iree-hal-target-backends=cuda"
            ]
        );
    }

    #[test]
    fn rejects_bad_backend_and_flags() {
        let e = CompileOptions::new("llvm cpu", vec![])
            .validate("m.mlir")
            .unwrap_err();
        assert!(e.to_string().contains("m.mlir"), "{e}");
        let e = CompileOptions::new("llvm-cpu", vec!["iree-foo".into()])
            .validate("m.mlir")
            .unwrap_err();
        assert!(e.to_string().contains("`iree-foo`"), "{e}");
        assert!(CompileOptions::default().validate("m.mlir").is_ok());
    }
}
