//! Errors from loading, validating and instantiating a stages.yaml spec.
//!
//! Every error that concerns a place in the file carries a [`Position`], so the
//! message starts with `file:line:col:` like a compiler diagnostic, followed by
//! the [`Scope`] (which stage / output / module the problem is in).

use std::fmt;
use std::path::PathBuf;

/// A place in a spec file: the path as given for messages, 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The spec file, as passed to `Spec::load` / `Spec::parse_str`.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// When the place is reached through a YAML alias: which anchor, and
    /// where it is defined (`in alias `*tol` (anchor `&tol` at 3:8)`).
    /// Line and column are the alias's, where the value is used.
    pub alias: Option<String>,
}

impl Position {
    /// A place not reached through an alias.
    pub fn new(file: PathBuf, line: usize, col: usize) -> Position {
        Position {
            file,
            line,
            col,
            alias: None,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)?;
        if let Some(alias) = &self.alias {
            write!(f, ": {alias}")?;
        }
        Ok(())
    }
}

/// Which part of the spec an error is about; rendered between the position and the detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Top-level keys (version, subject, oracle, ...).
    Top,
    /// A stage, by name.
    Stage(String),
    /// One output of a stage.
    Output {
        /// Stage name.
        stage: String,
        /// Output name.
        output: String,
    },
    /// A module declared under `subject.modules`.
    Module(String),
    /// A case under `cases`.
    Case(String),
    /// The `tokens:` section (`tokens`) or one of its parts (`prefill`, `decode`, `oracle`).
    Tokens(String),
    /// The `fuzz:` section.
    Fuzz,
    /// A request of a serving scenario, by id.
    Request(String),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Top => Ok(()),
            Scope::Stage(s) => write!(f, "stage `{s}`: "),
            Scope::Output { stage, output } => write!(f, "stage `{stage}`: output `{output}`: "),
            Scope::Module(m) => write!(f, "module `{m}`: "),
            Scope::Case(c) => write!(f, "case `{c}`: "),
            Scope::Tokens(part) if part == "tokens" => write!(f, "tokens: "),
            Scope::Tokens(part) => write!(f, "tokens.{part}: "),
            Scope::Fuzz => write!(f, "fuzz: "),
            Scope::Request(id) => write!(f, "request `{id}`: "),
        }
    }
}

/// An error loading, validating or instantiating a spec. The detail is boxed so
/// `Result<_, SpecError>` stays one pointer wide; match on [`SpecError::kind`].
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct SpecError(Box<SpecErrorKind>);

impl SpecError {
    /// What went wrong, for matching.
    pub fn kind(&self) -> &SpecErrorKind {
        &self.0
    }
}

impl From<SpecErrorKind> for SpecError {
    fn from(kind: SpecErrorKind) -> Self {
        SpecError(Box::new(kind))
    }
}

