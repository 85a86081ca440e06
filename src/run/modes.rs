//! Running the planned stage runs: one worker thread per mode on the
//! target's one runtime, streaming stage records back to the caller's
//! thread, which reports progress; and what the run uploaded.

use super::cross::CrossTargets;
use super::inputs::InputSources;
use super::{slices, stage, ModuleSet, Progress};
use crate::target::Target;
use parity_record::{ErrorRecord, Mode, StageRecord, Status, UploadRecord};
use parity_spec::Spec;
use std::collections::HashMap;

/// What every mode's worker thread shares.
pub(super) struct ModeWork<'a> {
    pub(super) spec: &'a Spec,
    pub(super) target: &'a Target,
    pub(super) sources: &'a InputSources,
    /// The target's modules, loaded once into its one runtime.
    pub(super) modules: &'a ModuleSet,
    pub(super) cases: &'a [(&'a str, Vec<parity_spec::Stage>)],
    pub(super) order: &'a [usize],
    /// Slice and `bind:` stages that cannot run, by (case, stage): why.
    pub(super) stage_errors: &'a HashMap<slices::StageKey, ErrorRecord>,
    /// Whether this run's shard holds (mode, case index, stage rank).
    pub(super) owns: &'a (dyn Fn(Mode, usize, usize) -> bool + Sync),
    /// In a run over several targets: keep the outputs, or compare with the first target's.
    pub(super) cross: CrossTargets<'a>,
}

impl ModeWork<'_> {
    /// Runs every case in one mode on the target's shared modules, sending
    /// each stage record to `emit`.
    pub(super) fn run(&self, mode: Mode, emit: &mut dyn FnMut(StageRecord)) {
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

/// Runs `work` in each of `modes` on its own thread, calling `progress`
/// after each stage run (of `total`). Returns the stage records, mode by
/// mode in `modes`' order, and an error per worker thread that panicked.
pub(super) fn run_all(
    work: &ModeWork<'_>,
    modes: &[Mode],
    total: usize,
    progress: &mut dyn FnMut(Progress),
) -> (Vec<StageRecord>, Vec<ErrorRecord>) {
    let mut per_mode: Vec<Vec<StageRecord>> = vec![Vec::new(); modes.len()];
    let (tx, rx) = std::sync::mpsc::channel::<(usize, StageRecord)>();
    let errors = std::thread::scope(|scope| {
        let handles: Vec<_> = modes
            .iter()
            .enumerate()
            .map(|(m, &mode)| {
                let tx = tx.clone();
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
    (per_mode.into_iter().flatten().collect(), errors)
}

/// The record of what the run uploaded to `target`'s one runtime.
pub(super) fn upload_record(target: &Target, modules: &ModuleSet) -> UploadRecord {
    let up = modules.upload_stats();
    UploadRecord {
        target: target.name().to_string(),
        runtimes: 1,
        weight_uploads: up.resident_uploads,
        weight_bytes: up.resident_bytes,
        weight_reuses: up.resident_reuses,
        weight_bytes_saved: up.resident_bytes_saved,
        other_uploads: up.other_uploads,
        other_bytes: up.other_bytes,
        parameter_loads: up.parameter_loads,
    }
}
