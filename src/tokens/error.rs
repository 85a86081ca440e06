//! Why a token run (or one case of it) could not finish: bad input (exit 2)
//! or IREE (exit 3). Each variant carries what its message names: the spec
//! position, the case, the call, the argument, the tensor.

use crate::run::inputs::InputError;
use parity_record::{ErrorKind, ErrorRecord};

/// A token-run failure.
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// A name template of the spec does not render for the case.
    #[error("{0}")]
    Template(String),
    /// An oracle tensor the verdict reads cannot be loaded.
    #[error(transparent)]
    OracleSource(#[from] InputError),
    /// An oracle tensor the verdict reads is malformed.
    #[error("oracle tensor `{tensor}`{problem}")]
    Oracle {
        /// The tensor's rendered name.
        tensor: String,
        /// What is wrong with it.
        problem: OracleProblem,
    },
    /// A truth tensor's vocabulary differs from the oracle logits'.
    #[error("truth `{truth}` has vocabulary {got} but `{logits}` has {vocab}")]
    TruthVocabulary {
        /// The truth tensor.
        truth: String,
        /// Its vocabulary size.
        got: usize,
        /// The oracle logits tensor.
        logits: String,
        /// Their vocabulary size.
        vocab: usize,
    },
    /// A `tokens.prefill` / `tokens.decode` call cannot be built or its
    /// result does not fit the spec.
    #[error("{at}: tokens.{which}{}: {problem}", arg.map(|i| format!(" argument {i}")).unwrap_or_default())]
    Call {
        /// The spec position, `file:line:col`.
        at: String,
        /// `prefill` or `decode`.
        which: String,
        /// The argument, when one is at fault.
        arg: Option<usize>,
        /// What is wrong.
        problem: String,
    },
    /// The compiled function failed (IREE), or refused its inputs.
    #[error("{at}: tokens.{which}: `{module}.{function}`: {source}")]
    Invoke {
        /// The spec position of the call.
        at: String,
        /// `prefill` or `decode`.
        which: String,
        /// The module name.
        module: String,
        /// The function called.
        function: String,
        /// Why: refused (input) or IREE failed (execution).
        #[source]
        source: Box<crate::run::ModuleError>,
    },
    /// The production's logits output is missing or malformed.
    #[error("{what}: {problem}")]
    Logits {
        /// Which call produced it (`prefill`, `decode step 3`).
        what: String,
        /// What is wrong.
        problem: LogitsProblem,
    },
    /// Any of the above, in one case.
    #[error("case `{case}`: {source}")]
    InCase {
        /// The case name.
        case: String,
        /// The error.
        #[source]
        source: Box<TokensError>,
    },
    /// Any of the above, at one decode step of one mode.
    #[error("{context}: {source}")]
    At {
        /// Where (`greedy step 4`).
        context: String,
        /// The error.
        #[source]
        source: Box<TokensError>,
    },
}

/// What is wrong with an oracle tensor (the message follows its name).
#[derive(Debug, thiserror::Error)]
pub enum OracleProblem {
    /// Logits are not a `[steps, vocab]` matrix.
    #[error(" has shape {shape:?}, expected [steps, vocab]")]
    NotAMatrix {
        /// Its shape.
        shape: Vec<usize>,
    },
    /// Logits have too few steps, a tiny vocabulary or integer elements.
    #[error(" is {dtype} {shape:?}: needs a float [{steps} or more, vocab >= 2]")]
    TooSmall {
        /// Its dtype.
        dtype: parity_tensor::DType,
        /// Its shape.
        shape: Vec<usize>,
        /// Steps needed (max_new_tokens).
        steps: usize,
    },
    /// A logit is NaN or infinite.
    #[error(": step {step}, token {token} is {value} (logits must be finite)")]
    NonFinite {
        /// The step.
        step: usize,
        /// The vocabulary index.
        token: usize,
        /// The value.
        value: f64,
    },
    /// The token tensor is float or too short.
    #[error(" is {dtype} {shape:?}: needs {steps} or more integer tokens (max_new_tokens)")]
    Tokens {
        /// Its dtype.
        dtype: parity_tensor::DType,
        /// Its shape.
        shape: Vec<usize>,
        /// Tokens needed.
        steps: usize,
    },
    /// A token id outside the logits' vocabulary.
    #[error(": token {token} at step {step} is outside the vocabulary 0..{vocab} of `{logits}`")]
    OutsideVocabulary {
        /// The token id.
        token: i64,
        /// The step.
        step: usize,
        /// The vocabulary size.
        vocab: usize,
        /// The logits tensor.
        logits: String,
    },
}

