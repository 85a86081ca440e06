//! Types every record shares: statuses, modes, and errors with a location.

pub use crate::exit::ErrorKind;
use crate::exit::ExitCode;
use serde::{Deserialize, Serialize};
use std::fmt;

/// How a stage's arguments were fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every argument from the oracle: the stage's local error.
    Isolated,
    /// Arguments from upstream production outputs where they exist: accumulated error.
    Chained,
}

impl Mode {
    /// The lowercase name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Isolated => "isolated",
            Mode::Chained => "chained",
        }
    }
}

/// Outcome of one output, one stage, one command or the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every criterion held.
    Pass,
    /// At least one criterion failed.
    Fail,
    /// Could not be evaluated (bad input, compile or runtime failure).
    Error,
    /// Not run because something it depends on errored or was not selected.
    Skipped,
}

impl Status {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }
}

/// Where an error is, as far as it is known. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// The file involved (spec, tensor file, module).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line in `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// 1-based column in `file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub col: Option<u64>,
    /// The stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    /// The 0-based argument index of the stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<usize>,
    /// The tensor (oracle name, weight, output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
}

impl Location {
    /// The `file:line:col` a diagnostic message about `file` starts with
    /// (parity-spec's messages do), or just the file when it has none.
    pub fn from_diagnostic(file: &str, message: &str) -> Location {
        let mut at = Location {
            file: Some(file.to_string()),
            ..Location::default()
        };
        let mut parts = message
            .strip_prefix(file)
            .and_then(|rest| rest.strip_prefix(':'))
            .unwrap_or("")
            .splitn(3, ':');
        if let (Some(line), Some(col), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            if let (Ok(line), Ok(col)) = (line.parse(), col.parse()) {
                at.line = Some(line);
                at.col = Some(col);
            }
        }
        at
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self == &Location::default()
    }
}

/// One error in a record: its kind, the message (which already names file,
/// stage and tensor), and where it is when that is known in structured form.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// Input or execution.
    pub kind: ErrorKind,
    /// The message, naming the file, stage and tensor involved.
    pub message: String,
    /// Structured location, for renderers that link or group by it.
    /// (Boxed: most errors have none, and errors travel in `Result`s.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Box<Location>>,
}

impl ErrorRecord {
    /// An input error (exit 2).
    pub fn input(message: impl Into<String>) -> Self {
        ErrorRecord {
            kind: ErrorKind::Input,
            message: message.into(),
            location: None,
        }
    }

    /// An execution error (exit 3).
    pub fn execution(message: impl Into<String>) -> Self {
        ErrorRecord {
            kind: ErrorKind::Execution,
            message: message.into(),
            location: None,
        }
    }

    /// The same error with a location.
    pub fn at(mut self, location: Location) -> Self {
        self.location = (!location.is_empty()).then(|| Box::new(location));
        self
    }

    /// The exit code this error calls for.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::for_error(self.kind)
    }
}

impl fmt::Display for ErrorRecord {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::Location;

    #[test]
    fn diagnostics_give_their_position() {
        let at =
            Location::from_diagnostic("a:b/stages.yaml", "a:b/stages.yaml:12:5: unknown key `x`");
        assert_eq!((at.line, at.col), (Some(12), Some(5)));
        assert_eq!(at.file.as_deref(), Some("a:b/stages.yaml"));
        let at = Location::from_diagnostic("s.yaml", "cannot read s.yaml: No such file");
        assert_eq!((at.line, at.col), (None, None));
        assert_eq!(at.file.as_deref(), Some("s.yaml"));
    }
}
