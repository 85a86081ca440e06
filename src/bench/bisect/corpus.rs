//! The porting-bug corpus: faults people hit when porting models, each a
//! hand edit of a bundled subject's module with a citation of the public
//! report it comes from (examples/porting-bugs/corpus.json). Neither the
//! injector nor the repair catalogue was built from them. Each is bisected
//! as the matrix bisects an injected fault and scored with its columns.

use super::subjects::{outcome_cells, Scored, OUTCOME_HEADER};
use super::{bundled_subject, judge, prepare, MatrixError, Outcome, Prepared};
use crate::bisect::inject::Answer;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// The corpus file, relative to the repository.
pub const CORPUS: &str = "examples/porting-bugs/corpus.json";

/// One porting bug.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Short name.
    pub name: String,
    /// The kind of bug (the table's rows), e.g. `op swap`.
    pub class: String,
    /// The bundled subject (`basic`, `gemma3n`).
    pub subject: String,
    /// The stage whose function holds the fault.
    pub stage: String,
    /// The hand edits, applied in order.
    pub edits: Vec<TextEdit>,
    /// The SSA names (in the edited function) of the ops where the fault
    /// is: naming any one of them is right.
    pub answers: Vec<String>,
    /// What the bug is, for people.
    pub what: String,
    /// The public report it comes from.
    pub cite: String,
}

/// One hand edit.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextEdit {
    /// Text of the subject's module as bisect reads it (IREE-normalised,
    /// generic form: `--work-dir` keeps it) that occurs exactly once...
    pub replace: String,
    /// ...and what it becomes.
    pub with: String,
}

/// What bisect made of one corpus entry.
#[derive(Clone, Debug)]
pub struct CorpusRow {
    /// The entry.
    pub entry: Entry,
    /// The classification.
    pub outcome: Outcome,
    /// What bisect said.
    pub said: String,
    /// Right answers (op indices in the faulty function).
    pub answers: Vec<usize>,
    /// Probes bisect used.
    pub probes: usize,
    /// Wall time of the bisect run.
    pub wall: Duration,
    /// For an ambiguous answer: whether the repairs are one function.
    pub equivalent: Option<bool>,
    /// Whether the reproducer fails as it should (none when not checked).
    pub reproduces: Option<bool>,
}

impl CorpusRow {
    /// One line for people.
    pub fn line(&self) -> String {
        format!(
            "{:<28} {:<9} {:>3} probes {:>6.1}s  {}/{} | {} | {}",
            self.entry.name,
            self.outcome.name(),
            self.probes,
            self.wall.as_secs_f64(),
            self.entry.subject,
            self.entry.stage,
            self.entry.what,
            self.said
        )
    }
}

/// Reads the corpus.
pub fn load(path: &Path) -> Result<Vec<Entry>, MatrixError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| MatrixError::Setup(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| MatrixError::Setup(format!("{}: {e}", path.display())))
}

