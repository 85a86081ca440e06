//! The fault matrix: inject seeded faults of every kind
//! ([`crate::bisect::inject`]) into a subject, with the oracle's tensors
//! inside the injected op's scope removed, run `parity bisect` on each, and
//! classify what it said against the injector's answer. `parity bench
//! --bisect` prints it; an ignored test runs it on both subjects.

use crate::bisect::inject::{inject, FaultKind, Injected};
use crate::bisect::{self, BisectOptions};
use crate::run::RunOptions;
use parity_iree::IreeCompiler;
use parity_mlir::Module;
use parity_spec::{ModuleSource, Spec};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the matrix could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The spec, its module or its oracle could not be read.
    #[error("{0}")]
    Setup(String),
}

/// What bisect said about one injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// The injected op (or the documented right answer) named.
    Exact,
    /// A pair of adjacent ops named (proven one function), a right op among them.
    Pair,
    /// No op claimed; the right op listed among ambiguous repairs.
    Ambiguous,
    /// An honest region, no op named.
    Region,
    /// An op named that is not a right answer.
    Wrong,
    /// bisect failed (an error record, exit 3 or 2).
    Crash,
    /// The fault does not move the stage's outputs beyond tolerance.
    Masked,
}

impl Outcome {
    /// Every outcome, in table order.
    pub const ALL: [Outcome; 7] = [
        Outcome::Exact,
        Outcome::Pair,
        Outcome::Ambiguous,
        Outcome::Region,
        Outcome::Wrong,
        Outcome::Crash,
        Outcome::Masked,
    ];

    /// Column name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Exact => "exact",
            Outcome::Pair => "pair",
            Outcome::Ambiguous => "ambiguous",
            Outcome::Region => "region",
            Outcome::Wrong => "wrong",
            Outcome::Crash => "crash",
            Outcome::Masked => "masked",
        }
    }
}

/// A subject to inject into: its spec, one case, the stages to use, and
/// the places to leave alone (location substrings of the committed faults).
pub struct Subject {
    /// Short name for tables.
    pub name: String,
    /// The spec.
    pub spec: Spec,
    /// The case to bisect.
    pub case: String,
    /// Stages (by name) whose functions may receive a fault.
    pub stages: Vec<String>,
    /// An op whose location label is one of these, or whose raw location
    /// contains one, is not touched.
    pub exclude: Vec<String>,
}

/// A subject with its normalised module, ready for injections.
pub struct Prepared {
    subject: Subject,
    compiler: IreeCompiler,
    module_name: String,
    text: String,
    module: Module,
    /// (stage, function) pairs.
    functions: Vec<(String, String)>,
}

/// One injected fault and what bisect made of it.
#[derive(Clone, Debug)]
pub struct Row {
    /// The subject's name.
    pub subject: String,
    /// The fault kind.
    pub kind: FaultKind,
    /// The seed.
    pub seed: u64,
    /// The stage that holds the fault (empty when none could be injected).
    pub stage: String,
    /// What was injected.
    pub what: String,
    /// The classification.
    pub outcome: Outcome,
    /// What bisect named, with its evidence, or why not.
    pub said: String,
    /// The op bisect named (index into the faulty function) and its evidence.
    pub named: Option<(usize, parity_record::Evidence)>,
    /// The injector's right answers (op indices in the faulty function).
    pub answers: Vec<usize>,
    /// Probes bisect used.
    pub probes: usize,
    /// Wall time of the bisect run (the stage's run included).
    pub wall: Duration,
    /// For an ambiguous answer: whether the repairs were shown to compute
    /// the same function (docs/bisect.md, "equivalence").
    pub equivalent: Option<bool>,
    /// Whether the reproducer fails as it should (none when not checked).
    pub reproduces: Option<bool>,
}

impl Row {
    /// One line for people: kind, seed, outcome, probes, wall time, the
    /// stage, what was injected and what bisect said.
    pub fn line(&self) -> String {
        format!(
            "{:<19} seed {}: {:<9} {:>3} probes {:>6.1}s  {} | {} | {}",
            self.kind.name(),
            self.seed,
            self.outcome.name(),
            self.probes,
            self.wall.as_secs_f64(),
            self.stage,
            self.what,
            self.said
        )
    }
}

