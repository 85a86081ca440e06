//! The cross-case check: repairs that make the failing case's region match
//! its oracle, but act at several operations, are run on the stage's other
//! cases of the same function (their own inputs, their own oracle tensors,
//! their own output criteria), each with the value fitted on the failing
//! case held fixed. A wrong constant refitted should hold on every case; a
//! scale that only happened to fit one case's values need not. A repair
//! that fails there is dropped, with the case and its residual recorded.
//! A case on which every repair fails decides nothing (the fault itself may
//! differ there): it is skipped, with why, and drops none.

use super::super::cases::CaseFeed;
use super::super::edits::Edit;
use super::super::error::BisectError;
use super::super::probe::Prober;
use super::{carry, end_ulps, run_edit, Acceptance, Repair, RepairOutcome};
use parity_mlir::{Function, SliceArg, SliceInfo};
use parity_tensor::Tensor;
use std::time::Instant;

/// The stage's other cases, as the repair search gets them.
pub(crate) struct CrossCases<'a> {
    /// Cases with the region's inputs and end in their own function.
    pub feeds: Vec<CaseFeed<'a>>,
    /// Cases not usable, each with why.
    pub skipped: Vec<String>,
}

/// What the other cases said about the repairs.
pub(crate) struct CrossCaseOutcome {
    /// Cases whose oracle judged the repairs.
    pub cases: Vec<String>,
    /// Cases not used, each with why.
    pub skipped: Vec<String>,
    /// Repairs that failed on a case: (the repair, the case, its residual
    /// there in ULPs at max).
    pub dropped: Vec<(Repair, String, f64)>,
    /// Repairs not carried to a case of another function, each with the
    /// case and why (not judged there).
    pub uncarried: Vec<String>,
}

/// The failing case's search: its slice, function and the edits of
/// the module the repairs were found in (by selector value).
pub(super) struct Here<'a> {
    /// The slice the module was built from.
    pub info: &'a SliceInfo,
    /// The function.
    pub func: &'a Function,
    /// The module's edits.
    pub edits: &'a [Edit],
}

/// Runs every surviving repair of `outcome` on each case of `cross` and
/// moves the ones a case's oracle rejects to `outcome.cross_case`'s dropped
/// list. A case of the same function runs the search module as loaded
/// (`run`, `args` its failing-case arguments); another function gets the
/// repairs carried to a module of its own ([`carry`]).
pub(super) fn judge(
    prober: &mut Prober,
    here: &Here,
    cross: &CrossCases,
    args: &[Tensor],
    outcome: &mut RepairOutcome,
    mut run: impl FnMut(&mut [Tensor], i64, f64) -> Result<Tensor, BisectError>,
) -> Result<(), BisectError> {
    if cross.feeds.is_empty() && cross.skipped.is_empty() {
        return Ok(());
    }
    let mut result = CrossCaseOutcome {
        cases: Vec::new(),
        skipped: cross.skipped.clone(),
        dropped: Vec::new(),
        uncarried: Vec::new(),
    };
    let t = Instant::now();
    for case in &cross.feeds {
        let same = std::ptr::eq(case.program.func, here.func);
        let (mut theirs, selects, carried) = if same {
            let mut theirs = args.to_vec();
            for (j, (arg, _)) in here.info.args.iter().enumerate() {
                if let SliceArg::From(i) = arg {
                    theirs[2 + j] = case.feed[*i].1.clone();
                }
            }
            let selects: Vec<Result<i64, String>> =
                outcome.repairs.iter().map(|r| Ok(r.select)).collect();
            (theirs, selects, None)
        } else {
            match carry::carry(prober, here.func, here.edits, &outcome.repairs, case) {
                Ok(c) => (c.args, c.selects, Some(c.loaded)),
                Err(e) => {
                    result.skipped.push(format!(
                        "{}: the repairs carried to `{}`: {e}",
                        case.name, case.program.func.name
                    ));
                    continue;
                }
            }
        };
        let mut invoke = |args: &mut [Tensor], k: i64, s: f64| match &carried {
            Some(loaded) => run_edit(loaded, args, k, s),
            None => run(args, k, s),
        };
        let accept = Acceptance::new(&case.program, case.target);
        let judged = |out: &Tensor| -> Result<(f64, bool), BisectError> {
            let u = end_ulps(&case.program, case.target, out, &case.expected, &case.name)?;
            Ok((u, accept.accepts(out, &case.expected, u)))
        };
        // A case the module cannot run (another shape) decides nothing.
        let mut fails = Vec::new();
        let mut judged_n = 0;
        let mut failed_run = None;
        let mut uncarried = Vec::new();
        for (i, (r, k)) in outcome.repairs.iter().zip(&selects).enumerate() {
            let k = match k {
                Ok(k) => *k,
                Err(why) => {
                    uncarried.push(format!("#{} ({}) to {}: {why}", r.op, r.edit, case.name));
                    continue;
                }
            };
            judged_n += 1;
            match invoke(&mut theirs, k, r.scale).and_then(|out| judged(&out)) {
                Ok((u, false)) => fails.push((i, u)),
                Ok((_, true)) => {}
                Err(e) => {
                    failed_run = Some(e);
                    break;
                }
            }
        }
        let unedited = invoke(&mut theirs, -1, 1.0).and_then(|out| judged(&out));
        prober.log.push(format!(
            "cross-case check on case {} (`{}`): {} of {judged_n} repairs judged there fail, \
             {} not carried; the unedited region {}",
            case.name,
            case.program.func.name,
            fails.len(),
            uncarried.len(),
            match &unedited {
                Ok((u, true)) => format!("passes ({u:.1} ULP)"),
                Ok((u, false)) => format!("fails ({u:.1} ULP)"),
                Err(e) => format!("does not run ({e})"),
            }
        ));
        if let Some(e) = failed_run {
            result.skipped.push(format!(
                "{}: the search module does not run on it ({e})",
                case.name
            ));
            continue;
        }
        // Another function is another program text: when its unedited
        // region matches its oracle, nothing says it holds the fault, and
        // an edit judged on it judges another program.
        if !same && !matches!(unedited, Ok((_, false))) {
            result.skipped.push(format!(
                "{}: its function `{}` unedited already matches its oracle there, so it \
                 may not hold the fault and decides nothing",
                case.name, case.program.func.name
            ));
            continue;
        }
        if fails.len() == judged_n {
            let best = fails.iter().map(|&(_, u)| u).fold(f64::INFINITY, f64::min);
            result.skipped.push(format!(
                "{}: every repair judged there fails (the best at {best:.1} ULP), so the \
                 fault may not be the same there and it decides nothing",
                case.name
            ));
            continue;
        }
        result.cases.push(case.name.clone());
        result.uncarried.extend(uncarried);
        // Highest index first, so the earlier indices stay valid.
        let mut dropped = Vec::new();
        for &(i, u) in fails.iter().rev() {
            let r = outcome.repairs.remove(i);
            dropped.push((r, case.name.clone(), u));
        }
        result.dropped.extend(dropped.into_iter().rev());
    }
    outcome.runs += t.elapsed();
    outcome.cross_case = Some(result);
    Ok(())
}
