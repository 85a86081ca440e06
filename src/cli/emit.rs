//! The export flags every command that produces a record shares
//! (`--json`, `--junit`, `--markdown`, `--html`, each a PATH or `-` for
//! stdout, as cargo-nextest and hyperfine take them: [`ExportArgs`]), and the
//! output tail of the commands that write one record into an output
//! directory (`parity tokens`, `parity fuzz`, `parity serve`): the terminal
//! text (unless an export goes to stdout), then `<stem>.json`, `<stem>.html`,
//! `<stem>-junit.xml` and, when asked, a Markdown summary, then the exit code.

use crate::report::{self, table::Colour, Json, Junit, Markdown, Renderer, Terminal};
use parity_record::AnyRecord;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Extensions of the files parity reads (specs, modules, tensors): an export
/// never has one, so such a PATH is a mistake, most likely the old
/// `--json` (no value) followed by the spec or module.
const INPUT_EXTENSIONS: &[&str] = &[
    "yaml",
    "yml",
    "mlir",
    "mlirbc",
    "vmfb",
    "npy",
    "npz",
    "safetensors",
];

/// What to say when an export flag is given as a switch, the way `compare`,
/// `tokens`, `fuzz` and `points` took `--json` before every export took a PATH.
pub const OLD_SPELLING: &str = "every export flag takes a PATH now: `--json -` prints the \
     record on stdout (what `--json` alone did in `compare`, `tokens`, `fuzz` and `points`), \
     `--json FILE` writes it to FILE; the same for `--junit`, `--markdown` and `--html`";

/// Where one export goes: a file, or stdout (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    /// `-`: stdout, in place of the terminal text.
    Stdout,
    /// A file, written atomically (its directory created).
    File(PathBuf),
}

impl std::str::FromStr for Dest {
    type Err = String;

    fn from_str(text: &str) -> Result<Dest, String> {
        if text == "-" {
            return Ok(Dest::Stdout);
        }
        if text.is_empty() {
            return Err("an empty path (`-` is stdout)".into());
        }
        let path = PathBuf::from(text);
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if let Some(ext) = ext.filter(|e| INPUT_EXTENSIONS.contains(&e.as_str())) {
            return Err(format!(
                "`{text}` names an input file (.{ext}), which an export would overwrite; {OLD_SPELLING}"
            ));
        }
        Ok(Dest::File(path))
    }
}

impl Dest {
    /// The file, if this is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Dest::File(p) => Some(p),
            Dest::Stdout => None,
        }
    }

    /// Writes `bytes` here; the error names the file.
    pub fn deliver(&self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Dest::File(path) => report::write_atomic(path, bytes)
                .map_err(|e| format!("cannot write {}: {e}", path.display())),
            Dest::Stdout => {
                let mut out = std::io::stdout().lock();
                match out.write_all(bytes).and_then(|()| out.flush()) {
                    // A closed pipe (`parity ... --json - | head`) is the reader's choice.
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                        Err(format!("cannot write stdout: {e}"))
                    }
                    _ => Ok(()),
                }
            }
        }
    }

    /// Renders `record` with `renderer` and delivers it.
    pub fn render(&self, renderer: &dyn Renderer, record: &AnyRecord) -> Result<(), String> {
        let bytes = renderer.render(record).map_err(|e| e.to_string())?;
        self.deliver(&bytes)
    }
}

/// The export flags, one convention for every command that produces a
/// record. A flag not given keeps the command's default (a file in
/// `--out-dir` for `check`, `tokens`, `fuzz`, `serve`; `bisect.json` and
/// its page for `bisect`; nothing for `compare` and `report`).
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Reports (each a PATH, `-` for stdout)")]
pub struct ExportArgs {
    /// Write the JSON record to PATH (`-`: on stdout, in place of the text).
    #[arg(long, value_name = "PATH")]
    pub json: Option<Dest>,
    /// Write JUnit XML to PATH (`-`: on stdout).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<Dest>,
    /// Write a Markdown summary (under 1 MiB) to PATH, e.g. "$GITHUB_STEP_SUMMARY" (`-`: on stdout).
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<Dest>,
    /// Write the self-contained HTML report to PATH (`-`: on stdout).
    #[arg(long, value_name = "PATH")]
    pub html: Option<Dest>,
}

