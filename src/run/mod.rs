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
mod module_error;
mod module_set;
mod modules;
mod provenance;
pub mod slices;
mod stage;
pub(crate) mod stage_error;
pub mod transform;

/// The record types live in the `parity-record` crate; re-exported under
/// their old path so code written against `run::record` keeps compiling.
pub use parity_record as record;

use crate::run::cross::CrossTargets;
use crate::run::inputs::InputSources;
use crate::target::Target;
use parity_record::{ErrorRecord, Mode, RunRecord, Shard, ShardRecord, StageRecord, Status};
use parity_spec::Spec;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

// Public for the loopback fixture server (crates/parity-server), which
// compiles and loads the subject's modules exactly as the runner does.
pub use module_set::ModuleSet;
pub use modules::{compile_all, load_compiler, Compiled, CompilerUnavailable, ModuleError};
pub use parity_record::RUN_RECORD_SCHEMA;
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
    let started = now_rfc3339();
    let clock = Instant::now();
    let mut record = RunRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        started,
    );

    let target = match Target::ready(spec, options.target.as_deref()) {
        Ok(t) => {
            record.targets.push(cross::target_record(&t));
            t
        }
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return finish(record, clock);
        }
    };
    let sources = match InputSources::open(spec) {
        Ok(s) => s,
        Err(e) => {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return finish(record, clock);
        }
    };
    // A selection that matches nothing is a typo, not an empty success.
    for (kind, wanted, known) in [
        (
            "case",
            &options.cases,
            spec.cases
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
        ),
        (
            "stage",
            &options.stages,
            spec.stages.iter().map(|s| s.name.as_str()).collect(),
        ),
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
        return finish(record, clock);
    }
    let order = spec.topo_order();
    let cases: Vec<_> = spec
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
    let selected: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| options.stages.is_empty() || options.stages.contains(&spec.stages[i].name))
        .collect();
    let owns = |mode: Mode, case: usize, rank: usize| {
        options
            .shard
            .is_none_or(|s| s.owns(mode, case, rank, selected.len()))
    };
    let total = options
        .modes
        .iter()
        .flat_map(|&m| (0..instantiated.len()).map(move |c| (m, c)))
        .flat_map(|(m, c)| (0..selected.len()).map(move |r| (m, c, r)))
        .filter(|&(m, c, r)| owns(m, c, r))
        .count();

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
    let compiler = modules::load_compiler(options, needs_compiler, &mut record);
    // A flag the compiler rejects for this target is one input error, before
    // any stage compiles (not one compile error per stage).
    if let Ok(c) = &compiler {
        if let Err(e) = target.preflight_compile(c, &options.cache_dir) {
            record.errors.push(ErrorRecord::input(e.to_string()));
            return finish(record, clock);
        }
    }
    // Only the functions the selected stages call are compiled (per-function artifacts).
    let mut used = modules::Used::new();
    for (_, stages) in &instantiated {
        for &i in &selected {
            let stage = &stages[i];
            used.entry(stage.module.clone())
                .or_default()
                .insert(stage.function.clone());
        }
    }
    let mut compiled =
        modules::compile_for(spec, &target, options, &compiler, Some(&used), &mut record);
    // `bind:` stages get their argument lists from the modules' argument names.
    let bind_errors = if has_bind {
        bind::bind_all(spec, compiler.as_ref(), &mut instantiated, &selected)
    } else {
        HashMap::new()
    };
    let slice_plan = if has_slices {
        let plan = slices::plan(spec, compiler.as_ref(), &instantiated, &selected);
        modules::compile_slices(
            spec,
            &target,
            options,
            &compiler,
            &plan.modules,
            &mut compiled,
            &mut record,
        );
        plan.retarget(&mut instantiated);
        record.errors.extend(plan.run_errors.iter().cloned());
        plan
    } else {
        slices::SlicePlan::default()
    };
    record.provenance = provenance::collect(
        spec,
        &target,
        options,
        &compiler,
        &slice_plan.modules,
        &sources,
    );
    record.provenance.weight_transforms = transform::records(spec, &instantiated, &selected);
    drop(compiler);

    // One worker thread per mode, all on one IREE runtime of this target
    // (one device, each weight and parameter uploaded once, each module
    // loaded once), sharing the compiled artifacts and the memory-mapped
    // inputs. Records stream back to this thread, which reports progress.
    let modules = ModuleSet::on(ModuleSet::runtime_for(&target), &compiled);
    let mut stage_errors = slice_plan.errors.clone();
    stage_errors.extend(bind_errors);
    let work = ModeWork {
        spec,
        target: &target,
        sources: &sources,
        modules: &modules,
        cases: &instantiated,
        order: &selected,
        stage_errors: &stage_errors,
        owns: &owns,
        cross,
    };
    let mut per_mode: Vec<Vec<StageRecord>> = vec![Vec::new(); options.modes.len()];
    let (tx, rx) = std::sync::mpsc::channel::<(usize, StageRecord)>();
    let load_errors = std::thread::scope(|scope| {
        let handles: Vec<_> = options
            .modes
            .iter()
            .enumerate()
            .map(|(m, &mode)| {
                let tx = tx.clone();
                let work = &work;
                scope.spawn(move || {
                    work.run(mode, &mut |rec| {
                        let _ = tx.send((m, rec));
                    })
                })
            })
            .collect();
        drop(tx);
        for (i, (m, rec)) in rx.into_iter().enumerate() {
            progress(Progress {
                done: i + 1,
                total,
                stage: &rec,
            });
            per_mode[m].push(rec);
        }
        let mut errors = Vec::new();
        for h in handles {
            if h.join().is_err() {
                errors.push(ErrorRecord::execution("a worker thread panicked"));
            }
        }
        errors
    });
    let up = modules.upload_stats();
    record.provenance.uploads = vec![parity_record::UploadRecord {
        target: target.name().to_string(),
        runtimes: 1,
        weight_uploads: up.resident_uploads,
        weight_bytes: up.resident_bytes,
        weight_reuses: up.resident_reuses,
        weight_bytes_saved: up.resident_bytes_saved,
        other_uploads: up.other_uploads,
        other_bytes: up.other_bytes,
        parameter_loads: up.parameter_loads,
    }];
    let module_errors = modules.load_errors().into_iter().map(|e| ErrorRecord {
        kind: e.kind(),
        message: e.to_string(),
        location: None,
    });
    for error in load_errors.into_iter().chain(module_errors) {
        if !record.errors.iter().any(|e| e.message == error.message) {
            record.errors.push(error);
        }
    }
    record.stages = per_mode.into_iter().flatten().collect();
    let plan = divergence::plan(spec, &options.modes, &cases, &selected, &slice_plan.extents);
    divergence::locate(&plan, &mut record);
    if let Some(shard) = options.shard {
        record.shard = Some(shard_record(spec, shard, plan));
    }
    finish(record, clock)
}

