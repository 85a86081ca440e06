//! The one type for any record parity writes, with what every record has:
//! its schema tag, its exit code and its JSON. Reading one back by its
//! `schema` field ([`AnyRecord::read`]) sits above the consistency check,
//! which judges this type.

use crate::baseline::BaselineRecord;
use crate::bisect::BisectRecord;
use crate::compare::CompareRecord;
use crate::dispatches::DispatchesRecord;
use crate::exit::ExitCode;
use crate::fuzz::FuzzRecord;
use crate::run::RunRecord;
use crate::tokens::TokensRecord;

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

impl AnyRecord {
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