/// Runs every entry (`only`: those names, when not empty), one prepared
/// subject each, with the work files under `work/<name>`.
pub fn run_all(
    root: &Path,
    entries: &[Entry],
    work: &Path,
    cache_dir: &Path,
    compiler_lib: Option<&Path>,
    mut each: impl FnMut(&CorpusRow),
) -> Result<Vec<CorpusRow>, MatrixError> {
    let mut prepared: BTreeMap<String, Prepared> = BTreeMap::new();
    let mut rows = Vec::new();
    for e in entries {
        if !prepared.contains_key(&e.subject) {
            let p = prepare(bundled_subject(root, &e.subject)?, compiler_lib)?;
            // What the entries' edits are written against, for their authors.
            let keep = work.join(format!("{}.normalised.mlir", e.subject));
            if std::fs::create_dir_all(work).is_ok() {
                let _ = std::fs::write(keep, &p.text);
            }
            prepared.insert(e.subject.clone(), p);
        }
        let p = &prepared[&e.subject];
        let row = run_entry(p, e, &work.join(&e.name), cache_dir, compiler_lib);
        each(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Applies one entry's edit and bisects it.
pub fn run_entry(
    p: &Prepared,
    e: &Entry,
    work: &Path,
    cache_dir: &Path,
    compiler_lib: Option<&Path>,
) -> CorpusRow {
    let mut row = CorpusRow {
        entry: e.clone(),
        outcome: Outcome::Crash,
        said: String::new(),
        answers: Vec::new(),
        probes: 0,
        wall: Duration::ZERO,
        equivalent: None,
        reproduces: None,
    };
    let (text, answers, loc) = match edited(p, e) {
        Ok(x) => x,
        Err(m) => {
            row.said = format!("corpus entry `{}`: {m}", e.name);
            return row;
        }
    };
    row.answers = answers;
    let t = Instant::now();
    match p.bisect(&text, &loc, &e.stage, work, cache_dir, compiler_lib) {
        Ok((record, _)) => {
            row.wall = t.elapsed();
            row.probes = record.probes;
            let j = judge(&row.answers, &record);
            (row.outcome, row.said, row.equivalent, row.reproduces) =
                (j.outcome, j.said, j.equivalent, j.reproduces);
        }
        Err(m) => row.said = m,
    }
    row
}

/// The edited module text, its right answers (op indices in the stage's
/// function as bisect reads it, normalised by IREE again) and the first
/// answer's location label.
pub fn edited(p: &Prepared, e: &Entry) -> Result<(String, Vec<usize>, String), String> {
    let mut text = p.text.clone();
    for (i, edit) in e.edits.iter().enumerate() {
        let n = text.matches(&edit.replace).count();
        if n != 1 {
            return Err(format!(
                "edit {i}: the text to replace occurs {n} times in the normalised module (it \
                 must occur once)"
            ));
        }
        text = text.replacen(&edit.replace, &edit.with, 1);
    }
    let function = p
        .functions
        .iter()
        .find(|(s, _)| *s == e.stage)
        .map(|(_, f)| f.clone())
        .ok_or_else(|| format!("stage `{}` is not one of the subject's", e.stage))?;
    let written = parity_mlir::parse(&text).map_err(|x| format!("the edit does not parse: {x}"))?;
    let normal = p
        .compiler
        .normalize("faulty.mlir", text.as_bytes())
        .map_err(|x| format!("the edited module does not compile: {x}"))?;
    let normal = parity_mlir::parse(&normal).map_err(|x| x.to_string())?;
    let (Some(w), Some(nf)) = (written.function(&function), normal.function(&function)) else {
        return Err(format!("no function `{function}` in the edited module"));
    };
    let mut answers = Vec::new();
    for name in &e.answers {
        let op = w
            .value_by_name(name)
            .and_then(|v| w.op_of(v))
            .ok_or_else(|| format!("answer `{name}` is not an op result in `{function}`"))?;
        answers.push(Answer {
            op_index: op,
            op_name: w.ops[op].name.clone(),
        });
    }
    let answers = crate::bisect::inject::remap(&answers, w, nf)
        .ok_or("an answer op is not in the normalised module")?;
    let loc = answers
        .first()
        .map(|a| crate::bisect::loc_label(&nf.ops[a.op_index].loc))
        .unwrap_or_default();
    Ok((text, answers.iter().map(|a| a.op_index).collect(), loc))
}

/// Per class: counts of each outcome, median probes and wall time.
pub fn table(rows: &[CorpusRow]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("{:<22} {}\n", "class", OUTCOME_HEADER);
    let mut classes: Vec<&str> = rows.iter().map(|r| r.entry.class.as_str()).collect();
    classes.sort();
    classes.dedup();
    let scored = |r: &CorpusRow| Scored {
        outcome: r.outcome,
        equivalent: r.equivalent,
        reproduces: r.reproduces,
        probes: r.probes,
        wall: r.wall,
    };
    for c in classes {
        let rs: Vec<Scored> = rows
            .iter()
            .filter(|r| r.entry.class == c)
            .map(scored)
            .collect();
        let _ = writeln!(out, "{c:<22} {}", outcome_cells(&rs));
    }
    let all: Vec<Scored> = rows.iter().map(scored).collect();
    let _ = writeln!(out, "{:<22} {}", "all", outcome_cells(&all));
    out
}
