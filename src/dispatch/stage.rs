//! One stage traced on two targets: compile, run, align, compare.

use super::align;
use super::flow_ops::executable_ops;
use super::trace::{Judge, Trace};
use crate::bisect::{self, BisectError};
use crate::run::inputs::InputSources;
use crate::target::Target;
use parity_iree::{ArtifactCache, IreeCompiler, TracedArtifact};
use parity_mlir::{Function, SliceArg, SliceRequest};
use parity_record::{DispatchStage, Status, TraceFidelity, TracedDiff};
use parity_spec::{ModuleSource, Spec, Stage};
use parity_tensor::Tensor;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// What every stage's tracing shares.
pub struct Env<'a> {
    pub spec: &'a Spec,
    pub compiler: &'a IreeCompiler,
    pub cache: &'a ArtifactCache,
    pub reference: &'a Target,
    pub target: &'a Target,
    pub budget: u64,
}

/// Traced compiles of this run (from the on-disk cache or compiled), by (program text, target): a stage traced
/// for several cases compiles once per target.
#[derive(Default)]
pub struct Compiled(pub(super) HashMap<(String, String), TracedArtifact>);

/// Whether the stage's module is a prebuilt vmfb (no source to trace).
pub fn prebuilt(spec: &Spec, stage: &Stage) -> bool {
    spec.subject
        .modules
        .get(&stage.module)
        .is_some_and(|m| matches!(m.source, ModuleSource::Vmfb(_)))
}

/// One target's traced run: the trace, the function's results, and the
/// untraced module's results.
struct Side {
    trace: Trace,
    results: Vec<Tensor>,
    untraced: Vec<Tensor>,
    flow_ir: String,
}

/// A dispatch's (inputs, outputs) comparisons, each when made.
pub(super) type Diffs = (Option<Vec<TracedDiff>>, Option<Vec<TracedDiff>>);

/// Streaming state of the tested target's run.
struct Stream {
    reference: Rc<Trace>,
    judge: Rc<Judge>,
    trace: Trace,
    /// Still key for key with the reference.
    in_step: bool,
    /// (tested position) -> (inputs diff, outputs diff), compared as they came.
    streamed: HashMap<usize, Diffs>,
}

impl Stream {
    fn event(&mut self, label: &str, tensors: Vec<Tensor>) {
        let (key, outputs) = super::trace::split_label(label);
        let pos = self.trace.slot(&key, outputs);
        let reference = self.reference.dispatches.get(pos);
        self.in_step = self.in_step && reference.is_some_and(|r| r.key == key);
        let kept = reference.and_then(|r| {
            if outputs {
                r.outputs.as_ref()
            } else {
                r.inputs.as_ref()
            }
        });
        match (self.in_step, kept) {
            (true, Some(r)) => {
                let d = self.judge.diff(&tensors, r);
                let entry = self.streamed.entry(pos).or_default();
                if outputs {
                    entry.1 = Some(d);
                } else {
                    entry.0 = Some(d);
                }
                self.trace.store(pos, outputs, tensors, false);
            }
            _ => self.trace.store(pos, outputs, tensors, true),
        }
    }
}

