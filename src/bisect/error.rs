//! Why a bisection could not finish: bad input (exit 2) or IREE (exit 3).
//! Each variant carries what its message names (the spec position, stage,
//! case, function, point, tensor, probe) and the error of the layer that
//! failed as its source.

use crate::run::inputs::InputError;
use crate::run::slices::ReadModuleError;
use parity_compare::CompareError;
use parity_iree::IreeError;
use parity_mlir::MlirError;
use parity_record::{ErrorKind, ErrorRecord, ExitCode, Location};
use parity_spec::{Position, SpecError};
use parity_tensor::{ByteLengthMismatch, TensorError};
use std::path::PathBuf;

/// A bisection failure; the message names the file, stage, point or tensor.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// The spec has no case of this name (input).
    #[error("no case `{case}`")]
    UnknownCase {
        /// The case asked for.
        case: String,
    },
    /// The spec's templates do not render for the case (input).
    #[error("case `{case}`: {source}")]
    Instantiate {
        /// The case.
        case: String,
        /// The spec layer's error (names file, line and stage).
        #[source]
        source: SpecError,
    },
    /// The spec has no stage of this name (input).
    #[error("no stage `{stage}`")]
    UnknownStage {
        /// The stage asked for.
        stage: String,
    },
    /// The stage names a module the subject does not declare (input).
    #[error("no module `{module}` (stage `{stage}`)")]
    UnknownModule {
        /// The stage.
        stage: String,
        /// Its `module:`.
        module: String,
    },
    /// The stage runs a prebuilt vmfb: there is no MLIR to bisect (input).
    #[error("stage `{stage}` runs a prebuilt vmfb ({}); bisect needs its MLIR", path.display())]
    PrebuiltModule {
        /// The stage.
        stage: String,
        /// The vmfb file.
        path: PathBuf,
    },
    /// The stage's MLIR cannot be read, normalised (IREE: execution) or
    /// parsed (input).
    #[error("{source}")]
    Module {
        /// The stage.
        stage: String,
        /// Why (names the MLIR file and line).
        #[source]
        source: ReadModuleError,
    },
    /// The stage's `bind:` does not fit its function's argument names (input).
    #[error("{message}")]
    Bind {
        /// The stage.
        stage: String,
        /// The binder's message (names the spec position and stage).
        message: String,
    },
    /// The module has no function of this name (input).
    #[error("{module} has no function `{function}` (stage `{stage}`)")]
    UnknownFunction {
        /// The MLIR file.
        module: String,
        /// The function asked for.
        function: String,
        /// The stage.
        stage: String,
    },
    /// A `slice:` point does not resolve in the function (input).
    #[error("stage `{stage}` slice point `{point}`: {source}")]
    SlicePoint {
        /// The stage.
        stage: String,
        /// The point as the spec gives it.
        point: String,
        /// Why.
        #[source]
        source: MlirError,
    },
    /// A `slice:` stage's cut cannot be made (input).
    #[error("stage `{stage}`: {source}")]
    StageSlice {
        /// The stage.
        stage: String,
        /// Why.
        #[source]
        source: MlirError,
    },
    /// The oracle store cannot be opened (input).
    #[error("{0}")]
    OracleStore(#[source] Box<TensorError>),
    /// The oracle store or a weights file cannot be opened (input).
    #[error("{0}")]
    Inputs(#[source] Box<InputError>),
    /// An `oracle:`/`weight:`/`stage:` argument's tensor cannot be had (input).
    #[error("{at}: stage `{stage}` argument {index}: {source}")]
    Argument {
        /// The argument's position in the spec.
        at: Position,
        /// The stage.
        stage: String,
        /// The argument's index.
        index: usize,
        /// Why (names the file and tensor).
        #[source]
        source: Box<InputError>,
    },
    /// A `literal:` argument's values do not fill its shape (input).
    #[error("{at}: stage `{stage}` argument {index}: {source}")]
    Literal {
        /// The argument's position in the spec.
        at: Position,
        /// The stage.
        stage: String,
        /// The argument's index.
        index: usize,
        /// Why.
        #[source]
        source: Box<ByteLengthMismatch>,
    },
    /// A `stage:` argument names an upstream output that does not exist (input).
    #[error("{at}: stage `{stage}` argument {index}: unknown upstream `{upstream}`")]
    UnknownUpstream {
        /// The argument's position in the spec.
        at: Position,
        /// The stage.
        stage: String,
        /// The argument's index.
        index: usize,
        /// The upstream output named, `STAGE.OUTPUT` (one string: keeps the
        /// error small enough to return by value).
        upstream: String,
    },
    /// The function takes another number of inputs than the spec gives (input).
    #[error("stage `{stage}`: the function takes {takes} inputs, the spec gives {given}")]
    InputCount {
        /// The stage.
        stage: String,
        /// Inputs the function (or slice) takes.
        takes: usize,
        /// Arguments the spec gives.
        given: usize,
    },
    /// The function returns another number of values than the spec lists (input).
    #[error(
        "stage `{stage}`: the function returns {returns} values, the spec lists {listed} outputs"
    )]
    OutputCount {
        /// The stage.
        stage: String,
        /// Values the function (or slice) returns.
        returns: usize,
        /// Outputs the spec lists.
        listed: usize,
    },
    /// Bisect was asked for a stage none of whose outputs fails (input).
    #[error("stage `{stage}` has no failing output")]
    NoFailingOutput {
        /// The stage.
        stage: String,
    },
    /// The failing output is not among the stage's outputs (input).
    #[error("the failing output `{output}` is not among the stage's outputs")]
    UnknownOutput {
        /// The output name.
        output: String,
    },
    /// An oracle tensor a checkpoint needs cannot be read (input).
    #[error("{source}")]
    OracleTensor {
        /// The oracle tensor.
        tensor: String,
        /// Why (names the file).
        #[source]
        source: Box<TensorError>,
    },
    /// An oracle tensor does not fit the value it checks (input).
    #[error("oracle `{tensor}` cannot be viewed as {shape:?}")]
    OracleShape {
        /// The oracle tensor.
        tensor: String,
        /// The value's shape.
        shape: Vec<usize>,
    },
    /// A value cannot be compared with its reference (input: shapes or dtypes differ).
    #[error("comparing {value} with {against}: {source}")]
    Compare {
        /// The SSA value.
        value: String,
        /// The reference (`oracle:<name>`, `shadow`).
        against: String,
        /// Why.
        #[source]
        source: CompareError,
    },
    /// A slice of the function (a probe, the region, the reproducer) cannot
    /// be cut: MLIR parity reads but cannot slice (input).
    #[error("slicing {function}: {source}")]
    Slice {
        /// The function.
        function: String,
        /// Why (names the line).
        #[source]
        source: MlirError,
    },
    /// The f64 shadow of a slice cannot be made (input: unsupported MLIR).
    #[error("f64 shadow of {function}: {source}")]
    Promote {
        /// The function.
        function: String,
        /// Why (names the line).
        #[source]
        source: MlirError,
    },
    /// The IREE compiler library cannot be loaded (execution).
    #[error("{0}")]
    Compiler(#[source] IreeError),
    /// The IREE runtime driver cannot be created (execution).
    #[error("{0}")]
    Runtime(#[source] IreeError),
    /// The spec has no such target (input).
    #[error(transparent)]
    Target(Box<crate::target::TargetError>),
    /// A probe module does not compile (execution).
    #[error("{source}")]
    Compile {
        /// The module's label (`model.mlir[probe 3]`).
        label: String,
        /// The compiler's error (bounded diagnostics).
        #[source]
        source: IreeError,
    },
    /// A compiled probe module does not load (execution).
    #[error("{source}")]
    Load {
        /// The module's label.
        label: String,
        /// The runtime's error.
        #[source]
        source: IreeError,
    },
    /// A slice function of a probe fails at run time (execution).
    #[error("running slice `{slice}`: {source}")]
    Invoke {
        /// The slice function.
        slice: String,
        /// The runtime's error.
        #[source]
        source: IreeError,
    },
    /// A slice needs a function argument the probe did not give (execution:
    /// parity cut the slice wrong).
    #[error("slice `{slice}` needs function argument {index} of {function} that was not given")]
    MissingArgument {
        /// The slice function.
        slice: String,
        /// The function it is cut from.
        function: String,
        /// The argument's index.
        index: usize,
    },
    /// A tensor cannot be widened to f64 or rounded back (execution).
    #[error("{what}: {source}")]
    Tensor {
        /// What was being converted.
        what: &'static str,
        /// Why.
        #[source]
        source: ByteLengthMismatch,
    },
    /// A module parity emitted does not have the shape it then edits (execution).
    #[error("{what}: {problem}")]
    EmittedText {
        /// Which text (`the repair search's slice`, `the reproducer's slice`).
        what: &'static str,
        /// What is missing.
        problem: String,
    },
    /// The repair search's region, unedited, already matches the oracle
    /// within the checkpoint budget (the stage's own tolerance is tighter),
    /// so no edit can be told apart from it (execution: nothing ran wrong,
    /// but the search cannot be done).
    #[error(
        "the unedited region matches the oracle here ({ulps:.1} ULPs), so no edit can be told \
         apart from it"
    )]
    RepairBaseline {
        /// The unedited region's end against the oracle, ULPs at max.
        ulps: f64,
    },
    /// The reproducer directory cannot be created (execution).
    #[error("{}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A reproducer file cannot be written (execution).
    #[error("{source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why (names the file).
        #[source]
        source: Box<TensorError>,
    },
    /// Any of the above, in one probe.
    #[error("probe {probe} ({why}): {source}")]
    Probe {
        /// The probe's number.
        probe: usize,
        /// What it was for.
        why: String,
        /// The error.
        #[source]
        source: Box<BisectError>,
    },
    /// Writing or running the reproducer failed. Always execution: the
    /// localisation before it stands, only the reproducer is missing.
    #[error("{action} the reproducer in {}: {source}", dir.display())]
    Reproducer {
        /// `writing` or `running`.
        action: &'static str,
        /// The reproducer directory.
        dir: PathBuf,
        /// The error.
        #[source]
        source: Box<BisectError>,
    },
}

