//! The repair search's outcome read into the bisect record: the operation
//! it names (or the adjacent pair), or notes saying why it names none.

use super::measure::{loc_label, op_line};
use super::probe::Prober;
use super::{divergent_op, repair, Program};
use parity_mlir::{Function, ValueId};
use parity_record::{BisectRecord, Evidence};
use parity_tensor::Tensor;
use std::collections::BTreeSet;

/// A non-finite origin is where the first NaN/Inf appears, not always the
/// fault: a wrong op upstream (`x + max` for `x - max` before an exp) makes
/// a later op overflow on operands the f64 shadow agrees with (the shadow
/// replays the same wrong program, with more range). When an edit of
/// another op makes the region match the oracle, that op is named with
/// repair evidence (or, when the edits disagree, none: ambiguous) and the
/// origin stays in the notes. Returns whether the origin was set aside.
pub(super) fn repaired_upstream(
    program: &Program,
    prober: &mut Prober,
    (region, feed): (&[usize], &[(ValueId, Tensor)]),
    expected: &[(ValueId, Tensor)],
    cross: &repair::CrossCases,
    origin: usize,
    report: &mut BisectRecord,
) -> bool {
    if region.len() > repair::MAX_REGION_OPS {
        return false;
    }
    let Ok(found) = repair::search(
        program,
        prober,
        (region, feed),
        expected[0].0,
        &expected[0].1,
        cross,
    ) else {
        return false;
    };
    if found.repairs.is_empty() || repair::claimed(&found) == Some(origin) {
        return false;
    }
    // Edits elsewhere repair the region: the origin is in doubt. Name the
    // repaired op when the search names one, else no op (ambiguous).
    let notes = std::mem::take(&mut report.notes);
    repaired(program, &found, report);
    let repair_notes = std::mem::replace(&mut report.notes, notes);
    report.notes.push(format!(
        "the first NaN/Inf appears at #{origin} {}, from operands the f64 shadow agrees with; \
         edits of other operations repair the region, so #{origin} may only overflow on what \
         it is given and is not named for it",
        program.func.ops[origin].name
    ));
    report.notes.extend(repair_notes);
    true
}

/// Reads the repair search into the report: the op when every surviving
/// edit is on one op (evidence `repair`), else the ranked list in a note.
pub(super) fn repaired(
    program: &Program,
    found: &repair::RepairOutcome,
    report: &mut BisectRecord,
) -> bool {
    if found.repairs.is_empty() {
        report.notes.push(no_repair_note(found));
        return false;
    }
    let claimed = repair::claimed(found);
    report.repair = Some(repair_record(program, found, claimed));
    let Some(op) = claimed else {
        return ambiguous(program, found, report);
    };
    let on = if found.repairs.iter().all(|r| r.op == op) {
        "all on one operation".to_string()
    } else {
        format!(
            "all acting at #{op} (an op inserted after another whose only user is #{op} acts \
             at #{op}'s input)"
        )
    };
    report.notes.push(format!(
        "repair search: {} of {} edits make the region match the oracle ({}), {on}: {}",
        found.repairs.len(),
        found.tried,
        found.judged_by,
        repair_list(program, found, 4)
    ));
    report.first_divergent_op = Some(divergent_op(
        program,
        op,
        Evidence::Repair,
        Vec::new(),
        Vec::new(),
    ));
    true
}

