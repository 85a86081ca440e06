//! `parity dispatches`: where two targets part ways, dispatch by dispatch,
//! without changing the program (design in docs/dispatches.md).
//!
//! 1. The stage's program is compiled for both targets with IREE's dispatch
//!    tracing ([`parity_iree::traced`]): the dispatches are the untraced
//!    module's, and every dispatch's inputs and outputs reach a debug sink.
//! 2. The reference target runs first; its traced tensors are kept (under a
//!    byte budget). The tested target's are compared as they arrive while
//!    the two sequences agree key for key, and kept otherwise.
//! 3. The sequences are aligned by key and order ([`align::by_key`]), what
//!    is left by the source operations each dispatch holds
//!    ([`align::with_ops`], from the flow IR's locations, [`flow_ops`]).
//! 4. The first aligned dispatch whose outputs differ beyond the stage's
//!    tolerance is named, with its operations and whether its inputs already
//!    differed (local or accumulated).

pub mod align;
pub mod evidence;
pub mod flow_ops;
mod inside;
mod inside_f64;
mod rows;
mod stage;
pub mod trace;

use crate::bisect::BisectError;
use crate::target::Target;
use parity_iree::{ArtifactCache, IreeCompiler};
use parity_record::{DispatchStage, DispatchesRecord, ErrorRecord, Status};
use parity_spec::Spec;
use std::path::PathBuf;

/// Traced tensors kept by default, per stage and target: 1 GiB.
pub const DEFAULT_BUDGET: u64 = 1 << 30;

/// What to trace.
#[derive(Clone, Debug)]
pub struct DispatchOptions {
    /// Compiled-artifact cache directory (the untraced modules).
    pub cache_dir: PathBuf,
    /// libIREECompiler.so, when not found through the environment.
    pub compiler_lib: Option<PathBuf>,
    /// Cases to run (default: every case).
    pub cases: Vec<String>,
    /// Stages to trace (default: every stage that is not a prebuilt vmfb).
    pub stages: Vec<String>,
    /// The reference target's name.
    pub reference: String,
    /// The tested target's name.
    pub target: String,
    /// Bytes of traced tensors kept per stage and target.
    pub budget: u64,
}

/// Traces the selected stages on both targets and names the first
/// divergent dispatch of each.
pub fn dispatches(spec: &Spec, o: &DispatchOptions) -> DispatchesRecord {
    let start = std::time::Instant::now();
    let mut rec = DispatchesRecord::new(&spec.path.display().to_string(), &o.reference, &o.target);
    rec.notes = vec![
        "Dispatch-level evidence: the dispatches are IREE's own, traced without slicing or tapping the program.".into(),
        "Every traced tensor is judged by the criteria of its stage's first output (vs_f64 and masks do not apply to a dispatch's tensors).".into(),
    ];
    let mut run = || -> Result<(), BisectError> {
        let reference = Target::ready(spec, Some(&o.reference))?;
        let target = Target::ready(spec, Some(&o.target))?;
        let compiler =
            IreeCompiler::load(o.compiler_lib.as_deref()).map_err(BisectError::Compiler)?;
        rec.compiler_revision = Some(compiler.revision());
        let cache = ArtifactCache::new(&o.cache_dir);
        let mut compiled = stage::Compiled::default();
        for case in &spec.cases {
            if !o.cases.is_empty() && !o.cases.contains(&case.name) {
                continue;
            }
            let stages = spec
                .instantiate(case)
                .map_err(|source| BisectError::Instantiate {
                    case: case.name.clone(),
                    source,
                })?;
            for at in 0..stages.len() {
                let s = &stages[at];
                if !o.stages.is_empty() && !o.stages.contains(&s.name) {
                    continue;
                }
                let own = [&reference, &target]
                    .into_iter()
                    .find(|t| t.spec().modules.contains_key(&s.module));
                if let Some(t) = own {
                    rec.notes.push(format!(
                        "stage `{}`: target `{}` runs its own prebuilt vmfb for module `{}`, not the subject's MLIR; skipped",
                        s.name,
                        t.name(),
                        s.module
                    ));
                    continue;
                }
                if stage::prebuilt(spec, s) {
                    rec.notes.push(format!(
                        "stage `{}`: a prebuilt vmfb cannot be traced (its source is not in the spec); skipped",
                        s.name
                    ));
                    continue;
                }
                let env = stage::Env {
                    spec,
                    compiler: &compiler,
                    cache: &cache,
                    reference: &reference,
                    target: &target,
                    budget: o.budget,
                };
                match stage::trace_stage(&env, &mut compiled, &stages, at, &case.name) {
                    Ok(done) => {
                        if done.status == Status::Skipped {
                            rec.errors.push(ErrorRecord::input(format!(
                                "stage `{}` (case `{}`): {} bytes of traced tensors were over --max-trace-bytes {}, so some dispatches were not compared and the stage is not judged; raise --max-trace-bytes",
                                done.stage, done.case, done.dropped_bytes, o.budget
                            )));
                        }
                        rec.stages.push(done);
                    }
                    Err(e) => {
                        rec.errors.push(e.to_record());
                        rec.stages.push(errored(&s.name, &case.name));
                    }
                }
            }
        }
        for t in [&o.reference, &o.target] {
            rec.notes.extend(unmatched_substitutions(&compiled, t));
        }
        Ok(())
    };
    if let Err(e) = run() {
        rec.errors.push(e.to_record());
    }
    for name in &o.stages {
        if !spec.stages.iter().any(|s| &s.name == name) {
            rec.errors.push(ErrorRecord::input(format!(
                "{}: --stage {name}: no such stage",
                spec.path.display()
            )));
        }
    }
    rec.elapsed_s = start.elapsed().as_secs_f64();
    rec.status = rec.derived_status();
    rec
}

fn errored(stage: &str, case: &str) -> DispatchStage {
    DispatchStage {
        stage: stage.to_string(),
        case: case.to_string(),
        status: Status::Error,
        criteria: String::new(),
        reference_count: 0,
        target_count: 0,
        dispatches: Vec::new(),
        first_divergent: None,
        absorbed: None,
        inside: None,
        unaligned: Vec::new(),
        fidelity: Vec::new(),
        results: Vec::new(),
        kept_bytes: 0,
        dropped_bytes: 0,
    }
}

/// A note for each executable a target's substitution flag names that no
/// traced program of that target holds: IREE substituted nothing (it only
/// warns), so the run is of the unedited module.
fn unmatched_substitutions(compiled: &stage::Compiled, target: &str) -> Vec<String> {
    let mut programs = compiled
        .0
        .iter()
        .filter(|((_, t), _)| t == target)
        .map(|(_, a)| &a.unmatched_substitutions);
    let Some(first) = programs.next() else {
        return Vec::new();
    };
    let programs: Vec<_> = programs.collect();
    first
        .iter()
        .filter(|name| programs.iter().all(|p| p.contains(name)))
        .map(|name| {
            format!(
                "target `{target}`: `--iree-hal-substitute-executable-source` names executable `{name}`, which no traced stage compiles, so nothing was substituted (a dispatch's key starts with its executable's name)"
            )
        })
        .collect()
}
