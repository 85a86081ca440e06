//! The bisect record for people.

use super::{localised, sanitize};
use parity_record::{BisectRecord, Evidence, Status};
use std::fmt::Write as _;

/// Renders the record as terminal text (controls in names and messages escaped).
pub fn text(r: &BisectRecord) -> String {
    let mut s = String::new();
    heading(&mut s, r);
    checkpoints(&mut s, r);
    region(&mut s, r);
    shadow(&mut s, r);
    confirmation(&mut s, r);
    first_divergent_op(&mut s, r);
    if let Some(e) = &r.dispatch {
        let _ = write!(s, "\n{}", super::dispatches_text::evidence_text(e));
    }
    notes_and_errors(&mut s, r);
    reproducer(&mut s, r);
    let _ = writeln!(s, "{} probes; result: {}", r.probes, result(r));
    sanitize::terminal(&s).into_owned()
}

/// The first line: what was bisected, or why nothing was.
fn heading(s: &mut String, r: &BisectRecord) {
    match (&r.stage, &r.case) {
        (Some(stage), Some(case)) => {
            let _ = writeln!(
                s,
                "bisect: stage `{stage}` case `{case}`{} function @{} output `{}` strategy {}",
                r.target
                    .as_deref()
                    .map(|t| format!(" target `{t}`"))
                    .unwrap_or_default(),
                r.function.as_deref().unwrap_or("?"),
                r.output.as_deref().unwrap_or("?"),
                r.strategy.map_or("-", |s| s.name())
            );
        }
        _ if r.errors.is_empty() => {
            let _ = writeln!(s, "bisect: nothing diverges");
        }
        _ => {
            let _ = writeln!(s, "bisect: stopped before choosing a stage (errors below)");
        }
    }
}

/// The checkpoints in program order, each with its verdict and metrics.
fn checkpoints(s: &mut String, r: &BisectRecord) {
    if r.checkpoints.is_empty() {
        return;
    }
    let _ = writeln!(s, "\ncheckpoints (program order):");
    for c in &r.checkpoints {
        let m = c
            .metrics
            .as_ref()
            .map(|m| {
                format!(
                    "max_abs {:.3e}, {} ULP at max",
                    m.max_abs,
                    ulps(m.ulps_at_max)
                )
            })
            .unwrap_or_else(|| "verdict from the run".into());
        let _ = writeln!(
            s,
            "  {:4} {:<48} {:<12} {} [{}]",
            if c.passed { "pass" } else { "FAIL" },
            c.oracle,
            c.kind.name(),
            m,
            c.loc
        );
    }
}

/// The region between the last passing and the first failing checkpoint,
/// with its first 40 operations.
fn region(s: &mut String, r: &BisectRecord) {
    let Some(reg) = &r.region else { return };
    let _ = writeln!(
        s,
        "\nregion: {} operation(s) between {} (pass) and {} (fail)",
        reg.ops,
        if reg.passing.is_empty() {
            "the stage inputs".to_string()
        } else {
            reg.passing.join(", ")
        },
        reg.failing
    );
    for o in reg.op_list.iter().take(40) {
        let _ = writeln!(s, "  {o}");
    }
    if reg.op_list.len() > 40 {
        let _ = writeln!(s, "  ... {} more", reg.op_list.len() - 40);
    }
}

/// The f64 shadow's rows: accumulated and local ULPs per operation.
fn shadow(s: &mut String, r: &BisectRecord) {
    if r.shadow.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nf64 shadow (ULPs at max |value|; local = the op alone on the shadow's inputs):"
    );
    for row in &r.shadow {
        let _ = writeln!(
            s,
            "  {} #{:<4} {:<28} acc {:>10}  local {:>10}  {}",
            if row.flagged { ">>" } else { "  " },
            row.op_index,
            row.op_name,
            ulps(row.accumulated_ulps),
            row.local_ulps.map_or_else(|| "-".into(), ulps),
            row.loc
        );
    }
}

/// The confirmation: the region's end as it is, then with each candidate's
/// result replaced by the shadow's.
fn confirmation(s: &mut String, r: &BisectRecord) {
    let Some(c) = &r.confirmation else { return };
    let _ = writeln!(
        s,
        "\nconfirmation (the region's end vs {}, budget {} ULP at max): as it is {}",
        c.before.against,
        c.budget_ulps,
        ulps_text(&c.before)
    );
    for x in &c.candidates {
        let _ = writeln!(
            s,
            "  {} #{:<4} {:<28} own {:>10}  with its result from the shadow: {}  [{}]",
            if x.holds { "holds" } else { "fails" },
            x.op_index,
            x.op_name,
            ulps(x.local_ulps),
            ulps_text(&x.after),
            x.loc
        );
    }
}

