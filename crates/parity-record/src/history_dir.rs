//! Reading a history directory: the run records saved in it, as
//! `DIR/<label>.json` or `DIR/<label>/run.json` (the layout of an
//! `--out-dir` per run). Other files (HTML, JUnit, a folder without a
//! run.json) are not records and are passed over; a `.json` file that is
//! not a run record is refused by name, so that a mislabeled file never
//! silently drops out of the history.

use crate::any::{AnyRecord, RecordError};
use crate::history::SavedRun;
use std::path::{Path, PathBuf};

/// Why a history directory could not be read; every message names the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The directory could not be listed.
    #[error("--history {}: cannot read the directory: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No run record in it: a history of nothing must not pass.
    #[error(
        "--history {}: no run records in the directory (it reads DIR/*.json and DIR/*/run.json, \
         as `parity check --json` or `--out-dir` wrote them)",
        dir.display()
    )]
    Empty {
        /// The directory.
        dir: PathBuf,
    },
    /// A file could not be read as a record.
    #[error("--history: {0}")]
    Record(#[from] RecordError),
    /// A record of another kind (a bisect or baseline record saved beside the runs).
    #[error(
        "--history: {}: a {schema} record, not a run record (parity.run-record/2); the history \
         reads run records only: move it out of the directory",
        file.display()
    )]
    NotARun {
        /// The file.
        file: PathBuf,
        /// The schema it names.
        schema: String,
    },
}

/// The run records in `dir`, in no particular order ([`crate::history::order`] orders them).
pub fn read_dir(dir: &Path) -> Result<Vec<SavedRun>, HistoryError> {
    let listing = |d: &Path| -> Result<Vec<PathBuf>, HistoryError> {
        let entries = std::fs::read_dir(d).map_err(|source| HistoryError::Dir {
            dir: d.to_path_buf(),
            source,
        })?;
        let mut paths = Vec::new();
        for e in entries {
            let e = e.map_err(|source| HistoryError::Dir {
                dir: d.to_path_buf(),
                source,
            })?;
            paths.push(e.path());
        }
        paths.sort();
        Ok(paths)
    };
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for path in listing(dir)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            let run = path.join("run.json");
            if run.is_file() {
                files.push((run, name));
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            let stem = path
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((path, stem));
        }
    }
    if files.is_empty() {
        return Err(HistoryError::Empty {
            dir: dir.to_path_buf(),
        });
    }
    let mut runs = Vec::new();
    for (file, label) in files {
        match AnyRecord::read(&file)? {
            AnyRecord::Run(record) => runs.push(SavedRun {
                file: file.display().to_string(),
                label,
                record,
            }),
            other => {
                return Err(HistoryError::NotARun {
                    file,
                    schema: other.schema().to_string(),
                })
            }
        }
    }
    Ok(runs)
}
