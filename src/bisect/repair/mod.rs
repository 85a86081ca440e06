//! Repair evidence: inside a region that neither the oracle nor the f64
//! shadow narrows (a semantic fault: the shadow replays the same wrong
//! program), edit the region one operation at a time with the mistakes ports
//! make ([`super::edits`]), run every edited region on the oracle's inputs,
//! and keep the edits that make the region's end match the oracle.
//!
//! One module, one compile: the region appears once, and every edit adds its
//! edited value beside the original, chosen at run time by a selector
//! argument (`select(selector == k, edited_k, original)`), so the module
//! grows with the edits, not with edits x region. Fitted edits (a constant,
//! or a scale or offset inserted after an op) share one scale argument,
//! used only by the selected edit; it is searched on a log grid and refined.

use super::edits::{self, Edit, EditKind, Width};
use super::error::BisectError;
use super::measure::{value_metrics, CHECKPOINT_ULP_BUDGET};
use super::probe::Prober;
use super::Program;
use parity_compare::{compare, evaluate_with, CompareOptions, Criterion, Mask, VerdictOptions};
use parity_mlir::ValueId;
use parity_record::Equivalence;
use parity_spec::MaskSource;
use parity_tensor::{DType, Tensor};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

mod carry;
mod cross_case;
mod selector;
mod slice;
pub(crate) use cross_case::{CrossCaseOutcome, CrossCases};
use selector::selector_module;
use slice::{load_search, Parts, RepairSlice, Search};

/// Regions larger than this are not searched. The region is in the module
/// once, so the module grows with the edits (bounded below), not with the
/// region times the edits; the bound keeps one run of the region cheap
/// enough for the fitted edits' few thousand runs.
pub const MAX_REGION_OPS: usize = 400;

/// Enumerated (not fitted) edits at most.
const MAX_EDITS: usize = 1000;

/// Fitted edits at most (each costs about a hundred runs of the region).
const MAX_FITTED: usize = 200;

/// One surviving edit.
pub struct Repair {
    /// The op it is reported on (index into the function's ops).
    pub op: usize,
    /// The kind of edit.
    pub kind: EditKind,
    /// What the edit is, for people.
    pub edit: String,
    /// The region's end against the oracle after the edit, in ULPs at max.
    pub ulps: f64,
    /// The ops the edit can be said to act at: the op itself; for an op
    /// inserted after an op whose result has one user, that user too (an op
    /// missing after P is an op missing before P's only user).
    pub places: Vec<usize>,
    /// Its selector value in the search module.
    select: i64,
    /// Its fitted scale (1 for an enumerated edit).
    scale: f64,
}

/// The op every surviving edit acts at: the op all of them are reported on,
/// else the earliest op all their places share.
pub fn claimed(found: &RepairOutcome) -> Option<usize> {
    claimed_by(&found.repairs.iter().collect::<Vec<_>>())
}

/// The op every one of `repairs` acts at (see [`claimed`]).
pub fn claimed_by(repairs: &[&Repair]) -> Option<usize> {
    let first = repairs.first()?;
    if repairs.iter().all(|r| r.op == first.op) {
        return Some(first.op);
    }
    // The places of one edit are a chain of ops each the only user of the
    // one before, through ops the edit commutes with: shared places are
    // equivalent positions of one fix. The earliest is where it applies.
    first
        .places
        .iter()
        .copied()
        .filter(|p| repairs.iter().all(|r| r.places.contains(p)))
        .min()
}

/// What the search found.
pub struct RepairOutcome {
    /// Edits that make the region match, best first.
    pub repairs: Vec<Repair>,
    /// Candidates tried (enumerated edits plus fitted ones).
    pub tried: usize,
    /// Candidates of the wide catalogue over its bound, not tried.
    pub cut: usize,
    /// Whether the wide catalogue was searched (the common one found nothing).
    pub wide: bool,
    /// Compile time of the search module (zero when cached).
    pub compile: Duration,
    /// Time of the runs.
    pub runs: Duration,
    /// What "match" meant: the stage output's criteria, or the budget.
    pub judged_by: String,
    /// When the repairs act at several operations: whether they compute
    /// the same function on perturbed inputs.
    pub equivalence: Option<Equivalence>,
    /// When the repairs act at several operations and the stage has other
    /// cases: what their oracle tensors said (repairs failing there are
    /// moved out of `repairs`).
    pub cross_case: Option<CrossCaseOutcome>,
}

