//! What a tokens run needs before its first case: the oracle store, the
//! target, the prefill and decode modules compiled and loaded, and every
//! `bind:` call's arguments bound, for the cases selected.

use super::bind;
use crate::run::inputs::InputSources;
use crate::run::{self, ModuleSet, RunOptions};
use crate::target::Target;
use parity_record::{ErrorRecord, RunRecord, TokensRecord};
use parity_spec::{Case, Spec, TokensSpec};

/// A tokens run ready to decode.
pub(super) struct Prepared<'s> {
    /// The oracle store and weights.
    pub sources: InputSources,
    /// The prefill and decode modules, loaded on the target.
    pub modules: ModuleSet,
    /// The arguments of every `bind:` call.
    pub bound: bind::BoundCalls,
    /// The cases to run (all when `--case` selected none).
    pub selected: Vec<&'s Case>,
}

/// Opens the sources, compiles (through the artifact cache) and loads only
/// the calls' modules, and binds the calls; on the first stage that fails,
/// records why in `record` and returns None. The compiler's revision and
/// warnings go into `record` too.
pub(super) fn prepare<'s>(
    spec: &Spec,
    tokens: &'s TokensSpec,
    options: &RunOptions,
    record: &mut TokensRecord,
) -> Option<Prepared<'s>> {
    let sources = match InputSources::open(spec) {
        Ok(s) => s,
        Err(m) => {
            record.errors.push(ErrorRecord::input(m.to_string()));
            return None;
        }
    };
    // Only the calls' modules are compiled (through the artifact cache).
    let mut only = spec.clone();
    only.subject
        .modules
        .retain(|name, _| name == &tokens.prefill.module || name == &tokens.decode.module);
    let mut scratch = RunRecord::new("", "", String::new());
    let target = match Target::ready(spec, options.target.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return None;
        }
    };
    let compiler = run::load_compiler(options, true, &mut scratch);
    let compiled = run::compile_all(&only, &target, options, &compiler, &mut scratch);
    let wanted = &options.cases;
    let selected: Vec<&Case> = tokens
        .cases
        .iter()
        .filter(|c| wanted.is_empty() || wanted.contains(&c.name))
        .collect();
    let bound = if scratch.errors.is_empty() {
        bind::bind_calls(spec, tokens, compiler.as_ref(), &selected)
    } else {
        Ok(bind::BoundCalls::new())
    };
    drop(compiler);
    let bound = match bound {
        Ok(b) => b,
        Err(e) => {
            record.errors.push(e);
            return None;
        }
    };
    record.compiler_revision = scratch.compiler_revision.take();
    record.warnings.append(&mut scratch.warnings);
    if !scratch.errors.is_empty() {
        record.errors.append(&mut scratch.errors);
        return None;
    }
    let modules = target.load(&compiled);
    record.errors.extend(modules.load_error_records());
    if !record.errors.is_empty() {
        return None;
    }
    Some(Prepared {
        sources,
        modules,
        bound,
        selected,
    })
}