/// The first `n` repairs, ranked, on one line.
fn repair_list(program: &Program, found: &repair::RepairOutcome, n: usize) -> String {
    found
        .repairs
        .iter()
        .take(n)
        .map(|r| {
            format!(
                "{} ({}, {:.1} ULP)",
                op_line(program.func, r.op),
                r.edit,
                r.ulps
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The note for a repair search where no edit makes the region match.
fn no_repair_note(found: &repair::RepairOutcome) -> String {
    let what_wide = "every elementwise op of the same arity, another activation, conv \
                     layouts, mask band edges, a missing binary op with a value the region \
                     computes, an operand pointed at another value, fitted soft caps";
    let wide = if !found.wide {
        String::new()
    } else if found.cut > 0 {
        format!(
            "; then the wide catalogue ({what_wide}), {} more over its bounds not tried",
            found.cut
        )
    } else {
        format!("; then the wide catalogue ({what_wide})")
    };
    format!(
        "repair search: none of {} edits (swapped operands, comparison directions, \
         wrong binary and unary ops, wrong dimensions, off-by-one slices and pads, \
         integer offsets into converts, ops bypassed, negates, fitted splat constants, \
         fitted scales and offsets after an op{wide}) makes the region match the oracle \
         ({})",
        found.tried, found.judged_by
    )
}

/// Repairs on different operations: a note with them all, the equivalence
/// check's note, and the pair of adjacent ops when they compute one
/// function (then the answer, so true).
fn ambiguous(program: &Program, found: &repair::RepairOutcome, report: &mut BisectRecord) -> bool {
    report.notes.push(format!(
        "repair search: {} of {} edits make the region match the oracle ({}), on \
         different operations, so it does not name one (ambiguous): {}",
        found.repairs.len(),
        found.tried,
        found.judged_by,
        repair_list(program, found, 32)
    ));
    let Some(eq) = &found.equivalence else {
        return false;
    };
    report.notes.push(equivalence_note(program, found, eq));
    // One function on two adjacent ops: the answer is the pair.
    let (true, Some((a, b))) = (eq.holds(), adjacent_pair(program.func, found)) else {
        return false;
    };
    let func = program.func;
    let mut op = divergent_op(program, a, Evidence::Repair, Vec::new(), Vec::new());
    op.pair = Some(parity_record::PairedOp {
        op_index: b,
        op_name: func.ops[b].name.clone(),
        loc: loc_label(&func.ops[b].loc),
    });
    report.notes.push(format!(
        "repair search: every repair acts at one of two adjacent operations, \
         #{a} and #{b}, and they compute one function: the fix is at one of the \
         pair (evidence `repair`, kind `pair`); no oracle tensor can say which"
    ));
    report.first_divergent_op = Some(op);
    true
}

/// The two ops every repair acts at, earlier first, when there are two and
/// one reads the other's result.
fn adjacent_pair(func: &Function, found: &repair::RepairOutcome) -> Option<(usize, usize)> {
    let mut ops: Vec<usize> = found.repairs.iter().map(|r| r.op).collect();
    ops.sort_unstable();
    ops.dedup();
    let [a, b] = ops[..] else { return None };
    let feeds = |p: usize, q: usize| {
        func.ops[p]
            .results
            .iter()
            .any(|r| func.ops[q].operands.contains(r))
    };
    (feeds(a, b) || feeds(b, a)).then_some((a, b))
}

/// The repair search for the record.
fn repair_record(
    program: &Program,
    found: &repair::RepairOutcome,
    claimed: Option<usize>,
) -> parity_record::RepairSearch {
    let func = program.func;
    let candidate = |r: &repair::Repair| parity_record::RepairCandidate {
        op_index: r.op,
        op_name: func.ops[r.op].name.clone(),
        loc: loc_label(&func.ops[r.op].loc),
        edit: r.edit.clone(),
        ulps: r.ulps,
    };
    parity_record::RepairSearch {
        tried: found.tried,
        wide: found.wide,
        cut: found.cut,
        judged_by: found.judged_by.clone(),
        candidates: found.repairs.iter().map(candidate).collect(),
        claimed,
        equivalence: found.equivalence.clone(),
        cross_case: found.cross_case.as_ref().map(|c| parity_record::CrossCase {
            cases: c.cases.clone(),
            skipped: c.skipped.clone(),
            dropped: c
                .dropped
                .iter()
                .map(|(r, case, ulps)| parity_record::DroppedRepair {
                    candidate: candidate(r),
                    case: case.clone(),
                    ulps: *ulps,
                })
                .collect(),
            uncarried: c.uncarried.clone(),
        }),
    }
}

/// What the equivalence check of ambiguous repairs says, and what would
/// separate them.
fn equivalence_note(
    program: &Program,
    found: &repair::RepairOutcome,
    eq: &parity_record::Equivalence,
) -> String {
    let ops: BTreeSet<usize> = found.repairs.iter().map(|r| r.op).collect();
    let (first, last) = (
        ops.first().copied().unwrap_or(0),
        ops.last().copied().unwrap_or(0),
    );
    let span = format!(
        "an oracle tensor between {} and {}",
        op_line(program.func, first),
        op_line(program.func, last)
    );
    if !eq.unedited_differs {
        return format!(
            "equivalence of the repairs: not shown; on {} perturbed copies of the region's \
             inputs the unedited region matches the first repair too, so those inputs do \
             not exercise the fault",
            eq.inputs
        );
    }
    if eq.differ.is_empty() {
        format!(
            "equivalence of the repairs: all {} compute the same function on {} perturbed \
             copies of the region's inputs (each float element times a factor in [0.5, 1.5]), \
             where the unedited region does not: no oracle tensor at the region's end, in \
             this case or another, can tell them apart; {span} can",
            found.repairs.len(),
            eq.inputs
        )
    } else {
        let differ: Vec<String> = eq
            .differ
            .iter()
            .map(|&i| format!("#{}", found.repairs[i].op))
            .collect();
        // What another case could at best achieve: rule out the ones that
        // differ, leaving those that agree with the first.
        let agreeing: Vec<&repair::Repair> = eq.agree.iter().map(|&i| &found.repairs[i]).collect();
        let rest = match repair::claimed_by(&agreeing) {
            Some(op) => format!(
                "the {} that agree with the first all act at #{op}: if another case rules \
                 out the others, #{op} is the answer",
                agreeing.len()
            ),
            None => format!(
                "the {} that agree with the first act at {} operations, so even then no \
                 operation would be named",
                agreeing.len(),
                agreeing.iter().map(|r| r.op).collect::<BTreeSet<_>>().len()
            ),
        };
        format!(
            "equivalence of the repairs: not the same function: on {} perturbed copies of the \
             region's inputs, the repairs at {} differ from the first; the oracle's tensors at \
             the region's end in another case can separate them, and so can {span}; {rest}",
            eq.inputs,
            differ.join(", ")
        )
    }
}