/// Normalises the subject's module (every selected stage must run one module).
pub fn prepare(subject: Subject, compiler_lib: Option<&Path>) -> Result<Prepared, MatrixError> {
    let setup = |m: String| MatrixError::Setup(m);
    let case = subject
        .spec
        .case(&subject.case)
        .ok_or_else(|| setup(format!("no case `{}`", subject.case)))?;
    let stages = subject
        .spec
        .instantiate(case)
        .map_err(|e| setup(e.to_string()))?;
    let mut functions = Vec::new();
    let mut module_name = None;
    for s in stages.iter().filter(|s| subject.stages.contains(&s.name)) {
        if module_name.get_or_insert(s.module.clone()) != &s.module || s.slice.is_some() {
            return Err(setup(format!(
                "stage `{}`: one module, function stages only",
                s.name
            )));
        }
        functions.push((s.name.clone(), s.function.clone()));
    }
    let module_name = module_name.ok_or_else(|| setup("no stage selected".into()))?;
    let Some(ModuleSource::Mlir(path)) = subject
        .spec
        .subject
        .modules
        .get(&module_name)
        .map(|m| &m.source)
    else {
        return Err(setup(format!("module `{module_name}` is not MLIR")));
    };
    let compiler = IreeCompiler::load(compiler_lib).map_err(|e| setup(e.to_string()))?;
    let bytes = parity_tensor::read_module_bytes(path)
        .map_err(|e| setup(format!("{}: {e}", path.display())))?;
    let text = compiler
        .normalize(&path.display().to_string(), &bytes)
        .map_err(|e| setup(e.to_string()))?;
    let module = parity_mlir::parse(&text).map_err(|e| setup(e.to_string()))?;
    Ok(Prepared {
        subject,
        compiler,
        module_name,
        text,
        module,
        functions,
    })
}

impl Prepared {
    /// Injects one fault and bisects it; the work files go under `work`.
    pub fn run_one(
        &self,
        kind: FaultKind,
        seed: u64,
        work: &Path,
        cache_dir: &Path,
        compiler_lib: Option<&Path>,
    ) -> Row {
        let mut row = Row {
            subject: self.subject.name.clone(),
            kind,
            seed,
            stage: String::new(),
            what: String::new(),
            outcome: Outcome::Crash,
            said: String::new(),
            named: None,
            answers: Vec::new(),
            probes: 0,
            wall: Duration::ZERO,
            equivalent: None,
            reproduces: None,
        };
        let fns: Vec<&str> = self.functions.iter().map(|(_, f)| f.as_str()).collect();
        let exclude = |f: &parity_mlir::Function, o: usize| {
            let label = crate::bisect::loc_label(&f.ops[o].loc);
            self.subject
                .exclude
                .iter()
                .any(|x| label == *x || f.ops[o].loc.raw.contains(x.as_str()))
        };
        let injected = match inject(&self.text, &self.module, &fns, kind, seed, &exclude) {
            Ok(i) => i,
            Err(e) => {
                row.said = format!("not injected: {e}");
                row.outcome = Outcome::Masked;
                return row;
            }
        };
        row.what = injected.what.clone();
        // bisect reads the module normalised again (constants hoisted):
        // the answers move with it.
        let injected = match self.normalised_answers(injected) {
            Ok(i) => i,
            Err(e) => {
                row.said = format!("the injected module: {e}");
                return row;
            }
        };
        row.answers = injected.answers.iter().map(|a| a.op_index).collect();
        row.stage = self
            .functions
            .iter()
            .find(|(_, f)| *f == injected.function)
            .map(|(s, _)| s.clone())
            .unwrap_or_default();
        match self.bisect(
            &injected.text,
            &injected.loc,
            &row.stage,
            work,
            cache_dir,
            compiler_lib,
        ) {
            Ok((record, wall)) => {
                row.wall = wall;
                row.probes = record.probes;
                let judged = judge(&row.answers, &record);
                (
                    row.outcome,
                    row.said,
                    row.named,
                    row.equivalent,
                    row.reproduces,
                ) = (
                    judged.outcome,
                    judged.said,
                    judged.named,
                    judged.equivalent,
                    judged.reproduces,
                );
            }
            Err(e) => row.said = e,
        }
        row
    }

    /// The injected fault with its answers as indices into the function of
    /// the faulty module as bisect will read it (normalised by IREE).
    fn normalised_answers(&self, mut injected: Injected) -> Result<Injected, String> {
        let written = parity_mlir::parse(&injected.text).map_err(|e| e.to_string())?;
        let text = self
            .compiler
            .normalize("faulty.mlir", injected.text.as_bytes())
            .map_err(|e| e.to_string())?;
        let normal = parity_mlir::parse(&text).map_err(|e| e.to_string())?;
        let (Some(w), Some(n)) = (
            written.function(&injected.function),
            normal.function(&injected.function),
        ) else {
            return Err(format!("no function `{}`", injected.function));
        };
        injected.answers = crate::bisect::inject::remap(&injected.answers, w, n)
            .ok_or("an answer op is not in the normalised module")?;
        Ok(injected)
    }

    /// Bisects `text` (the faulty module) on `stage`, with the oracle's
    /// tensors of the scope above `loc` removed.
    fn bisect(
        &self,
        text: &str,
        loc: &str,
        stage: &str,
        work: &Path,
        cache_dir: &Path,
        compiler_lib: Option<&Path>,
    ) -> Result<(bisect::BisectRecord, Duration), String> {
        std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
        let module = work.join("faulty.mlir");
        std::fs::write(&module, text).map_err(|e| format!("{}: {e}", module.display()))?;
        let mut spec = self.subject.spec.clone();
        if let Some(m) = spec.subject.modules.get_mut(&self.module_name) {
            m.source = ModuleSource::Mlir(module);
        }
        spec.oracle = self.oracle_without_scope(loc, work)?;
        let options = BisectOptions {
            run: RunOptions {
                cache_dir: cache_dir.to_path_buf(),
                compiler_lib: compiler_lib.map(Path::to_path_buf),
                cases: vec![self.subject.case.clone()],
                stages: vec![stage.to_string()],
                ..RunOptions::default()
            },
            strategy: parity_record::Strategy::Auto,
            repro_dir: work.join("repro"),
        };
        let t = Instant::now();
        let record = bisect::bisect(&spec, &options);
        let wall = t.elapsed();
        if let Ok(json) = serde_json::to_string_pretty(&record) {
            let _ = std::fs::write(work.join("bisect.json"), json);
        }
        Ok((record, wall))
    }

