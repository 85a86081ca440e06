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
        let module = match CaseModule::of(prober, here, case, args, &outcome.repairs) {
            Ok(m) => m,
            Err(why) => {
                result.skipped.push(why);
                continue;
            }
        };
        let ran = module.run(case, &outcome.repairs, &mut run);
        prober.log.push(ran.log_line(case));
        if let Some(why) = ran.decides_nothing(case, same) {
            result.skipped.push(why);
            continue;
        }
        result.cases.push(case.name.clone());
        result.uncarried.extend(ran.uncarried);
        // Highest index first, so the earlier indices stay valid.
        let mut dropped = Vec::new();
        for &(i, u) in ran.fails.iter().rev() {
            let r = outcome.repairs.remove(i);
            dropped.push((r, case.name.clone(), u));
        }
        result.dropped.extend(dropped.into_iter().rev());
    }
    outcome.runs += t.elapsed();
    outcome.cross_case = Some(result);
    Ok(())
}

/// The module a case runs the repairs in, with its arguments and each
/// repair's selector value there (or why it was not carried).
struct CaseModule {
    /// The case's arguments.
    args: Vec<Tensor>,
    /// Per repair: its selector there, or why it was not carried.
    selects: Vec<Result<i64, String>>,
    /// A module of the case's own function (none: the search's module).
    carried: Option<parity_iree::LoadedModule>,
}

impl CaseModule {
    /// The search's module with the case's inputs, for a case of the same
    /// function; else the repairs carried to a module of the case's
    /// function (an error: why the case is not used).
    fn of(
        prober: &mut Prober,
        here: &Here,
        case: &CaseFeed,
        args: &[Tensor],
        repairs: &[Repair],
    ) -> Result<Self, String> {
        if std::ptr::eq(case.program.func, here.func) {
            let mut theirs = args.to_vec();
            for (j, (arg, _)) in here.info.args.iter().enumerate() {
                if let SliceArg::From(i) = arg {
                    theirs[2 + j] = case.feed[*i].1.clone();
                }
            }
            return Ok(CaseModule {
                args: theirs,
                selects: repairs.iter().map(|r| Ok(r.select)).collect(),
                carried: None,
            });
        }
        carry::carry(prober, here.func, here.edits, repairs, case)
            .map(|c| CaseModule {
                args: c.args,
                selects: c.selects,
                carried: Some(c.loaded),
            })
            .map_err(|e| {
                format!(
                    "{}: the repairs carried to `{}`: {e}",
                    case.name, case.program.func.name
                )
            })
    }

    /// Runs every repair it holds, then the unedited region, each judged
    /// against the case's oracle.
    fn run(
        mut self,
        case: &CaseFeed,
        repairs: &[Repair],
        run: &mut impl FnMut(&mut [Tensor], i64, f64) -> Result<Tensor, BisectError>,
    ) -> CaseRun {
        let carried = self.carried.take();
        let mut invoke = |args: &mut [Tensor], k: i64, s: f64| match &carried {
            Some(loaded) => run_edit(loaded, args, k, s),
            None => run(args, k, s),
        };
        let accept = Acceptance::new(&case.program, case.target);
        let judged = |out: &Tensor| -> Result<(f64, bool), BisectError> {
            let u = end_ulps(&case.program, case.target, out, &case.expected, &case.name)?;
            Ok((u, accept.accepts(out, &case.expected, u)))
        };
        let mut ran = CaseRun {
            fails: Vec::new(),
            judged: 0,
            failed_run: None,
            uncarried: Vec::new(),
            unedited: Ok((0.0, false)),
            function: case.program.func.name.clone(),
        };
        for (i, (r, k)) in repairs.iter().zip(&self.selects).enumerate() {
            let k = match k {
                Ok(k) => *k,
                Err(why) => {
                    let what = format!("#{} ({}) to {}: {why}", r.op, r.edit, case.name);
                    ran.uncarried.push(what);
                    continue;
                }
            };
            ran.judged += 1;
            match invoke(&mut self.args, k, r.scale).and_then(|out| judged(&out)) {
                Ok((u, false)) => ran.fails.push((i, u)),
                Ok((_, true)) => {}
                Err(e) => {
                    ran.failed_run = Some(e);
                    break;
                }
            }
        }
        ran.unedited = invoke(&mut self.args, -1, 1.0).and_then(|out| judged(&out));
        ran
    }
}

/// What one case said of the repairs.
struct CaseRun {
    /// Repairs that fail there: (index among the repairs, ULPs at max).
    fails: Vec<(usize, f64)>,
    /// Repairs judged there (carried, or the same function).
    judged: usize,
    /// The run that failed, which stopped the case.
    failed_run: Option<BisectError>,
    /// Repairs not carried there, with why.
    uncarried: Vec<String>,
    /// The unedited region there: (ULPs at max, accepted).
    unedited: Result<(f64, bool), BisectError>,
    /// The case's function.
    function: String,
}

impl CaseRun {
    /// The probe log's line for the case.
    fn log_line(&self, case: &CaseFeed) -> String {
        format!(
            "cross-case check on case {} (`{}`): {} of {} repairs judged there fail, \
             {} not carried; the unedited region {}",
            case.name,
            self.function,
            self.fails.len(),
            self.judged,
            self.uncarried.len(),
            match &self.unedited {
                Ok((u, true)) => format!("passes ({u:.1} ULP)"),
                Ok((u, false)) => format!("fails ({u:.1} ULP)"),
                Err(e) => format!("does not run ({e})"),
            }
        )
    }

    /// Why the case decides nothing, if it does not: its module did not
    /// run; another function that already matches (it may not hold the
    /// fault); every repair failing there (the fault may differ there).
    fn decides_nothing(&self, case: &CaseFeed, same: bool) -> Option<String> {
        if let Some(e) = &self.failed_run {
            return Some(format!(
                "{}: the search module does not run on it ({e})",
                case.name
            ));
        }
        // Another function is another program text: when its unedited
        // region matches its oracle, nothing says it holds the fault, and
        // an edit judged on it judges another program.
        if !same && !matches!(self.unedited, Ok((_, false))) {
            return Some(format!(
                "{}: its function `{}` unedited already matches its oracle there, so it \
                 may not hold the fault and decides nothing",
                case.name, self.function
            ));
        }
        if self.fails.len() == self.judged {
            let best = self
                .fails
                .iter()
                .map(|&(_, u)| u)
                .fold(f64::INFINITY, f64::min);
            return Some(format!(
                "{}: every repair judged there fails (the best at {best:.1} ULP), so the \
                 fault may not be the same there and it decides nothing",
                case.name
            ));
        }
        None
    }
}
