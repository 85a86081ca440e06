//! `parity fuzz`: the mask fuzzer. From the spec's `fuzz:` contract,
//! proptest strategies generate padded batches (seeded; every case has its
//! own seed), each run through the production IREE entry points (compiled
//! once, through the artifact cache; one runtime for the whole run) and
//! checked for pad-content, bucket, batch-order, batch-company and history
//! invariance and the lengths rule. The guard refuses malformed batches
//! before IREE. A violation is shrunk to a minimal case and its seed
//! persisted; persisted seeds are replayed first. Every invariant has a
//! negative control. Nothing here renders output; see `report`.
//! Documented in docs/fuzzing.md ("Mask fuzzer").

mod case;
mod checks;
mod compare;
pub mod error;
mod exec;
mod input;
mod invariants;
mod malformed;
pub mod regress;
mod run_one;
pub(crate) mod seed;
pub mod strategy;
pub mod targets;
#[cfg(test)]
mod tests;
mod validate;

pub use error::FuzzError;
pub use targets::execute_targets;
pub use validate::Malformed;

use crate::run::inputs::InputSources;
use crate::run::{self, RunOptions};
use crate::target::Target;
use exec::Exec;
use parity_record::{ErrorRecord, FuzzRecord, RunRecord, Status};
use parity_spec::Spec;
use run_one::run_invariant;
use std::path::PathBuf;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct FuzzOptions {
    /// Cache directory and compiler.
    pub run: RunOptions,
    /// Cases per invariant (default: the spec's `fuzz.cases`).
    pub cases: Option<usize>,
    /// The run's seed (default: the spec's `fuzz.seed`).
    pub seed: Option<u64>,
    /// Run only these invariants (all when empty).
    pub only: Vec<String>,
    /// Run only these (invariant, case seed) pairs, nothing generated.
    pub replay: Vec<(String, u64)>,
    /// The regressions file (default: the spec's `fuzz.regressions`).
    pub regressions: Option<PathBuf>,
    /// Append new failing seeds to the regressions file.
    pub persist: bool,
    /// Check one batch from this npz (`mel`, `mask`, optional `lengths`) instead of generating.
    pub input: Option<PathBuf>,
}

/// Shrinking evaluations allowed per violation.
const SHRINK_BUDGET: usize = 256;

/// Runs the spec's `fuzz:` section. Never fails as a whole: problems become
/// errors in the record.
pub fn execute(spec: &Spec, options: &FuzzOptions) -> FuzzRecord {
    execute_keeping(spec, options, false).0
}

/// [`execute`], and with `keep` each case's reference outputs (for
/// [`execute_targets`] to compare between targets).
fn execute_keeping(
    spec: &Spec,
    options: &FuzzOptions,
    keep: bool,
) -> (FuzzRecord, Vec<targets::Kept>) {
    let mut kept = Vec::new();
    let record = execute_body(spec, options, keep, &mut kept);
    (record, kept)
}

fn execute_body(
    spec: &Spec,
    options: &FuzzOptions,
    keep: bool,
    kept: &mut Vec<targets::Kept>,
) -> FuzzRecord {
    let clock = Instant::now();
    let mut record = FuzzRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    let Some(fuzz) = &spec.fuzz else {
        record.errors.push(ErrorRecord::input(format!(
            "{}: the spec has no `fuzz:` section (docs/stages-schema.md, \"fuzz\")",
            spec.path.display()
        )));
        return finish(record, clock);
    };
    record.seed = options.seed.unwrap_or(fuzz.seed);
    record.cases = options.cases.unwrap_or(fuzz.cases);
    for name in options
        .only
        .iter()
        .chain(options.replay.iter().map(|r| &r.0))
    {
        if !parity_spec::FUZZ_INVARIANTS.contains(&name.as_str()) && name != "malformed" {
            record.errors.push(ErrorRecord::input(format!(
                "no invariant named `{name}` (known: malformed, {})",
                parity_spec::FUZZ_INVARIANTS.join(", ")
            )));
        }
    }
    let regressions = options
        .regressions
        .clone()
        .or_else(|| fuzz.regressions.clone());
    let persisted = match &regressions {
        Some(p) => regress::read(p).unwrap_or_else(|m| {
            record.errors.push(ErrorRecord::input(m));
            Vec::new()
        }),
        None => Vec::new(),
    };
    if !record.errors.is_empty() {
        return finish(record, clock);
    }
    // A user's batch is validated before anything is compiled or run.
    let user = match &options.input {
        Some(path) => match input::load_checked(fuzz, path) {
            Ok(batch) => Some(batch),
            Err(e) => {
                record.errors.push(e);
                return finish(record, clock);
            }
        },
        None => None,
    };
    let Some((sources, modules)) = open_modules(spec, fuzz, options, &mut record) else {
        return finish(record, clock);
    };
    let exec = match Exec::new(spec, fuzz, &sources, &modules) {
        Ok(e) => e,
        Err(e) => {
            record.errors.push(e.to_record("fuzz"));
            return finish(record, clock);
        }
    };
    if keep {
        *exec.kept.borrow_mut() = Some(Vec::new());
    }
    if let (Some(path), Some(batch)) = (&options.input, user) {
        input::check_file(&exec, path, batch, &mut record);
        return finish(record, clock);
    }
    let wanted = |name: &str| {
        if !options.replay.is_empty() {
            options.replay.iter().any(|r| r.0 == name)
        } else {
            options.only.is_empty() || options.only.iter().any(|o| o == name)
        }
    };
    if wanted("malformed") && options.replay.is_empty() {
        record
            .invariants
            .push(input::guard_check(&exec, record.seed, record.cases));
    }
    run_invariants(
        &exec,
        fuzz,
        options,
        &persisted,
        regressions.as_deref(),
        &wanted,
        &mut record,
    );
    invariant_errors(&mut record);
    *kept = exec.kept.borrow_mut().take().unwrap_or_default();
    drop(exec);
    drop(modules);
    finish(record, clock)
}

