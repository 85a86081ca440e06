//! Executes a stage graph on the IREE runtime in isolated and chained modes and
//! produces a [`RunRecord`]. Nothing here renders output; see `report`.

mod inputs;
mod modules;
pub mod record;
mod stage;

use crate::run::inputs::InputSources;
use crate::run::modules::ModuleSet;
use parity_spec::Spec;
use record::{Divergence, ErrorKind, Mode, RunError, RunRecord, StageRecord, Status};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

pub use record::RUN_RECORD_SCHEMA;

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
    /// Run only these stages and what they depend on... no: exactly these stages (all when empty).
    pub stages: Vec<String>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            modes: vec![Mode::Isolated, Mode::Chained],
            cache_dir: PathBuf::from(".parity-cache"),
            compiler_lib: None,
            cases: Vec::new(),
            stages: Vec::new(),
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
    let started = now_rfc3339();
    let clock = Instant::now();
    let mut record = RunRecord {
        schema: RUN_RECORD_SCHEMA.to_string(),
        status: Status::Pass,
        spec: spec.path.display().to_string(),
        parity_version: env!("CARGO_PKG_VERSION").to_string(),
        compiler_revision: None,
        started,
        elapsed_s: 0.0,
        first_divergence: None,
        chained_divergence: Vec::new(),
        errors: Vec::new(),
        stages: Vec::new(),
    };

    let sources = match InputSources::open(spec) {
        Ok(s) => s,
        Err(message) => {
            record.errors.push(RunError {
                kind: ErrorKind::Input,
                message,
            });
            return finish(record, clock);
        }
    };
    let modules = ModuleSet::prepare(spec, options, &mut record);

    let order = spec.topo_order();
    let cases: Vec<_> = spec
        .cases
        .iter()
        .filter(|c| options.cases.is_empty() || options.cases.contains(&c.name))
        .collect();
    let selected =
        |name: &str| options.stages.is_empty() || options.stages.iter().any(|s| s == name);
    let total = cases.len()
        * options.modes.len()
        * order
            .iter()
            .filter(|&&i| selected(&spec.stages[i].name))
            .count();
    let mut done = 0;

    for case in &cases {
        let stages = match spec.instantiate(case) {
            Ok(s) => s,
            Err(e) => {
                record.errors.push(RunError {
                    kind: ErrorKind::Input,
                    message: e.to_string(),
                });
                continue;
            }
        };
        for &mode in &options.modes {
            let mut produced = HashMap::new();
            let mut failed_stages: HashMap<String, String> = HashMap::new();
            for &i in &order {
                let stage = &stages[i];
                if !selected(&stage.name) {
                    continue;
                }
                let ctx = stage::StageContext {
                    spec,
                    stages: &stages,
                    case: &case.name,
                    mode,
                    sources: &sources,
                    modules: &modules,
                };
                let rec = ctx.run(stage, &mut produced, &mut failed_stages);
                if matches!(rec.status, Status::Error | Status::Skipped) {
                    failed_stages.insert(stage.name.clone(), rec.status.name().to_string());
                }
                done += 1;
                progress(Progress {
                    done,
                    total,
                    stage: &rec,
                });
                record.stages.push(rec);
            }
        }
    }
    locate_divergences(spec, &cases, &mut record);
    finish(record, clock)
}

/// Fills in the first isolated divergence (dependency order first, then case
/// order) and each case's first chained divergence.
fn locate_divergences(spec: &Spec, cases: &[&parity_spec::Case], record: &mut RunRecord) {
    let order = spec.topo_order();
    let first_failing = |stage: &str, case: &str, mode: Mode| {
        record
            .stages
            .iter()
            .find(|s| {
                s.name == stage && s.case == case && s.mode == mode && s.status == Status::Fail
            })
            .map(|s| Divergence {
                stage: s.name.clone(),
                case: s.case.clone(),
                output: s
                    .outputs
                    .iter()
                    .find(|o| o.status == Status::Fail)
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
                mode,
            })
    };
    record.first_divergence = order.iter().find_map(|&i| {
        cases
            .iter()
            .find_map(|c| first_failing(&spec.stages[i].name, &c.name, Mode::Isolated))
    });
    record.chained_divergence = cases
        .iter()
        .filter_map(|c| {
            order
                .iter()
                .find_map(|&i| first_failing(&spec.stages[i].name, &c.name, Mode::Chained))
        })
        .collect();
}

fn finish(mut record: RunRecord, clock: Instant) -> RunRecord {
    record.elapsed_s = clock.elapsed().as_secs_f64();
    record.status = if !record.errors.is_empty()
        || record
            .stages
            .iter()
            .any(|s| matches!(s.status, Status::Error | Status::Skipped))
    {
        Status::Error
    } else if record.stages.iter().any(|s| s.status == Status::Fail) {
        Status::Fail
    } else {
        Status::Pass
    };
    record
}

/// The current UTC time as RFC 3339, without pulling in a date crate.
fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant), valid for the proleptic Gregorian calendar.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
