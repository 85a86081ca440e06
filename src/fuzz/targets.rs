//! `parity fuzz --target a,b`: every invariant's cases on each target in
//! turn (the same seeds, so the same batches), merged into one record whose
//! invariants, violations and replays name their target; each case's
//! reference outputs on a later target are compared with the first
//! target's under the invariant's tolerance, and the invariants whose
//! outcome differs between targets are labelled
//! ([`parity_record::triangulate_fuzz`]).

use super::case::Batch;
use super::compare::{compare_clip, Diff};
use super::exec::Exec;
use super::strategy::Draw;
use super::{execute, execute_keeping, finish, regress, FuzzOptions};
use crate::run;
use crate::target::Target;
use parity_record::{triangulate_fuzz, ErrorRecord, FuzzCross, FuzzRecord, Status};
use parity_spec::{FuzzTolerance, Spec};
use parity_tensor::Tensor;
use std::time::Instant;

/// One case's reference run on one target: the batch and its outputs.
pub struct Kept {
    /// The invariant the case was drawn for.
    invariant: String,
    /// The case seed (the same batch on every target).
    seed: u64,
    /// The tolerance the invariant judges with.
    tolerance: FuzzTolerance,
    /// The batch run.
    batch: Batch,
    /// Its outputs.
    outputs: Vec<Tensor>,
}

/// Keeps the reference run of `draw` when `exec` keeps cases (a
/// several-target run). A batch that does not run is not kept: the
/// invariant's own check of it errors and says why.
pub(super) fn keep(exec: &Exec<'_>, invariant: &str, seed: u64, draw: &Draw) {
    if exec.kept.borrow().is_none() {
        return;
    }
    let batch = draw.batch();
    let Ok(outputs) = exec.run(&batch) else {
        return;
    };
    let tolerance = if invariant == "lengths" {
        FuzzTolerance::Exact
    } else {
        exec.fuzz.tolerance_of(invariant)
    };
    if let Some(kept) = exec.kept.borrow_mut().as_mut() {
        kept.push(Kept {
            invariant: invariant.to_string(),
            seed,
            tolerance,
            batch,
            outputs,
        });
    }
}

/// Runs the spec's `fuzz:` section on each of `targets` (one target, or
/// none: [`execute`] on it, or on the default).
pub fn execute_targets(spec: &Spec, options: &FuzzOptions, targets: &[String]) -> FuzzRecord {
    let on = |name: Option<&String>| {
        let mut one = options.clone();
        one.run.target = name.cloned().or_else(|| options.run.target.clone());
        one
    };
    if targets.len() < 2 {
        return execute(spec, &on(targets.first()));
    }
    let clock = Instant::now();
    let mut merged = FuzzRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    // Every target is checked before anything runs: one message per problem.
    for name in targets {
        if let Err(e) = Target::ready(spec, Some(name)) {
            merged.errors.push(ErrorRecord::input(e.to_string()));
        }
    }
    if !merged.errors.is_empty() {
        return finish(merged, clock);
    }
    // Seeds are persisted once, after every target ran, so that a later
    // target does not replay what an earlier one found as a persisted seed.
    let parts: Vec<(FuzzRecord, Vec<Kept>)> = targets
        .iter()
        .map(|t| {
            let mut one = on(Some(t));
            one.persist = false;
            execute_keeping(spec, &one, true)
        })
        .collect();
    merged.targets = targets.to_vec();
    let first_kept = &parts[0].1;
    for (name, (part, kept)) in targets.iter().zip(&parts) {
        merge(&mut merged, name, part);
        // Nothing to compare on the first target, or without a `fuzz:`
        // section (every part then holds that one error).
        let Some(fuzz) = spec.fuzz.as_ref().filter(|_| name != &targets[0]) else {
            continue;
        };
        let at = merged.invariants.len() - part.invariants.len();
        for inv in &mut merged.invariants[at..] {
            inv.vs_first = cross(fuzz, &targets[0], first_kept, kept, &inv.name);
        }
    }
    if options.persist {
        persist(spec, options, &mut merged);
    }
    merged.triangulation = triangulate_fuzz(&merged);
    finish(merged, clock)
}

/// Adds target `name`'s record to `merged`, every row named.
fn merge(merged: &mut FuzzRecord, name: &str, part: &FuzzRecord) {
    merged.seed = part.seed;
    merged.cases = part.cases;
    merged.compiler_revision = merged
        .compiler_revision
        .take()
        .or_else(|| part.compiler_revision.clone());
    let named = Some(name.to_string());
    merged
        .replayed
        .extend(part.replayed.iter().cloned().map(|mut r| {
            r.target.clone_from(&named);
            r
        }));
    merged
        .invariants
        .extend(part.invariants.iter().cloned().map(|mut i| {
            i.target.clone_from(&named);
            i
        }));
    merged
        .violations
        .extend(part.violations.iter().cloned().map(|mut v| {
            v.target.clone_from(&named);
            v
        }));
    for e in &part.errors {
        let mut e = e.clone();
        // A problem common to every target (a bad spec, an unknown
        // invariant) is said once, as the first target said it.
        let said = |m: &ErrorRecord| {
            m.message == e.message
                || merged
                    .targets
                    .iter()
                    .any(|t| m.message == format!("target `{t}`: {}", e.message))
        };
        if merged.errors.iter().any(said) {
            continue;
        }
        if !e.message.contains(&format!("target `{name}`")) {
            e.message = format!("target `{name}`: {}", e.message);
        }
        merged.errors.push(e);
    }
    for w in &part.warnings {
        if !merged.warnings.contains(w) {
            merged.warnings.push(w.clone());
        }
    }
}

/// Invariant `name`'s cases on a later target against the first target's,
/// paired by seed; None when no case ran on both.
fn cross(
    fuzz: &parity_spec::FuzzSpec,
    first: &str,
    a: &[Kept],
    b: &[Kept],
    name: &str,
) -> Option<FuzzCross> {
    let mut out = FuzzCross {
        target: first.to_string(),
        status: Status::Pass,
        cases: 0,
        max_diff: 0.0,
        seed: None,
        moved: None,
    };
    for kb in b.iter().filter(|k| k.invariant == name) {
        let Some(ka) = a
            .iter()
            .find(|k| k.invariant == name && k.seed == kb.seed && k.batch == kb.batch)
        else {
            continue;
        };
        let diff = (0..ka.batch.shape.clips).fold(Diff::default(), |d, c| {
            let valid = ka.batch.clips[c].valid;
            d.and(compare_clip(
                fuzz,
                ka.tolerance,
                &ka.outputs,
                c,
                valid,
                &kb.outputs,
                c,
            ))
        });
        out.cases += 1;
        out.max_diff = out.max_diff.max(diff.max_diff);
        if out.moved.is_none() && diff.moved.is_some() {
            out.status = Status::Fail;
            out.seed = Some(kb.seed);
            out.moved = diff.moved;
        }
    }
    (out.cases > 0).then_some(out)
}

/// Appends every target's violations to the regressions file, once each.
fn persist(spec: &Spec, options: &FuzzOptions, record: &mut FuzzRecord) {
    let path = options
        .regressions
        .clone()
        .or_else(|| spec.fuzz.as_ref().and_then(|f| f.regressions.clone()));
    let Some(path) = path else {
        return;
    };
    for v in &record.violations {
        let entry = regress::Entry {
            invariant: v.invariant.clone(),
            seed: v.seed,
        };
        if let Err(m) = regress::append(&path, &entry) {
            let w = format!("failing seed not persisted: {m}");
            if !record.warnings.contains(&w) {
                record.warnings.push(w);
            }
        }
    }
}
