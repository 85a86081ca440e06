//! The files `parity check` writes beyond its run record's exports: the run's
//! HTML page (with its bisect record, under `--bisect`) and, under
//! `--bisect`, `bisect.json`, `bisect.html` and `bisect.node-data.json` in
//! the output directory.

use super::{html, node_data, write_atomic, write_report, Html, Json};
use parity_record::{AnyRecord, BisectRecord, RunRecord};
use std::path::{Path, PathBuf};

/// What writing the bisect files came to: whether `bisect.json` was written
/// (the terminal then names it), and the first failure of any of them.
#[derive(Debug)]
pub struct BisectFiles {
    /// `bisect.json`, when it was written.
    pub json: Option<PathBuf>,
    /// The first write that failed, in the order json, html, node data.
    pub written: Result<(), String>,
}

/// Writes `bisect.json`, `bisect.html` and, when the record has a graph to
/// overlay, `bisect.node-data.json` into `out_dir`; each is tried even when
/// an earlier one failed.
pub fn write_bisect_files(out_dir: &Path, bisect: &BisectRecord) -> BisectFiles {
    let record = AnyRecord::Bisect(bisect.clone());
    let path = out_dir.join("bisect.json");
    let (json, mut written) = match write_report(&path, &Json, &record) {
        Ok(()) => (Some(path.clone()), Ok(())),
        Err(e) => (None, Err(e.to_string())),
    };
    let page = path.with_extension("html");
    if let Err(e) = write_report(&page, &Html, &record) {
        written = written.and(Err(e.to_string()));
    }
    if let Some(text) = node_data::render(bisect) {
        let path = out_dir.join("bisect.node-data.json");
        if let Err(e) = write_atomic(&path, text.as_bytes()) {
            written = written.and(Err(format!("cannot write {}: {e}", path.display())));
        }
    }
    BisectFiles { json, written }
}

/// The HTML page of one run, with the bisect record `parity check --bisect`
/// made of it (if any).
pub fn run_page(run: &RunRecord, bisect: Option<&BisectRecord>) -> String {
    let bisects: Vec<BisectRecord> = bisect.into_iter().cloned().collect();
    html::render(&html::HtmlInput {
        runs: std::slice::from_ref(run),
        bisects: &bisects,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_record::samples;

    #[test]
    fn the_bisect_files_are_written_and_bisect_json_is_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let bisect = samples::bisect_op();
        let files = write_bisect_files(dir.path(), &bisect);
        assert_eq!(files.written, Ok(()));
        let json = dir.path().join("bisect.json");
        assert_eq!(files.json.as_deref(), Some(json.as_path()));
        let want = super::super::Renderer::render(&Json, &AnyRecord::Bisect(bisect.clone()));
        assert_eq!(std::fs::read(&json).unwrap(), want.unwrap());
        let page = std::fs::read_to_string(dir.path().join("bisect.html")).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page:.80}");
        let node_data = dir.path().join("bisect.node-data.json");
        assert_eq!(
            std::fs::read_to_string(&node_data).ok(),
            node_data::render(&bisect)
        );
    }

    #[test]
    fn an_unwritable_directory_names_bisect_json_first() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the output directory should be: nothing can go under it.
        let blocked = dir.path().join("out");
        std::fs::write(&blocked, b"").unwrap();
        let files = write_bisect_files(&blocked, &samples::bisect_op());
        assert_eq!(files.json, None);
        let why = files.written.unwrap_err();
        assert!(why.contains("out/bisect.json"), "{why}");
    }

    #[test]
    fn the_run_page_shows_the_bisect_record_only_when_given() {
        let run = samples::failing_run();
        let bisect = samples::bisect_op();
        let with = run_page(&run, Some(&bisect));
        let without = run_page(&run, None);
        assert_ne!(with, without);
        assert_eq!(
            without,
            html::render(&html::HtmlInput {
                runs: std::slice::from_ref(&run),
                ..Default::default()
            })
        );
    }
}