impl ExportArgs {
    /// The exports given, by flag name.
    fn given(&self) -> [(&'static str, Option<&Dest>); 4] {
        [
            ("--json", self.json.as_ref()),
            ("--junit", self.junit.as_ref()),
            ("--markdown", self.markdown.as_ref()),
            ("--html", self.html.as_ref()),
        ]
    }

    /// Writes every export given (JSON, JUnit, Markdown, HTML) of `record`;
    /// the failures, joined, when some could not be written.
    pub fn write_all(&self, record: &AnyRecord) -> Result<(), String> {
        let md = Markdown::default();
        let jobs: [(Option<&Dest>, &dyn Renderer); 4] = [
            (self.json.as_ref(), &Json),
            (self.junit.as_ref(), &Junit),
            (self.markdown.as_ref(), &md),
            (self.html.as_ref(), &report::Html),
        ];
        let failures: Vec<String> = jobs
            .into_iter()
            .filter_map(|(dest, r)| dest?.render(r, record).err())
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    }

    /// Refuses two exports on stdout (they would interleave into neither
    /// format); the message names them.
    pub fn check(&self) -> Result<(), String> {
        let on_stdout: Vec<&str> = self
            .given()
            .into_iter()
            .filter(|(_, d)| d == &Some(&Dest::Stdout))
            .map(|(flag, _)| flag)
            .collect();
        if on_stdout.len() > 1 {
            return Err(format!(
                "{} ask for stdout (`-`): only one export can go there, give the others a file",
                on_stdout.join(" and ")
            ));
        }
        Ok(())
    }

    /// Whether an export goes to stdout (then the terminal text does not).
    pub fn to_stdout(&self) -> bool {
        self.given().iter().any(|(_, d)| d == &Some(&Dest::Stdout))
    }

    /// Each export as given, else `<out_dir>/<stem>.json`, `<stem>-junit.xml`,
    /// `<stem>.html`; the Markdown summary only when asked for.
    pub fn in_dir(&self, out_dir: &Path, stem: &str) -> Outputs {
        let or = |given: &Option<Dest>, name: String| {
            given
                .clone()
                .unwrap_or_else(|| Dest::File(out_dir.join(name)))
        };
        Outputs {
            json: or(&self.json, format!("{stem}.json")),
            junit: or(&self.junit, format!("{stem}-junit.xml")),
            html: or(&self.html, format!("{stem}.html")),
            markdown: self.markdown.clone(),
        }
    }
}

/// Where a command's reports go, defaults filled in.
pub(super) struct Outputs {
    /// The JSON record.
    pub json: Dest,
    /// JUnit XML.
    pub junit: Dest,
    /// The HTML page.
    pub html: Dest,
    /// A Markdown summary, when asked for.
    pub markdown: Option<Dest>,
}

impl Outputs {
    /// Whether one of them goes to stdout.
    fn to_stdout(&self) -> bool {
        [&self.json, &self.junit, &self.html]
            .into_iter()
            .chain(self.markdown.as_ref())
            .any(|d| d == &Dest::Stdout)
    }
}

/// Loads the spec, or prints why it is invalid (the caller exits 2).
pub(super) fn load_spec(path: &std::path::Path) -> Option<parity_spec::Spec> {
    match parity_spec::Spec::load(path) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "parity: invalid spec: {}",
                report::sanitize::terminal(&e.to_string())
            );
            None
        }
    }
}