/// What every mode's worker thread shares.
struct ModeWork<'a> {
    spec: &'a Spec,
    target: &'a Target,
    sources: &'a InputSources,
    /// The target's modules, loaded once into its one runtime.
    modules: &'a ModuleSet,
    cases: &'a [(&'a str, Vec<parity_spec::Stage>)],
    order: &'a [usize],
    /// Slice and `bind:` stages that cannot run, by (case, stage): why.
    stage_errors: &'a HashMap<slices::StageKey, ErrorRecord>,
    /// Whether this run's shard holds (mode, case index, stage rank).
    owns: &'a (dyn Fn(Mode, usize, usize) -> bool + Sync),
    /// In a run over several targets: keep the outputs, or compare with the first target's.
    cross: CrossTargets<'a>,
}

impl ModeWork<'_> {
    /// Runs every case in one mode on the target's shared modules, sending
    /// each stage record to `emit`.
    fn run(&self, mode: Mode, emit: &mut dyn FnMut(StageRecord)) {
        let modules = self.modules;
        for (c, (case, stages)) in self.cases.iter().enumerate() {
            let mut produced = HashMap::new();
            let mut unavailable: HashMap<String, String> = HashMap::new();
            for (rank, &i) in self.order.iter().enumerate() {
                if !(self.owns)(mode, c, rank) {
                    continue;
                }
                let stage = &stages[i];
                let ctx = stage::StageContext {
                    spec: self.spec,
                    stages,
                    case,
                    mode,
                    sources: self.sources,
                    modules,
                    target: self.target.name(),
                    cross: self.cross,
                };
                let rec = match self
                    .stage_errors
                    .get(&(case.to_string(), stage.name.clone()))
                {
                    Some(error) => StageRecord {
                        name: stage.name.clone(),
                        target: self.target.name().to_string(),
                        case: case.to_string(),
                        mode,
                        function: format!("{}.{}", stage.module, stage.function),
                        status: Status::Error,
                        error: Some(error.clone()),
                        skipped_because: None,
                        invoke_ms: 0.0,
                        outputs: Vec::new(),
                    },
                    None => ctx.run(stage, &mut produced, &unavailable),
                };
                if matches!(rec.status, Status::Error | Status::Skipped) {
                    unavailable.insert(stage.name.clone(), rec.status.name().to_string());
                }
                emit(rec);
            }
        }
    }
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