/// The spec's inputs, and the fuzz module compiled and loaded on the
/// target `options` names; None (the errors recorded) when any step fails.
fn open_modules(
    spec: &Spec,
    fuzz: &parity_spec::FuzzSpec,
    options: &FuzzOptions,
    record: &mut FuzzRecord,
) -> Option<(InputSources, run::ModuleSet)> {
    let sources = match InputSources::open(spec) {
        Ok(s) => s,
        Err(m) => {
            record.errors.push(ErrorRecord::input(m.to_string()));
            return None;
        }
    };
    let mut only = spec.clone();
    only.subject.modules.retain(|name, _| name == &fuzz.module);
    let target = match Target::ready(spec, options.run.target.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return None;
        }
    };
    let mut scratch = RunRecord::new("", "", String::new());
    let compiler = run::load_compiler(&options.run, true, &mut scratch);
    let compiled = run::compile_all(&only, &target, &options.run, &compiler, &mut scratch);
    drop(compiler);
    record.compiler_revision = scratch.compiler_revision.take();
    record.warnings.append(&mut scratch.warnings);
    record.errors.append(&mut scratch.errors);
    if !record.errors.is_empty() {
        return None;
    }
    let modules = target.load(&compiled);
    record.errors.extend(modules.load_error_records());
    if !record.errors.is_empty() {
        return None;
    }
    Some((sources, modules))
}

/// Runs each wanted invariant (and the `lengths` rule) over its seeds: the
/// persisted regressions first, then the run's generated cases, or the
/// replayed seeds alone; a violation's seed is persisted when asked.
fn run_invariants(
    exec: &Exec<'_>,
    fuzz: &parity_spec::FuzzSpec,
    options: &FuzzOptions,
    persisted: &[regress::Entry],
    regressions: Option<&std::path::Path>,
    wanted: &dyn Fn(&str) -> bool,
    record: &mut FuzzRecord,
) {
    let mut lengths = invariants::plan(exec);
    lengths.push(invariants::Invariant {
        name: "lengths",
        description: "every `lengths_rule` output equals ceil(valid frames / n) per clip",
        shapes: fuzz.shapes.clone(),
        max_valid: usize::MAX,
        need_pad: false,
        skip: (!fuzz.outputs.iter().any(|o| o.lengths_rule.is_some()))
            .then(|| "no output has a `lengths_rule`".to_string()),
    });
    for inv in lengths.iter().filter(|i| wanted(i.name)) {
        let seeds: Vec<(u64, bool)> = if options.replay.is_empty() {
            let replayed = persisted
                .iter()
                .filter(|e| e.invariant == inv.name)
                .map(|e| (e.seed, true));
            let generated =
                (0..record.cases).map(|i| (seed::case_seed(record.seed, inv.name, i), false));
            replayed.chain(generated).collect()
        } else {
            options
                .replay
                .iter()
                .filter(|r| r.0 == inv.name)
                .map(|r| (r.1, true))
                .collect()
        };
        let (rec, violation) = run_invariant(exec, inv, &seeds, &mut record.replayed);
        record.invariants.push(rec);
        if let Some(v) = violation {
            if options.persist {
                if let Some(path) = regressions {
                    let entry = regress::Entry {
                        invariant: v.invariant.clone(),
                        seed: v.seed,
                    };
                    if let Err(m) = regress::append(path, &entry) {
                        record
                            .warnings
                            .push(format!("failing seed not persisted: {m}"));
                    }
                }
            }
            record.violations.push(v);
        }
    }
}

/// An input error or an execution error for each invariant that errored,
/// by what its note says.
fn invariant_errors(record: &mut FuzzRecord) {
    for inv in &record.invariants {
        if inv.status == Status::Error {
            if let Some(n) = &inv.note {
                record.errors.push(
                    if n.contains("malformed input refused") || n.starts_with("input:") {
                        ErrorRecord::input(format!("invariant `{}`: {n}", inv.name))
                    } else {
                        ErrorRecord::execution(format!("invariant `{}`: {n}", inv.name))
                    },
                );
            }
        }
    }
}

fn finish(mut record: FuzzRecord, clock: Instant) -> FuzzRecord {
    record.elapsed_s = clock.elapsed().as_secs_f64();
    record.status = record.derived_status();
    record
}