/// Searches repairs of `region` whose end `target` should equal `expected`.
pub fn search(
    program: &Program,
    prober: &mut Prober,
    (region, feed): (&[usize], &[(ValueId, Tensor)]),
    target: ValueId,
    expected: &Tensor,
    cross: &CrossCases,
) -> Result<RepairOutcome, BisectError> {
    let func = program.func;
    let emitted = RepairSlice::emit(prober, func, feed.iter().map(|(v, _)| *v).collect(), target)?;
    let info = &emitted.info;
    let Parts {
        head,
        sig,
        blocks,
        ret,
    } = emitted.parts(func, "the repair search's slice")?;
    let accept = Acceptance::new(program, target);
    let mut outcome = RepairOutcome::empty(judged_by(program, &accept));
    let region_slice = Slice {
        head,
        sig,
        blocks: &blocks,
        ret,
        info,
        feed,
        target,
        expected,
        accept: &accept,
    };
    let (tiers, mut module) = Tiers::run(program, prober, &region_slice, region, &mut outcome)?;
    rank(&mut outcome.repairs);
    // Repairs that coincide on the failing case: the other cases' oracle
    // tensors judge them, in the same module (no compile).
    let open = |o: &RepairOutcome| o.repairs.len() > 1 && claimed(o).is_none();
    if let (Some((loaded, args)), true) = (module.as_mut(), open(&outcome)) {
        let run = |args: &mut [Tensor], k: i64, s: f64| run_edit(loaded, args, k, s);
        let here = cross_case::Here {
            info,
            func,
            edits: tiers.edits(),
        };
        cross_case::judge(prober, &here, cross, args, &mut outcome, run)?;
    }
    if let (Some((loaded, mut args)), true) = (module, open(&outcome)) {
        check_equivalence(
            program,
            prober,
            (&loaded, &mut args),
            &accept,
            target,
            &mut outcome,
        );
    }
    Ok(outcome)
}

/// What "match" means for the region's end, for people.
fn judged_by(program: &Program, accept: &Acceptance) -> String {
    match accept {
        Acceptance::Budget => {
            format!("within {CHECKPOINT_ULP_BUDGET} ULPs at the oracle's largest magnitude")
        }
        Acceptance::Criteria { criteria, .. } => format!(
            "within output `{}`'s tolerance ({} criteria, vs_f64 left out)",
            program.start.spec.name,
            criteria.len()
        ),
    }
}

impl RepairOutcome {
    /// Nothing found yet; `judged_by` says what a match is.
    fn empty(judged_by: String) -> Self {
        RepairOutcome {
            repairs: Vec::new(),
            tried: 0,
            cut: 0,
            wide: false,
            compile: Duration::ZERO,
            runs: Duration::ZERO,
            judged_by,
            equivalence: None,
            cross_case: None,
        }
    }
}

/// The catalogue's tiers as searched: the common confusions, then (when
/// they find nothing) the wide catalogue, then its fitted edits; which ran
/// last (the repairs' selectors index its edits).
struct Tiers {
    /// The common catalogue's edits.
    common: Vec<Edit>,
    /// The wide catalogue's enumerated edits (searched only when the
    /// common ones find nothing).
    wide: Vec<Edit>,
    /// Its fitted edits (searched only when the others find nothing).
    fitted: Vec<Edit>,
    /// Which tier ran last: 0, 1 or 2.
    last: usize,
}

/// A tier's search module, loaded, and its arguments.
type TierModule = Option<(parity_iree::LoadedModule, Vec<Tensor>)>;

