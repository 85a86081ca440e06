//! Reading any record back by its `schema` field.

use crate::baseline::{BaselineRecord, BASELINE_SCHEMA};
use crate::bisect::{BisectRecord, BISECT_SCHEMA};
use crate::compare::{CompareRecord, COMPARE_SCHEMA};
use crate::dispatches::{DispatchesRecord, DISPATCHES_SCHEMA};
use crate::exit::ExitCode;
use crate::fuzz::{FuzzRecord, FUZZ_SCHEMA};
use crate::run::{RunRecord, RUN_RECORD_SCHEMA};
use crate::tokens::{TokensRecord, TOKENS_SCHEMA};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Every schema this parity reads.
pub const KNOWN_SCHEMAS: [&str; 9] = [
    RUN_RECORD_SCHEMA,
    BISECT_SCHEMA,
    COMPARE_SCHEMA,
    TOKENS_SCHEMA,
    BASELINE_SCHEMA,
    FUZZ_SCHEMA,
    crate::serving::SERVING_SCHEMA,
    crate::history::HISTORY_SCHEMA,
    DISPATCHES_SCHEMA,
];

/// Why a record file could not be read; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not (complete) JSON, or has no `schema` string.
    #[error("{}: not a readable parity record (a complete JSON object with a `schema` field): {source}", path.display())]
    NotARecord {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The schema is not one this parity reads.
    #[error("{}: unsupported record schema `{schema}` (this parity reads {})", path.display(), KNOWN_SCHEMAS.join(", "))]
    UnknownSchema {
        /// The file.
        path: PathBuf,
        /// The schema it names.
        schema: String,
    },
    /// The schema is known but the contents do not fit it (a damaged or hand-edited file).
    #[error("{}: damaged {schema} record: {source}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The schema it names.
        schema: String,
        /// What the JSON parser said, with line and column.
        source: serde_json::Error,
    },
    /// The record parses, but a verdict in it disagrees with the parts it is
    /// judged from (see [`crate::consistency`]): a hand-edited or damaged file.
    #[error("{}: {schema} record contradicts itself at `{field}`: {detail}; parity does not re-render a verdict its parts do not support", path.display())]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// The schema it names.
        schema: String,
        /// The field, as a JSON path (`status`, `stages[3].status`).
        field: String,
        /// What the field says and what its parts say.
        detail: String,
    },
}

/// Any record parity writes.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyRecord {
    /// `parity.run-record/2`.
    Run(RunRecord),
    /// `parity.bisect/2`.
    Bisect(BisectRecord),
    /// `parity.compare/1`.
    Compare(CompareRecord),
    /// `parity.tokens/1`.
    Tokens(Box<TokensRecord>),
    /// `parity.serving/1`.
    Serving(Box<crate::serving::ServingRecord>),
    /// `parity.baseline/1`.
    Baseline(BaselineRecord),
    /// `parity.fuzz/1`.
    Fuzz(Box<FuzzRecord>),
    /// `parity.history/1`.
    History(Box<crate::history::HistoryRecord>),
    /// `parity.dispatches/1`.
    Dispatches(Box<DispatchesRecord>),
}

#[derive(Deserialize)]
struct SchemaOnly {
    schema: String,
}

