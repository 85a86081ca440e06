//! The JSON run record (schema `parity.run-record/1`, see docs/run-record.md).

use parity_record::RunRecord;

/// Serialises a run record as pretty JSON. Non-finite floats become null.
pub fn render(record: &RunRecord) -> String {
    // serde_json writes NaN/inf as null, which keeps the file valid JSON.
    serde_json::to_string_pretty(record).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Parses a run record written by [`render`], checking its schema.
pub fn parse(text: &str) -> Result<RunRecord, String> {
    let record: RunRecord = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if record.schema != parity_record::RUN_RECORD_SCHEMA {
        return Err(format!(
            "unsupported run record schema `{}` (this parity reads `{}`)",
            record.schema,
            parity_record::RUN_RECORD_SCHEMA
        ));
    }
    Ok(record)
}
