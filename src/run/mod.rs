//! Executes a stage graph on the IREE runtime in isolated and chained modes and
//! produces a [`RunRecord`]. Nothing here renders output; see `report`.

pub mod artifacts;
pub mod bind;
pub mod compile_pool;
pub mod cross;
pub mod divergence;
pub mod error_map;
pub(crate) mod inputs;
mod measure_error;
mod modes;
mod module_error;
mod module_set;
mod modules;
mod prepare;
mod provenance;
pub mod slices;
mod spec_error;
mod stage;
pub(crate) mod stage_error;
pub mod transform;

/// The record types live in the `parity-record` crate; re-exported under
/// their old path so code written against `run::record` keeps compiling.
pub use parity_record as record;

use crate::run::cross::CrossTargets;
use crate::target::Target;
use parity_record::{ErrorRecord, Mode, RunRecord, Shard, ShardRecord, StageRecord};
use parity_spec::Spec;
use std::path::PathBuf;
use std::time::Instant;

// Public for the loopback fixture server (crates/parity-server), which
// compiles and loads the subject's modules exactly as the runner does.
pub use module_set::ModuleSet;
pub use modules::{compile_all, load_compiler, Compiled, CompilerUnavailable, ModuleError};
pub use parity_record::RUN_RECORD_SCHEMA;
pub use spec_error::spec_error_record;
pub use stage::{criteria_records, metrics_record, output_compare_options, output_criteria};

/// What to run and where to keep compiled artifacts.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Modes to run, in order (default: isolated then chained).
    pub modes: Vec<Mode>,
    /// Directory of the compiled-artifact cache.
    pub cache_dir: PathBuf,
    /// An explicit libIREECompiler.so, overriding discovery.
    pub compiler_lib: Option<PathBuf>,
    /// Run only these cases (all when empty).
    pub cases: Vec<String>,
    /// Run only these stages (all when empty); in chained mode an unselected upstream stage makes its dependants skip.
    pub stages: Vec<String>,
    /// Run only this shard's part (`parity check --shard i/n`; see [`parity_record::shard`]).
    pub shard: Option<Shard>,
    /// The spec's target to run on (`--target`); None: its first (default) target.
    pub target: Option<String>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            modes: vec![Mode::Isolated, Mode::Chained],
            cache_dir: PathBuf::from(".parity-cache"),
            compiler_lib: None,
            cases: Vec::new(),
            stages: Vec::new(),
            shard: None,
            target: None,
        }
    }
}

impl RunOptions {
    /// These options on the target `record`'s first divergence was found on
    /// (bisect runs there), else unchanged.
    pub fn on_divergence_target(self, record: &RunRecord) -> RunOptions {
        let target = record
            .first_divergence
            .as_ref()
            .and_then(|d| d.target.clone())
            .or(self.target);
        RunOptions { target, ..self }
    }
}

/// One line of progress, for a terminal that wants to show it.
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// 1-based index of this stage run.
    pub done: usize,
    /// Total stage runs planned.
    pub total: usize,
    /// The finished stage run.
    pub stage: &'a StageRecord,
}

/// Runs every stage of `spec` in every case and mode, calling `progress`
/// after each stage. Never fails as a whole: problems become errors in the
/// record, and stages that do not depend on a failure still run.
pub fn execute(spec: &Spec, options: &RunOptions, progress: &mut dyn FnMut(Progress)) -> RunRecord {
    execute_on(spec, options, progress, CrossTargets::None)
}

/// Runs `spec` on each of `targets` in turn (the first target's outputs are
/// kept, every later target's are compared with them as they are produced),
/// then merges the records into one: every stage record names its target,
/// `targets` lists them, and `triangulation` labels each output that fails
/// anywhere with which side is off. One target is the same as [`execute`].
/// The first divergence is that of the first target that diverges.
pub fn execute_targets(
    spec: &Spec,
    options: &RunOptions,
    targets: &[String],
    progress: &mut dyn FnMut(Progress),
) -> RunRecord {
    if targets.len() < 2 {
        let options = RunOptions {
            target: targets.first().cloned().or_else(|| options.target.clone()),
            ..options.clone()
        };
        return execute(spec, &options, progress);
    }
    let clock = Instant::now();
    // Every target is checked before anything runs: one message per problem.
    let mut merged = RunRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        now_rfc3339(),
    );
    let compiler = parity_iree::IreeCompiler::load(options.compiler_lib.as_deref()).ok();
    for name in targets {
        let checked = Target::ready(spec, Some(name)).and_then(|t| match &compiler {
            Some(c) => t.preflight_compile(c, &options.cache_dir),
            None => Ok(()),
        });
        if let Err(e) = checked {
            merged.errors.push(ErrorRecord::input(e.to_string()));
        }
    }
    if options.shard.is_some() {
        merged.errors.push(ErrorRecord::input(
            "--shard cannot be combined with several targets: run each target's shards separately"
                .to_string(),
        ));
    }
    if !merged.errors.is_empty() {
        return finish(merged, clock);
    }
    let reference = cross::ReferenceOutputs::new(&targets[0]);
    let mut parts = Vec::new();
    for (i, name) in targets.iter().enumerate() {
        let one = RunOptions {
            target: Some(name.clone()),
            ..options.clone()
        };
        let cross = if i == 0 {
            CrossTargets::Keep(&reference)
        } else {
            CrossTargets::CompareWith(&reference)
        };
        parts.push(execute_on(spec, &one, progress, cross));
    }
    drop(reference);
    finish(merge_targets(merged, parts), clock)
}

