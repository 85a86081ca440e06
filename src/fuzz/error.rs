//! Why a fuzz check could not run: bad input (exit 2), a batch the guard
//! refuses (exit 2), or IREE (exit 3). Each variant carries what its message
//! names (the spec position, argument, function, invariant) and its source
//! error where there is one.

use super::validate::Malformed;
use crate::run::inputs::InputError;
use parity_record::{ErrorKind, ErrorRecord};
use parity_tensor::ByteLengthMismatch;

/// A fuzz failure; the message names the spec position, case, clip or function.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// A fixed `weight:` or `oracle:` argument of the `fuzz:` section cannot be read.
    #[error("{at}: fuzz argument {index}: {source}")]
    FixedArg {
        /// `spec.yaml:LINE:COL` of the `fuzz:` section.
        at: String,
        /// The argument's position.
        index: usize,
        /// Why.
        #[source]
        source: Box<InputError>,
    },
    /// A fixed `literal:` argument does not make a tensor.
    #[error("{at}: fuzz argument {index}: {source}")]
    Literal {
        /// `spec.yaml:LINE:COL` of the `fuzz:` section.
        at: String,
        /// The argument's position.
        index: usize,
        /// Why.
        #[source]
        source: ByteLengthMismatch,
    },
    /// A `stage:` argument, which a fuzz entry point cannot take.
    #[error("{at}: fuzz argument {index}: `stage:` is not allowed")]
    StageArg {
        /// `spec.yaml:LINE:COL` of the `fuzz:` section.
        at: String,
        /// The argument's position.
        index: usize,
    },
    /// A `mel.sources` tensor cannot be read.
    #[error("{at}: fuzz.mel.sources: {source}")]
    MelSource {
        /// `spec.yaml:LINE:COL` of the `fuzz:` section.
        at: String,
        /// Why.
        #[source]
        source: Box<InputError>,
    },
    /// A `mel.sources` tensor is not float `[clips, frames, features]` of finite frames.
    #[error("{at}: fuzz.mel.sources: `{tensor}` {problem}")]
    MelSourceShape {
        /// `spec.yaml:LINE:COL` of the `fuzz:` section.
        at: String,
        /// The oracle tensor.
        tensor: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A generated case cannot be laid out in its bucket or source clip.
    #[error("clip {clip}: {problem}")]
    Layout {
        /// The clip.
        clip: usize,
        /// What does not fit.
        problem: String,
    },
    /// A generated input tensor cannot be built.
    #[error("building the `{input}` input: {source}")]
    Tensor {
        /// `mel`, `mask` or `lengths`.
        input: &'static str,
        /// Why.
        #[source]
        source: ByteLengthMismatch,
    },
    /// The guard refused a batch before IREE (a malformed mask, length, shape...).
    #[error("malformed input refused before IREE: {0}")]
    Malformed(#[from] Malformed),
    /// A generated argument does not match the compiled signature.
    #[error("`{function}` argument {index}: {problem}")]
    Signature {
        /// The entry point.
        function: String,
        /// The argument's position.
        index: usize,
        /// The mismatch.
        problem: String,
    },
    /// The entry point call failed (its `kind` says whether the input or IREE is to blame).
    #[error("`{module}.{function}`: {source}")]
    Invoke {
        /// The module.
        module: String,
        /// The entry point.
        function: String,
        /// Why: a module not declared (input), or IREE (execution).
        #[source]
        source: Box<crate::run::ModuleError>,
    },
    /// The entry point returned another number of results than `fuzz.outputs` names.
    #[error("`{function}` returned {got} results; `fuzz.outputs` names {want}")]
    Outputs {
        /// The entry point.
        function: String,
        /// Results returned.
        got: usize,
        /// Outputs named.
        want: usize,
    },
    /// An invariant cannot be checked on the compiled shapes or the drawn case.
    #[error("{invariant}: {problem}")]
    Unsupported {
        /// The invariant.
        invariant: &'static str,
        /// What is missing.
        problem: &'static str,
    },
    /// No invariant of this name.
    #[error("unknown invariant `{0}`")]
    UnknownInvariant(String),
    /// proptest could not generate a case from a seed.
    #[error("cannot generate a case from seed {seed}: {reason}")]
    Generate {
        /// The case seed.
        seed: u64,
        /// proptest's reason.
        reason: String,
    },
}

impl FuzzError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            FuzzError::Invoke { source, .. } => source.kind(),
            _ => ErrorKind::Input,
        }
    }

    /// As a record error (kind + message), with `prefix: ` in front.
    pub fn to_record(&self, prefix: &str) -> ErrorRecord {
        let m = format!("{prefix}: {self}");
        match self.kind() {
            ErrorKind::Input => ErrorRecord::input(m),
            ErrorKind::Execution => ErrorRecord::execution(m),
        }
    }
}
