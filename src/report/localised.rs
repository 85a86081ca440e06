//! Where a divergence was localised, in one line, the same in every
//! renderer: the op at its location in brief (scope path and innermost
//! frame, never the whole traceback), an ambiguous repair search said as
//! what it is, or the region no evidence narrows.

use parity_mlir::Location;
use parity_record::{DivergentOp, Localisation, RegionOutcome, RepairSearch};
use std::collections::BTreeSet;

/// Most operations an ambiguity line names; the rest are counted.
const LISTED_OPS: usize = 8;

/// The op's location for people: scope path and innermost frame, read from
/// the raw location (the record keeps it whole).
pub fn op_loc(op: &DivergentOp) -> String {
    let raw = if op.loc_raw.trim().is_empty() {
        &op.loc
    } else {
        &op.loc_raw
    };
    Location::new(raw.as_str()).brief().to_string()
}

/// The op's MLIR text without its location (which [`op_loc`] shows in brief).
pub fn op_text(op: &DivergentOp) -> &str {
    let text = op.text.trim_end();
    let raw = op.loc_raw.trim();
    match text.strip_suffix(raw) {
        Some(rest) if !raw.is_empty() => rest.trim_end(),
        _ => text,
    }
}

/// `#3 stablehlo.divide at norm/scaled/div`.
pub fn op_place(op: &DivergentOp) -> String {
    match &op.pair {
        None => format!("#{} {} at {}", op.op_index, op.op_name, op_loc(op)),
        Some(p) => format!(
            "one of two adjacent operations, #{} {} at {} or #{} {} at {} (the repairs \
             compute one function: nothing tells which)",
            op.op_index,
            op.op_name,
            op_loc(op),
            p.op_index,
            p.op_name,
            p.loc
        ),
    }
}

/// The whole localisation in one line.
pub fn line(l: &Localisation) -> String {
    match l {
        Localisation::Op(op) => format!(
            "{} ({} evidence, {} probes)",
            op_place(op),
            op.evidence.name(),
            op.probes
        ),
        Localisation::Region(r) => region_line(r),
    }
}

/// A region: the repair search's ambiguity when it found one, else its size.
pub fn region_line(r: &RegionOutcome) -> String {
    match r.repair.as_ref().and_then(ambiguity) {
        Some(text) => text,
        None => format!(
            "a region of {} operations ending at {} (no evidence narrows it further)",
            r.region.ops, r.region.failing
        ),
    }
}

/// What an ambiguous repair search found, as the answer it is: `ambiguous:
/// 13 equivalent one-op repairs, at #4, #9, ...; an oracle tensor between
/// #4 and #31 would decide`. None when it named an op or found nothing.
pub fn ambiguity(r: &RepairSearch) -> Option<String> {
    if r.claimed.is_some() || r.candidates.is_empty() {
        return None;
    }
    let ops: BTreeSet<usize> = r.candidates.iter().map(|c| c.op_index).collect();
    let (first, last) = (*ops.first()?, *ops.last()?);
    let mut listed: Vec<String> = ops
        .iter()
        .take(LISTED_OPS)
        .map(|o| format!("#{o}"))
        .collect();
    if ops.len() > LISTED_OPS {
        listed.push(format!("and {} more", ops.len() - LISTED_OPS));
    }
    let n = r.candidates.len();
    let repairs = if n == 1 { "repair" } else { "repairs" };
    let at = if ops.len() == n {
        format!("at {}", listed.join(", "))
    } else {
        format!("at {} operations, {}", ops.len(), listed.join(", "))
    };
    let between = format!("an oracle tensor between #{first} and #{last}");
    let judged = r
        .cross_case
        .as_ref()
        .filter(|c| !c.cases.is_empty())
        .map(|c| c.cases.join(", "));
    Some(match &r.equivalence {
        Some(eq) if eq.holds() => {
            format!("ambiguous: {n} equivalent one-op {repairs}, {at}; {between} would decide")
        }
        // The other cases were asked already: say they did not decide.
        Some(eq) if eq.unedited_differs && judged.is_some() => format!(
            "ambiguous: {n} one-op {repairs}, {at}; {} of them differ from the first on {} \
             perturbed inputs, but the stage's other cases ({}) do not separate them; \
             {between} would decide",
            eq.differ.len(),
            eq.inputs,
            judged.unwrap_or_default()
        ),
        Some(eq) if eq.unedited_differs => format!(
            "ambiguous: {n} one-op {repairs}, {at}; {} of them differ from the first on {} \
             perturbed inputs, so another case's oracle tensors, or {between}, would decide",
            eq.differ.len(),
            eq.inputs
        ),
        _ => format!(
            "ambiguous: {n} one-op {repairs}, {at} (whether they compute one function is \
             not shown); {between} would decide"
        ),
    })
}

/// What the repair search's cross-case check did, in one line: the cases
/// whose oracle judged the repairs, the repairs dropped there (with their
/// residual on that case) and the cases not used, with why.
pub fn cross_case_line(c: &parity_record::CrossCase) -> String {
    let mut s = cross_case_summary(c);
    if !c.dropped.is_empty() {
        let dropped: Vec<String> = c
            .dropped
            .iter()
            .map(|d| {
                format!(
                    "#{} {} at {} ({}: {:.1} ULP on {})",
                    d.candidate.op_index,
                    d.candidate.op_name,
                    d.candidate.loc,
                    d.candidate.edit,
                    d.ulps,
                    d.case
                )
            })
            .collect();
        s.push_str(&format!(": {}", dropped.join("; ")));
    }
    if !c.uncarried.is_empty() {
        s.push_str(&format!(
            "; not carried (not judged there): {}",
            c.uncarried.join("; ")
        ));
    }
    if !c.skipped.is_empty() {
        s.push_str(&format!("; cases not used: {}", c.skipped.join("; ")));
    }
    s
}

/// The cross-case check's verdict alone: which cases judged the repairs and
/// how many failed there (the lists are the caller's to lay out).
pub fn cross_case_summary(c: &parity_record::CrossCase) -> String {
    if c.cases.is_empty() {
        return "cross-case check: no other case of the stage could judge the repairs".into();
    }
    let n = c.dropped.len();
    format!(
        "cross-case check: the repairs, each with its value as fitted on the failing case, \
         judged on {} against {} own oracle tensors: {n} {} there and {} dropped",
        if c.cases.len() == 1 {
            format!("case {}", c.cases[0])
        } else {
            format!("cases {}", c.cases.join(", "))
        },
        if c.cases.len() == 1 {
            "its"
        } else {
            "each one's"
        },
        if n == 1 { "fails" } else { "fail" },
        if n == 1 { "is" } else { "are" },
    )
}