impl Tiers {
    /// Runs the tiers in order until one finds repairs (or all ran); the
    /// last one's module.
    fn run(
        program: &Program,
        prober: &mut Prober,
        slice: &Slice,
        region: &[usize],
        outcome: &mut RepairOutcome,
    ) -> Result<(Self, TierModule), BisectError> {
        let func = program.func;
        // The common confusions first; the wide catalogue only when they
        // find nothing: each of its runs computes every one of its edits,
        // so it costs more, and a common confusion is the simpler
        // explanation.
        let common = candidates(func, region, slice.blocks, Width::Common);
        outcome.tried = common.len();
        let mut module = run_tier(program, prober, slice, &common, "repair search", outcome)?;
        let mut tiers = Tiers {
            common,
            wide: Vec::new(),
            fitted: Vec::new(),
            last: 0,
        };
        if !outcome.repairs.is_empty() {
            return Ok((tiers, module));
        }
        // The slice's inputs under their own names (a `%5#1` cut point is
        // renamed in the slice: left out).
        let inputs: Vec<ValueId> = slice
            .info
            .args
            .iter()
            .map(|&(_, v)| v)
            .filter(|&v| !func.values[v].name.contains('#'))
            .collect();
        let cut;
        (tiers.wide, tiers.fitted, cut) = wide_candidates(func, region, slice.blocks, &inputs);
        tiers.last = 1;
        outcome.tried += tiers.wide.len();
        outcome.cut = cut;
        outcome.wide = true;
        let what = "repair search, wide catalogue";
        module = run_tier(program, prober, slice, &tiers.wide, what, outcome)?;
        // Its fitted edits (a fit of about 64 runs each) only when the
        // others find nothing, in a module of their own: one more probe.
        if outcome.repairs.is_empty() && !tiers.fitted.is_empty() {
            tiers.last = 2;
            outcome.tried += tiers.fitted.len();
            let what = "repair search, wide catalogue, fitted";
            module = run_tier(program, prober, slice, &tiers.fitted, what, outcome)?;
        }
        Ok((tiers, module))
    }

    /// The edits of the tier that ran last.
    fn edits(&self) -> &[Edit] {
        match self.last {
            0 => &self.common,
            1 => &self.wide,
            _ => &self.fitted,
        }
    }
}

/// Best first: residual (to the ULP), then the simpler edit.
fn rank(repairs: &mut [Repair]) {
    repairs.sort_by(|a, b| {
        a.ulps
            .round()
            .total_cmp(&b.ulps.round())
            .then(a.kind.simplicity().cmp(&b.kind.simplicity()))
            .then(a.ulps.total_cmp(&b.ulps))
    });
}

/// Whether the surviving repairs compute one function on perturbed inputs,
/// into `outcome.equivalence`. A failure here (a perturbed input the module
/// rejects) leaves the repairs as found, without the check: it loses
/// nothing computed.
fn check_equivalence(
    program: &Program,
    prober: &mut Prober,
    (loaded, args): (&parity_iree::LoadedModule, &mut [Tensor]),
    accept: &Acceptance,
    target: ValueId,
    outcome: &mut RepairOutcome,
) {
    let t = Instant::now();
    let ulps =
        |out: &Tensor, reference: &Tensor| end_ulps(program, target, out, reference, "repair");
    match equivalence(&outcome.repairs, accept, args, ulps, |args, k, s| {
        run_edit(loaded, args, k, s)
    }) {
        Ok(eq) => {
            outcome.runs += t.elapsed();
            prober.log.push(format!(
                "probe {}: the {} repairs on {} perturbed inputs: {} agree with the first, \
                 {} differ; the unedited region {} ({:.2}s)",
                prober.probes,
                outcome.repairs.len(),
                eq.inputs,
                eq.agree.len(),
                eq.differ.len(),
                if eq.unedited_differs {
                    "differs"
                } else {
                    "does not differ"
                },
                t.elapsed().as_secs_f64()
            ));
            outcome.equivalence = Some(eq);
        }
        Err(e) => prober.log.push(format!(
            "probe {}: the equivalence check of the {} repairs could not run: {e}",
            prober.probes,
            outcome.repairs.len()
        )),
    }
}

/// The region's slice as emitted, and what its end is judged against.
struct Slice<'a> {
    head: &'a str,
    sig: &'a str,
    blocks: &'a [(usize, &'a str)],
    ret: &'a str,
    info: &'a parity_mlir::SliceInfo,
    feed: &'a [(ValueId, Tensor)],
    target: ValueId,
    expected: &'a Tensor,
    accept: &'a Acceptance,
}

/// The region's end against a reference in ULPs at max (NaN as inf).
fn end_ulps(
    program: &Program,
    target: ValueId,
    out: &Tensor,
    reference: &Tensor,
    against: &str,
) -> Result<f64, BisectError> {
    value_metrics(
        program.func,
        target,
        out,
        reference,
        against,
        program.budget,
    )
    .map(|m| {
        if m.ulps_at_max.is_nan() {
            f64::INFINITY
        } else {
            m.ulps_at_max
        }
    })
}

