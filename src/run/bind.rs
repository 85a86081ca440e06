//! `bind:` stages: their arguments are bound by the function's MLIR argument
//! names once the module is read (see `parity_spec::bind_args`).
//!
//! For every module a selected `bind:` stage calls, the module's MLIR is
//! normalised and parsed once (as for slices); each stage's function's
//! argument names (`loc("...")`) are bound by its rules, and the stage gets
//! an ordinary argument list, each argument positioned at the rule that bound
//! it. From there the stage runs exactly as one written with `args:`. A stage
//! whose arguments cannot be bound errors on its own (exit 2); the others run.

use super::module_error::CompilerUnavailable;
use super::slices::{read_normalised, StageKey};
use parity_iree::IreeCompiler;
use parity_record::ErrorRecord;
use parity_spec::{ModuleSource, Spec, Stage};
use std::collections::{BTreeMap, HashMap};

/// The MLIR argument names of `function` in `module` (`None` for an argument
/// without a named location), or None when the module has no such function.
pub fn argument_names(module: &parity_mlir::Module, function: &str) -> Option<Vec<Option<String>>> {
    let func = module.function(function)?;
    Some(
        func.args
            .iter()
            .map(|&v| func.values[v].loc.name())
            .collect(),
    )
}

/// The names `bind:` rules see for a stage's arguments, with the function
/// they belong to. A `function:` stage: its function's MLIR argument names.
/// A `slice:` stage: the slice's arguments in the order the runner passes
/// them, its `from` points named as the spec spells them
/// (`{arg: conformer_0/attention, stage: ...}`), then the function arguments
/// the cut still needs, by their MLIR names. The error says what is missing.
pub fn stage_argument_names(
    module: &parity_mlir::Module,
    stage: &Stage,
) -> Result<(String, Vec<Option<String>>), String> {
    let Some(slice) = &stage.slice else {
        return argument_names(module, &stage.function)
            .map(|names| (stage.function.clone(), names))
            .ok_or_else(|| {
                format!(
                    "module `{}` has no function `{}` to bind arguments of",
                    stage.module, stage.function
                )
            });
    };
    let func = module.function(&slice.function).ok_or_else(|| {
        format!(
            "module `{}` has no function `{}` to slice",
            stage.module, slice.function
        )
    })?;
    let resolve = |which: &str, points: &[String]| {
        points
            .iter()
            .map(|p| {
                func.resolve_point(p)
                    .map_err(|e| format!("slice {which} point `{p}`: {}", e.message))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let request = parity_mlir::SliceRequest {
        name: "bind".into(),
        from: resolve("from", &slice.from)?,
        to: resolve("to", &slice.to)?,
    };
    let (_, infos) = parity_mlir::emit_slices(module, func, "bind", &[request])
        .map_err(|e| format!("cannot cut slice of `{}`: {e}", slice.function))?;
    let names = infos[0]
        .args
        .iter()
        .map(|(arg, v)| match arg {
            parity_mlir::SliceArg::From(i) => Some(slice.from[*i].clone()),
            parity_mlir::SliceArg::FuncArg(_) => func.values[*v].loc.name(),
        })
        .collect();
    Ok((slice.function.clone(), names))
}

/// Binds `stage`'s rules to `names` (from [`stage_argument_names`]); on a
/// slice, rules for what only the whole function takes are ignored
/// ([`parity_spec::bind_args_in`]), so slices can share one `bind:` list.
fn bind_in(
    spec_path: &std::path::Path,
    module: &parity_mlir::Module,
    stage: &Stage,
    function: &str,
    names: &[Option<String>],
) -> Result<(Vec<parity_spec::Arg>, Vec<parity_spec::Location>), Box<parity_spec::BindError>> {
    let Some(slice) = &stage.slice else {
        return parity_spec::bind_args(spec_path, stage, function, names);
    };
    let whole = module.function(&slice.function);
    let function_args = argument_names(module, &slice.function).unwrap_or_default();
    let is_point = |name: &str| whole.is_some_and(|f| f.resolve_point(name).is_ok());
    let scope = parity_spec::SliceScope {
        function_args: &function_args,
        is_point: &is_point,
    };
    parity_spec::bind_args_in(spec_path, stage, function, names, Some(&scope))
}

/// Binds one instantiated `bind:` stage's arguments in place from the parsed
/// module (as the run does), for tools that set a stage up outside a run.
pub fn rebind(
    spec_path: &std::path::Path,
    module: &parity_mlir::Module,
    stage: &mut Stage,
) -> Result<(), String> {
    let (function, names) = stage_argument_names(module, stage)
        .map_err(|why| format!("stage `{}`: {why}", stage.name))?;
    let (args, locations) =
        bind_in(spec_path, module, stage, &function, &names).map_err(|e| e.to_string())?;
    stage.args = args;
    stage.locations.args = locations;
    Ok(())
}

/// Binds the arguments of every selected `bind:` stage in `cases`, in place.
/// Returns the stages that cannot run, by (case, stage), with why.
pub fn bind_all(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    cases: &mut [(&str, Vec<Stage>)],
    selected: &[usize],
) -> HashMap<StageKey, ErrorRecord> {
    let mut errors = HashMap::new();
    let mut modules: BTreeMap<String, Result<parity_mlir::Module, ErrorRecord>> = BTreeMap::new();
    for (case, stages) in cases.iter_mut() {
        for &i in selected {
            let Some(stage) = stages.get_mut(i) else {
                continue;
            };
            if stage.bind.is_none() {
                continue;
            }
            let key = (case.to_string(), stage.name.clone());
            let module = modules
                .entry(stage.module.clone())
                .or_insert_with(|| load(spec, compiler, &stage.module));
            match bind_stage(spec, module, stage, case) {
                Ok(()) => {}
                Err(e) => {
                    errors.insert(key, e);
                }
            }
        }
    }
    errors
}

/// The parsed, normalised MLIR of spec module `name`.
fn load(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    name: &str,
) -> Result<parity_mlir::Module, ErrorRecord> {
    let path = match spec.subject.modules.get(name).map(|m| &m.source) {
        Some(ModuleSource::Mlir(p)) => p,
        Some(ModuleSource::Vmfb(p)) => {
            return Err(ErrorRecord::input(format!(
                "module `{name}` is a prebuilt vmfb ({}): `bind` needs the MLIR argument names; list the stage's `args` in order",
                p.display()
            )))
        }
        None => {
            return Err(ErrorRecord::input(format!(
                "module `{name}` is not declared"
            )))
        }
    };
    let compiler = compiler.map_err(|m| ErrorRecord::execution(format!("module `{name}`: {m}")))?;
    read_normalised(compiler, path)
        .map(|(module, _)| module)
        .map_err(|e| e.to_record())
}

/// Binds one stage's arguments from its module.
fn bind_stage(
    spec: &Spec,
    module: &Result<parity_mlir::Module, ErrorRecord>,
    stage: &mut Stage,
    case: &str,
) -> Result<(), ErrorRecord> {
    let at = |loc: parity_spec::Location| {
        format!(
            "{}:{}:{}: stage `{}` ({case})",
            spec.path.display(),
            loc.line,
            loc.col,
            stage.name
        )
    };
    let module = module.as_ref().map_err(|e| ErrorRecord {
        kind: e.kind,
        message: format!("{}: {}", at(stage.locations.module), e.message),
        location: None,
    })?;
    let (function, names) = stage_argument_names(module, stage)
        .map_err(|why| ErrorRecord::input(format!("{}: {why}", at(stage.locations.function))))?;
    let (args, locations) = bind_in(&spec.path, module, stage, &function, &names)
        .map_err(|e| ErrorRecord::input(e.to_string()))?;
    stage.args = args;
    stage.locations.args = locations;
    Ok(())
}
