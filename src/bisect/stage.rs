//! The stage bisect works on: instantiated for its case, its module loaded
//! and normalised on a target that builds it from MLIR, its function's
//! inputs and outputs, and its isolated-mode arguments.

use super::error::BisectError;
use super::BisectOptions;
use crate::run;
use crate::run::inputs::InputSources;
use crate::target::Target;
use parity_iree::IreeCompiler;
use parity_mlir::{Function, Module, SliceRequest, ValueId};
use parity_spec::{Arg, Case, ModuleSource, OutputSpec, Spec, Stage};
use parity_tensor::Tensor;
use std::collections::HashMap;

/// The case, its stages instantiated, and the index of `stage_name` among them.
pub(super) fn instantiate<'s>(
    spec: &'s Spec,
    case_name: &str,
    stage_name: &str,
) -> Result<(&'s Case, Vec<Stage>, usize), BisectError> {
    let case = spec
        .case(case_name)
        .ok_or_else(|| BisectError::UnknownCase {
            case: case_name.to_string(),
        })?;
    let stages = spec
        .instantiate(case)
        .map_err(|source| BisectError::Instantiate {
            case: case_name.to_string(),
            source,
        })?;
    let at = stages
        .iter()
        .position(|s| s.name == stage_name)
        .ok_or_else(|| BisectError::UnknownStage {
            stage: stage_name.to_string(),
        })?;
    Ok((case, stages, at))
}

/// The target, ready, when it builds `stage`'s module from the subject's MLIR.
pub(super) fn mlir_target(
    spec: &Spec,
    options: &BisectOptions,
    stage: &Stage,
) -> Result<Target, BisectError> {
    let target = Target::ready(spec, options.run.target.as_deref())?;
    // A target that runs its own prebuilt vmfb for the stage's module has no
    // MLIR of that build: the subject's MLIR is another program.
    if let Some(ModuleSource::Vmfb(path)) =
        target.spec().modules.get(&stage.module).map(|m| &m.source)
    {
        return Err(BisectError::PrebuiltModule {
            stage: stage.name.clone(),
            path: path.clone(),
        });
    }
    Ok(target)
}

/// The function's inputs and outputs against the stage's arguments and outputs.
pub(super) fn check_counts(
    stage: &Stage,
    inputs: &[ValueId],
    args: &[Tensor],
    outputs: &[ValueId],
) -> Result<(), BisectError> {
    if inputs.len() != args.len() {
        return Err(BisectError::InputCount {
            stage: stage.name.clone(),
            takes: inputs.len(),
            given: args.len(),
        });
    }
    if outputs.len() != stage.outputs.len() {
        return Err(BisectError::OutputCount {
            stage: stage.name.clone(),
            returns: outputs.len(),
            listed: stage.outputs.len(),
        });
    }
    Ok(())
}

/// The earliest failing stage output (program order), where bisect starts.
pub(super) fn start_output<'s>(
    stage: &'s Stage,
    outputs: &[ValueId],
    func: &Function,
    statuses: &HashMap<String, bool>,
) -> Result<(&'s OutputSpec, ValueId), BisectError> {
    stage
        .outputs
        .iter()
        .zip(outputs)
        .filter(|(o, _)| statuses.get(&o.name) == Some(&false))
        .min_by_key(|(_, &v)| func.op_of(v).unwrap_or(usize::MAX))
        .map(|(o, &v)| (o, v))
        .ok_or_else(|| BisectError::NoFailingOutput {
            stage: stage.name.clone(),
        })
}

/// The spec's `checkpoints:` map rendered for `case`: (oracle tensor, point).
pub(super) fn mapped_checkpoints(spec: &Spec, case: &Case) -> Vec<(String, String)> {
    spec.checkpoints
        .iter()
        .filter_map(|c| {
            parity_spec::TokensSpec::render(&c.oracle, case)
                .ok()
                .map(|name| (name, c.point.clone()))
        })
        .collect()
}

/// The module of a stage, normalised and parsed, with its source name.
fn load_module(
    spec: &Spec,
    stage: &Stage,
    compiler: &IreeCompiler,
) -> Result<(Module, String), BisectError> {
    let module_spec =
        spec.subject
            .modules
            .get(&stage.module)
            .ok_or_else(|| BisectError::UnknownModule {
                stage: stage.name.clone(),
                module: stage.module.clone(),
            })?;
    let path = match &module_spec.source {
        ModuleSource::Mlir(p) => p.clone(),
        ModuleSource::Vmfb(p) => {
            return Err(BisectError::PrebuiltModule {
                stage: stage.name.clone(),
                path: p.clone(),
            })
        }
    };
    run::slices::read_normalised(compiler, &path).map_err(|source| BisectError::Module {
        stage: stage.name.clone(),
        source,
    })
}

