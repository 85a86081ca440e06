//! Why one stage run stopped before (or while) comparing its outputs: typed,
//! each with the spec position it points at, so the record's structured
//! location is built from fields, not read back out of a message.

use super::inputs::InputError;
use super::measure_error::MeasureError;
use super::module_error::ModuleError;
use parity_record::{ErrorKind, ErrorRecord, Location, Mode};
use parity_tensor::ByteLengthMismatch;
use std::fmt;
use std::path::PathBuf;

/// A `file:line:col` in the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecPosition {
    /// The spec file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

impl fmt::Display for SpecPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

/// Which stage run an error belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageAt {
    /// Where in the spec the error points (the argument, output or function line).
    pub at: SpecPosition,
    /// The stage.
    pub stage: String,
    /// The case.
    pub case: String,
}

/// Why one argument of a stage could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    /// The oracle tensor or weight could not be read or is missing.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A literal's values do not fit its dtype or shape.
    #[error(transparent)]
    Literal(#[from] ByteLengthMismatch),
    /// A `stage:` argument names an output no stage of the case has.
    #[error("unknown upstream `{stage}.{output}`")]
    UnknownUpstream {
        /// The upstream stage named.
        stage: String,
        /// Its output named.
        output: String,
    },
}

/// How the gathered arguments or the spec's outputs disagree with the
/// compiled function's signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureMismatch {
    /// Another number of arguments.
    #[error("function `{function}` takes {takes} arguments but the stage passes {passes}")]
    ArgumentCount {
        /// `module.function`.
        function: String,
        /// What the function declares.
        takes: usize,
        /// What the stage gathered.
        passes: usize,
    },
    /// One argument's dtype or shape.
    #[error("argument {index} of `{function}`{source_name}: {why}{hint}")]
    Argument {
        /// `module.function`.
        function: String,
        /// 0-based argument index.
        index: usize,
        /// ` (weight `name`)`, ` (oracle tensor `name`)`, ...: what the
        /// spec passes there; empty when unknown.
        source_name: String,
        /// The IREE signature's account of the mismatch.
        why: String,
        /// For a weight whose axes, permuted, would fit: the
        /// `weight_transforms` entry to add; else empty.
        hint: String,
    },
    /// Another number of results than the spec lists outputs (`declared`: by
    /// the function's signature, else counted after the call).
    #[error("function `{function}` returns {returns} results but the spec lists {listed} outputs")]
    ResultCount {
        /// `module.function` (or the function name alone after a call).
        function: String,
        /// Results returned.
        returns: usize,
        /// Outputs listed in the spec.
        listed: usize,
    },
}

/// Why a stage run produced no comparable outputs, or one output could not
/// be compared.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// An argument could not be had (an input error at the argument's line).
    #[error("{}: stage `{}` ({}), argument {index}: {source}", .at.at, .at.stage, .at.case)]
    Argument {
        /// Stage, case and the argument's position.
        at: StageAt,
        /// 0-based argument index.
        index: usize,
        /// What went wrong.
        #[source]
        source: ArgumentError,
    },
    /// The arguments or outputs do not fit the compiled function, found before IREE ran.
    #[error("{}: stage `{}` ({}): {mismatch}", .at.at, .at.stage, .at.case)]
    Signature {
        /// Stage, case and the argument's or function's position.
        at: StageAt,
        /// How they disagree.
        mismatch: SignatureMismatch,
    },
    /// The module could not run the function. An input error (the module or
    /// function is not there) points at the function line; an IREE failure
    /// has no spec position.
    #[error("{}stage `{}` ({}, {}): {source}", .position.as_ref().map(|p| format!("{p}: ")).unwrap_or_default(), .at.stage, .at.case, .mode.name())]
    Invoke {
        /// Stage and case (`at.at` is the function line).
        at: StageAt,
        /// Isolated or chained.
        mode: Mode,
        /// The function line, for an input error.
        position: Option<SpecPosition>,
        /// Why: not declared, no such function, refused arguments (input),
        /// or a compile, load or IREE failure (execution).
        #[source]
        source: ModuleError,
    },
    /// The function returned another number of results than the spec lists.
    #[error("stage `{}`: {mismatch}", .at.stage)]
    Results {
        /// Stage and case.
        at: StageAt,
        /// The counts.
        mismatch: SignatureMismatch,
    },
    /// One output could not be compared (an input error at the output's line).
    #[error("{}: stage `{}` ({}), output `{output}` vs oracle `{oracle}`: {source}", .at.at, .at.stage, .at.case)]
    Output {
        /// Stage, case and the output's position.
        at: StageAt,
        /// The output.
        output: String,
        /// Its oracle tensor.
        oracle: String,
        /// Why it could not be compared.
        #[source]
        source: MeasureError,
    },
}

