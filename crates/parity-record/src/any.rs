//! Reading any record back by its `schema` field.

use crate::baseline::BASELINE_SCHEMA;
use crate::bisect::BISECT_SCHEMA;
use crate::compare::COMPARE_SCHEMA;
use crate::dispatches::DISPATCHES_SCHEMA;
use crate::fuzz::FUZZ_SCHEMA;
use crate::run::RUN_RECORD_SCHEMA;
use crate::tokens::TOKENS_SCHEMA;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The record type lives below the consistency check that judges it.
pub use crate::any_record::AnyRecord;

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
}
