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
use super::super::error::BisectError;
use super::super::probe::Prober;
use super::{end_ulps, Acceptance, Repair, RepairOutcome};
use parity_mlir::{SliceArg, SliceInfo, ValueId};
use parity_tensor::Tensor;
use std::time::Instant;

/// The stage's other cases, as the repair search gets them.
pub(crate) struct CrossCases<'a> {
    /// Cases of the same function, with the region's inputs and end.
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
}

/// Runs every surviving repair of `outcome` on each case of `cross` (the
/// search module loaded, `args` its failing-case arguments) and moves the
/// ones a case's oracle rejects to `outcome.cross_case`'s dropped list.
pub(super) fn judge(
    prober: &mut Prober,
    info: &SliceInfo,
    target: ValueId,
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
    };
    let t = Instant::now();
    for case in &cross.feeds {
        let mut theirs = args.to_vec();
        for (j, (arg, _)) in info.args.iter().enumerate() {
            if let SliceArg::From(i) = arg {
                theirs[2 + j] = case.feed[*i].1.clone();
            }
        }
        let accept = Acceptance::new(&case.program, target);
        let judged = |out: &Tensor| -> Result<(f64, bool), BisectError> {
            let u = end_ulps(&case.program, target, out, &case.expected, &case.name)?;
            Ok((u, accept.accepts(out, &case.expected, u)))
        };
        // A case the module cannot run (another shape) decides nothing.
        let mut fails = Vec::new();
        let mut failed_run = None;
        for (i, r) in outcome.repairs.iter().enumerate() {
            match run(&mut theirs, r.select, r.scale).and_then(|out| judged(&out)) {
                Ok((u, false)) => fails.push((i, u)),
                Ok((_, true)) => {}
                Err(e) => {
                    failed_run = Some(e);
                    break;
                }
            }
        }
        let unedited = run(&mut theirs, -1, 1.0).and_then(|out| judged(&out));
        prober.log.push(format!(
            "cross-case check on case {}: {} of {} repairs fail there; the unedited region {}",
            case.name,
            fails.len(),
            outcome.repairs.len(),
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
        if fails.len() == outcome.repairs.len() {
            let best = fails.iter().map(|&(_, u)| u).fold(f64::INFINITY, f64::min);
            result.skipped.push(format!(
                "{}: every repair fails there (the best at {best:.1} ULP), so the fault may \
                 not be the same there and it decides nothing",
                case.name
            ));
            continue;
        }
        result.cases.push(case.name.clone());
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