/// What is wrong with the production's logits output.
#[derive(Debug, thiserror::Error)]
pub enum LogitsProblem {
    /// The function has no output of that name.
    #[error("no output `{output}`")]
    Missing {
        /// The spec's `tokens.logits` name.
        output: String,
    },
    /// Not a float row of the oracle's vocabulary size.
    #[error("logits output `{output}` is {dtype} {shape:?}, expected a float row of the oracle's vocabulary size {vocab}")]
    Shape {
        /// The output name.
        output: String,
        /// Its dtype.
        dtype: parity_tensor::DType,
        /// Its shape.
        shape: Vec<usize>,
        /// The oracle's vocabulary.
        vocab: usize,
    },
    /// A production logit is NaN or infinite (an execution fault).
    #[error("logits output `{output}` holds {value} at token {token}")]
    NonFinite {
        /// The output name.
        output: String,
        /// The value.
        value: f64,
        /// Its vocabulary index.
        token: usize,
    },
}

impl TokensError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            TokensError::Invoke { source, .. } => source.kind(),
            TokensError::Logits {
                problem: LogitsProblem::NonFinite { .. },
                ..
            } => ErrorKind::Execution,
            TokensError::InCase { source, .. } | TokensError::At { source, .. } => source.kind(),
            _ => ErrorKind::Input,
        }
    }

    /// As a record error (kind + message).
    pub fn to_record(&self) -> ErrorRecord {
        match self.kind() {
            ErrorKind::Execution => ErrorRecord::execution(self.to_string()),
            _ => ErrorRecord::input(self.to_string()),
        }
    }

    /// The same error at `context` (a mode and step).
    pub fn context(self, context: &str) -> TokensError {
        TokensError::At {
            context: context.to_string(),
            source: Box::new(self),
        }
    }

    /// The same error in case `case`.
    pub fn in_case(self, case: &str) -> TokensError {
        TokensError::InCase {
            case: case.to_string(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_messages_follow_the_variant() {
        let nan = TokensError::Logits {
            what: "decode step 3".into(),
            problem: LogitsProblem::NonFinite {
                output: "logits".into(),
                value: f64::NAN,
                token: 7,
            },
        }
        .context("greedy")
        .in_case("c1");
        assert_eq!(nan.kind(), ErrorKind::Execution);
        assert_eq!(
            nan.to_string(),
            "case `c1`: greedy: decode step 3: logits output `logits` holds NaN at token 7"
        );
        let arg = TokensError::Call {
            at: "t.yaml:4:9".into(),
            which: "decode".into(),
            arg: Some(2),
            problem: "no weight `w`".into(),
        };
        assert_eq!(arg.kind(), ErrorKind::Input);
        assert_eq!(
            arg.to_string(),
            "t.yaml:4:9: tokens.decode argument 2: no weight `w`"
        );
        let refused = TokensError::Invoke {
            at: "t.yaml:3:5".into(),
            which: "prefill".into(),
            module: "lm".into(),
            function: "prefill_p10".into(),
            source: Box::new(crate::run::ModuleError::MissingArtifact {
                module: "lm".into(),
                function: "prefill_p10".into(),
                key: "k".into(),
            }),
        };
        assert_eq!(refused.to_record().kind, ErrorKind::Execution);
    }
}
