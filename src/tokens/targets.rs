//! `parity tokens --target a,b`: every token case on each target in turn,
//! merged into one record whose cases name their target, labelled with
//! which side is off where a case fails on some target
//! ([`parity_record::triangulate_tokens`]). The first divergent token and
//! its localisation (the step chain and bisect) are those of the first
//! target, in `--target` order, that has one: they ran on that target.

use super::{execute, finish, TokensOptions};
use crate::run;
use crate::target::Target;
use parity_record::{triangulate_tokens, ErrorRecord, TokensRecord};
use parity_spec::Spec;
use std::time::Instant;

/// Runs the spec's `tokens:` section on each of `targets` (one target, or
/// none: [`execute`] on it, or on the default).
pub fn execute_targets(spec: &Spec, options: &TokensOptions, targets: &[String]) -> TokensRecord {
    let on = |name: Option<&String>| {
        let mut one = options.clone();
        one.bisect.run.target = name.cloned().or_else(|| options.bisect.run.target.clone());
        one
    };
    if targets.len() < 2 {
        return execute(spec, &on(targets.first()));
    }
    let clock = Instant::now();
    let mut merged = TokensRecord::new(
        spec.path.display().to_string(),
        env!("CARGO_PKG_VERSION"),
        run::now_rfc3339(),
    );
    merged.modes = options.modes.clone();
    // Every target is checked before anything runs: one message per problem.
    for name in targets {
        if let Err(e) = Target::ready(spec, Some(name)) {
            merged.errors.push(ErrorRecord::input(e.to_string()));
        }
    }
    if !merged.errors.is_empty() {
        return finish(merged, clock);
    }
    let parts: Vec<TokensRecord> = targets
        .iter()
        .map(|t| execute(spec, &on(Some(t))))
        .collect();
    merged.targets = targets.to_vec();
    for (name, part) in targets.iter().zip(parts) {
        merged.exact_tokens = part.exact_tokens;
        merged.compiler_revision = merged.compiler_revision.or(part.compiler_revision);
        merged.cases.extend(part.cases.into_iter().map(|mut c| {
            c.target = Some(name.clone());
            c
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
        if merged.divergence_target.is_none() && part.first_divergent_token.is_some() {
            merged.divergence_target = Some(name.clone());
            merged.first_divergent_token = part.first_divergent_token;
            merged.localisation = part.localisation;
            merged.first_divergent_layer = part.first_divergent_layer.map(|mut d| {
                d.target = Some(name.clone());
                d
            });
            merged.first_divergent_op = part.first_divergent_op;
            merged.layer_vs_f64 = part.layer_vs_f64;
            merged.notes = part.notes;
            merged.findings = part.findings;
        }
    }
    merged.triangulation = triangulate_tokens(&merged);
    finish(merged, clock)
}
