//! Why a module has no code to run, or a call into it failed: typed, with the
//! layer's own error as the source. The errors are `Clone` (sources behind
//! `Arc`): a module's compile failure is kept once and reported by every
//! stage that calls into it.

use parity_iree::IreeError;
use parity_record::ErrorKind;
use std::path::PathBuf;
use std::sync::Arc;

/// Why the IREE compiler is not there to compile a module.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompilerUnavailable {
    /// The run needed no compiler (every module a vmfb, no slice stage), so
    /// it was not loaded.
    #[error("the IREE compiler was not loaded")]
    NotLoaded,
    /// The compiler library could not be found or loaded.
    #[error(transparent)]
    Load(Arc<IreeError>),
}

/// Why a module (or one function of it) cannot run, or a call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModuleError {
    /// The module file cannot be read, or is not a regular file (input).
    #[error("module `{module}`: cannot read {}: {source}", path.display())]
    Read {
        /// The module's name in the spec.
        module: String,
        /// Its file.
        path: PathBuf,
        /// What the reader said.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The MLIR text nests deeper than the compiler's parser can recurse
    /// (input; checked before the compiler, which would overflow the stack).
    #[error("module `{module}`: {}: {source}", path.display())]
    TooDeep {
        /// The module's name in the spec.
        module: String,
        /// Its file.
        path: PathBuf,
        /// Where the bound is passed.
        #[source]
        source: parity_mlir::MlirError,
    },
    /// The module is MLIR but the compiler is not available.
    #[error("module `{module}`: {source}")]
    NoCompiler {
        /// The module.
        module: String,
        /// Why the compiler is not there.
        #[source]
        source: CompilerUnavailable,
    },
    /// The IREE compiler failed on the whole module (or a slice module).
    #[error("module `{module}`: {source}")]
    Compile {
        /// The module.
        module: String,
        /// The compiler's error (bounded diagnostics).
        #[source]
        source: Arc<IreeError>,
    },
    /// A slice module's parent is not a module of the spec.
    #[error("module `{module}`: parent module `{parent}` is not declared")]
    UndeclaredParent {
        /// The slice module.
        module: String,
        /// The parent it names.
        parent: String,
    },
    /// One function of a module compiled per function failed to compile;
    /// the diagnostic (from the compile process, which names the file and
    /// the function) is text by nature.
    #[error("module `{module}`: {diagnostic}")]
    Function {
        /// The module.
        module: String,
        /// The function.
        function: String,
        /// The compile process's diagnostic.
        diagnostic: String,
    },
    /// The IREE runtime could not be created on the driver.
    #[error("IREE runtime `{driver}`: {source}")]
    Runtime {
        /// The driver (`local-task`, ...).
        driver: String,
        /// The runtime's error.
        #[source]
        source: Arc<IreeError>,
    },
    /// A vmfb could not be loaded into the runtime.
    #[error("module `{module}`{}: {source}", .function.as_ref().map(|f| format!(", function `{f}`")).unwrap_or_default())]
    Load {
        /// The module.
        module: String,
        /// The function whose artifact was loaded (per-function artifacts).
        function: Option<String>,
        /// The runtime's error.
        #[source]
        source: Arc<IreeError>,
    },
    /// A stage names a module the subject does not declare (input).
    #[error("module `{module}` is not declared in the subject")]
    Undeclared {
        /// The module named.
        module: String,
    },
    /// A function's artifact is not among the module's artifacts.
    #[error("module `{module}`, function `{function}`: its artifact {key} is missing")]
    MissingArtifact {
        /// The module.
        module: String,
        /// The function.
        function: String,
        /// The artifact key its entry names.
        key: String,
    },
    /// The module does not export the function (input).
    #[error(transparent)]
    UnknownFunction(Arc<IreeError>),
    /// The call itself failed: an argument IREE refuses (input), or a
    /// failure inside IREE (execution).
    #[error(transparent)]
    Invoke(Arc<IreeError>),
}

impl ModuleError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ModuleError::Read { .. }
            | ModuleError::TooDeep { .. }
            | ModuleError::Undeclared { .. }
            | ModuleError::UnknownFunction(_) => ErrorKind::Input,
            ModuleError::Invoke(e) => match **e {
                IreeError::UnknownFunction { .. } | IreeError::Argument { .. } => ErrorKind::Input,
                _ => ErrorKind::Execution,
            },
            // A parameter the files do not hold (a vmfb's, which parity cannot
            // check before loading it) or a parameter file IREE cannot index.
            ModuleError::Load { source, .. } | ModuleError::Runtime { source, .. }
                if source.is_parameter_input() =>
            {
                ErrorKind::Input
            }
            ModuleError::NoCompiler { .. }
            | ModuleError::Compile { .. }
            | ModuleError::UndeclaredParent { .. }
            | ModuleError::Function { .. }
            | ModuleError::Runtime { .. }
            | ModuleError::Load { .. }
            | ModuleError::MissingArtifact { .. } => ErrorKind::Execution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_module_and_kinds_decide_the_exit_code() {
        let e = ModuleError::Undeclared {
            module: "audio".into(),
        };
        assert_eq!(
            e.to_string(),
            "module `audio` is not declared in the subject"
        );
        assert_eq!(e.kind(), ErrorKind::Input);
        let e = ModuleError::NoCompiler {
            module: "audio".into(),
            source: CompilerUnavailable::NotLoaded,
        };
        assert_eq!(
            e.to_string(),
            "module `audio`: the IREE compiler was not loaded"
        );
        assert_eq!(e.kind(), ErrorKind::Execution);
        let e = ModuleError::Function {
            module: "audio".into(),
            function: "f".into(),
            diagnostic: "a.mlir, function @f: error: boom".into(),
        };
        assert_eq!(
            e.to_string(),
            "module `audio`: a.mlir, function @f: error: boom"
        );
        let e = ModuleError::MissingArtifact {
            module: "audio".into(),
            function: "f".into(),
            key: "k1".into(),
        };
        assert_eq!(
            e.to_string(),
            "module `audio`, function `f`: its artifact k1 is missing"
        );
        assert_eq!(e.kind(), ErrorKind::Execution);
    }
}
