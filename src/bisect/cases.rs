//! The stage's other cases, for the repair search's cross-case check
//! (docs/bisect.md, "The cross-case check"): repairs that coincide on the
//! failing case need not hold on another case's inputs, and that case's
//! oracle tensors say which do. Only cases that run the same function (the
//! same slice) are used: the search module is that function's region, so
//! the same edits run there unchanged, with no new compile. A case of
//! another function is skipped with that reason, never mapped by a guess.

use super::error::BisectError;
use super::measure::{budget_dtype, oracle_as};
use super::{isolated_args, Program, StartOutput};
use crate::run::inputs::InputSources;
use parity_mlir::{Function, Module, ValueId};
use parity_spec::{Spec, Stage};
use parity_tensor::Tensor;

/// Another case of the failing stage that runs the same function.
pub(crate) struct OtherCase<'a> {
    /// The case's name.
    pub name: String,
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

/// The other cases whose instance of `stage` runs the same function (and
/// slice) as `stage` does, with their arguments; the others, with why.
pub(crate) fn same_function<'a>(
    spec: &Spec,
    module: &Module,
    stage: &Stage,
    others: &'a mut [(String, Vec<Stage>)],
    sources: &InputSources,
    skipped: &mut Vec<String>,
) -> Vec<OtherCase<'a>> {
    let function = |s: &Stage| {
        s.slice
            .as_ref()
            .map_or(s.function.clone(), |x| x.function.clone())
    };
    let mut out = Vec::new();
    for (name, stages) in others.iter_mut() {
        let Some(at) = stages.iter().position(|s| s.name == stage.name) else {
            skipped.push(format!("{name}: has no stage `{}`", stage.name));
            continue;
        };
        if function(&stages[at]) != function(stage) || stages[at].slice != stage.slice {
            skipped.push(format!(
                "{name}: another function (`{}`); edits are not carried across functions",
                function(&stages[at])
            ));
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
        match isolated_args(&spec.path, this, stages, sources) {
            Ok(args) => out.push(OtherCase {
                name: name.clone(),
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
    /// The region's inputs, value for value as the failing case's feed.
    pub feed: Vec<(ValueId, Tensor)>,
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
    // The same tensor in the other case: a stage output's own oracle name,
    // the spec's map at the same entry, or the `{case}/` convention.
    let rename = |v: ValueId, name: &str| -> Option<String> {
        if let Some(i) = program.outputs.iter().position(|&o| o == v) {
            return other.stage.outputs.get(i).map(|o| o.oracle.clone());
        }
        if let Some(i) = program.mapped.iter().position(|(n, _)| n == name) {
            return other.mapped.get(i).map(|(n, _)| n.clone());
        }
        name.strip_prefix(&format!("{case}/"))
            .map(|rest| format!("{}/{rest}", other.name))
    };
    let load = |v: ValueId, name: &str| -> Result<Tensor, String> {
        let theirs =
            rename(v, name).ok_or_else(|| format!("no counterpart of oracle tensor `{name}`"))?;
        if !program.store.contains(&theirs) {
            return Err(format!("no oracle tensor `{theirs}`"));
        }
        oracle_as(program.store, &theirs, func, v).map_err(|e: BisectError| e.to_string())
    };
    let mut theirs = Vec::with_capacity(feed.len());
    for (v, _) in feed {
        let name = oracle_of(*v).filter(|_| passing.contains(v));
        let t = match name {
            Some(name) => load(*v, &name)?,
            None => match program.inputs.iter().position(|i| i == v) {
                Some(i) => other.args[i].clone(),
                None => {
                    return Err(format!(
                        "no tensor for region input {}",
                        func.values[*v].name
                    ))
                }
            },
        };
        theirs.push((*v, t));
    }
    let target_name = oracle_of(target).ok_or("the region's end has no oracle tensor")?;
    let expected = load(target, &target_name)?;
    let start = program
        .outputs
        .iter()
        .position(|&o| o == program.start.value)
        .and_then(|i| other.stage.outputs.get(i))
        .ok_or("the failing output has no counterpart")?;
    let derived = Program {
        func,
        stage: other.stage,
        store: program.store,
        inputs: program.inputs.clone(),
        args: other.args.clone(),
        outputs: program.outputs.clone(),
        budget: budget_dtype(other.stage, Some(&start.name)),
        mapped: other.mapped.clone(),
        start: StartOutput {
            value: program.start.value,
            spec: start,
            whole: program.start.whole,
        },
        others: Vec::new(),
    };
    Ok(CaseFeed {
        name: other.name.clone(),
        program: derived,
        feed: theirs,
        expected,
    })
}
