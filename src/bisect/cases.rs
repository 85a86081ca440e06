//! The stage's other cases, for the repair search's cross-case check
//! (docs/bisect.md, "The cross-case check"): repairs that coincide on the
//! failing case need not hold on another case's inputs, and that case's
//! oracle tensors say which do. A case that runs the same function runs the
//! same search module; a case of another function (other shapes) gets the
//! repairs carried to its function op by op ([`super::repair`]), and an
//! op that cannot be matched uniquely is not carried, never guessed.

use super::error::BisectError;
use super::measure::{budget_dtype, oracle_as};
use super::{isolated_args, stage_values, Program, StartOutput};
use crate::run::inputs::InputSources;
use parity_mlir::{Function, Module, ValueId};
use parity_spec::{Spec, Stage};
use parity_tensor::Tensor;

/// Another case of the failing stage.
pub(crate) struct OtherCase<'a> {
    /// The case's name.
    pub name: String,
    /// The function its stage runs (the failing case's, or another).
    pub func: &'a Function,
    /// Values fed by its stage's arguments, in argument order.
    pub inputs: Vec<ValueId>,
    /// Values returned as its stage's outputs.
    pub outputs: Vec<ValueId>,
    /// The stage as instantiated for that case.
    pub stage: &'a Stage,
    /// Its isolated-mode arguments.
    pub args: Vec<Tensor>,
    /// The spec's `checkpoints:` map rendered for that case.
    pub mapped: Vec<(String, String)>,
}

/// The other cases' stage lists, instantiated, and the cases that could not
/// be (with why).
pub(crate) fn instantiate_others(
    spec: &Spec,
    case: &str,
) -> (Vec<(String, Vec<Stage>)>, Vec<String>) {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for c in spec.cases.iter().filter(|c| c.name != case) {
        match spec.instantiate(c) {
            Ok(stages) => out.push((c.name.clone(), stages)),
            Err(e) => skipped.push(format!("{}: not instantiated ({e})", c.name)),
        }
    }
    (out, skipped)
}

/// The other cases' instances of `stage` (function stages of a function
/// in `module`, or slices of the same function), with their arguments; the
/// others, with why.
pub(crate) fn usable<'a>(
    spec: &Spec,
    module: &'a Module,
    stage: &Stage,
    others: &'a mut [(String, Vec<Stage>)],
    sources: &InputSources,
    skipped: &mut Vec<String>,
) -> Vec<OtherCase<'a>> {
    let mut out = Vec::new();
    for (name, stages) in others.iter_mut() {
        let Some(at) = stages.iter().position(|s| s.name == stage.name) else {
            skipped.push(format!("{name}: has no stage `{}`", stage.name));
            continue;
        };
        if stages[at].slice.is_some() && stages[at].slice != stage.slice {
            skipped.push(format!("{name}: another slice of the module"));
            continue;
        }
        if stages[at].outputs.len() != stage.outputs.len() {
            skipped.push(format!("{name}: another list of outputs"));
            continue;
        }
        if stages[at].bind.is_some() {
            if let Err(m) = crate::run::bind::rebind(&spec.path, module, &mut stages[at]) {
                skipped.push(format!("{name}: its arguments do not bind ({m})"));
                continue;
            }
        }
        let this = &stages[at];
        let fname = this.slice.as_ref().map_or(&this.function, |x| &x.function);
        let Some(func) = module.function(fname) else {
            skipped.push(format!("{name}: no function `{fname}` in the module"));
            continue;
        };
        let (inputs, outputs) = match stage_values(module, func, this) {
            Ok(x) => x,
            Err(e) => {
                skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        match isolated_args(&spec.path, this, stages, sources) {
            Ok(args) if args.len() == inputs.len() => out.push(OtherCase {
                name: name.clone(),
                func,
                inputs,
                outputs,
                stage: &stages[at],
                args,
                mapped: spec
                    .checkpoints
                    .iter()
                    .filter_map(|c| {
                        let case = spec.case(name)?;
                        parity_spec::TokensSpec::render(&c.oracle, case)
                            .ok()
                            .map(|n| (n, c.point.clone()))
                    })
                    .collect(),
            }),
            Ok(_) => skipped.push(format!("{name}: another number of arguments")),
            Err(e) => skipped.push(format!("{name}: its arguments cannot be read ({e})")),
        }
    }
    out
}

/// One other case, ready to judge the repairs: its program, the region's
/// inputs from its own oracle tensors and arguments (in the failing case's
/// feed order), and its oracle tensor at the region's end.
pub(crate) struct CaseFeed<'a> {
    /// The case's name.
    pub name: String,
    /// The stage as that case runs it (its criteria, mask and arguments).
    pub program: Program<'a>,
    /// The region's inputs (values of its function), in the failing case's
    /// feed order.
    pub feed: Vec<(ValueId, Tensor)>,
    /// The region's end in its function.
    pub target: ValueId,
    /// Its oracle tensor at the region's end.
    pub expected: Tensor,
}

