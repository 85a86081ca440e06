//! The output tail shared by the commands that write one record into an
//! output directory (`parity tokens`, `parity fuzz`): the terminal text (or
//! the JSON on stdout), then `<stem>.json`, `<stem>.html`, `<stem>-junit.xml`
//! and an optional Markdown summary, then the exit code.

use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use parity_record::AnyRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Prints `record` and writes its files under `out_dir`; returns the exit
/// code (the record's, or an I/O failure's when a file could not be written).
pub(super) fn emit(
    record: &AnyRecord,
    json: bool,
    out_dir: &Path,
    stem: &str,
    markdown: Option<PathBuf>,
) -> anyhow::Result<i32> {
    let mut stdout = std::io::stdout().lock();
    if json {
        let _ = writeln!(stdout, "{}", record.to_json());
    } else {
        let terminal = Terminal {
            colour: Colour::detect(),
            quiet: false,
        };
        let _ = stdout.write_all(&terminal.render(record)?);
    }
    let json_path = out_dir.join(format!("{stem}.json"));
    let md = Markdown::default();
    let mut jobs: Vec<(PathBuf, &dyn Renderer)> = vec![
        (json_path.clone(), &Json),
        (out_dir.join(format!("{stem}.html")), &report::Html),
        (out_dir.join(format!("{stem}-junit.xml")), &Junit),
    ];
    if let Some(path) = markdown {
        jobs.push((path, &md));
    }
    let failures: Vec<String> = jobs
        .iter()
        .filter_map(|(path, r)| report::write_report(path, *r, record).err())
        .map(|e| e.to_string())
        .collect();
    let written = if failures.is_empty() {
        if !json {
            let _ = writeln!(stdout, "report: {}", json_path.display());
        }
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    drop(stdout);
    Ok(super::check::exit_with(record.exit_code(), written))
}
