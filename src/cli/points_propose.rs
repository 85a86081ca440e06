//! `parity points [MODULE] --propose-map --spec SPEC --stage S`: the oracle
//! tensor -> point map proposed by value, as a `checkpoints:` block to paste
//! into the spec (or `--json`, schema `parity.map-proposal/1`).

use super::points::{text_or_json, PointsArgs};
use crate::bisect::propose::{propose, Entry, Found, Proposal, Tie};
use crate::run::RunOptions;
use parity_mlir::yaml_point;
use parity_record::ExitCode;
use std::fmt::Write as _;

/// Runs `parity points --propose-map`.
pub fn run(args: PointsArgs) -> anyhow::Result<i32> {
    let (Some(spec_path), Some(stage)) = (args.spec.as_deref(), args.stage.as_deref()) else {
        eprintln!("parity: points: --propose-map needs --spec and --stage");
        return Ok(ExitCode::Input.code());
    };
    let spec = match parity_spec::Spec::load(spec_path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "parity: points: invalid spec: {}",
                crate::report::sanitize::terminal(&e.to_string())
            );
            return Ok(ExitCode::Input.code());
        }
    };
    let run = RunOptions {
        cache_dir: args.cache_dir.clone(),
        compiler_lib: args.iree_compiler_lib.clone(),
        cases: args.cases.clone(),
        ..RunOptions::default()
    };
    let proposal = match propose(&spec, &run, stage, args.module.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "parity: points: --propose-map: {}",
                crate::report::sanitize::terminal(&e.to_string())
            );
            return Ok(e.exit_code().code());
        }
    };
    let json = serde_json::to_string_pretty(&proposal)? + "\n";
    text_or_json(args.json.as_ref(), &json, || yaml(&proposal))
}

/// The proposal as YAML to paste: the matches as `checkpoints:` entries (a
/// comment each with the value, layout and metric), everything else as
/// labelled comments.
pub fn yaml(p: &Proposal) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# parity points --propose-map: stage `{}` (function `{}`), cases: {}",
        p.stage,
        p.function,
        p.cases.join(", ")
    );
    let _ = writeln!(
        s,
        "# {} candidate values tapped in one build per case{}; a match passes the stage's tolerance {}",
        p.tapped,
        if p.untapped > 0 {
            format!(
                " ({} more left untapped: over the 512 MiB tap bound)",
                p.untapped
            )
        } else {
            String::new()
        },
        serde_json::to_string(&p.tolerance).unwrap_or_default()
    );
    let usable =
        |e: &&Entry| matches!(&e.found, Found::Matched { layout, .. } if layout.rank() == 0);
    let accepted: Vec<&Entry> = p.entries.iter().filter(usable).collect();
    let _ = writeln!(s, "# Review, then paste at the top level of the spec:");
    if accepted.is_empty() {
        let _ = writeln!(s, "checkpoints: []");
    } else {
        let _ = writeln!(s, "checkpoints:");
    }
    let rows: Vec<(String, String)> = accepted
        .iter()
        .filter_map(|e| match &e.found {
            Found::Matched {
                point,
                value,
                metric,
                also,
                tie,
                ..
            } => Some((
                format!(
                    "  - {{oracle: {}, point: {}}}",
                    parity_spec::yaml_quote(&e.oracle),
                    yaml_point(point)
                ),
                match tie {
                    None => format!("# {value}: {metric}"),
                    Some(Tie::ScopeName) => format!(
                        "# {value}: {metric}; tie: the same numbers at {}, chosen as its scope is named as the tensor",
                        also.join(", ")
                    ),
                    Some(Tie::Last) => format!(
                        "# AMBIGUOUS: the same numbers at {}; {value} proposed as the last of them (nearest its consumers), not by meaning: check which one the oracle computes; {metric}",
                        also.join(", ")
                    ),
                },
            )),
            _ => None,
        })
        .collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (entry, note) in rows {
        let _ = writeln!(s, "{entry:<width$}  {note}");
    }
    // Tensors no tapped value could hold (other element counts): one line.
    let other_count = |e: &&Entry| matches!(e.found, Found::NoMatch { closest: None, .. });
    let rest: Vec<&Entry> = p
        .entries
        .iter()
        .filter(|e| !usable(e) && !other_count(e))
        .collect();
    let elsewhere: Vec<&str> = p
        .entries
        .iter()
        .filter(other_count)
        .map(|e| e.oracle.as_str())
        .collect();
    if !rest.is_empty() || !elsewhere.is_empty() {
        let _ = writeln!(s, "# not proposed:");
    }
    if !elsewhere.is_empty() {
        let _ = writeln!(
            s,
            "#   no candidate for {} tensors (no value of the stage has their element count, or they are empty; --json lists them): {}{}",
            elsewhere.len(),
            elsewhere[..elsewhere.len().min(3)].join(", "),
            if elsewhere.len() > 3 { ", ..." } else { "" }
        );
    }
    for e in rest {
        let why = match &e.found {
            Found::Matched {
                point,
                layout,
                metric,
                ..
            } => format!(
                "matches {} {} ({metric}); bisect checkpoints need the same shape, so it is not proposed",
                yaml_point(point),
                layout.describe()
            ),
            Found::Ambiguous { points } => format!(
                "ambiguous: {} (different numbers, each within tolerance)",
                points.join(", ")
            ),
            // Equal where finite, yet failing: NaN or infinities apart; a
            // zero distance would read as a match.
            Found::NoMatch {
                closest: Some(c),
                closest_max_abs: Some(m),
            } if *m == 0.0 => format!(
                "no match: {c} holds the same finite numbers, but NaN or infinities apart"
            ),
            Found::NoMatch {
                closest: Some(c),
                closest_max_abs: Some(m),
            } => format!("no match (closest: {c}, max_abs {m:.3e})"),
            Found::NoMatch { .. } => "no candidate".to_string(),
            Found::StageInput => "an input of the stage".to_string(),
            Found::StageOutput { output } => {
                format!("the oracle of stage output `{output}` (parity check compares it)")
            }
        };
        let _ = writeln!(s, "#   {}: {why}", e.oracle);
    }
    s
}