impl From<crate::target::TargetError> for BisectError {
    fn from(e: crate::target::TargetError) -> Self {
        BisectError::Target(Box::new(e))
    }
}

impl BisectError {
    /// Input (exit 2) or execution (exit 3).
    pub fn kind(&self) -> ErrorKind {
        use BisectError::*;
        match self {
            UnknownCase { .. }
            | Instantiate { .. }
            | UnknownStage { .. }
            | UnknownModule { .. }
            | PrebuiltModule { .. }
            | Bind { .. }
            | UnknownFunction { .. }
            | SlicePoint { .. }
            | StageSlice { .. }
            | OracleStore(_)
            | Inputs(_)
            | Argument { .. }
            | Literal { .. }
            | UnknownUpstream { .. }
            | InputCount { .. }
            | OutputCount { .. }
            | NoFailingOutput { .. }
            | UnknownOutput { .. }
            | OracleTensor { .. }
            | OracleShape { .. }
            | Compare { .. }
            | Slice { .. }
            | Target(_)
            | Promote { .. } => ErrorKind::Input,
            Module { source, .. } => source.kind(),
            Compiler(_)
            | Runtime(_)
            | Compile { .. }
            | Load { .. }
            | Invoke { .. }
            | MissingArgument { .. }
            | Tensor { .. }
            | EmittedText { .. }
            | RepairBaseline { .. }
            | CreateDir { .. }
            | WriteFile { .. }
            | Reproducer { .. } => ErrorKind::Execution,
            Probe { source, .. } => source.kind(),
        }
    }

