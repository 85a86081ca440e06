//! Inside the first divergent dispatch: its operations cut out as a slice
//! of the stage function and run on both targets from the same inputs (the
//! reference target's values at the dispatch's boundary), with every
//! operation's result returned (tapped), to find the first operation whose
//! result the targets disagree on. Tapping changes fusion, so the answer is
//! labelled as that of the tapped slice; when the slice does not reproduce
//! the dispatch's divergence, the record says so (observer effect) and the
//! dispatch-level answer stands alone.

use super::stage::Env;
use super::trace::Judge;
use parity_iree::IreeRuntime;
use parity_mlir::{Function, Module, SliceArg, SliceRequest, ValueId};
use parity_record::{DispatchOp, InsideDispatch, Status};
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// Compiles `text` for `target` (untraced, through the cache) and runs its
/// function `name` with `args`.
fn run(
    env: &Env,
    target: &crate::target::Target,
    module: &str,
    label: &str,
    text: &str,
    args: &[Tensor],
) -> Result<Vec<Tensor>, String> {
    let options = target.module_options(env.spec, module);
    let vmfb = env
        .cache
        .get_or_compile(env.compiler, label, text.as_bytes(), &options)
        .map_err(|e| e.to_string())?;
    let runtime: IreeRuntime = target.runtime().map_err(|e| e.to_string())?;
    let loaded = runtime.load(&vmfb.vmfb, label).map_err(|e| e.to_string())?;
    loaded.invoke("inside", args).map_err(|e| e.to_string())
}