/// Compiles one selector module over `edits`, runs every edit, and adds
/// the surviving ones to `outcome`. Returns the loaded module and its
/// arguments (for the equivalence check), or none when there are no edits.
fn run_tier(
    program: &Program,
    prober: &mut Prober,
    slice: &Slice,
    edits: &[Edit],
    what: &str,
    outcome: &mut RepairOutcome,
) -> Result<Option<(parity_iree::LoadedModule, Vec<Tensor>)>, BisectError> {
    let func = program.func;
    if edits.is_empty() {
        return Ok(None);
    }
    let module = selector_module(func, slice.head, slice.sig, slice.blocks, slice.ret, edits)?;
    let label = format!("{}[{what}]", prober.source_name);
    let Search {
        loaded,
        mut args,
        compile,
        cached,
    } = load_search(prober, func, &label, &module, slice.info, slice.feed)?;
    outcome.compile += compile;
    let t = Instant::now();
    let (target, expected, accept) = (slice.target, slice.expected, slice.accept);
    // (ULPs at max, whether the region's end is accepted as matching).
    let mut score = |k: i64, s: f64| -> Result<(f64, bool), BisectError> {
        let out = run_edit(&loaded, &mut args, k, s)?;
        let ulps = end_ulps(program, target, &out, expected, "oracle")?;
        Ok((ulps, accept.accepts(&out, expected, ulps)))
    };
    // Selector -1 is the region unedited: it must still fail, or nothing
    // here can be called a repair.
    let (unedited, passes) = score(-1, 1.0)?;
    if passes {
        return Err(BisectError::RepairBaseline { ulps: unedited });
    }
    let found_before = outcome.repairs.len();
    for (k, e) in edits.iter().enumerate() {
        let (u, s, passes) = if e.kind.fitted() {
            let (mut s, _) = fit_scale(|s| score(k as i64, s).map(|(u, _)| u))?;
            let (mut u, mut passes) = score(k as i64, s)?;
            // A fit is close, not exact; a missing `/ 64` or `* 3` is a
            // simple number. When the fit misses the output's criteria,
            // the simple numbers next to it are tried too.
            if !passes && e.kind != EditKind::InsertOffset {
                for c in simple_scales_near(s) {
                    let (cu, cp) = score(k as i64, c)?;
                    if cp {
                        (s, u, passes) = (c, cu, true);
                        break;
                    }
                }
            }
            (u, Some(s), passes)
        } else {
            let (u, passes) = score(k as i64, 1.0)?;
            (u, None, passes)
        };
        let identity = match (e.kind, s) {
            (EditKind::ScaleConstant | EditKind::InsertScale, Some(s)) => (s - 1.0).abs() <= 1e-6,
            _ => false,
        };
        if passes && !identity {
            outcome.repairs.push(Repair {
                op: e.named,
                kind: e.kind,
                edit: describe(e, s),
                ulps: u,
                places: places_of(func, e),
                select: k as i64,
                scale: s.unwrap_or(1.0),
            });
        }
    }
    outcome.runs += t.elapsed();
    prober.log.push(format!(
        "probe {}: {what} ({} edits, {} fitted, in one module of {} lines: compile {:.2}s{}, runs {:.2}s): {} repair(s)",
        prober.probes,
        edits.len(),
        edits.iter().filter(|e| e.kind.fitted()).count(),
        module.lines().count(),
        outcome.compile.as_secs_f64(),
        if cached { " (cached)" } else { "" },
        t.elapsed().as_secs_f64(),
        outcome.repairs.len() - found_before,
    ));
    Ok(Some((loaded, args)))
}

/// The ops an edit can be said to act at.
fn places_of(func: &parity_mlir::Function, e: &Edit) -> Vec<usize> {
    let mut places = vec![e.named];
    match &e.change {
        edits::Change::After(after) if e.kind != EditKind::ScaleConstant => {
            places.extend(edits::upstream_places(func, e.op));
            places.extend(edits::downstream_places(func, e.op, *after));
        }
        // convert(x + k) is convert(x) + k.
        _ if e.kind == EditKind::ConvertOffset => {
            places.extend(edits::downstream_places(func, e.op, edits::AfterOp::Offset))
        }
        // Every op of an edit at several sites.
        edits::Change::Sites { others, .. } => places.extend(others.iter().map(|s| s.op)),
        // An op missing after P is an op missing before P's only user.
        edits::Change::Combine { .. } => {
            if let [user] = func.users(func.ops[e.op].results[0])[..] {
                places.push(user);
            }
        }
        _ => {}
    }
    places.extend(edits::decision_partner(func, e));
    places
}