    /// The exit code this error calls for (parity_record's one table).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::for_error(self.kind())
    }

    /// Where it happened, in structured form (stage, case, tensor, spec position).
    pub fn location(&self) -> Location {
        use BisectError::*;
        let stage = |s: &String| Location {
            stage: Some(s.clone()),
            ..Location::default()
        };
        match self {
            UnknownCase { case } | Instantiate { case, .. } => Location {
                case: Some(case.clone()),
                ..Location::default()
            },
            UnknownStage { stage: s }
            | UnknownModule { stage: s, .. }
            | PrebuiltModule { stage: s, .. }
            | Module { stage: s, .. }
            | Bind { stage: s, .. }
            | UnknownFunction { stage: s, .. }
            | SlicePoint { stage: s, .. }
            | StageSlice { stage: s, .. }
            | InputCount { stage: s, .. }
            | OutputCount { stage: s, .. }
            | NoFailingOutput { stage: s } => stage(s),
            Argument {
                at,
                stage: s,
                index,
                ..
            }
            | Literal {
                at,
                stage: s,
                index,
                ..
            }
            | UnknownUpstream {
                at,
                stage: s,
                index,
                ..
            } => Location {
                file: Some(at.file.display().to_string()),
                line: Some(at.line as u64),
                col: Some(at.col as u64),
                stage: Some(s.clone()),
                argument: Some(*index),
                ..Location::default()
            },
            OracleTensor { tensor, .. } | OracleShape { tensor, .. } => Location {
                tensor: Some(tensor.clone()),
                ..Location::default()
            },
            UnknownOutput { output } => Location {
                tensor: Some(output.clone()),
                ..Location::default()
            },
            WriteFile { path, .. } | CreateDir { dir: path, .. } => Location {
                file: Some(path.display().to_string()),
                ..Location::default()
            },
            Probe { source, .. } | Reproducer { source, .. } => source.location(),
            OracleStore(_)
            | Inputs(_)
            | Compare { .. }
            | Slice { .. }
            | Promote { .. }
            | Target(_)
            | Compiler(_)
            | Runtime(_)
            | Compile { .. }
            | Load { .. }
            | Invoke { .. }
            | MissingArgument { .. }
            | Tensor { .. }
            | EmittedText { .. }
            | RepairBaseline { .. } => Location::default(),
        }
    }

    /// As a record error (kind, message, location).
    pub fn to_record(&self) -> ErrorRecord {
        let record = match self.kind() {
            ErrorKind::Input => ErrorRecord::input(self.to_string()),
            ErrorKind::Execution => ErrorRecord::execution(self.to_string()),
        };
        record.at(self.location())
    }

    /// The same error inside probe `probe` (`why`: what it was for).
    pub(crate) fn in_probe(self, probe: usize, why: &str) -> BisectError {
        BisectError::Probe {
            probe,
            why: why.to_string(),
            source: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Position {
        Position {
            file: "stages.yaml".into(),
            line: 12,
            col: 9,
            alias: None,
        }
    }

    #[test]
    fn kinds_messages_and_locations_follow_the_variant() {
        let e = BisectError::UnknownStage {
            stage: "no_such_stage".into(),
        };
        assert_eq!(e.kind(), ErrorKind::Input);
        assert_eq!(e.exit_code(), ExitCode::Input);
        assert_eq!(e.to_string(), "no stage `no_such_stage`");
        let r = e.to_record();
        assert_eq!(r.location.unwrap().stage.as_deref(), Some("no_such_stage"));

        let e = BisectError::UnknownUpstream {
            at: at(),
            stage: "conv".into(),
            index: 2,
            upstream: "norm.y".into(),
        };
        assert_eq!(
            e.to_string(),
            "stages.yaml:12:9: stage `conv` argument 2: unknown upstream `norm.y`"
        );
        let loc = e.location();
        assert_eq!(
            (loc.line, loc.col, loc.argument, loc.file.as_deref()),
            (Some(12), Some(9), Some(2), Some("stages.yaml"))
        );
    }

    #[test]
    fn a_probe_keeps_its_source_kind_and_names_itself() {
        let invoke = BisectError::Invoke {
            slice: "tapped".into(),
            source: IreeError::Invoke {
                module: "m".into(),
                function: "tapped".into(),
                message: "out of memory".into(),
            },
        }
        .in_probe(3, "oracle checkpoint, bisection");
        assert_eq!(invoke.kind(), ErrorKind::Execution);
        assert_eq!(invoke.exit_code().code(), 3);
        assert_eq!(
            invoke.to_string(),
            "probe 3 (oracle checkpoint, bisection): running slice `tapped`: invoking m.tapped failed: out of memory"
        );
        assert!(std::error::Error::source(&invoke).is_some());

        let slice = BisectError::Slice {
            function: "f".into(),
            source: MlirError {
                line: 4,
                col: 2,
                message: "no such value".into(),
            },
        }
        .in_probe(1, "baseline (untapped)");
        assert_eq!(slice.exit_code(), ExitCode::Input);
        assert_eq!(slice.to_record().kind, ErrorKind::Input);
    }

    #[test]
    fn a_reproducer_failure_is_execution_whatever_its_cause() {
        let e = BisectError::Reproducer {
            action: "writing",
            dir: "reports/bisect".into(),
            source: Box::new(BisectError::Slice {
                function: "f".into(),
                source: MlirError {
                    line: 1,
                    col: 1,
                    message: "x".into(),
                },
            }),
        };
        assert_eq!(e.kind(), ErrorKind::Execution);
        assert!(e
            .to_string()
            .starts_with("writing the reproducer in reports/bisect: slicing f:"));
    }
}
