//! The tokens record as text: per case the oracle's and the production's
//! token streams aligned column by column with every mismatch marked, the
//! teacher-forced summary, then the first divergent token with its evidence,
//! the layer and the operation. Also the one-line pieces Markdown and JUnit reuse.

use super::sanitize::terminal as clean;
use super::table::num;
use parity_record::{DivergentToken, Localisation, TokenCaseRecord, TokensRecord};
use std::fmt::Write as _;

/// The whole text (control characters of user strings escaped).
pub fn text(r: &TokensRecord) -> String {
    let mut t = String::new();
    let modes: Vec<&str> = r.modes.iter().map(|m| m.name()).collect();
    let _ = writeln!(
        t,
        "parity tokens: {}  ({}; {}{})",
        r.status.name().to_uppercase(),
        r.spec,
        modes.join(" + "),
        if r.exact_tokens { "; exact tokens" } else { "" }
    );
    for c in &r.cases {
        case_text(&mut t, c);
    }
    match &r.first_divergent_token {
        None if r.cases.iter().all(|c| c.errors.is_empty() && !c.fails())
            && r.errors.is_empty() =>
        {
            let _ = writeln!(t, "every token matches the oracle");
        }
        None => {}
        Some(d) => {
            let on = super::tokens_targets_text::at(r.divergence_target.as_deref());
            let _ = writeln!(t, "first divergent token{on}: {}", token_line(d));
        }
    }
    for l in super::tokens_targets_text::lines(r) {
        let _ = writeln!(t, "{l}");
    }
    for l in localisation_lines(r) {
        let _ = writeln!(t, "{l}");
    }
    for e in r.all_errors() {
        let _ = writeln!(t, "error ({}): {}", e.kind.name(), e.message);
    }
    for w in &r.warnings {
        let _ = writeln!(t, "warning: {w}");
    }
    clean(&t).into_owned()
}

/// `case C, step S (position P): production A, oracle B, verdict V`.
pub fn token_line(d: &DivergentToken) -> String {
    format!(
        "case {}, step {} (position {}): production {}, oracle {}: {}{}",
        d.case,
        d.step,
        d.position,
        d.production_token,
        d.oracle_token,
        d.verdict.name(),
        if d.counted { "" } else { " (not counted)" }
    )
}

/// The first divergent layer and op (or why there is none), and the notes.
/// A localisation whose step chain does not reproduce the production call
/// is labelled not trusted on every line that names a layer or an op.
pub fn localisation_lines(r: &TokensRecord) -> Vec<String> {
    let mut lines = Vec::new();
    let check = r.findings.first().and_then(|f| f.chain_check.as_ref());
    let untrusted = check.filter(|c| !c.trusted()).is_some();
    let mark = if untrusted { " (not trusted)" } else { "" };
    if let Some(l) = &r.localisation {
        lines.push(format!(
            "localised step: {} (step {} of case {})",
            l.step_case, l.step, l.case
        ));
    }
    if let Some(c) = check {
        lines.push(chain_line(c, r.first_divergent_layer.is_some()));
    }
    if let Some(d) = &r.first_divergent_layer {
        lines.push(format!(
            "first divergent layer{mark}: {} (output {}, {} mode, case {})",
            d.stage,
            d.output,
            d.mode.name(),
            d.case
        ));
    }
    match &r.first_divergent_op {
        Some(l @ Localisation::Op(_)) => lines.push(format!(
            "first divergent op{mark}: {}",
            super::localised::line(l)
        )),
        Some(Localisation::Region(g)) => lines.push(
            match g.repair.as_ref().and_then(super::localised::ambiguity) {
                Some(a) => format!("first divergent op{mark}: {a} (in {})", g.stage),
                None => format!(
                    "first divergent op{mark}: not narrowed; a region of {} operations in {} ending at {}",
                    g.region.ops, g.stage, g.region.failing
                ),
            },
        ),
        None => {}
    }
    if let Some(v) = &r.layer_vs_f64 {
        lines.push(format!("who is wrong there{mark}: {}", vs_f64_line(v)));
    }
    lines.extend(r.notes.iter().map(|n| format!("note: {n}")));
    for f in r.findings.iter().skip(1) {
        lines.push(format!("another finding: {}", finding_line(f)));
        if let Some(c) = &f.chain_check {
            let layer = f.first_divergent_layer.is_some();
            lines.push(format!("  {}", chain_line(c, layer)));
        }
        if let Some(v) = &f.layer_vs_f64 {
            lines.push(format!("  who is wrong there: {}", vs_f64_line(v)));
        }
        lines.extend(f.notes.iter().map(|n| format!("  note: {n}")));
    }
    lines
}

