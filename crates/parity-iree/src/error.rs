//! The one error type of the IREE layer: every failure names the MLIR source,
//! module, function or cache path it concerns, and says how to fix set-up problems.

use std::path::PathBuf;

/// How to make the compiler library findable; appended to every discovery error.
pub(crate) const COMPILER_FIX_IT: &str = "fix: run `. ci/setup.sh` from the repository root \
(creates .venv with iree-base-compiler==3.13.0 and exports EERIE_PYTHON), or set \
EERIE_PYTHON=/path/to/python with iree-base-compiler==3.13.0 installed, or set \
PARITY_IREE_COMPILER_LIB=/path/to/libIREECompiler.so";

/// Errors from compiling, caching, loading or invoking IREE modules.
#[derive(Debug, thiserror::Error)]
pub enum IreeError {
    /// The IREE compiler shared library could not be found or opened.
    #[error("IREE compiler library not available: {details}\n{COMPILER_FIX_IT}")]
    CompilerNotFound {
        /// What discovery tried and why it failed.
        details: String,
    },

    /// The compile options are unusable before the compiler even runs.
    #[error("invalid compile options for {source_name}: {message}")]
    InvalidOptions {
        /// The MLIR source the options were meant for.
        source_name: String,
        /// What is wrong with them.
        message: String,
    },

    /// The compiler rejected the source or a flag; carries its diagnostics.
    #[error("IREE failed to compile {source_name}:\n{diagnostics}")]
    Compile {
        /// The MLIR file name (or label) that was compiled.
        source_name: String,
        /// The compiler's diagnostic lines, one per line, with locations.
        diagnostics: String,
    },

    /// The compiler could not parse or normalise an MLIR source for slicing.
    #[error("IREE could not read {source_name} for slicing:\n{diagnostics}")]
    Normalize {
        /// The MLIR file name (or label).
        source_name: String,
        /// The compiler's diagnostic lines, with locations.
        diagnostics: String,
    },

    /// The HAL driver or device could not be created.
    #[error("IREE runtime driver `{driver}` unavailable: {message} (drivers built in: local-sync, local-task, vulkan, cuda)")]
    Driver {
        /// The requested driver name.
        driver: String,
        /// IREE's status text.
        message: String,
    },

    /// A compiled module (vmfb) could not be loaded into the runtime.
    #[error("IREE could not load module {name}: {message}")]
    Load {
        /// The module's name (usually the MLIR or vmfb file it came from).
        name: String,
        /// IREE's status text.
        message: String,
    },

    /// The module has no exported function of this name.
    #[error(
        "module {module} has no function `{function}`{}",
        list_available(available)
    )]
    UnknownFunction {
        /// The module searched.
        module: String,
        /// The name asked for.
        function: String,
        /// Exported function names, when the module could be inspected.
        available: Vec<String>,
    },

    /// An argument tensor could not be turned into an IREE buffer view.
    #[error("argument {index} of {module}.{function}: {message}")]
    Argument {
        /// The module called.
        module: String,
        /// The function called.
        function: String,
        /// Zero-based argument index.
        index: usize,
        /// What is wrong with the argument.
        message: String,
    },

    /// The call failed inside IREE (including IREE's own argument checks) or
    /// returned something parity cannot represent.
    #[error("invoking {module}.{function} failed: {message}")]
    Invoke {
        /// The module called.
        module: String,
        /// The function called.
        function: String,
        /// IREE's status text or a description of the unusable result.
        message: String,
    },

    /// A parameter file cannot be mapped or indexed, or IREE cannot make
    /// the io-parameters module over the files.
    #[error("{0}")]
    Parameters(#[from] parity_iree_io::ParameterError),

    /// Reading or writing the artifact cache failed.
    #[error("artifact cache {}: {message}", path.display())]
    Cache {
        /// The cache file or directory concerned.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl IreeError {
    /// Whether this is a parameter problem of the input, not of IREE: a
    /// parameter file that cannot be indexed, or a module load that IREE's
    /// io-parameters module refused for a key or scope the files do not
    /// hold, or an entry shorter than the global.
    pub fn is_parameter_input(&self) -> bool {
        match self {
            IreeError::Parameters(_) => true,
            IreeError::Load { message, .. } => {
                message.contains("io_parameters.")
                    && (message.contains("NOT_FOUND") || message.contains("OUT_OF_RANGE"))
            }
            _ => false,
        }
    }
}

fn list_available(available: &[String]) -> String {
    if available.is_empty() {
        String::new()
    } else {
        format!(" (available: {})", available.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_function_lists_available_names() {
        let e = IreeError::UnknownFunction {
            module: "audio".into(),
            function: "nope".into(),
            available: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            e.to_string(),
            "module audio has no function `nope` (available: a, b)"
        );
        let e = IreeError::UnknownFunction {
            module: "audio".into(),
            function: "nope".into(),
            available: vec![],
        };
        assert_eq!(e.to_string(), "module audio has no function `nope`");
    }

    #[test]
    fn compiler_not_found_says_how_to_fix() {
        let e = IreeError::CompilerNotFound {
            details: "python3: no module".into(),
        };
        let s = e.to_string();
        assert!(s.contains("python3: no module"), "{s}");
        assert!(
            s.contains("ci/setup.sh") && s.contains("PARITY_IREE_COMPILER_LIB"),
            "{s}"
        );
    }
}
