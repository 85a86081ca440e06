//! Renders a run record for people (terminal table) and machines (JSON,
//! JUnit, HTML). Pure functions of the record: nothing here executes a stage.

pub mod bisect_text;
pub mod html;
pub mod json;
pub mod junit;
pub mod node_data;
pub mod table;

use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file in the same
/// directory, synced, then renamed over the target (creating the directory).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    parity_tensor::write_file_atomic(path, bytes).map_err(std::io::Error::other)
}
