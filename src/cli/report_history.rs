//! `parity report --history DIR`: the history of the run records saved in
//! DIR, built by parity-record ([`parity_record::HistoryRecord`]) and
//! rendered by the report renderers, with the one export-flag convention.

use super::report::{band_and_metrics, ReportArgs};
use crate::report;
use parity_record::{history_dir, AnyRecord, HistoryRecord};
use std::path::Path;

/// Reads DIR, builds the history, prints and exports it; the exit code is
/// the history's (1 when a stage grew in the newest run), 2 for a directory
/// that holds no run record or a file that is not one.
pub fn run(args: &ReportArgs, dir: &Path) -> anyhow::Result<i32> {
    let saved = match history_dir::read_dir(dir) {
        Ok(s) => s,
        Err(e) => return super::emit::refuse(&e.to_string()),
    };
    // The band comes from the newest run's spec; `build` picks the same one.
    let (ordered, _) = parity_record::history::order(saved);
    let newest_spec = ordered.last().map(|r| r.record.spec.clone());
    let (band, metrics) = match band_and_metrics(args, newest_spec.as_deref().unwrap_or("")) {
        Ok(b) => b,
        Err(e) => return super::emit::refuse(&e),
    };
    let Some(history) = HistoryRecord::build(&dir.display().to_string(), ordered, band, &metrics)
    else {
        return super::emit::refuse(&format!(
            "--history {}: no run records in the directory",
            dir.display()
        ));
    };
    for k in &history.skipped {
        eprintln!(
            "parity: warning: --history: skipped {}: {}",
            report::sanitize::terminal(&k.file),
            report::sanitize::terminal(&k.reason)
        );
    }
    let record = AnyRecord::History(Box::new(history));
    let exports = &args.exports;
    if !exports.to_stdout() {
        super::emit::print_text_with(&record, args.verbose)?;
    }
    let written = exports.write_all(&record);
    Ok(super::check::exit_with(record.exit_code(), written))
}
