//! One invariant over its case seeds (replayed ones first): each case
//! checked, with its negative control, until the first violation, which is
//! shrunk to a minimal case.

use super::exec::Exec;
use super::{invariants, seed, strategy, targets, FuzzError, SHRINK_BUDGET};
use parity_record::{ControlRecord, InvariantRecord, ReplayRecord, Status, Violation};
use parity_spec::FuzzTolerance;

/// The tolerance as the record states it: `exact` or `max_abs X`.
pub(super) fn tolerance_text(t: FuzzTolerance) -> String {
    match t {
        FuzzTolerance::Exact => "exact".into(),
        FuzzTolerance::MaxAbs(x) => format!("max_abs {x}"),
    }
}

/// Runs one invariant over `seeds` (replayed ones first); stops at the first violation and shrinks it.
pub(super) fn run_invariant(
    exec: &Exec<'_>,
    inv: &invariants::Invariant,
    seeds: &[(u64, bool)],
    replayed: &mut Vec<ReplayRecord>,
) -> (InvariantRecord, Option<Violation>) {
    let tol = if inv.name == "lengths" {
        FuzzTolerance::Exact
    } else {
        exec.fuzz.tolerance_of(inv.name)
    };
    let mut rec = InvariantRecord::new(inv.name, inv.description, tolerance_text(tol));
    if let Some(why) = &inv.skip {
        rec.status = Status::Skipped;
        rec.note = Some(why.clone());
        return (rec, None);
    }
    let strategy = strategy::draw(
        exec.fuzz,
        &exec.sources,
        inv.shapes.clone(),
        inv.max_valid,
        inv.need_pad,
    );
    let err = |rec: &mut InvariantRecord, e: FuzzError| {
        rec.status = Status::Error;
        rec.note = Some(match e.kind() {
            parity_record::ErrorKind::Execution => e.to_string(),
            parity_record::ErrorKind::Input => format!("input: {e}"),
        });
    };
    for &(case_seed, is_replay) in seeds {
        let mut tree = match seed::tree(&strategy, case_seed) {
            Ok(t) => t,
            Err(e) => {
                err(&mut rec, e);
                return (rec, None);
            }
        };
        let draw = proptest::strategy::ValueTree::current(&tree);
        targets::keep(exec, inv.name, case_seed, &draw);
        if rec.control.is_none() && inv.name != "lengths" {
            match invariants::control(exec, inv.name, &draw) {
                Ok((description, d)) => {
                    rec.control = Some(ControlRecord {
                        description,
                        fired: !d.holds(),
                        max_diff: d.max_diff,
                    })
                }
                Err(e) => {
                    err(&mut rec, e);
                    return (rec, None);
                }
            }
        }
        let outcome = match invariants::check(exec, inv.name, tol, &draw) {
            Ok(o) => o,
            Err(e) => {
                err(&mut rec, e);
                return (rec, None);
            }
        };
        rec.cases_run += 1;
        if is_replay {
            replayed.push(ReplayRecord {
                invariant: inv.name.to_string(),
                seed: case_seed,
                still_fails: !outcome.diff.holds(),
                target: None,
            });
        }
        if outcome.diff.holds() {
            rec.max_diff = Some(rec.max_diff.unwrap_or(0.0).max(outcome.diff.max_diff));
            continue;
        }
        rec.cases_failed += 1;
        rec.status = Status::Fail;
        let (_, last, steps) = seed::shrink(&mut tree, outcome, SHRINK_BUDGET, &mut |d| {
            invariants::check(exec, inv.name, tol, d)
                .ok()
                .filter(|o| !o.diff.holds())
        });
        let moved = last
            .diff
            .moved
            .clone()
            .unwrap_or_else(|| unreachable_moved(inv.name));
        let summary = format!(
            "{}: {} in `{}` (valid frames {:?} at {}; {}) moves `{}`{:?}: {} -> {} (max diff {}, {} element(s) of its valid region)",
            inv.name,
            last.case.change,
            last.case.function,
            last.case.valid,
            last.case.valid_frames.join(" | "),
            last.case.sources.join(", "),
            moved.output,
            moved.index,
            moved.expected,
            moved.actual,
            moved.max_diff,
            moved.differing
        );
        rec.note = Some(format!(
            "stopped at the first violation (case seed {case_seed}); shrunk in {steps} step(s)"
        ));
        let violation = Violation {
            invariant: inv.name.to_string(),
            seed: case_seed,
            shrink_steps: steps,
            case: last.case,
            moved,
            summary,
            target: None,
        };
        return (rec, Some(violation));
    }
    (rec, None)
}

/// A failing outcome always has a moved element; this keeps the record whole if not.
fn unreachable_moved(name: &str) -> parity_record::MovedElement {
    parity_record::MovedElement {
        output: format!("({name}: no element recorded)"),
        index: Vec::new(),
        expected: f64::NAN,
        actual: f64::NAN,
        max_diff: f64::NAN,
        differing: 0,
    }
}
