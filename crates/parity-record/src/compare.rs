//! The compare record (`parity.compare/1`): `parity compare A B` as data.

use crate::common::{ErrorRecord, Status};
use crate::criterion::CriterionRecord;
use crate::exit::ExitCode;
use crate::run::OutputMetrics;
use serde::{Deserialize, Serialize};

/// Schema tag of the compare record.
pub const COMPARE_SCHEMA: &str = "parity.compare/1";

/// One tensor as `parity compare` read it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSource {
    /// The file.
    pub file: String,
    /// The array name inside an .npz/.safetensors file.
    pub key: Option<String>,
    /// Its dtype, once read.
    pub dtype: Option<String>,
    /// Its shape, once read.
    pub shape: Option<Vec<usize>>,
}

/// The result of comparing two tensors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRecord {
    /// Always [`COMPARE_SCHEMA`].
    pub schema: String,
    /// pass, fail, or error (a file could not be read or the tensors do not match up).
    pub status: Status,
    /// The production (actual) tensor.
    pub actual: TensorSource,
    /// The oracle (expected) tensor.
    pub expected: TensorSource,
    /// The mask, when one was given.
    pub mask: Option<TensorSource>,
    /// The metrics (absent on error).
    pub metrics: Option<OutputMetrics>,
    /// The checks made (allclose for floats, exact otherwise).
    pub criteria: Vec<CriterionRecord>,
    /// What went wrong.
    pub errors: Vec<ErrorRecord>,
}

impl CompareRecord {
    /// A record of comparing `actual` with `expected`, nothing measured yet.
    pub fn new(actual: TensorSource, expected: TensorSource) -> Self {
        CompareRecord {
            schema: COMPARE_SCHEMA.to_string(),
            status: Status::Pass,
            actual,
            expected,
            mask: None,
            metrics: None,
            criteria: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The same record, errored.
    pub fn with_error(mut self, error: ErrorRecord) -> Self {
        self.status = Status::Error;
        self.errors.push(error);
        self
    }

    /// 0 pass, 1 fail, 2/3 on errors.
    pub fn exit_code(&self) -> ExitCode {
        let fail = (self.status == Status::Fail).then_some(ExitCode::Fail);
        ExitCode::combine(self.errors.iter().map(ErrorRecord::exit_code).chain(fail))
    }
}