/// Perturbed inputs the equivalence check runs.
pub const EQUIVALENCE_INPUTS: usize = 3;

/// Runs the search module with edit `k` (-1: none) at scale `s`.
fn run_edit(
    loaded: &parity_iree::LoadedModule,
    args: &mut [Tensor],
    k: i64,
    s: f64,
) -> Result<Tensor, BisectError> {
    args[0] = scalar(DType::I32, k as f64)?;
    args[1] = scalar(DType::F32, s)?;
    let mut out = loaded
        .invoke("repair", args)
        .map_err(|source| BisectError::Invoke {
            slice: "repair".into(),
            source,
        })?;
    Ok(out.swap_remove(0))
}

/// Whether the surviving repairs compute the same function: each one, and
/// the unedited region, on [`EQUIVALENCE_INPUTS`] perturbed copies of the
/// region's inputs (`args[2..]`: every float element times its own factor in
/// [0.5, 1.5], seeded; signs, zeros, infinities, integers and booleans kept,
/// so masks and domains survive), judged against the first repair's result
/// by the search's own acceptance. Repairs that agree on every input are
/// the same fix as far as any oracle tensor at the region's end can tell.
fn equivalence(
    repairs: &[Repair],
    accept: &Acceptance,
    args: &mut [Tensor],
    ulps: impl Fn(&Tensor, &Tensor) -> Result<f64, BisectError>,
    mut run: impl FnMut(&mut [Tensor], i64, f64) -> Result<Tensor, BisectError>,
) -> Result<Equivalence, BisectError> {
    let original: Vec<Tensor> = args[2..].to_vec();
    let mut same = vec![true; repairs.len()];
    let mut unedited_differs = false;
    for input in 0..EQUIVALENCE_INPUTS {
        for (j, t) in original.iter().enumerate() {
            args[2 + j] = perturbed(t, input as u64 * 1000 + j as u64)?;
        }
        let first = run(args, repairs[0].select, repairs[0].scale)?;
        let matches = |out: &Tensor| -> Result<bool, BisectError> {
            Ok(accept.accepts(out, &first, ulps(out, &first)?))
        };
        for (r, same) in repairs.iter().zip(same.iter_mut()).skip(1) {
            if *same {
                *same = matches(&run(args, r.select, r.scale)?)?;
            }
        }
        if !unedited_differs {
            unedited_differs = !matches(&run(args, -1, 1.0)?)?;
        }
    }
    args[2..].clone_from_slice(&original);
    let (agree, differ) = (0..repairs.len()).partition(|&i| same[i]);
    Ok(Equivalence {
        inputs: EQUIVALENCE_INPUTS,
        agree,
        differ,
        unedited_differs,
    })
}