/// One record of per-target records, in target order.
fn merge_targets(mut merged: RunRecord, parts: Vec<RunRecord>) -> RunRecord {
    for mut part in parts {
        let name = part.targets.first().map(|t| t.name.clone());
        merged.compiler_revision = merged.compiler_revision.or(part.compiler_revision);
        merged.targets.append(&mut part.targets);
        if merged.first_divergence.is_none() {
            merged.first_divergence = part.first_divergence.map(|mut d| {
                d.target = name.clone();
                d
            });
        }
        merged
            .chained_divergence
            .extend(part.chained_divergence.into_iter().map(|mut d| {
                d.target = name.clone();
                d
            }));
        for e in part.errors {
            if !merged.errors.iter().any(|m| m.message == e.message) {
                merged.errors.push(e);
            }
        }
        for w in part.warnings {
            if !merged.warnings.contains(&w) {
                merged.warnings.push(w);
            }
        }
        for mut m in part.provenance.modules {
            if let Some(n) = &name {
                m.name = format!("{n}:{}", m.name);
            }
            merged.provenance.modules.push(m);
        }
        merged.provenance.oracle = merged.provenance.oracle.or(part.provenance.oracle);
        merged
            .provenance
            .uploads
            .append(&mut part.provenance.uploads);
        if merged.provenance.weight_transforms.is_empty() {
            merged.provenance.weight_transforms = part.provenance.weight_transforms;
        }
        merged.stages.append(&mut part.stages);
    }
    merged.triangulation = parity_record::triangulation::triangulate(&merged);
    merged
}

/// [`execute`] on one target, with what its outputs do for a run over several.
fn execute_on(
    spec: &Spec,
    options: &RunOptions,
    progress: &mut dyn FnMut(Progress),
    cross: CrossTargets,
) -> RunRecord {
    let clock = Instant::now();
    let mut record = RunRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        now_rfc3339(),
    );
    let Some((target, sources)) = prepare::open(spec, options, &mut record) else {
        return finish(record, clock);
    };
    let Some(mut selection) = prepare::Selection::of(spec, options, &mut record) else {
        return finish(record, clock);
    };
    let Some(prepared) = prepare::modules(
        spec,
        &target,
        options,
        &sources,
        &mut selection,
        &mut record,
    ) else {
        return finish(record, clock);
    };
    let selected = selection.selected.len();
    let owns = |mode: Mode, case: usize, rank: usize| {
        options
            .shard
            .is_none_or(|s| s.owns(mode, case, rank, selected))
    };
    // One runtime of this target (one device, each weight and parameter
    // uploaded once, each module loaded once) for every mode's worker.
    let modules = ModuleSet::on(ModuleSet::runtime_for(&target), &prepared.compiled);
    let work = modes::ModeWork {
        spec,
        target: &target,
        sources: &sources,
        modules: &modules,
        cases: &selection.instantiated,
        order: &selection.selected,
        stage_errors: &prepared.stage_errors,
        owns: &owns,
        cross,
    };
    let total = selection.total(options);
    let (stages, thread_errors) = modes::run_all(&work, &options.modes, total, progress);
    record.provenance.uploads = vec![modes::upload_record(&target, &modules)];
    let module_errors = modules.load_errors().into_iter().map(|e| ErrorRecord {
        kind: e.kind(),
        message: e.to_string(),
        location: None,
    });
    for error in thread_errors.into_iter().chain(module_errors) {
        if !record.errors.iter().any(|e| e.message == error.message) {
            record.errors.push(error);
        }
    }
    record.stages = stages;
    let plan = divergence::plan(
        spec,
        &options.modes,
        &selection.cases,
        &selection.selected,
        &prepared.slice_plan.extents,
    );
    divergence::locate(&plan, &mut record);
    if let Some(shard) = options.shard {
        record.shard = Some(shard_record(spec, shard, plan));
    }
    finish(record, clock)
}

/// The `shard` of a shard's record: which shard, the spec's hash, the whole run's plan.
fn shard_record(spec: &Spec, shard: Shard, plan: parity_record::RunPlan) -> ShardRecord {
    ShardRecord {
        index: shard.index,
        count: shard.count,
        spec_sha256: spec_sha256(&spec.path),
        plan,
    }
}

/// Hex sha256 of the spec file's bytes (of the empty input when it cannot be read).
pub fn spec_sha256(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap_or_default());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn finish(mut record: RunRecord, clock: Instant) -> RunRecord {
    record.elapsed_s = clock.elapsed().as_secs_f64();
    record.status = record.derived_status();
    record
}

/// The current UTC time as RFC 3339, to the second (e.g. `2026-12-01T09:00:00Z`).
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_record::Divergence;

    #[test]
    fn bisect_options_follow_the_first_divergence_to_its_target() {
        let given = RunOptions {
            target: Some("cpu".into()),
            ..RunOptions::default()
        };
        let mut record = RunRecord::new("s.yaml", "0", String::new());
        assert_eq!(
            given
                .clone()
                .on_divergence_target(&record)
                .target
                .as_deref(),
            Some("cpu")
        );
        record.first_divergence = Some(Divergence {
            stage: "s".into(),
            case: "c".into(),
            output: "o".into(),
            mode: Mode::Isolated,
            target: None,
        });
        assert_eq!(
            given
                .clone()
                .on_divergence_target(&record)
                .target
                .as_deref(),
            Some("cpu")
        );
        record.first_divergence.as_mut().unwrap().target = Some("vulkan".into());
        let moved = given.on_divergence_target(&record);
        assert_eq!(moved.target.as_deref(), Some("vulkan"));
        assert_eq!(moved.modes, RunOptions::default().modes);
    }
}