/// Traces stage `stages[at]` of `case` on both targets.
pub fn trace_stage(
    env: &Env,
    compiled: &mut Compiled,
    stages: &[Stage],
    at: usize,
    case: &str,
) -> Result<DispatchStage, BisectError> {
    let mut stage = stages[at].clone();
    let (module, source_name) = bisect::load_bound(env.spec, &mut stage, env.compiler)?;
    let func = bisect::stage_function(&module, &stage, &source_name)?;
    let (inputs, outputs) = bisect::stage_values(&module, func, &stage)?;
    let sources = InputSources::open(env.spec).map_err(|e| BisectError::Inputs(Box::new(e)))?;
    let given = bisect::isolated_args(&env.spec.path, &stage, stages, &sources)?;
    // The program keeps the stage function's own name (and its module's),
    // so its dispatches carry the names an ordinary compile gives them
    // (`FUNCTION_dispatch_N`): the names of IREE's executable dumps, which a
    // target's `--iree-hal-substitute-executable-source` refers to.
    let entry = func.name.clone();
    let req = SliceRequest {
        name: entry.clone(),
        from: inputs.clone(),
        to: outputs,
    };
    let (text, infos) = parity_mlir::emit_slices(
        &module,
        func,
        module.name.as_deref().unwrap_or("module"),
        &[req],
    )
    .map_err(|source| BisectError::StageSlice {
        stage: stage.name.clone(),
        source,
    })?;
    let args: Vec<Tensor> = infos[0]
        .args
        .iter()
        .filter_map(|(a, _)| match a {
            SliceArg::From(i) => given.get(*i).cloned(),
            SliceArg::FuncArg(_) => None,
        })
        .collect();
    if args.len() != infos[0].args.len() {
        return Err(BisectError::InputCount {
            stage: stage.name.clone(),
            takes: infos[0].args.len(),
            given: given.len(),
        });
    }
    let first = stage
        .outputs
        .first()
        .ok_or_else(|| BisectError::NoFailingOutput {
            stage: stage.name.clone(),
        })?;
    let judge = Rc::new(Judge {
        spec: env.spec.clone(),
        output: first.clone(),
    });
    let label = format!("{}[{} traced]", source_name, stage.name);
    let reference = run_side(
        env,
        compiled,
        env.reference,
        &stage,
        &label,
        (&text, &entry),
        &args,
        None,
    )?;
    let reference_trace = Rc::new(reference.trace);
    let stream = Rc::new(RefCell::new(Stream {
        reference: Rc::clone(&reference_trace),
        judge: Rc::clone(&judge),
        trace: Trace::new(env.budget),
        in_step: true,
        streamed: HashMap::new(),
    }));
    let tested = run_side(
        env,
        compiled,
        env.target,
        &stage,
        &label,
        (&text, &entry),
        &args,
        Some(Rc::clone(&stream)),
    )?;
    let stream = Rc::try_unwrap(stream)
        .map_err(|_| ())
        .expect("the traced module is dropped")
        .into_inner();
    let fidelity = vec![
        fidelity(
            env.reference.name(),
            &reference.results,
            &reference.untraced,
        ),
        fidelity(env.target.name(), &tested.results, &tested.untraced),
    ];
    let ref_ops = ops_per_dispatch(&reference.flow_ir, func, &infos[0].ops, &reference_trace);
    let tested_ops = ops_per_dispatch(&tested.flow_ir, func, &infos[0].ops, &stream.trace);
    let pairs = align::with_ops(
        align::by_key(&reference_trace.keys(), &stream.trace.keys()),
        &ref_ops,
        &tested_ops,
    );
    let rows = super::rows::rows(
        &pairs,
        &reference_trace,
        &stream.trace,
        &stream.streamed,
        &judge,
        func,
        &ref_ops,
    );
    let paired_r: BTreeSet<usize> = pairs.iter().map(|p| p.reference).collect();
    let paired_t: BTreeSet<usize> = pairs.iter().map(|p| p.target).collect();
    let unaligned = super::rows::unaligned(env.reference.name(), &reference_trace, &paired_r)
        .chain(super::rows::unaligned(
            env.target.name(),
            &stream.trace,
            &paired_t,
        ))
        .collect();
    let first_failing = rows.iter().position(|r| r.status == Status::Fail);
    let skipped = rows.iter().any(|r| r.status == Status::Skipped);
    // The stage's own results decide whether there is a divergence to
    // place: the stage's tolerance is set for its outputs, and an
    // intermediate that differs beyond it (a reduction's order) while the
    // results agree is absorbed, not a divergence. A divergence no aligned
    // dispatch shows is still a divergence.
    let results = super::rows::results(env.spec, &stage, &tested.results, &reference.results);
    let results_differ = results.iter().any(|d| d.status == Status::Fail);
    let (first_divergent, absorbed) = if results_differ {
        (first_failing, None)
    } else {
        (None, first_failing)
    };
    let status = match (first_divergent, results_differ, skipped) {
        (Some(_), _, _) | (None, true, _) => Status::Fail,
        (None, false, true) => Status::Skipped,
        (None, false, false) => Status::Pass,
    };
    // Inside the first divergent dispatch (a local one: with inputs that
    // already differ, the cause may lie before it).
    let inside = first_divergent
        .and_then(|i| pairs.get(i).map(|p| (i, p.reference)))
        .filter(|(i, _)| !rows[*i].inputs_differ)
        .map(|(i, r)| {
            let program = super::inside::StageProgram {
                module: &module,
                func,
                spec_module: &stage.module,
                inputs: &inputs,
                args: &given,
            };
            let key = &rows[i].key;
            let executable = key.split("::").next().unwrap_or(key);
            let reads = reference_trace.dispatches[r].inputs.as_deref();
            let dispatch = super::inside::Dispatch {
                executable,
                ops: &ref_ops[r].0,
                reads,
            };
            super::inside::inside(env, &program, &dispatch, &judge)
        });
    Ok(DispatchStage {
        stage: stage.name.clone(),
        case: case.to_string(),
        status,
        criteria: serde_json::to_string(&judge.criteria_of(first)).unwrap_or_default(),
        reference_count: reference_trace.dispatches.len(),
        target_count: stream.trace.dispatches.len(),
        dispatches: rows,
        first_divergent,
        absorbed,
        inside,
        unaligned,
        fidelity,
        results,
        kept_bytes: reference_trace.kept + stream.trace.kept,
        dropped_bytes: reference_trace.dropped + stream.trace.dropped,
    })
}

