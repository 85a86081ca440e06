//! `bind:` stages: their arguments are bound by the function's MLIR argument
//! names once the module is read (see `parity_spec::bind_args`).
//!
//! For every module a selected `bind:` stage calls, the module's MLIR is
//! normalised and parsed once (as for slices); each stage's function's
//! argument names (`loc("...")`) are bound by its rules, and the stage gets
//! an ordinary argument list, each argument positioned at the rule that bound
//! it. From there the stage runs exactly as one written with `args:`. A stage
//! whose arguments cannot be bound errors on its own (exit 2); the others run.

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

/// Binds the arguments of every selected `bind:` stage in `cases`, in place.
/// Returns the stages that cannot run, by (case, stage), with why.
pub fn bind_all(
    spec: &Spec,
    compiler: Result<&IreeCompiler, &str>,
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
    compiler: Result<&IreeCompiler, &str>,
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
    read_normalised(compiler, path).map(|(module, _)| module)
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
    let names = argument_names(module, &stage.function).ok_or_else(|| {
        ErrorRecord::input(format!(
            "{}: module `{}` has no function `{}` to bind arguments of",
            at(stage.locations.function),
            stage.module,
            stage.function
        ))
    })?;
    let (args, locations) = parity_spec::bind_args(&spec.path, stage, &stage.function, &names)
        .map_err(|e| ErrorRecord::input(e.to_string()))?;
    stage.args = args;
    stage.locations.args = locations;
    Ok(())
}