impl StageError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        match self {
            StageError::Invoke { source, .. } => source.kind(),
            StageError::Argument { .. }
            | StageError::Signature { .. }
            | StageError::Results { .. }
            | StageError::Output { .. } => ErrorKind::Input,
        }
    }

    /// Where the error is, from its fields.
    pub fn location(&self) -> Option<Location> {
        let with = |at: &StageAt, position: Option<&SpecPosition>| Location {
            file: position.map(|p| p.file.display().to_string()),
            line: position.map(|p| p.line as u64),
            col: position.map(|p| p.col as u64),
            stage: Some(at.stage.clone()),
            case: Some(at.case.clone()),
            ..Location::default()
        };
        match self {
            StageError::Argument { at, index, .. } => Some(Location {
                argument: Some(*index),
                ..with(at, Some(&at.at))
            }),
            StageError::Signature { at, mismatch, .. } => Some(Location {
                argument: match mismatch {
                    SignatureMismatch::Argument { index, .. } => Some(*index),
                    _ => None,
                },
                ..with(at, Some(&at.at))
            }),
            StageError::Output { at, oracle, .. } => Some(Location {
                tensor: Some(oracle.clone()),
                ..with(at, Some(&at.at))
            }),
            // Kept as the records had it: no structured location for these.
            StageError::Invoke { .. } | StageError::Results { .. } => None,
        }
    }

    /// As a record error: kind, message and location.
    pub fn to_record(&self) -> ErrorRecord {
        let record = ErrorRecord {
            kind: self.kind(),
            message: self.to_string(),
            location: None,
        };
        match self.location() {
            Some(at) => record.at(at),
            None => record,
        }
    }
}

/// What the spec passes as an argument, for messages: ` (weight `w`)`.
pub(super) fn argument_source(arg: Option<&parity_spec::Arg>) -> String {
    use parity_spec::Arg;
    match arg {
        Some(Arg::Weight(name)) => format!(" (weight `{name}`)"),
        Some(Arg::Oracle(name)) => format!(" (oracle tensor `{name}`)"),
        Some(Arg::Stage { stage, output }) => format!(" (output `{output}` of stage `{stage}`)"),
        Some(Arg::Literal { .. }) => " (a literal)".to_string(),
        _ => String::new(),
    }
}

/// For a weight whose shape does not fit `ty` but a permutation of its axes
/// does (a matrix stored transposed, as Keras and PyTorch lay them out
/// differently): the `weight_transforms` entry that loads it so.
pub(super) fn transpose_hint(
    arg: Option<&parity_spec::Arg>,
    ty: &parity_iree::ValueType,
    dtype: parity_tensor::DType,
    shape: &[usize],
) -> String {
    let Some(parity_spec::Arg::Weight(name)) = arg else {
        return String::new();
    };
    // 720 permutations at rank 6; weights of higher rank are not guessed at.
    if shape.len() < 2 || shape.len() > 6 || ty.mismatch(dtype, shape).is_none() {
        return String::new();
    }
    let mut perm: Vec<usize> = (0..shape.len()).collect();
    while next_permutation(&mut perm) {
        let permuted: Vec<usize> = perm.iter().map(|&i| shape[i]).collect();
        if ty.mismatch(dtype, &permuted).is_none() {
            let axes: Vec<String> = perm.iter().map(usize::to_string).collect();
            return format!(
                "; its axes permuted fit: add `weight_transforms: [{{match: {}, transpose: [{}]}}]` to the spec",
                parity_spec::yaml_quote(&regex_escape(name)),
                axes.join(", ")
            );
        }
    }
    String::new()
}

/// `name` with the characters a regular expression treats specially escaped.
fn regex_escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The next permutation of `p` in lexicographic order; false after the last.
fn next_permutation(p: &mut [usize]) -> bool {
    let Some(i) = (1..p.len()).rev().find(|&i| p[i - 1] < p[i]) else {
        return false;
    };
    let j = (i..p.len()).rev().find(|&j| p[j] > p[i - 1]).unwrap_or(i);
    p.swap(i - 1, j);
    p[i..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> StageAt {
        StageAt {
            at: SpecPosition {
                file: PathBuf::from("dir/stages.yaml"),
                line: 12,
                col: 7,
            },
            stage: "conv".into(),
            case: "full".into(),
        }
    }

    #[test]
    fn an_argument_error_points_at_its_line_and_index() {
        let e = StageError::Argument {
            at: at(),
            index: 2,
            source: ArgumentError::UnknownUpstream {
                stage: "norm".into(),
                output: "y".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "dir/stages.yaml:12:7: stage `conv` (full), argument 2: unknown upstream `norm.y`"
        );
        let r = e.to_record();
        assert_eq!(r.kind, ErrorKind::Input);
        let l = r.location.expect("a location");
        assert_eq!(
            (l.file.as_deref(), l.line, l.col, l.argument),
            (Some("dir/stages.yaml"), Some(12), Some(7), Some(2))
        );
        assert_eq!(
            (l.stage.as_deref(), l.case.as_deref()),
            (Some("conv"), Some("full"))
        );
    }

    #[test]
    fn an_iree_failure_is_an_execution_error_without_a_spec_position() {
        let e = StageError::Invoke {
            at: at(),
            mode: Mode::Chained,
            position: None,
            source: ModuleError::Function {
                module: "m".into(),
                function: "f".into(),
                diagnostic: "boom".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            "stage `conv` (full, chained): module `m`: boom"
        );
        assert_eq!(e.kind(), ErrorKind::Execution);
        assert!(e.to_record().location.is_none());
        let input = StageError::Invoke {
            at: at(),
            mode: Mode::Chained,
            position: Some(at().at),
            source: ModuleError::Undeclared { module: "m".into() },
        };
        assert_eq!(input.kind(), ErrorKind::Input);
        assert!(input
            .to_string()
            .starts_with("dir/stages.yaml:12:7: stage `conv` (full, chained): "));
    }
}
