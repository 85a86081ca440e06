//! `bind:` on the token calls: `prefill`'s and `decode`'s arguments bound by
//! their functions' MLIR argument names once the modules are read, so a
//! model's weights are matched by name, not listed in order twice (the
//! decode inputs stay explicit `arg:` rules; see `TokenCall::bind_args`).

use crate::run::bind::argument_names;
use crate::run::slices::read_normalised;
use crate::run::CompilerUnavailable;
use parity_iree::IreeCompiler;
use parity_record::ErrorRecord;
use parity_spec::{Case, Location, ModuleSource, Spec, TokenArg, TokenCall, TokensSpec};
use std::collections::{BTreeMap, HashMap};

/// The bound arguments of a `bind:` call, by (`prefill`/`decode`, rendered
/// function), with the spec position of the rule that bound each.
pub(crate) type BoundCalls = HashMap<(String, String), (Vec<TokenArg>, Vec<Location>)>;

/// Binds every `bind:` call's arguments for `cases` (each rendered function
/// once). Any failure is an input error (exit 2) naming the spec position of
/// the call: a vmfb module, a function the module lacks, an unbound argument.
pub(crate) fn bind_calls(
    spec: &Spec,
    tokens: &TokensSpec,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
    cases: &[&Case],
) -> Result<BoundCalls, ErrorRecord> {
    let mut bound = BoundCalls::new();
    let mut modules: BTreeMap<String, parity_mlir::Module> = BTreeMap::new();
    for (which, call) in [("prefill", &tokens.prefill), ("decode", &tokens.decode)] {
        if call.bind.is_none() {
            continue;
        }
        for case in cases {
            let function = TokensSpec::render(&call.function, case)
                .map_err(|m| ErrorRecord::input(format!("{}: {m}", at(spec, call.location))))?;
            let key = (which.to_string(), function.clone());
            if bound.contains_key(&key) {
                continue;
            }
            if !modules.contains_key(&call.module) {
                let module = read(spec, which, call, compiler)?;
                modules.insert(call.module.clone(), module);
            }
            let Some(module) = modules.get(&call.module) else {
                continue;
            };
            let names = argument_names(module, &function).ok_or_else(|| {
                let known: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).collect();
                ErrorRecord::input(format!(
                    "{}: tokens.{which}: module `{}` has no function `{function}` to bind arguments of (its functions: {})",
                    at(spec, call.location),
                    call.module,
                    known.join(", ")
                ))
            })?;
            let args = call
                .bind_args(&spec.path, which, &function, &names)
                .map_err(|e| ErrorRecord::input(e.to_string()))?;
            bound.insert(key, args);
        }
    }
    Ok(bound)
}

fn at(spec: &Spec, loc: Location) -> String {
    format!("{}:{}:{}", spec.path.display(), loc.line, loc.col)
}

/// The normalised MLIR of the call's module.
fn read(
    spec: &Spec,
    which: &str,
    call: &TokenCall,
    compiler: Result<&IreeCompiler, &CompilerUnavailable>,
) -> Result<parity_mlir::Module, ErrorRecord> {
    let here = format!("{}: tokens.{which}", at(spec, call.module_location));
    let path = match spec.subject.modules.get(&call.module).map(|m| &m.source) {
        Some(ModuleSource::Mlir(p)) => p,
        Some(ModuleSource::Vmfb(p)) => {
            return Err(ErrorRecord::input(format!(
                "{here}: module `{}` is a prebuilt vmfb ({}): `bind` needs the MLIR argument names; list the call's `args` in order",
                call.module,
                p.display()
            )))
        }
        None => {
            return Err(ErrorRecord::input(format!(
                "{here}: module `{}` is not declared",
                call.module
            )))
        }
    };
    let compiler = compiler
        .map_err(|m| ErrorRecord::execution(format!("{here}: module `{}`: {m}", call.module)))?;
    read_normalised(compiler, path)
        .map(|(module, _)| module)
        .map_err(|e| e.to_record())
}
