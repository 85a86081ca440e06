//! `parity serve --target a,b`: the scenario served by the in-process
//! engine on each spec target in turn, merged into one record whose
//! requests name their target, each request failing on some target
//! labelled with which side is off ([`parity_record::triangulate_serving`]).

use super::execute::{execute_on, TargetChoice};
use crate::run::{self, RunOptions};
use parity_record::{triangulate_serving, ErrorRecord, ServingRecord};
use std::path::Path;
use std::time::{Duration, Instant};

/// Serves the scenario at `path` on each of `targets` (one or none: on
/// that one, or the spec's first). Several targets are for the in-process
/// engine only: a black box is one server, so `choice` must be in-process.
pub fn execute_targets(
    path: &Path,
    options: &RunOptions,
    choice: &TargetChoice,
    request_timeout: Duration,
    targets: &[String],
) -> ServingRecord {
    let on = |name: Option<&String>| {
        let mut one = options.clone();
        one.target = name.cloned().or_else(|| options.target.clone());
        one
    };
    if targets.len() < 2 {
        return execute_on(path, &on(targets.first()), choice, request_timeout);
    }
    let clock = Instant::now();
    let mut merged = ServingRecord::new(
        path.display().to_string(),
        "in-process".to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    merged.targets = targets.to_vec();
    if *choice != TargetChoice::InProcess {
        merged.errors.push(ErrorRecord::input(format!(
            "--target {}: several targets are served by parity's in-process engine, one after \
             the other; a server or command under test (--server, --target-command) is one \
             target: name one spec target, or none",
            targets.join(",")
        )));
    } else {
        for name in targets {
            let part = execute_on(path, &on(Some(name)), choice, request_timeout);
            // Each target's serving module (one per target when `vmfb:` names them).
            if merged.module.is_empty() {
                merged.module = part.module;
            } else if !part.module.is_empty()
                && !merged.module.split(", ").any(|m| m == part.module)
            {
                merged.module = format!("{}, {}", merged.module, part.module);
            }
            merged.slots = part.slots;
            merged.context = part.context;
            merged.steps = merged.steps.max(part.steps);
            merged.compiler_revision = merged.compiler_revision.or(part.compiler_revision);
            merged
                .requests
                .extend(part.requests.into_iter().map(|mut r| {
                    r.target = Some(name.clone());
                    r
                }));
            for mut e in part.errors {
                e.message = format!("target `{name}`: {}", e.message);
                merged.errors.push(e);
            }
            for w in part.warnings {
                let w = format!("target `{name}`: {w}");
                if !merged.warnings.contains(&w) {
                    merged.warnings.push(w);
                }
            }
        }
        merged.triangulation = triangulate_serving(&merged);
    }
    merged.elapsed_s = clock.elapsed().as_secs_f64();
    merged.status = merged.derived_status();
    merged
}
