//! JSON: the record itself (schemas in docs/run-record.md and docs/bisect.md).

use super::{Renderer, ReportError};
use parity_record::AnyRecord;

/// The record as pretty JSON, newline-terminated.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json;

impl Renderer for Json {
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, ReportError> {
        let mut text = record.to_json();
        text.push('\n');
        Ok(text.into_bytes())
    }
}