/// The first divergent operation: its place, text, types and metrics, and
/// what its evidence means when the evidence is not a direct comparison.
fn first_divergent_op(s: &mut String, r: &BisectRecord) {
    let Some(d) = &r.first_divergent_op else {
        return;
    };
    let _ = writeln!(
        s,
        "\nfirst divergent operation ({} evidence, {} probes): {}",
        d.evidence.name(),
        d.probes,
        localised::op_place(d)
    );
    // The text without its location: a JAX traceback is ~2 KB (the
    // JSON record keeps it whole, in `loc_raw`).
    let _ = writeln!(
        s,
        "  {}",
        localised::op_text(d).lines().next().unwrap_or("")
    );
    let _ = writeln!(s, "  operands: {}", d.operand_types.join(", "));
    let _ = writeln!(s, "  results:  {}", d.result_types.join(", "));
    for m in &d.metrics.inputs {
        let _ = writeln!(
            s,
            "  input  {:<8} vs {:<40} max_abs {:.3e} ({})",
            m.value,
            m.against,
            m.max_abs,
            ulps_text(m)
        );
    }
    for m in &d.metrics.output {
        let _ = writeln!(
            s,
            "  output {:<8} vs {:<40} max_abs {:.3e} ({})",
            m.value,
            m.against,
            m.max_abs,
            ulps_text(m)
        );
    }
    if d.evidence == Evidence::NonFinite {
        let _ = writeln!(
            s,
            "  (nonfinite: the first operation whose result holds NaN/Inf from finite operands, where the f64 shadow's is finite)"
        );
    }
    if d.evidence == Evidence::Inferred {
        let _ = writeln!(
            s,
            "  (inferred: no oracle tensor at this operation; the f64 shadow says its own error exceeds rounding, and the region's end matches the oracle once its result is the shadow's)"
        );
    }
}

/// Notes, the cross-case line, observer effects and errors, in that order.
fn notes_and_errors(s: &mut String, r: &BisectRecord) {
    for n in &r.notes {
        let _ = writeln!(s, "\nnote: {n}");
    }
    if let Some(c) = r.repair.as_ref().and_then(|x| x.cross_case.as_ref()) {
        let _ = writeln!(s, "\n{}", localised::cross_case_line(c));
    }
    for o in &r.observer_effect {
        let _ = writeln!(s, "observer effect: {o}");
    }
    for e in &r.errors {
        let _ = writeln!(s, "error ({}): {}", e.kind.name(), e.message);
    }
}

/// Where the reproducer is and whether bisect's own run of it failed.
fn reproducer(s: &mut String, r: &BisectRecord) {
    if let Some(dir) = &r.reproducer {
        let _ = writeln!(
            s,
            "\nreproducer: {dir} (sh {dir}/run.sh, or parity check {dir}/stages.yaml)"
        );
    }
    if let Some(c) = &r.reproducer_check {
        let detail = c
            .outputs
            .iter()
            .map(reproducer_output)
            .collect::<Vec<_>>()
            .join("; ");
        let _ = writeln!(
            s,
            "reproducer run by bisect: {} ({detail})",
            if c.reproduces {
                "fails as expected"
            } else {
                "DOES NOT FAIL"
            }
        );
    }
}

/// The one-word-or-so result of the last line.
fn result(r: &BisectRecord) -> String {
    match (r.status, r.localisation()) {
        (Status::Fail, Some(l)) => match localised::line(&l) {
            // An ambiguous repair search is its own answer, not a place.
            ambiguous if ambiguous.starts_with("ambiguous") => ambiguous,
            place => format!("localised to {place}"),
        },
        (Status::Fail, None) => "localised".into(),
        (Status::Pass, _) => "no divergence".into(),
        _ => "error".into(),
    }
}

/// ULPs: an integer as an integer (`512`), else one decimal (`0.5`).
fn ulps(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// One reproducer result, what fails first: the NaN/Inf elements that do
/// not match (max abs leaves them out, so `max_abs 0 > 3e-5` beside them
/// would read as false), then max abs over the finite rest.
fn reproducer_output(o: &parity_record::ReproducerOutput) -> String {
    let rel = if o.max_abs > o.threshold { ">" } else { "<=" };
    let finite = format!("{:.3e} {rel} {:.3e}", o.max_abs, o.threshold);
    if o.nonfinite > 0 {
        format!(
            "{} elements NaN/Inf where the expected value differs; max_abs over the finite \
             rest {finite}",
            o.nonfinite
        )
    } else {
        format!("max_abs {finite}")
    }
}

/// "1.5 ULP at max", or the non-finite count (max abs leaves those out, so
/// an "inf ULP" beside a max abs of 0 would say nothing).
fn ulps_text(m: &parity_record::ValueMetrics) -> String {
    if m.nonfinite > 0 {
        format!("{} NaN/Inf where the reference is finite", m.nonfinite)
    } else {
        format!("{} ULP at max", ulps(m.ulps_at_max))
    }
}