/// Cuts `from -> to` out of `func` as the module's function `inside`; its
/// arguments in order, as `from` positions.
pub(super) fn cut(
    module: &Module,
    func: &Function,
    from: &[ValueId],
    to: &[ValueId],
) -> Result<(String, Vec<usize>), String> {
    let req = SliceRequest {
        name: "inside".into(),
        from: from.to_vec(),
        to: to.to_vec(),
    };
    let (text, infos) =
        parity_mlir::emit_slices(module, func, "inside", &[req]).map_err(|e| e.to_string())?;
    let order = infos[0]
        .args
        .iter()
        .map(|(a, _)| match a {
            SliceArg::From(i) => Ok(*i),
            SliceArg::FuncArg(i) => Err(format!("the slice needs function argument {i} not given")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((text, order))
}

/// The stage a dispatch belongs to, as a program over its function.
pub struct StageProgram<'a> {
    /// The normalised module.
    pub module: &'a Module,
    /// The stage's function in it.
    pub func: &'a Function,
    /// The spec module the stage runs (for its compile flags).
    pub spec_module: &'a str,
    /// The values the stage's arguments feed, in argument order.
    pub inputs: &'a [ValueId],
    /// The stage's isolated-mode arguments.
    pub args: &'a [Tensor],
}

/// The dispatch gone inside, as the reference target traced it.
pub struct Dispatch<'a> {
    /// Its executable's symbol.
    pub executable: &'a str,
    /// The stage-function ops located in it.
    pub ops: &'a BTreeSet<usize>,
    /// Its traced inputs on the reference target, when kept.
    pub reads: Option<&'a [Tensor]>,
}

/// Goes inside `d`.
pub fn inside(env: &Env, p: &StageProgram, d: &Dispatch, judge: &Judge) -> InsideDispatch {
    let executable = d.executable;
    // A substituted executable is a hand-written replacement: the ops cut
    // out of the stage compile afresh, without it, and cannot reproduce it.
    for target in [env.reference, env.target] {
        let options = target.module_options(env.spec, p.spec_module);
        let subs = options.substitutions().unwrap_or_default();
        if subs.iter().any(|s| s.executable == executable) {
            return InsideDispatch {
                op: None,
                reproduced: false,
                max_abs: None,
                vs_f64: None,
                note: format!(
                    "not gone inside: target `{}` substitutes executable `{executable}` \
                     (--iree-hal-substitute-executable-source); its operations cut out would \
                     compile afresh without the substitution, so the dispatch-level answer \
                     stands alone",
                    target.name()
                ),
            };
        }
    }
    match try_inside(env, p, d, judge) {
        Ok(i) => i,
        Err(why) => InsideDispatch {
            op: None,
            reproduced: false,
            max_abs: None,
            vs_f64: None,
            note: format!("could not go inside the dispatch: {why}"),
        },
    }
}

fn try_inside(
    env: &Env,
    p: &StageProgram,
    d: &Dispatch,
    judge: &Judge,
) -> Result<InsideDispatch, String> {
    let ops = d.ops;
    let (module, func, stage_module) = (p.module, p.func, p.spec_module);
    let (stage_inputs, stage_args) = (p.inputs, p.args);
    // Every non-constant op the dispatch holds, and the values it reads
    // from outside (constants included: they are computed, then fed).
    let region: Vec<usize> = ops.iter().copied().collect();
    let produced: BTreeSet<ValueId> = region
        .iter()
        .flat_map(|&o| func.ops[o].results.clone())
        .collect();
    let mut boundary: Vec<ValueId> = Vec::new();
    for &o in &region {
        for &v in func.ops[o].operands.iter().chain(&func.ops[o].captures) {
            if !produced.contains(&v) && !boundary.contains(&v) {
                boundary.push(v);
            }
        }
    }
    let taps: Vec<ValueId> = region
        .iter()
        .flat_map(|&o| func.ops[o].results.clone())
        .collect();
    if taps.is_empty() {
        return Err("the dispatch holds no operation with a result".into());
    }
    // 1. The reference target's values at the boundary and at every tap.
    let mut wanted = boundary.clone();
    wanted.extend(&taps);
    let (text, order) = cut(module, func, stage_inputs, &wanted)?;
    let args: Vec<Tensor> = order.iter().map(|&i| stage_args[i].clone()).collect();
    let reference = run(
        env,
        env.reference,
        stage_module,
        "inside[reference]",
        &text,
        &args,
    )?;
    let (boundary_values, reference_taps) = reference.split_at(boundary.len());
    // The located ops are this dispatch only if what they read from outside
    // is what the dispatch reads (compared by bytes: IREE may reshape a
    // value between dispatches). Locations over- and under-approximate: one
    // location may cover ops of several dispatches, and IREE may rewrite
    // ops (a softmax raised from exp, reduce and divide) into ones whose
    // locations its IR does not keep.
    if let Some(reads) = d.reads {
        let unaccounted = boundary
            .iter()
            .zip(boundary_values)
            .filter(|(v, value)| {
                let constant = func
                    .op_of(**v)
                    .is_some_and(|o| func.ops[o].name == "stablehlo.constant");
                !constant && !reads.iter().any(|t| t.bytes() == value.bytes())
            })
            .count();
        if unaccounted > 0 {
            return Ok(InsideDispatch {
                op: None,
                reproduced: false,
                max_abs: None,
                vs_f64: None,
                note: format!(
                    "not gone inside: the operations located in this dispatch (by source \
                     location) read {unaccounted} value(s) that are not among its traced inputs, \
                     so they are not exactly its computation (a location shared with other \
                     dispatches, or operations IREE rewrote without keeping their locations); \
                     a slice of them would not be this dispatch"
                ),
            });
        }
    }
    // 2. The dispatch's ops alone, from those values, on the tested target.
    let (text, order) = cut(module, func, &boundary, &taps)?;
    let args: Vec<Tensor> = order.iter().map(|&i| boundary_values[i].clone()).collect();
    let tested = run(
        env,
        env.target,
        stage_module,
        "inside[target]",
        &text,
        &args,
    )?;
    // 3. The first op whose result differs.
    let mut worst: Option<f64> = None;
    for (k, (t, r)) in tested.iter().zip(reference_taps).enumerate() {
        let d = judge.diff(std::slice::from_ref(t), std::slice::from_ref(r));
        let Some(d) = d.first() else { continue };
        worst = match (worst, d.max_abs) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if d.status == Status::Fail {
            let o = func.op_of(taps[k]).unwrap_or(region[0]);
            // The reference target's value of every boundary and tapped value.
            let values: HashMap<ValueId, Tensor> = boundary
                .iter()
                .zip(boundary_values)
                .chain(taps.iter().zip(reference_taps))
                .map(|(v, t)| (*v, t.clone()))
                .collect();
            let shadow = super::inside_f64::vs_f64(
                env,
                module,
                func,
                o,
                taps[k],
                &values,
                &reference_taps[k],
                t,
            );
            let (vs_f64, shadow_note) = match shadow {
                Ok(s) => (Some(s), String::new()),
                Err(why) => (None, format!("; its f64 check could not run: {why}")),
            };
            return Ok(InsideDispatch {
                vs_f64,
                op: Some(DispatchOp {
                    index: o,
                    name: func.ops[o].name.clone(),
                    loc: crate::bisect::loc_label(&func.ops[o].loc),
                }),
                reproduced: true,
                max_abs: d.max_abs,
                note: format!("the dispatch's operations cut out and run alone on both targets from the reference target's values, every result tapped (tapping changes fusion: this is the tapped slice's first differing operation); the operation is then run alone in f64 on the CPU from the reference target's operands{shadow_note}"),
            });
        }
    }
    Ok(InsideDispatch {
        op: None,
        reproduced: false,
        max_abs: worst,
        vs_f64: None,
        note: "observer effect: the dispatch's operations, cut out and tapped, agree on both targets from the same inputs; the divergence needs the dispatch as IREE formed it, so the dispatch-level answer stands alone".into(),
    })
}
