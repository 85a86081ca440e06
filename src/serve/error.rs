//! Why a serving run (or one request of it) could not finish: bad input
//! (exit 2) or IREE / a target failing (exit 3). Admission refusals are not
//! errors: they are observations the checks judge.

use super::adapters::AdapterError;
use crate::run::inputs::InputError;
use parity_record::{ErrorKind, ErrorRecord};
use parity_spec::SpecError;
use parity_tensor::ByteLengthMismatch;
use std::sync::Arc;

/// A serving failure; the message names the scenario position, request,
/// slot, step, function or tensor. (Sources are shared, `Arc`, so that one
/// decode failure can be every running request's error.)
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServeError {
    /// The scenario or the spec it names is invalid (input).
    #[error(transparent)]
    Spec(Arc<SpecError>),
    /// An oracle tensor or weight of the spec cannot be had (input).
    #[error("{context}{source}")]
    Inputs {
        /// What needed it (`stage ... of case ...: `), or empty.
        context: String,
        /// The input layer's error (names file and tensor).
        #[source]
        source: Arc<InputError>,
    },
    /// A tensor the engine builds does not fit its shape (input).
    #[error("{0}")]
    Tensor(#[source] Arc<ByteLengthMismatch>),
    /// A weight a serving function needs cannot be had (input).
    #[error("serving function `{function}`: weight `{weight}`: {message}")]
    Weight {
        /// The serving function.
        function: String,
        /// The weight's checkpoint name.
        weight: String,
        /// Why (names the weights file).
        message: String,
    },
    /// The serving manifest, module or spec does not fit the scenario or
    /// the calling convention (input).
    #[error("{0}")]
    Convention(String),
    /// A request's content in the oracle store is malformed (input).
    #[error("{at}: {message}")]
    Request {
        /// `line:col: request `id``.
        at: String,
        /// What is wrong.
        message: String,
    },
    /// An IREE call failed: its arguments (input) or the runtime (execution).
    #[error("`{module}.{function}`: {source}")]
    Call {
        /// Module name.
        module: String,
        /// Function name.
        function: String,
        /// Why: its arguments (input) or the runtime (execution).
        #[source]
        source: Box<crate::run::ModuleError>,
    },
    /// A compiled module could not be loaded into the runtime.
    #[error(transparent)]
    Load(Box<crate::run::ModuleError>),
    /// Compiling or loading the modules failed, or a server's own error.
    #[error("{message}")]
    Module {
        /// Input or execution.
        kind: ErrorKind,
        /// What failed.
        message: String,
    },
    /// A black-box target could not be driven.
    #[error(transparent)]
    Adapter(Arc<AdapterError>),
    /// The run itself went wrong (a request thread panicked, a solo run
    /// observed nothing) (execution).
    #[error("{0}")]
    Run(String),
    /// An error with where it happened in front (`request `a`: slot 0: step 3: prefill`).
    #[error("{prefix}: {source}")]
    Context {
        /// Where.
        prefix: String,
        /// What.
        #[source]
        source: Box<ServeError>,
    },
}

impl From<SpecError> for ServeError {
    fn from(e: SpecError) -> Self {
        ServeError::Spec(Arc::new(e))
    }
}

impl From<InputError> for ServeError {
    fn from(e: InputError) -> Self {
        ServeError::Inputs {
            context: String::new(),
            source: Arc::new(e),
        }
    }
}

impl From<ByteLengthMismatch> for ServeError {
    fn from(e: ByteLengthMismatch) -> Self {
        ServeError::Tensor(Arc::new(e))
    }
}

impl From<AdapterError> for ServeError {
    fn from(e: AdapterError) -> Self {
        ServeError::Adapter(Arc::new(e))
    }
}

impl ServeError {
    /// An oracle/weight error with what needed it in front (`{context}: `).
    pub fn inputs(context: &str, e: InputError) -> ServeError {
        ServeError::Inputs {
            context: format!("{context}: "),
            source: Arc::new(e),
        }
    }

    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ServeError::Spec(_)
            | ServeError::Inputs { .. }
            | ServeError::Tensor(_)
            | ServeError::Weight { .. }
            | ServeError::Convention(_)
            | ServeError::Request { .. } => ErrorKind::Input,
            ServeError::Call { source, .. } | ServeError::Load(source) => source.kind(),
            ServeError::Module { kind, .. } => *kind,
            ServeError::Adapter(e) => e.kind(),
            ServeError::Run(_) => ErrorKind::Execution,
            ServeError::Context { source, .. } => source.kind(),
        }
    }

    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        match self.kind() {
            ErrorKind::Input => ErrorRecord::input(self.to_string()),
            ErrorKind::Execution => ErrorRecord::execution(self.to_string()),
        }
    }

    /// Whether this is bad input (exit 2) rather than an execution failure.
    pub fn is_input(&self) -> bool {
        self.kind() == ErrorKind::Input
    }

    /// The same error with `prefix: ` in front of its message.
    pub fn context(self, prefix: &str) -> ServeError {
        ServeError::Context {
            prefix: prefix.to_string(),
            source: Box::new(self),
        }
    }
}