/// The other cases' feeds for a region fed at `feed`'s values (oracle
/// tensors named `oracle_of` at the `passing` checkpoints, stage inputs
/// otherwise) and ending at `target`; cases without the tensors are
/// skipped with why.
pub(crate) fn case_feeds<'a>(
    program: &Program<'a>,
    case: &str,
    region: (&[(ValueId, Tensor)], &[ValueId], ValueId),
    oracle_of: impl Fn(ValueId) -> Option<String>,
    skipped: &mut Vec<String>,
) -> Vec<CaseFeed<'a>> {
    let (feed, passing, target) = region;
    let mut out = Vec::new();
    for other in &program.others {
        match case_feed(program, case, other, (feed, passing, target), &oracle_of) {
            Ok(f) => out.push(f),
            Err(why) => skipped.push(format!("{}: {why}", other.name)),
        }
    }
    out
}

fn case_feed<'a>(
    program: &Program<'a>,
    case: &str,
    other: &OtherCase<'a>,
    region: (&[(ValueId, Tensor)], &[ValueId], ValueId),
    oracle_of: &impl Fn(ValueId) -> Option<String>,
) -> Result<CaseFeed<'a>, String> {
    let (feed, passing, target) = region;
    let func: &Function = program.func;
    let g = other.func;
    // The same value and tensor in the other case: a stage output's own
    // oracle name, the spec's map at the same entry, or the `{case}/`
    // convention (a scope output of the same name).
    let counterpart = |v: ValueId, name: &str| -> Result<(ValueId, String), String> {
        if let Some(i) = program.outputs.iter().position(|&o| o == v) {
            let o = other.stage.outputs.get(i).ok_or("no counterpart output")?;
            return Ok((other.outputs[i], o.oracle.clone()));
        }
        if let Some(i) = program.mapped.iter().position(|(n, _)| n == name) {
            let (n, point) = other.mapped.get(i).ok_or("no counterpart checkpoint")?;
            let w = g.resolve_point(point).map_err(|e| e.to_string())?;
            return Ok((w, n.clone()));
        }
        let key = name
            .strip_prefix(&format!("{case}/"))
            .ok_or_else(|| format!("no counterpart of oracle tensor `{name}`"))?;
        let w = if std::ptr::eq(g, func) {
            v
        } else {
            *g.scope_outputs()
                .get(key)
                .ok_or_else(|| format!("no scope `{key}` in `{}`", g.name))?
        };
        Ok((w, format!("{}/{key}", other.name)))
    };
    let load = |v: ValueId, name: &str| -> Result<(ValueId, Tensor), String> {
        let (w, theirs) = counterpart(v, name)?;
        if !program.store.contains(&theirs) {
            return Err(format!("no oracle tensor `{theirs}`"));
        }
        let t = oracle_as(program.store, &theirs, g, w).map_err(|e: BisectError| e.to_string())?;
        Ok((w, t))
    };
    let mut theirs = Vec::with_capacity(feed.len());
    for (v, _) in feed {
        let name = oracle_of(*v).filter(|_| passing.contains(v));
        let t = match name {
            Some(name) => load(*v, &name)?,
            None => match program.inputs.iter().position(|i| i == v) {
                Some(i) => (other.inputs[i], other.args[i].clone()),
                None => {
                    return Err(format!(
                        "no tensor for region input {}",
                        func.values[*v].name
                    ))
                }
            },
        };
        theirs.push(t);
    }
    let target_name = oracle_of(target).ok_or("the region's end has no oracle tensor")?;
    let (their_target, expected) = load(target, &target_name)?;
    let at = program
        .outputs
        .iter()
        .position(|&o| o == program.start.value)
        .ok_or("the failing output has no counterpart")?;
    let start = other
        .stage
        .outputs
        .get(at)
        .ok_or("the failing output has no counterpart")?;
    let derived = Program {
        func: g,
        stage: other.stage,
        store: program.store,
        inputs: other.inputs.clone(),
        args: other.args.clone(),
        outputs: other.outputs.clone(),
        budget: budget_dtype(other.stage, Some(&start.name)),
        mapped: other.mapped.clone(),
        start: StartOutput {
            value: other.outputs[at],
            spec: start,
            whole: program.start.whole,
        },
        others: Vec::new(),
    };
    Ok(CaseFeed {
        name: other.name.clone(),
        program: derived,
        feed: theirs,
        target: their_target,
        expected,
    })
}