    /// An oracle store without the tensors named after the injected op's
    /// enclosing scope (the scope above the op's own: `a/b/c/op` drops `a_b_*`),
    /// stage outputs kept, so the oracle brackets a multi-op region.
    fn oracle_without_scope(&self, loc: &str, work: &Path) -> Result<PathBuf, String> {
        let dir = &self.subject.spec.oracle;
        let path = dir.join("manifest.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut manifest: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let segments: Vec<&str> = loc.split('/').collect();
        let keep = segments.len().saturating_sub(2).max(1);
        let scope = format!("{}_", segments[..keep.min(segments.len())].join("_"));
        let outputs: Vec<String> = self
            .subject
            .spec
            .stages
            .iter()
            .flat_map(|s| s.outputs.iter().map(|o| o.oracle.clone()))
            .collect();
        if let Some(tensors) = manifest["tensors"].as_object_mut() {
            tensors.retain(|name, _| {
                let bare = name.split_once('/').map_or(name.as_str(), |(_, t)| t);
                let base = bare.split('@').next().unwrap_or(bare);
                !bare.starts_with(&scope) || outputs.iter().any(|o| o.ends_with(base))
            });
            for entry in tensors.values_mut() {
                if let Some(f) = entry["file"].as_str() {
                    entry["file"] = serde_json::Value::String(dir.join(f).display().to_string());
                }
            }
        }
        let store = work.join("oracle");
        std::fs::create_dir_all(&store).map_err(|e| e.to_string())?;
        std::fs::write(store.join("manifest.json"), manifest.to_string())
            .map_err(|e| e.to_string())?;
        Ok(store)
    }
}

/// What bisect said about a fault, against its right answers.
pub struct Judged {
    /// The classification.
    pub outcome: Outcome,
    /// What bisect named, with its evidence, or why not.
    pub said: String,
    /// The op bisect named and its evidence.
    pub named: Option<(usize, parity_record::Evidence)>,
    /// For an ambiguous answer: whether the repairs are one function.
    pub equivalent: Option<bool>,
    /// Whether the reproducer bisect wrote fails as it should (none when
    /// none was checked).
    pub reproduces: Option<bool>,
}

/// Reads bisect's answer against the right ones (op indices in the faulty
/// function).
pub fn judge(answers: &[usize], record: &bisect::BisectRecord) -> Judged {
    use parity_record::Status;
    let right = |i: usize| answers.contains(&i);
    let mut j = Judged {
        outcome: Outcome::Crash,
        said: String::new(),
        named: None,
        equivalent: None,
        reproduces: record.reproducer_check.as_ref().map(|c| c.reproduces),
    };
    if record.status == Status::Error {
        j.said = record
            .errors
            .first()
            .map(|e| e.message.chars().take(200).collect())
            .unwrap_or_default();
        return j;
    }
    if record.stage.is_none() {
        j.outcome = Outcome::Masked;
        j.said = "no divergence".into();
        return j;
    }
    if let Some(op) = &record.first_divergent_op {
        j.outcome = match &op.pair {
            _ if right(op.op_index) && op.pair.is_none() => Outcome::Exact,
            Some(p) if right(op.op_index) || right(p.op_index) => Outcome::Pair,
            _ => Outcome::Wrong,
        };
        j.named = Some((op.op_index, op.evidence));
        j.said = format!("#{} {} ({:?})", op.op_index, op.op_name, op.evidence);
        return j;
    }
    // No op claimed: ambiguous when the repair search listed a right op.
    let listed = record
        .repair
        .as_ref()
        .filter(|r| r.claimed.is_none())
        .filter(|r| r.candidates.iter().any(|c| right(c.op_index)));
    j.outcome = match listed {
        Some(r) => {
            j.equivalent = Some(r.equivalence.as_ref().is_some_and(|e| e.holds()));
            Outcome::Ambiguous
        }
        None => Outcome::Region,
    };
    let region = record.region.as_ref().map_or(0, |r| r.ops);
    // An ambiguous answer says which ops it is one of and where an oracle
    // tensor would decide, as the record's own summary does.
    j.said = match listed.and_then(crate::report::localised::ambiguity) {
        Some(a) => format!("{a} (region of {region} ops)"),
        None => format!("{} ({region} ops)", j.outcome.name()),
    };
    j
}

pub mod corpus;
mod subjects;
pub use subjects::{bundled_subject, table, GEMMA3N_STAGES};