impl AnyRecord {
    /// Reads the record in `path`.
    pub fn read(path: &Path) -> Result<AnyRecord, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecordError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        AnyRecord::parse(&text, path)
    }

    /// Parses a record's JSON text and checks that its verdicts agree with
    /// their parts ([`crate::consistency`]); `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<AnyRecord, RecordError> {
        let record = AnyRecord::parse_unchecked(text, path)?;
        crate::consistency::check(&record).map_err(|e| RecordError::Inconsistent {
            path: path.to_path_buf(),
            schema: record.schema().to_string(),
            field: e.field,
            detail: e.detail,
        })?;
        Ok(record)
    }

    /// Parses a record's JSON text as it is, consistent or not.
    fn parse_unchecked(text: &str, path: &Path) -> Result<AnyRecord, RecordError> {
        let schema = serde_json::from_str::<SchemaOnly>(text)
            .map_err(|source| RecordError::NotARecord {
                path: path.to_path_buf(),
                source,
            })?
            .schema;
        let damaged = |source| RecordError::Damaged {
            path: path.to_path_buf(),
            schema: schema.clone(),
            source,
        };
        match schema.as_str() {
            RUN_RECORD_SCHEMA => serde_json::from_str(text).map(AnyRecord::Run),
            BISECT_SCHEMA => serde_json::from_str(text).map(AnyRecord::Bisect),
            COMPARE_SCHEMA => serde_json::from_str(text).map(AnyRecord::Compare),
            TOKENS_SCHEMA => serde_json::from_str(text).map(|r| AnyRecord::Tokens(Box::new(r))),
            crate::serving::SERVING_SCHEMA => {
                serde_json::from_str(text).map(|r| AnyRecord::Serving(Box::new(r)))
            }
            BASELINE_SCHEMA => serde_json::from_str(text).map(AnyRecord::Baseline),
            FUZZ_SCHEMA => serde_json::from_str(text).map(|r| AnyRecord::Fuzz(Box::new(r))),
            crate::history::HISTORY_SCHEMA => {
                serde_json::from_str(text).map(|r| AnyRecord::History(Box::new(r)))
            }
            DISPATCHES_SCHEMA => {
                serde_json::from_str(text).map(|r| AnyRecord::Dispatches(Box::new(r)))
            }
            _ => {
                return Err(RecordError::UnknownSchema {
                    path: path.to_path_buf(),
                    schema,
                })
            }
        }
        .map_err(damaged)
    }

    /// The record's schema tag.
    pub fn schema(&self) -> &str {
        match self {
            AnyRecord::Run(r) => &r.schema,
            AnyRecord::Bisect(r) => &r.schema,
            AnyRecord::Compare(r) => &r.schema,
            AnyRecord::Tokens(r) => &r.schema,
            AnyRecord::Serving(r) => &r.schema,
            AnyRecord::Baseline(r) => &r.schema,
            AnyRecord::Fuzz(r) => &r.schema,
            AnyRecord::History(r) => &r.schema,
            AnyRecord::Dispatches(r) => &r.schema,
        }
    }

    /// The exit code the record calls for.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            AnyRecord::Run(r) => r.exit_code(),
            AnyRecord::Bisect(r) => r.exit_code(),
            AnyRecord::Compare(r) => r.exit_code(),
            AnyRecord::Tokens(r) => r.exit_code(),
            AnyRecord::Serving(r) => r.exit_code(),
            AnyRecord::Baseline(r) => r.exit_code(),
            AnyRecord::Fuzz(r) => r.exit_code(),
            AnyRecord::History(r) => r.exit_code(),
            AnyRecord::Dispatches(r) => r.exit_code(),
        }
    }

    /// The record as pretty JSON (non-finite floats as strings, see [`crate::float`]).
    pub fn to_json(&self) -> String {
        let result = match self {
            AnyRecord::Run(r) => serde_json::to_string_pretty(r),
            AnyRecord::Bisect(r) => serde_json::to_string_pretty(r),
            AnyRecord::Compare(r) => serde_json::to_string_pretty(r),
            AnyRecord::Tokens(r) => serde_json::to_string_pretty(r),
            AnyRecord::Serving(r) => serde_json::to_string_pretty(r),
            AnyRecord::Baseline(r) => serde_json::to_string_pretty(r),
            AnyRecord::Fuzz(r) => serde_json::to_string_pretty(r),
            AnyRecord::History(r) => serde_json::to_string_pretty(r),
            AnyRecord::Dispatches(r) => serde_json::to_string_pretty(r),
        };
        // Records hold only strings, numbers, and maps with string keys:
        // serialising them cannot fail.
        result.unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }
}

impl From<RunRecord> for AnyRecord {
    fn from(r: RunRecord) -> Self {
        AnyRecord::Run(r)
    }
}

impl From<BisectRecord> for AnyRecord {
    fn from(r: BisectRecord) -> Self {
        AnyRecord::Bisect(r)
    }
}

impl From<CompareRecord> for AnyRecord {
    fn from(r: CompareRecord) -> Self {
        AnyRecord::Compare(r)
    }
}

impl From<TokensRecord> for AnyRecord {
    fn from(r: TokensRecord) -> Self {
        AnyRecord::Tokens(Box::new(r))
    }
}

impl From<BaselineRecord> for AnyRecord {
    fn from(r: BaselineRecord) -> Self {
        AnyRecord::Baseline(r)
    }
}

impl From<DispatchesRecord> for AnyRecord {
    fn from(r: DispatchesRecord) -> Self {
        AnyRecord::Dispatches(Box::new(r))
    }
}

impl From<FuzzRecord> for AnyRecord {
    fn from(r: FuzzRecord) -> Self {
        AnyRecord::Fuzz(Box::new(r))
    }
}

impl From<crate::serving::ServingRecord> for AnyRecord {
    fn from(r: crate::serving::ServingRecord) -> Self {
        AnyRecord::Serving(Box::new(r))
    }
}