/// Compiles (once per program and target), runs traced, and runs the
/// untraced module for the fidelity check.
#[allow(clippy::too_many_arguments)]
fn run_side(
    env: &Env,
    compiled: &mut Compiled,
    target: &Target,
    stage: &Stage,
    label: &str,
    (text, entry): (&str, &str),
    args: &[Tensor],
    stream: Option<Rc<RefCell<Stream>>>,
) -> Result<Side, BisectError> {
    let options = target.module_options(env.spec, &stage.module);
    let label = format!("{label} on target `{}`", target.name());
    let key = (text.to_string(), target.name().to_string());
    if !compiled.0.contains_key(&key) {
        let (artifact, _) = env
            .cache
            .get_or_compile_traced(env.compiler, &label, text.as_bytes(), &options)
            .map_err(|source| BisectError::Compile {
                label: label.clone(),
                source,
            })?;
        compiled.0.insert(key.clone(), artifact);
    }
    let artifact = &compiled.0[&key];
    let untraced = env
        .cache
        .get_or_compile(env.compiler, &label, text.as_bytes(), &options)
        .map_err(|source| BisectError::Compile {
            label: label.clone(),
            source,
        })?;
    let runtime = target.runtime().map_err(BisectError::Runtime)?;
    let own = Rc::new(RefCell::new(Trace::new(env.budget)));
    let sink: parity_iree::traced::OnTrace = match &stream {
        Some(s) => {
            let s = Rc::clone(s);
            Box::new(move |key, tensors| {
                s.borrow_mut().event(key, tensors);
                Ok(())
            })
        }
        None => {
            let own = Rc::clone(&own);
            Box::new(move |key, tensors| {
                own.borrow_mut().push(key, tensors, true);
                Ok(())
            })
        }
    };
    let invoke_err = |source| BisectError::Invoke {
        slice: label.clone(),
        source,
    };
    let load_err = |source| BisectError::Load {
        label: label.clone(),
        source,
    };
    let results = {
        let module = runtime
            .load_traced(&artifact.vmfb, &label, sink)
            .map_err(load_err)?;
        module.invoke(entry, args).map_err(invoke_err)?
    };
    let untraced = runtime
        .load(&untraced.vmfb, &label)
        .map_err(load_err)?
        .invoke(entry, args)
        .map_err(invoke_err)?;
    let trace = Rc::try_unwrap(own)
        .map(RefCell::into_inner)
        .unwrap_or_default();
    Ok(Side {
        trace,
        results,
        untraced,
        flow_ir: artifact.flow_ir.clone(),
    })
}

fn fidelity(target: &str, traced: &[Tensor], untraced: &[Tensor]) -> TraceFidelity {
    let same = traced.len() == untraced.len()
        && traced
            .iter()
            .zip(untraced)
            .all(|(a, b)| a.bytes() == b.bytes() && a.shape() == b.shape());
    let max_abs = traced
        .iter()
        .zip(untraced)
        .filter(|(a, b)| a.shape() == b.shape())
        .flat_map(|(a, b)| {
            a.to_f64_vec()
                .into_iter()
                .zip(b.to_f64_vec())
                .map(|(x, y)| (x - y).abs())
                .collect::<Vec<_>>()
        })
        .fold(0.0f64, f64::max);
    TraceFidelity {
        target: target.to_string(),
        bit_identical: same,
        max_abs: if same { 0.0 } else { max_abs },
    }
}

/// The stage operations each traced dispatch holds, with its result shapes
/// (not dtypes: a target may demote an operand and fuse the conversion).
fn ops_per_dispatch(
    flow_ir: &str,
    func: &Function,
    ops: &[usize],
    trace: &Trace,
) -> Vec<(BTreeSet<usize>, Vec<Vec<usize>>)> {
    let by_exe = executable_ops(flow_ir, func, ops);
    trace
        .dispatches
        .iter()
        .map(|d| {
            let held = by_exe.get(d.executable()).cloned().unwrap_or_default();
            (held, d.output_shapes.clone())
        })
        .collect()
}