/// The stage's module, normalised and parsed, with its source name; a
/// `bind:` stage's arguments bound by name exactly as the run bound them.
pub(crate) fn load_bound(
    spec: &Spec,
    stage: &mut Stage,
    compiler: &IreeCompiler,
) -> Result<(Module, String), BisectError> {
    let (module, source_name) = load_module(spec, stage, compiler)?;
    if stage.bind.is_some() {
        run::bind::rebind(&spec.path, &module, stage).map_err(|message| BisectError::Bind {
            stage: stage.name.clone(),
            message,
        })?;
    }
    Ok((module, source_name))
}

/// The function a stage runs, or slices, in its normalised module.
pub(crate) fn stage_function<'m>(
    module: &'m Module,
    stage: &Stage,
    source_name: &str,
) -> Result<&'m Function, BisectError> {
    let name = stage
        .slice
        .as_ref()
        .map_or(&stage.function, |s| &s.function);
    module
        .function(name)
        .ok_or_else(|| BisectError::UnknownFunction {
            module: source_name.to_string(),
            function: name.clone(),
            stage: stage.name.clone(),
        })
}

/// Inputs and outputs of a stage as values of its function: the function's
/// own for a `function:` stage; for a `slice:` stage, the slice's arguments in
/// the order parity-mlir gives them (the runner's order) and its `to` points.
pub(crate) fn stage_values(
    module: &Module,
    func: &Function,
    stage: &Stage,
) -> Result<(Vec<ValueId>, Vec<ValueId>), BisectError> {
    let Some(slice) = &stage.slice else {
        return Ok((func.args.clone(), func.results.clone()));
    };
    let resolve = |p: &String| {
        func.resolve_point(p)
            .map_err(|source| BisectError::SlicePoint {
                stage: stage.name.clone(),
                point: p.clone(),
                source,
            })
    };
    let from: Vec<ValueId> = slice.from.iter().map(resolve).collect::<Result<_, _>>()?;
    let to: Vec<ValueId> = slice.to.iter().map(resolve).collect::<Result<_, _>>()?;
    let req = SliceRequest {
        name: "stage".into(),
        from,
        to: to.clone(),
    };
    let (_, infos) = parity_mlir::emit_slices(module, func, "stage", &[req]).map_err(|source| {
        BisectError::StageSlice {
            stage: stage.name.clone(),
            source,
        }
    })?;
    let ins = infos[0].args.iter().map(|(_, v)| *v).collect();
    Ok((ins, to))
}

/// The stage's arguments in isolated mode: oracle tensors, weights, literals,
/// and the oracle tensors of upstream outputs.
pub(crate) fn isolated_args(
    spec_path: &std::path::Path,
    stage: &Stage,
    stages: &[Stage],
    sources: &InputSources,
) -> Result<Vec<Tensor>, BisectError> {
    let mut out = Vec::new();
    for (index, a) in stage.args.iter().enumerate() {
        let loc = stage
            .locations
            .args
            .get(index)
            .copied()
            .unwrap_or(stage.location);
        let at = || parity_spec::Position {
            file: spec_path.to_path_buf(),
            line: loc.line,
            col: loc.col,
            alias: None,
        };
        let from_inputs = |source| BisectError::Argument {
            at: at(),
            stage: stage.name.clone(),
            index,
            source: Box::new(source),
        };
        let t = match a {
            Arg::Oracle(n) => sources.oracle(n).map_err(from_inputs)?,
            Arg::Weight(n) => sources.weight(n).map_err(from_inputs)?,
            Arg::Literal {
                dtype,
                shape,
                values,
            } => Tensor::from_f64_as(*dtype, shape.clone(), values).map_err(|source| {
                BisectError::Literal {
                    at: at(),
                    stage: stage.name.clone(),
                    index,
                    source: Box::new(source),
                }
            })?,
            Arg::Stage { stage: up, output } => {
                let upstream = stages
                    .iter()
                    .find(|s| &s.name == up)
                    .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                    .ok_or_else(|| BisectError::UnknownUpstream {
                        at: at(),
                        stage: stage.name.clone(),
                        index,
                        upstream: format!("{up}.{output}"),
                    })?;
                sources.oracle(&upstream.oracle).map_err(from_inputs)?
            }
        };
        out.push(t);
    }
    Ok(out)
}