/// The step chain's trust check in a line: trusted, or the label that
/// keeps its layer and op (`layer`: the finding names one) from being read
/// as the answer.
pub fn chain_line(c: &parity_record::ChainCheck, layer: bool) -> String {
    if c.trusted() {
        return format!(
            "step chain: reproduces `{}`'s logits bit for bit on its inputs (localisation trusted)",
            c.call
        );
    }
    match c.max_abs {
        Some(d) => format!(
            "localisation not trusted: the step chain computes something else than `{}` (max |Δ| {}{}){}",
            c.call,
            num(d),
            c.ulps.map(|u| format!(", {u} ULP")).unwrap_or_default(),
            if layer {
                format!("; the layer and op below are the chain's, not necessarily `{}`'s", c.call)
            } else {
                String::new()
            }
        ),
        None => format!(
            "localisation not trusted: the step chain could not be checked against `{}`: {}",
            c.call, c.detail
        ),
    }
}

/// The f64 truth's judgement of a layer, in a line.
pub fn vs_f64_line(v: &parity_record::LayerVsF64) -> String {
    let verdict = match v.wrong {
        parity_record::WrongSide::Oracle => "the oracle (production matches the f64 truth)",
        parity_record::WrongSide::Production => "production (the oracle matches the f64 truth)",
        parity_record::WrongSide::Undecided => {
            "undecided (neither side is 10x closer to the f64 truth)"
        }
    };
    format!(
        "{verdict}: {}.{} is {} RMS from {}, the oracle {}",
        v.stage,
        v.output,
        num(v.production_vs_truth),
        v.truth,
        num(v.oracle_vs_truth)
    )
}

/// One finding in a line: its step, layer and op.
pub fn finding_line(f: &parity_record::TokenFinding) -> String {
    let layer = f
        .first_divergent_layer
        .as_ref()
        .map_or("no layer".to_string(), |d| {
            format!(
                "first divergent layer {} (output {}, {})",
                d.stage, d.output, d.case
            )
        });
    let op = match &f.first_divergent_op {
        Some(Localisation::Op(op)) => format!(
            "op {} ({} evidence)",
            super::localised::op_place(op),
            op.evidence.name()
        ),
        Some(Localisation::Region(g)) => g
            .repair
            .as_ref()
            .and_then(super::localised::ambiguity)
            .unwrap_or_else(|| {
                format!(
                    "a region of {} operations ending at {}",
                    g.region.ops, g.region.failing
                )
            }),
        None => "no op".to_string(),
    };
    format!(
        "case {}, step {} ({}{}): {layer}; {op}{}",
        f.case,
        f.step,
        f.verdict.name(),
        if f.logits_gate {
            ", logits beyond the gate"
        } else {
            ""
        },
        if f.chain_check.as_ref().is_some_and(|c| !c.trusted()) {
            " (not trusted)"
        } else {
            ""
        }
    )
}

