//! The one exit-code table every parity command uses.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | everything passed |
//! | 1 | a parity failure: some output is outside its tolerance |
//! | 2 | invalid input or spec (malformed file, missing tensor, bad mask, ...) |
//! | 3 | an execution failure (IREE compile, load or runtime error) |
//!
//! When several apply, 2 wins over 3, which wins over 1, which wins over 0:
//! a run with bad input says nothing trustworthy about execution, and a run
//! that failed to execute says nothing trustworthy about parity.

/// What kind of problem an error is; decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// Invalid input: spec, missing or malformed tensor, shape/dtype mismatch, bad mask (exit 2).
    Input,
    /// IREE compile, load or invocation failure (exit 3).
    Execution,
}

impl ErrorKind {
    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Input => "input",
            ErrorKind::Execution => "execution",
        }
    }
}

/// A process exit code of parity, ordered by precedence (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExitCode {
    /// 0: every check passed.
    Pass,
    /// 1: a parity failure.
    Fail,
    /// 2: invalid input or spec.
    Input,
    /// 3: an execution failure (IREE).
    Execution,
}

impl ExitCode {
    /// The numeric process exit code.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Pass => 0,
            ExitCode::Fail => 1,
            ExitCode::Input => 2,
            ExitCode::Execution => 3,
        }
    }

    /// Precedence: higher wins when outcomes combine.
    fn rank(self) -> u8 {
        match self {
            ExitCode::Pass => 0,
            ExitCode::Fail => 1,
            ExitCode::Execution => 2,
            ExitCode::Input => 3,
        }
    }

    /// The code of two outcomes together: 2 > 3 > 1 > 0.
    pub fn worst(self, other: ExitCode) -> ExitCode {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// The combined code of any number of outcomes (`Pass` when there are none).
    pub fn combine(codes: impl IntoIterator<Item = ExitCode>) -> ExitCode {
        codes.into_iter().fold(ExitCode::Pass, ExitCode::worst)
    }

    /// The code of an error of this kind.
    pub fn for_error(kind: ErrorKind) -> ExitCode {
        match kind {
            ErrorKind::Input => ExitCode::Input,
            ErrorKind::Execution => ExitCode::Execution,
        }
    }

    /// Whether this is anything but a pass.
    pub fn is_failure(self) -> bool {
        self != ExitCode::Pass
    }
}

impl From<ExitCode> for i32 {
    fn from(code: ExitCode) -> i32 {
        code.code()
    }
}

#[cfg(test)]
mod tests {
    use super::ExitCode::{self, *};

    #[test]
    fn precedence_is_input_then_execution_then_fail_then_pass() {
        let all = [Pass, Fail, Input, Execution];
        for a in all {
            for b in all {
                let w = a.worst(b);
                assert_eq!(w, b.worst(a), "{a:?} {b:?} commutes");
                let expected = if a == Input || b == Input {
                    Input
                } else if a == Execution || b == Execution {
                    Execution
                } else if a == Fail || b == Fail {
                    Fail
                } else {
                    Pass
                };
                assert_eq!(w, expected, "{a:?} with {b:?}");
            }
        }
        assert_eq!(ExitCode::combine([]), Pass);
        assert_eq!(ExitCode::combine([Fail, Execution, Fail]), Execution);
        assert_eq!(
            [Pass, Fail, Input, Execution].map(ExitCode::code),
            [0, 1, 2, 3]
        );
    }
}