/// Everything that can go wrong turning a stages.yaml into a validated `Spec`.
#[derive(Debug, thiserror::Error)]
pub enum SpecErrorKind {
    /// The spec file could not be read.
    #[error("{}: cannot read spec: {source}", path.display())]
    Io {
        /// The spec file.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The spec is larger than the size limit (guards against unbounded reads).
    #[error("{}: spec is {size} bytes, larger than the {limit}-byte limit", path.display())]
    TooLarge {
        /// The spec file.
        path: PathBuf,
        /// Its size in bytes (at least; reading stopped past the limit).
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The text is not valid YAML (or is not a single document).
    #[error("{at}: YAML syntax error: {message}")]
    Syntax {
        /// Where the parser stopped.
        at: Position,
        /// The parser's description.
        message: String,
    },
    /// The document nests too deeply or expands aliases too much (alias bomb guard).
    #[error("{at}: {message}")]
    LimitExceeded {
        /// Where the limit was hit.
        at: Position,
        /// Which limit.
        message: String,
    },
    /// A mapping key that the schema does not define.
    #[error("{at}: {scope}unknown key `{key}` in {context} (expected one of: {allowed})")]
    UnknownKey {
        /// Position of the key.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// The offending key.
        key: String,
        /// The mapping it appeared in, e.g. `stage`, `output`, `literal`.
        context: String,
        /// The keys that are allowed there, comma separated.
        allowed: String,
    },
    /// The same key appears twice in one mapping.
    #[error("{at}: {scope}duplicate key `{key}` (first at line {first_line})")]
    DuplicateKey {
        /// Position of the second occurrence.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// The key.
        key: String,
        /// Line of the first occurrence.
        first_line: usize,
    },
    /// A required key is absent.
    #[error("{at}: {scope}missing required key `{field}` in {context}")]
    MissingField {
        /// Position of the mapping that lacks the key.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// The missing key.
        field: String,
        /// The mapping, e.g. `stage`.
        context: String,
    },
    /// A value has the wrong YAML type (e.g. a list where a string belongs).
    #[error("{at}: {scope}`{field}` must be {expected}, found {found}")]
    WrongType {
        /// Position of the value.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// The key (or description) of the value.
        field: String,
        /// What the schema wants.
        expected: String,
        /// What the file has.
        found: String,
    },
    /// A value of the right type that is not allowed (empty name, bad number, bad criterion, ...).
    #[error("{at}: {scope}{message}")]
    Invalid {
        /// Position of the value.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// What is wrong.
        message: String,
    },
    /// `version` is not 1.
    #[error("{at}: unsupported spec version {found} (this parity understands version 1)")]
    UnsupportedVersion {
        /// Position of the version value.
        at: Position,
        /// The version in the file.
        found: String,
    },
    /// `stages` is an empty list.
    #[error("{at}: `stages` is empty; a spec needs at least one stage")]
    NoStages {
        /// Position of the stages list.
        at: Position,
    },
    /// A dtype name parity does not know.
    #[error("{at}: {scope}unknown dtype `{name}` (expected one of bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)")]
    UnknownDType {
        /// Position of the dtype name.
        at: Position,
        /// Where in the spec.
        scope: Scope,
        /// The name as written.
        name: String,
    },
    /// Two stages share a name.
    #[error("{at}: stage `{name}`: duplicate stage name (first defined at line {first_line})")]
    DuplicateStage {
        /// Position of the second stage.
        at: Position,
        /// The name.
        name: String,
        /// Line of the first one.
        first_line: usize,
    },
    /// Two outputs of one stage share a name.
    #[error("{at}: stage `{stage}`: duplicate output name `{output}`")]
    DuplicateOutput {
        /// Position of the second output.
        at: Position,
        /// The stage.
        stage: String,
        /// The output name.
        output: String,
    },
    /// A `stage:` argument names a stage that does not exist.
    #[error("{at}: stage `{stage}`: argument {arg} references unknown stage `{referenced}`")]
    UnknownStage {
        /// Position of the argument.
        at: Position,
        /// The stage with the argument.
        stage: String,
        /// 0-based argument index.
        arg: usize,
        /// The stage name it references.
        referenced: String,
    },
    /// A `stage:` argument names an output the referenced stage does not have.
    #[error("{at}: stage `{stage}`: argument {arg} references output `{output}` of stage `{referenced}`, which {detail}")]
    UnknownOutput {
        /// Position of the argument.
        at: Position,
        /// The stage with the argument.
        stage: String,
        /// 0-based argument index.
        arg: usize,
        /// The referenced stage.
        referenced: String,
        /// The output name as written (empty when omitted).
        output: String,
        /// Why it does not resolve, listing the outputs that exist.
        detail: String,
    },
    /// Stages depend on each other in a loop.
    #[error("{at}: stage `{stage}`: dependency cycle: {cycle}")]
    Cycle {
        /// Position of the first stage (in file order) on the cycle.
        at: Position,
        /// That stage.
        stage: String,
        /// The cycle, e.g. `a -> b -> a`.
        cycle: String,
    },
    /// A stage uses a module that `subject.modules` does not declare.
    #[error("{at}: stage `{stage}`: module `{module}`{case} is not declared in subject.modules (declared: {declared})")]
    UndeclaredModule {
        /// Position of the stage's `module` value.
        at: Position,
        /// The stage.
        stage: String,
        /// The module name after templating.
        module: String,
        /// ` (case `x`)` when the name came from templating, else empty.
        case: String,
        /// The declared module names.
        declared: String,
    },
    /// A module's MLIR / vmfb file does not exist.
    #[error("{at}: module `{module}`: file {} does not exist", path.display())]
    MissingModuleFile {
        /// Position of the path value.
        at: Position,
        /// The module.
        module: String,
        /// The resolved path.
        path: PathBuf,
    },
    /// A `subject.parameters` file does not exist.
    #[error("{at}: parameter scope `{scope}`: file {} does not exist", path.display())]
    MissingParameterFile {
        /// Position of the path value.
        at: Position,
        /// The scope it is listed under.
        scope: String,
        /// The resolved path.
        path: PathBuf,
    },
    /// A mask refers to a stage argument index the stage does not have.
    #[error("{at}: stage `{stage}`: output `{output}`: mask argument index {index} is out of range (stage has {count} arguments)")]
    MaskArgOutOfRange {
        /// Position of the index.
        at: Position,
        /// The stage.
        stage: String,
        /// The output.
        output: String,
        /// The index as written.
        index: usize,
        /// How many arguments the stage has.
        count: usize,
    },
    /// A mask lists the same axis twice.
    #[error("{at}: stage `{stage}`: output `{output}`: mask axis {axis} is repeated")]
    RepeatedMaskAxis {
        /// Position of the axes list.
        at: Position,
        /// The stage.
        stage: String,
        /// The output.
        output: String,
        /// The repeated axis.
        axis: usize,
    },
    /// A literal's value count does not match its shape.
    #[error("{at}: stage `{stage}`: argument {arg}: literal has {found} values but shape {shape:?} needs {expected} (or use `value:` to broadcast one)")]
    LiteralCount {
        /// Position of the values list.
        at: Position,
        /// The stage.
        stage: String,
        /// 0-based argument index.
        arg: usize,
        /// The shape.
        shape: Vec<usize>,
        /// Product of the shape.
        expected: usize,
        /// Values given.
        found: usize,
    },
    /// A template string is malformed (unbalanced braces, empty variable name).
    #[error("{at}: stage `{stage}`: bad template `{text}`: {message}")]
    Template {
        /// Position of the string.
        at: Position,
        /// The stage.
        stage: String,
        /// The template text.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// A template uses a variable that the case does not define.
    #[error("{at}: stage `{stage}`: `{text}` uses unknown variable `{var}` in case `{case}` (defined: {defined})")]
    UnknownVariable {
        /// Position of the string.
        at: Position,
        /// The stage.
        stage: String,
        /// The template text.
        text: String,
        /// The variable.
        var: String,
        /// The case being instantiated.
        case: String,
        /// Variables that case defines (plus `case`).
        defined: String,
    },
}