fn evidence(t: &mut String, d: &DivergentToken, indent: &str) {
    let top = |l: &[parity_record::TokenLogit]| {
        l.iter()
            .map(|x| format!("{} ({})", x.token, num(x.logit)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        t,
        "{indent}production top-{}: {}",
        d.production_top_k.len(),
        top(&d.production_top_k)
    );
    let _ = writeln!(
        t,
        "{indent}oracle top-{}:     {}",
        d.oracle_top_k.len(),
        top(&d.oracle_top_k)
    );
    let _ = writeln!(
        t,
        "{indent}top-1 - top-2 gap: production {} ULP, oracle {} ULP ({}); margins: production {}, oracle {}",
        d.production_gap_ulp,
        d.oracle_gap_ulp,
        d.ulp_dtype,
        num(d.production_margin),
        num(d.oracle_margin)
    );
    let source = d.noise_source.map_or("", |s| s.name());
    let noise = match (d.noise, d.noise_steps.is_empty()) {
        (Some(n), true) => format!("{} (reference: {source})", num(n)),
        // A record written before the reference noise: measured on agreeing steps.
        (Some(n), false) => format!(
            "{} = max |Δlogit| over the {} agreeing {} steps {}",
            num(n),
            d.noise_steps.len(),
            d.mode.name(),
            steps_range(&d.noise_steps)
        ),
        (None, _) => "none (no reference gave one)".to_string(),
    };
    let rule = d
        .rule
        .map(|r| format!("; decided by: {}", r.name()))
        .unwrap_or_default();
    let _ = writeln!(t, "{indent}noise: {noise}{rule}");
    if let (Some(gap), Some(margin)) = (d.truth_gap, d.truth_margin) {
        let _ = writeln!(
            t,
            "{indent}f64 truth: top-1 {}, gap {}, logit(oracle token) - logit(production token) = {}",
            d.truth_token.map_or("?".into(), |x| x.to_string()),
            num(gap),
            num(margin)
        );
    }
}

fn steps_range(steps: &[usize]) -> String {
    match (steps.first(), steps.last()) {
        (Some(a), Some(b)) if steps.len() == b - a + 1 => format!("{a}..={b}"),
        _ => format!("{steps:?}"),
    }
}

fn case_text(t: &mut String, c: &TokenCaseRecord) {
    let _ = writeln!(
        t,
        "case {}{} (P = {}): {}",
        c.case,
        super::tokens_targets_text::at(c.target.as_deref()),
        c.prompt_length,
        c.status.name()
    );
    let streams: Vec<(&str, &[i64])> = [
        ("oracle", c.oracle_tokens.as_slice()),
        ("greedy", c.greedy_tokens.as_slice()),
        ("forced", c.teacher_forced_tokens.as_slice()),
    ]
    .into_iter()
    .filter(|(_, s)| !s.is_empty())
    .collect();
    let n = streams.iter().map(|s| s.1.len()).max().unwrap_or(0);
    let width = streams
        .iter()
        .flat_map(|s| s.1.iter().map(|x| x.to_string().len()))
        .chain(std::iter::once(n.saturating_sub(1).to_string().len()))
        .max()
        .unwrap_or(1)
        + 1;
    let row = |label: &str, cells: Vec<String>| {
        let mut line = format!("  {label:<7}");
        for cell in cells {
            let _ = write!(line, "{cell:>width$}");
        }
        line.trim_end().to_string()
    };
    if n > 0 {
        let steps = (0..n).map(|s| s.to_string()).collect();
        let _ = writeln!(t, "{}", row("step", steps));
    }
    for (label, stream) in &streams {
        let _ = writeln!(
            t,
            "{}",
            row(label, stream.iter().map(|x| x.to_string()).collect())
        );
        if *label != "oracle" {
            let marks: Vec<String> = (0..stream.len())
                .map(|s| {
                    if c.oracle_tokens.get(s) != stream.get(s) {
                        "^".to_string()
                    } else {
                        String::new()
                    }
                })
                .collect();
            if marks.iter().any(|m| !m.is_empty()) {
                let _ = writeln!(t, "{}", row("", marks));
            }
        }
    }
    if let Some(s) = &c.summary {
        let _ = writeln!(
            t,
            "  teacher-forced: top-1 agreement {}/{}, mean KL {}, max KL {}, RMS Δp {}, max |Δp| {}, max |Δlogit| {}",
            (s.top1_agreement * s.steps as f64).round(),
            s.steps,
            num(s.mean_kl),
            num(s.max_kl),
            num(s.rms_delta_p),
            num(s.max_abs_delta_p),
            num(s.max_abs_delta_logit)
        );
    }
    if let Some(n) = &c.reference_noise {
        let all: Vec<String> = n
            .sources
            .iter()
            .map(|m| {
                format!(
                    "{} {}",
                    m.source.name(),
                    m.value.map_or("-".to_string(), num)
                )
            })
            .collect();
        let _ = writeln!(
            t,
            "  reference noise: {} from {} (sources: {})",
            n.value.map_or("none".to_string(), num),
            n.source.name(),
            all.join(", ")
        );
    }
    if let Some(g) = &c.logits_gate {
        let _ = writeln!(
            t,
            "  logits gate ({}, {}): {}",
            g.mode.name(),
            g.criteria.join(", "),
            if g.failed_steps.is_empty() {
                format!("{} steps pass", g.steps)
            } else {
                format!(
                    "{} of {} steps FAIL ({}); first: {}",
                    g.failed_steps.len(),
                    g.steps,
                    steps_range(&g.failed_steps),
                    g.first_failure.as_deref().unwrap_or("")
                )
            }
        );
    }
    if let Some(d) = &c.first_divergent_token {
        let _ = writeln!(t, "  first mismatch: {}", token_line(d));
        evidence(t, d, "    ");
    }
    for d in &c.later_mismatches {
        let _ = writeln!(t, "  later teacher-forced mismatch: {}", token_line(d));
    }
}
