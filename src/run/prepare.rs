//! Everything a run settles before its first stage runs: the target and the
//! inputs (checked), the cases and stages selected, and the modules
//! compiled, with the `bind:` and `slice:` stages resolved. Each step
//! records its errors; one that leaves nothing to run returns None.

use super::inputs::InputSources;
use super::{bind, cross, modules, provenance, slices, transform, Compiled, RunOptions};
use crate::target::Target;
use parity_record::{ErrorRecord, RunRecord};
use parity_spec::{Case, Spec, Stage};
use std::collections::HashMap;

/// The target the run is on, preflighted, and the spec's inputs, opened;
/// None (with the error recorded) when either cannot be had.
pub(super) fn open(
    spec: &Spec,
    options: &RunOptions,
    record: &mut RunRecord,
) -> Option<(Target, InputSources)> {
    let target = match Target::ready(spec, options.target.as_deref()) {
        Ok(t) => {
            record.targets.push(cross::target_record(&t));
            t
        }
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return None;
        }
    };
    match InputSources::open(spec) {
        Ok(s) => Some((target, s)),
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            None
        }
    }
}

/// The cases and stages a run covers (`--case`, `--stage`).
pub(super) struct Selection<'s> {
    /// The selected cases, in spec order.
    pub(super) cases: Vec<&'s Case>,
    /// Each selected case that instantiates, with its stages.
    pub(super) instantiated: Vec<(&'s str, Vec<Stage>)>,
    /// The selected stages' indices, in dependency order.
    pub(super) selected: Vec<usize>,
}

impl<'s> Selection<'s> {
    /// The selection `options` asks for. A name that matches no case or
    /// stage is a typo, not an empty success, and a spec with no stages has
    /// nothing for `check` to run: both are input errors and None. A case
    /// that does not instantiate is an input error; the others still run.
    pub(super) fn of(
        spec: &'s Spec,
        options: &RunOptions,
        record: &mut RunRecord,
    ) -> Option<Selection<'s>> {
        let case_names: Vec<&str> = spec.cases.iter().map(|c| c.name.as_str()).collect();
        let stage_names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
        for (kind, wanted, known) in [
            ("case", &options.cases, &case_names),
            ("stage", &options.stages, &stage_names),
        ] {
            for name in wanted.iter().filter(|w| !known.contains(&w.as_str())) {
                record.errors.push(ErrorRecord::input(format!(
                    "{}: no {kind} named `{name}` (known: {})",
                    spec.path.display(),
                    known.join(", ")
                )));
            }
        }
        if spec.stages.is_empty() {
            record.errors.push(ErrorRecord::input(format!(
                "{}: the spec has no `stages:` (only a `tokens:` or `fuzz:` section); run it with `parity tokens` or `parity fuzz`",
                spec.path.display()
            )));
        }
        if !record.errors.is_empty() {
            return None;
        }
        let cases: Vec<&Case> = spec
            .cases
            .iter()
            .filter(|c| options.cases.is_empty() || options.cases.contains(&c.name))
            .collect();
        let mut instantiated = Vec::new();
        for case in &cases {
            match spec.instantiate(case) {
                Ok(stages) => instantiated.push((case.name.as_str(), stages)),
                Err(e) => record.errors.push(ErrorRecord::input(e.to_string())),
            }
        }
        let selected = spec
            .topo_order()
            .into_iter()
            .filter(|&i| options.stages.is_empty() || options.stages.contains(&spec.stages[i].name))
            .collect();
        Some(Selection {
            cases,
            instantiated,
            selected,
        })
    }

    /// Stage runs this run (or its shard) makes over `options.modes`.
    pub(super) fn total(&self, options: &RunOptions) -> usize {
        let stages = self.selected.len();
        options
            .modes
            .iter()
            .flat_map(|&m| (0..self.instantiated.len()).map(move |c| (m, c)))
            .flat_map(|(m, c)| (0..stages).map(move |r| (m, c, r)))
            .filter(|&(m, c, r)| options.shard.is_none_or(|s| s.owns(m, c, r, stages)))
            .count()
    }
}

/// The compiled modules of a run, and what its stages need to know of them.
pub(super) struct Prepared {
    /// Every module's artifacts (slice modules included), or why not.
    pub(super) compiled: Compiled,
    /// Slice and `bind:` stages that cannot run, by (case, stage): why.
    pub(super) stage_errors: HashMap<slices::StageKey, ErrorRecord>,
    /// The `slice:` stages' generated modules and extents.
    pub(super) slice_plan: slices::SlicePlan,
}

/// Compiles (or takes from the cache) the functions the selected stages
/// call, resolves `bind:` stages' argument lists and `slice:` stages'
/// generated modules (retargeting those stages), and records provenance.
/// None when a flag the compiler rejects for this target makes every
/// compile fail: one input error, before any stage compiles.
pub(super) fn modules(
    spec: &Spec,
    target: &Target,
    options: &RunOptions,
    sources: &InputSources,
    selection: &mut Selection<'_>,
    record: &mut RunRecord,
) -> Option<Prepared> {
    let selected = &selection.selected;
    // `slice:` stages run generated functions, cut from their module's MLIR
    // and compiled into an extra module per cut function (see `slices`).
    let has_slices = selected.iter().any(|&i| spec.stages[i].slice.is_some());
    let has_bind = selected.iter().any(|&i| spec.stages[i].bind.is_some());
    let needs_compiler = has_slices
        || has_bind
        || spec.subject.modules.iter().any(|(n, m)| {
            matches!(
                target.module(n, m).source,
                parity_spec::ModuleSource::Mlir(_)
            )
        });
    let compiler = modules::load_compiler(options, needs_compiler, record);
    if let Ok(c) = &compiler {
        if let Err(e) = target.preflight_compile(c, &options.cache_dir) {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return None;
        }
    }
    // Only the functions the selected stages call are compiled (per-function artifacts).
    let mut used = modules::Used::new();
    for (_, stages) in &selection.instantiated {
        for &i in selected {
            let stage = &stages[i];
            used.entry(stage.module.clone())
                .or_default()
                .insert(stage.function.clone());
        }
    }
    let mut compiled = modules::compile_for(spec, target, options, &compiler, Some(&used), record);
    // `bind:` stages get their argument lists from the modules' argument names.
    let mut bind_errors = if has_bind {
        bind::bind_all(
            spec,
            compiler.as_ref(),
            &mut selection.instantiated,
            selected,
        )
    } else {
        HashMap::new()
    };
    let slice_plan = if has_slices {
        let plan = slices::plan(spec, compiler.as_ref(), &selection.instantiated, selected);
        modules::compile_slices(
            spec,
            target,
            options,
            &compiler,
            &plan.modules,
            &mut compiled,
            record,
        );
        plan.retarget(&mut selection.instantiated);
        record.errors.extend(plan.run_errors.iter().cloned());
        plan
    } else {
        slices::SlicePlan::default()
    };
    record.provenance = provenance::collect(
        spec,
        target,
        options,
        &compiler,
        &slice_plan.modules,
        sources,
    );
    record.provenance.weight_transforms =
        transform::records(spec, &selection.instantiated, selected);
    // Slice errors first, then `bind:` errors, as before: a stage with both keeps the bind one.
    let mut errors = slice_plan.errors.clone();
    errors.extend(bind_errors.drain());
    Some(Prepared {
        compiled,
        stage_errors: errors,
        slice_plan,
    })
}