/// Prints `why` as an invalid-arguments error and returns exit 2.
pub(super) fn refuse(why: &str) -> anyhow::Result<i32> {
    eprintln!("parity: error: {}", report::sanitize::terminal(why));
    Ok(parity_record::ExitCode::Input.code())
}

/// The old spelling's hint for a command-line error, when the error is an
/// export flag given without its PATH (`parity compare A B --json`).
pub fn old_spelling_hint(e: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.as_str(),
        _ => return None,
    };
    let empty = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v)) => v.is_empty(),
        _ => true,
    };
    let export = ["--json ", "--junit ", "--markdown ", "--html "]
        .iter()
        .any(|f| flag.starts_with(f));
    (export && empty).then_some(OLD_SPELLING)
}

/// Prints `record`'s terminal text on stdout.
pub(super) fn print_text(record: &AnyRecord) -> anyhow::Result<()> {
    print_text_with(record, false)
}

/// Prints `record`'s terminal text on stdout, every row when `verbose`.
pub(super) fn print_text_with(record: &AnyRecord, verbose: bool) -> anyhow::Result<()> {
    let terminal = Terminal {
        colour: Colour::detect(),
        quiet: false,
        verbose,
    };
    let _ = std::io::stdout()
        .lock()
        .write_all(&terminal.render(record)?);
    Ok(())
}

/// Prints `record` (unless an export goes to stdout) and writes its exports;
/// returns the exit code (the record's, or an I/O failure's when an export
/// could not be written: every one that can be written still is, and the
/// run's outcome is printed).
pub(super) fn emit(record: &AnyRecord, outputs: &Outputs) -> anyhow::Result<i32> {
    let text = !outputs.to_stdout();
    if text {
        print_text(record)?;
    }
    let md = Markdown::default();
    let mut jobs: Vec<(&Dest, &dyn Renderer)> = vec![
        (&outputs.json, &Json),
        (&outputs.html, &report::Html),
        (&outputs.junit, &Junit),
    ];
    if let Some(dest) = &outputs.markdown {
        jobs.push((dest, &md));
    }
    let failures: Vec<String> = jobs
        .iter()
        .filter_map(|(dest, r)| dest.render(*r, record).err())
        .collect();
    let written = if failures.is_empty() {
        if let (true, Some(path)) = (text, outputs.json.file()) {
            let _ = writeln!(std::io::stdout().lock(), "report: {}", path.display());
        }
        Ok(())
    } else {
        Err(failures.join("; "))
    };
    Ok(super::check::exit_with(record.exit_code(), written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_is_stdout_and_input_names_are_refused() {
        assert_eq!("-".parse::<Dest>(), Ok(Dest::Stdout));
        assert_eq!(
            "out/run.json".parse::<Dest>(),
            Ok(Dest::File("out/run.json".into()))
        );
        // The old switch before the spec: `parity tokens --json spec.yaml`.
        let err = "subject/spec.YAML".parse::<Dest>().unwrap_err();
        assert!(err.contains("`--json -` prints"), "{err}");
        assert!("model.mlir".parse::<Dest>().is_err());
        assert!("".parse::<Dest>().is_err());
    }

    #[test]
    fn two_exports_on_stdout_are_refused() {
        let args = ExportArgs {
            json: Some(Dest::Stdout),
            html: Some(Dest::Stdout),
            ..ExportArgs::default()
        };
        let err = args.check().unwrap_err();
        assert!(err.starts_with("--json and --html ask"), "{err}");
        let one = ExportArgs {
            json: Some(Dest::Stdout),
            junit: Some(Dest::File("j.xml".into())),
            ..ExportArgs::default()
        };
        assert!(one.check().is_ok() && one.to_stdout());
        let outputs = one.in_dir(Path::new("r"), "fuzz");
        assert_eq!(outputs.html, Dest::File("r/fuzz.html".into()));
        assert_eq!(outputs.junit, Dest::File("j.xml".into()));
        assert_eq!(outputs.markdown, None);
    }
}
