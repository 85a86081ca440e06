//! The output tail shared by the commands that write one record into an
//! output directory (`parity tokens`, `parity fuzz`, `parity serve`): the
//! terminal text (or the JSON on stdout), then `<stem>.json`, `<stem>.html`,
//! `<stem>-junit.xml` (each movable: [`Outputs`]) and an optional Markdown
//! summary, then the exit code.

use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use parity_record::AnyRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a command's reports go.
pub(super) struct Outputs {
    /// The JSON record.
    pub json: PathBuf,
    /// The HTML page.
    pub html: PathBuf,
    /// JUnit XML.
    pub junit: PathBuf,
    /// A Markdown summary, when asked for.
    pub markdown: Option<PathBuf>,
}

impl Outputs {
    /// `<out_dir>/<stem>.json`, `<stem>.html`, `<stem>-junit.xml`.
    pub fn in_dir(out_dir: &Path, stem: &str, markdown: Option<PathBuf>) -> Outputs {
        Outputs {
            json: out_dir.join(format!("{stem}.json")),
            html: out_dir.join(format!("{stem}.html")),
            junit: out_dir.join(format!("{stem}-junit.xml")),
            markdown,
        }
    }
}

/// Prints `record` and writes its files; returns the exit code (the
/// record's, or an I/O failure's when a file could not be written: every
/// file that can be written still is, and the run's outcome is printed).
pub(super) fn emit(record: &AnyRecord, json: bool, outputs: &Outputs) -> anyhow::Result<i32> {
    let mut stdout = std::io::stdout().lock();
    if json {
        let _ = writeln!(stdout, "{}", record.to_json());
    } else {
        let terminal = Terminal {
            colour: Colour::detect(),
            quiet: false,
            verbose: false,
        };
        let _ = stdout.write_all(&terminal.render(record)?);
    }
    let md = Markdown::default();
    let mut jobs: Vec<(&Path, &dyn Renderer)> = vec![
        (&outputs.json, &Json),
        (&outputs.html, &report::Html),
        (&outputs.junit, &Junit),
    ];
    if let Some(path) = &outputs.markdown {
        jobs.push((path, &md));
    }
    let failures: Vec<String> = jobs
        .iter()
        .filter_map(|(path, r)| report::write_report(path, *r, record).err())
        .map(|e| e.to_string())
        .collect();
    let written = if failures.is_empty() {
        if !json {
            let _ = writeln!(stdout, "report: {}", outputs.json.display());
        }
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    drop(stdout);
    Ok(super::check::exit_with(record.exit_code(), written))
}
