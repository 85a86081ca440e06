//! Compiling MLIR to a vmfb: straight through one compiler session, or in
//! phases when the flags ask for executable substitutions the session
//! itself rejects. It sits above both, so the compiler module does not
//! reach up into the phased compiles that build on it.

use crate::compiler::{diagnostics_text, CompileOptions, IreeCompiler, COMPILE_LOCK};
use crate::error::IreeError;

impl IreeCompiler {
    /// Compiles MLIR text or bytecode to a vmfb. `source_name` (usually the MLIR
    /// file name) labels the diagnostics and the error.
    pub fn compile(
        &self,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<Vec<u8>, IreeError> {
        options.validate(source_name)?;
        let has_substitutions = options
            .flags
            .iter()
            .any(|f| f.starts_with("--iree-hal-substitute-executable"));
        if has_substitutions {
            // Applied between two phases, as IREE's own flag does; the
            // session rejects the flag itself.
            return Ok(self.compile_phased(source_name, mlir, options, None)?.vmfb);
        }
        // Concurrent compile sessions in one process race inside the compiler
        // library (seen here: "createTargetMachine(x86_64-unknown-unknown-eabi-elf)
        // failed" then SIGSEGV when test threads compiled at once), so
        // compilations are serialised; each one still uses the compiler's own
        // worker threads.
        let _one_at_a_time = COMPILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        self.inner
            .compile_bytes(mlir, options.effective_flags())
            .map_err(|e| IreeError::Compile {
                source_name: source_name.to_string(),
                diagnostics: diagnostics_text(&e, source_name),
            })
    }
}