/// A float tensor with every element times its own factor in [0.5, 1.5]
/// (seeded); other dtypes as they are.
fn perturbed(t: &Tensor, seed: u64) -> Result<Tensor, BisectError> {
    if !t.dtype().is_float() {
        return Ok(t.clone());
    }
    let values: Vec<f64> = t
        .to_f64_vec()
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            let r = crate::seed::mix(seed.wrapping_mul(0x1_0000_0001) ^ i as u64);
            x * (0.5 + (r >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    Tensor::from_f64_as(t.dtype(), t.shape().to_vec(), &values).map_err(|source| {
        BisectError::Tensor {
            what: "a perturbed input of the repair search",
            source,
        }
    })
}

/// When the region's end counts as matching the oracle: within the stage
/// output's own criteria, under its mask as the run applied it, when the
/// end is the failing stage output and some criterion needs no f64 truth
/// (`vs_f64` is left out: the truth judges production, not an edit); else
/// within the checkpoint budget ([`CHECKPOINT_ULP_BUDGET`] ULPs at the
/// oracle's largest magnitude).
enum Acceptance {
    Criteria {
        criteria: Vec<Criterion>,
        options: CompareOptions,
        mask: Option<Mask>,
        allow_empty: bool,
    },
    Budget,
}

impl Acceptance {
    fn new(program: &Program, target: ValueId) -> Acceptance {
        let start = &program.start;
        if start.value != target {
            return Acceptance::Budget;
        }
        // The output's mask, built as the run builds it; a mask that cannot
        // be built here leaves the budget.
        let mask = match &start.spec.mask {
            None => None,
            Some(m) => {
                let tensor = match &m.source {
                    MaskSource::Oracle(name) => program.store.get(name).ok(),
                    MaskSource::Arg(i) => program.args.get(*i).cloned(),
                };
                let shape = program.func.values[target].ty.shape();
                match (tensor, shape) {
                    (Some(t), Some(shape)) => match Mask::new(&t, m.axes.clone(), m.padded, &shape)
                    {
                        Ok(mask) => Some(mask),
                        Err(_) => return Acceptance::Budget,
                    },
                    _ => return Acceptance::Budget,
                }
            }
        };
        let dtype = program.func.values[target]
            .ty
            .element()
            .and_then(|e| e.parse::<DType>().ok())
            .unwrap_or(DType::F32);
        let criteria: Vec<Criterion> = crate::run::output_criteria(start.whole, start.spec, dtype)
            .into_iter()
            .filter(|c| !matches!(c, Criterion::VsF64 { .. }))
            .collect();
        if criteria.is_empty() {
            return Acceptance::Budget;
        }
        let options = crate::run::output_compare_options(start.spec, &criteria, dtype);
        Acceptance::Criteria {
            criteria,
            options,
            mask,
            allow_empty: start.spec.allow_empty,
        }
    }

    fn accepts(&self, actual: &Tensor, expected: &Tensor, ulps: f64) -> bool {
        match self {
            Acceptance::Budget => ulps <= CHECKPOINT_ULP_BUDGET,
            Acceptance::Criteria {
                criteria,
                options,
                mask,
                allow_empty,
            } => compare(actual, expected, mask.as_ref(), options).is_ok_and(|m| {
                evaluate_with(
                    criteria,
                    &m,
                    None,
                    &VerdictOptions {
                        allow_empty: *allow_empty,
                    },
                )
                .passed
            }),
        }
    }
}

/// Simple scales within 2% of a fitted one: an integer, one over an
/// integer, a power of two, or the square root (or its inverse) of an
/// integer, up to 4096; nearest first.
fn simple_scales_near(s: f64) -> Vec<f64> {
    let (sign, a) = (s.signum(), s.abs());
    if !(a.is_finite() && a > 0.0) {
        return Vec::new();
    }
    let mut c = vec![
        a.round(),
        1.0 / (1.0 / a).round(),
        2f64.powi(a.log2().round() as i32),
        (a * a).round().sqrt(),
        1.0 / (1.0 / (a * a)).round().sqrt(),
    ];
    c.retain(|x| {
        x.is_finite()
            && *x > 0.0
            && (1.0 / 4096.0..=4096.0).contains(x)
            && ((x - a) / a).abs() <= 0.02
    });
    c.sort_by(|x, y| (x - a).abs().total_cmp(&(y - a).abs()));
    c.dedup();
    c.into_iter().map(|x| sign * x).collect()
}

fn scalar(dtype: DType, v: f64) -> Result<Tensor, BisectError> {
    Tensor::from_f64_as(dtype, vec![], &[v]).map_err(|source| BisectError::Tensor {
        what: "the repair search's selector or scale",
        source,
    })
}

/// An edit for people, with its fitted value.
fn describe(e: &Edit, s: Option<f64>) -> String {
    match (e.kind, s) {
        (EditKind::ScaleConstant, Some(s)) => {
            let v = e
                .what
                .rsplit(" = ")
                .next()
                .and_then(|x| x.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            format!(
                "{} (used here) should be about {:.4e} (x{s:.4})",
                e.what,
                v * s
            )
        }
        (EditKind::InsertScale, Some(s)) => format!("its result times {s:.4e} (a missing scale)"),
        (EditKind::InsertOffset, Some(s)) => format!("its result plus {s:.4e} (a missing add)"),
        (EditKind::InsertSoftcap, Some(s)) => format!(
            "its result capped: {c:.4e} * tanh(x / {c:.4e}) (a missing soft cap)",
            c = s.abs()
        ),
        _ => e.what.clone(),
    }
}

/// The candidate edits of the common catalogue: every edit of every region
/// op, and the fitted splat constants the region uses (reported on their
/// first consumer), bounded.
fn candidates(
    func: &parity_mlir::Function,
    region: &[usize],
    blocks: &[(usize, &str)],
    width: Width,
) -> Vec<Edit> {
    let constant = edits::constant_ops(func);
    let in_region: BTreeSet<usize> = region.iter().copied().collect();
    let mut plain = Vec::new();
    let mut fitted = Vec::new();
    for &(o, t) in blocks {
        let named = if in_region.contains(&o) {
            None
        } else if constant[o] {
            match edits::consumer(func, o, &constant, |k| in_region.contains(&k)) {
                Some(n) => Some(n),
                None => continue,
            }
        } else {
            continue;
        };
        for e in edits::edits_of(func, o, t, &constant, named, width) {
            if e.kind.fitted() {
                fitted.push(e);
            } else {
                plain.push(e);
            }
        }
    }
    plain.truncate(MAX_EDITS);
    // Constants first (the likeliest wrong values), then inserted scales,
    // then offsets, each in program order.
    fitted.sort_by_key(|e| (e.kind.simplicity(), e.kind, e.op));
    fitted.truncate(MAX_FITTED);
    plain.extend(fitted);
    plain
}

/// Edits of the wide catalogue at most (every run of its module computes
/// all of them, so the cost grows with their square; a fitted one runs it
/// about 64 times).
pub const MAX_WIDE_EDITS: usize = 400;

/// Fitted edits of the wide catalogue at most (missing soft caps, in
/// program order), tried only when its other edits find nothing.
pub const MAX_WIDE_FITTED: usize = 16;

/// The wide catalogue's edits of the region, cheapest explanation first
/// (another op of the same arity, another activation, another conv layout,
/// a mask band's edge; a missing normaliser or max shift; a missing op with
/// a value of the result's type; one broadcast to it; an operand pointed at
/// another value), each group in
/// program order, bounded by [`MAX_WIDE_EDITS`]; its fitted edits apart
/// (missing soft caps, bounded by [`MAX_WIDE_FITTED`]); and how many the
/// bounds cut.
fn wide_candidates(
    func: &parity_mlir::Function,
    region: &[usize],
    blocks: &[(usize, &str)],
    inputs: &[ValueId],
) -> (Vec<Edit>, Vec<Edit>, usize) {
    let constant = edits::constant_ops(func);
    let in_region: BTreeSet<usize> = region.iter().copied().collect();
    let mut ranked: Vec<(u8, usize, Edit)> = Vec::new();
    let mut softcaps: Vec<Edit> = Vec::new();
    for (pos, &(o, t)) in blocks.iter().enumerate() {
        if constant[o] {
            // A wrong integer constant, reported on its consumer in the region.
            if let Some(n) = edits::consumer(func, o, &constant, |k| in_region.contains(&k)) {
                for e in edits::edits_of(func, o, t, &constant, Some(n), Width::Wide) {
                    ranked.push((0, pos, e));
                }
            }
            continue;
        }
        if !in_region.contains(&o) {
            continue;
        }
        for e in edits::edits_of(func, o, t, &constant, None, Width::Wide) {
            ranked.push((0, pos, e));
        }
        for e in edits::reaxis_edits(func, blocks, pos)
            .into_iter()
            .chain(edits::swapped_slices(func, blocks, pos))
            .chain(edits::extra_sum_edits(func, blocks, pos, |k| {
                in_region.contains(&k)
            }))
            .chain(edits::activation_edits(func, o, t))
        {
            ranked.push((0, pos, e));
        }
        for (rank, e) in edits::combine_edits(func, blocks, pos, inputs, &constant) {
            ranked.push((rank + 1, pos, e));
        }
        // An operand that should be another value: many per op, so last.
        for e in edits::redirect_edits(func, blocks, pos, &constant) {
            ranked.push((4, pos, e));
        }
        if let Some(e) = edits::softcap_edit(func, o) {
            softcaps.push(e);
        }
    }
    // Fitted edits cost a fit each (about 64 runs of the module): the
    // fewest, in a tier of their own, each bound counted in what was cut.
    let mut cut = softcaps.len().saturating_sub(MAX_WIDE_FITTED);
    softcaps.truncate(MAX_WIDE_FITTED);
    ranked.sort_by_key(|(rank, pos, _)| (*rank, *pos));
    cut += ranked.len().saturating_sub(MAX_WIDE_EDITS);
    ranked.truncate(MAX_WIDE_EDITS);
    (
        ranked.into_iter().map(|(_, _, e)| e).collect(),
        softcaps,
        cut,
    )
}

/// Minimises `f` over scales: a signed log grid (1e-4 .. 1e4, half a decade
/// apart), then a golden-section search in log space over the decade around
/// the best grid point, down to a relative step of about 3e-6 (a few ULPs of
/// f32): 34 + 28 runs.
fn fit_scale<E>(mut f: impl FnMut(f64) -> Result<f64, E>) -> Result<(f64, f64), E> {
    let mut best = (1.0, f64::INFINITY);
    for sign in [1.0, -1.0] {
        for i in 0..=16 {
            let s = sign * 10f64.powf(-4.0 + 0.5 * i as f64);
            let u = f(s)?;
            if u < best.1 {
                best = (s, u);
            }
        }
    }
    let sign = best.0.signum();
    let at = |x: f64| sign * 10f64.powf(x);
    let (mut lo, mut hi) = (best.0.abs().log10() - 0.5, best.0.abs().log10() + 0.5);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut ua, mut ub) = (f(at(a))?, f(at(b))?);
    for _ in 0..26 {
        for (x, u) in [(a, ua), (b, ub)] {
            if u < best.1 {
                best = (at(x), u);
            }
        }
        if ua < ub {
            hi = b;
            (b, ub) = (a, ua);
            a = hi - g * (hi - lo);
            ua = f(at(a))?;
        } else {
            lo = a;
            (a, ua) = (b, ub);
            b = lo + g * (hi - lo);
            ub = f(at(b))?;
        }
    }
    for (x, u) in [(a, ua), (b, ub)] {
        if u < best.1 {
            best = (at(x), u);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_scales_near_a_fit_are_the_numbers_ports_drop() {
        assert_eq!(simple_scales_near(0.015_624_3)[0], 1.0 / 64.0);
        assert_eq!(simple_scales_near(-2.998)[0], -3.0);
        assert_eq!(simple_scales_near(0.3372)[0], 1.0 / 3.0);
        assert_eq!(simple_scales_near(0.125_000_1)[0], 0.125);
        let r = simple_scales_near(0.0883);
        assert!((r[0] - 1.0 / 128f64.sqrt()).abs() < 1e-12, "{r:?}");
        // Nothing simple within 2%.
        assert!(simple_scales_near(0.42).is_empty());
    }

    #[test]
    fn perturbed_inputs_keep_signs_zeros_infinities_and_integers() {
        let x = [
            3.0,
            -2.0,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-3,
            7.5,
        ];
        let t = Tensor::from_f64_as(DType::F32, vec![8], &x).unwrap();
        let p = perturbed(&t, 1).unwrap();
        assert_eq!(p.dtype(), DType::F32);
        assert_eq!(p.shape(), &[8]);
        let v = p.to_f64_vec();
        for (a, b) in x.iter().zip(&v) {
            if a.is_infinite() || *a == 0.0 {
                assert_eq!(a.to_bits(), b.to_bits(), "{a} -> {b}");
            } else {
                let f = b / a;
                assert!((0.5..=1.5).contains(&f), "{a} -> {b}");
            }
        }
        // Each element its own factor, the same for the same seed, another
        // for another seed.
        assert_ne!(v[0] / 3.0, v[7] / 7.5);
        assert_eq!(perturbed(&t, 1).unwrap().bytes(), p.bytes());
        assert_ne!(perturbed(&t, 2).unwrap().bytes(), p.bytes());
        // Integers (indices, lengths) and booleans (masks) are kept.
        let i = Tensor::from_f64_as(DType::I32, vec![3], &[0.0, 5.0, -1.0]).unwrap();
        assert_eq!(perturbed(&i, 1).unwrap().bytes(), i.bytes());
        let m = Tensor::from_f64_as(DType::Bool, vec![2], &[1.0, 0.0]).unwrap();
        assert_eq!(perturbed(&m, 1).unwrap().bytes(), m.bytes());
    }

    #[test]
    fn a_scale_fit_finds_a_factor_of_a_thousand() {
        let (s, u) = fit_scale(|s| Ok::<_, ()>((s.log10() - 3.0).abs())).unwrap();
        assert!((s / 1000.0 - 1.0).abs() < 1e-3, "{s}");
        assert!(u < 1e-3);
    }
}
