//! Renders records for people (terminal, Markdown, HTML) and machines (JSON,
//! JUnit, Model Explorer node data). Every renderer is a pure function of a record behind one trait,
//! [`Renderer`], returning the bytes to print or write: nothing here executes.

pub mod baseline;
pub mod bisect_text;
pub mod check_outputs;
pub mod compare_text;
pub mod dispatches_text;
pub mod fuzz_text;
pub mod headroom;
pub mod history_text;
pub mod html;
pub mod json;
pub mod junit;
pub mod localised;
pub mod markdown;
pub mod node_data;
pub mod sanitize;
pub mod serving_text;
pub mod stage_lines;
pub mod table;
pub mod terminal;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_chain;
#[cfg(test)]
mod tests_fuzz_targets;
#[cfg(test)]
mod tests_history;
#[cfg(test)]
mod tests_reading;
#[cfg(test)]
mod tests_tokens_targets;
pub mod tokens_targets_text;
pub mod tokens_text;
pub mod triangulation_text;

pub use html::Html;
pub use json::Json;
pub use junit::Junit;
pub use markdown::Markdown;
pub use terminal::Terminal;

use parity_record::AnyRecord;
use std::path::{Path, PathBuf};

/// One output format.
pub trait Renderer {
    /// The record rendered in this format.
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, ReportError>;
}

/// Why a report could not be rendered or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// quick-junit could not serialise the report.
    #[error("rendering JUnit XML: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    /// The report file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Renders `record` with `renderer` and writes it to `path` atomically.
pub fn write_report(
    path: &Path,
    renderer: &dyn Renderer,
    record: &AnyRecord,
) -> Result<(), ReportError> {
    let bytes = renderer.render(record)?;
    write_atomic(path, &bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, synced, then renamed over the target (creating the directory).
/// Temp files a killed run left in that directory are removed first.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
        // Best effort: a directory that cannot be listed fails the write below anyway.
        let _ = parity_tensor::remove_stale_temp_files(dir);
    }
    parity_tensor::write_file_atomic(path, bytes).map_err(std::io::Error::other)
}
