//! The bisect part of the HTML report: the localised operation (or region),
//! checkpoints, the f64 shadow's per-operation errors, probes, and the
//! reproducer's commands ready to copy.

use super::esc::esc;
use super::table::num;
use crate::report::localised;
use parity_record::{BisectRecord, Confirmation, DivergentOp, Region, RepairSearch, ValueMetrics};
use std::fmt::Write as _;

/// Writes a bisect record's section body.
pub fn section(out: &mut String, b: &BisectRecord) {
    let _ = write!(
        out,
        "<div class=\"verdict {0}\"><span class=\"badge {0}\">{1}</span> stage <b>{2}</b>, \
         case {3}, output {4}, function {5}; strategy {6}; {7} probes (exit code {8})</div>",
        b.status.name(),
        b.status.name().to_uppercase(),
        esc(b.stage.as_deref().unwrap_or("-")),
        esc(b.case.as_deref().unwrap_or("-")),
        esc(b.output.as_deref().unwrap_or("-")),
        esc(b.function.as_deref().unwrap_or("-")),
        b.strategy.map_or("-", |s| s.name()),
        b.probes,
        b.exit_code().code()
    );
    let ambiguous = b.repair.as_ref().and_then(localised::ambiguity);
    match (&b.first_divergent_op, ambiguous) {
        (Some(op), _) => self::op(out, op),
        (None, Some(line)) => {
            let _ = write!(out, "<p class=\"ambiguous\"><b>{}</b></p>", esc(&line));
        }
        (None, None) => {
            out.push_str("<p>No single operation named (see the region and notes).</p>")
        }
    }
    if let Some(e) = &b.dispatch {
        let r = parity_record::DispatchesRecord::new("", &e.reference, &e.target);
        let _ = write!(
            out,
            "<h3>Dispatch evidence: <code>{}</code> matches the oracle, <code>{}</code> does not</h3>",
            esc(&e.reference),
            esc(&e.target)
        );
        super::dispatches::stage(out, &r, &e.stage, 0, 0);
    }
    for n in &b.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(n));
    }
    for e in &b.errors {
        let _ = write!(
            out,
            "<p class=\"errors\">{:?} error: {}</p>",
            e.kind,
            esc(&e.message)
        );
    }
    if let Some(r) = &b.region {
        region(out, r);
    }
    if !b.checkpoints.is_empty() {
        out.push_str(
            "<h3>Checkpoints</h3><table class=\"small\"><thead><tr><th>oracle</th><th>value</th>\
             <th>op</th><th>location</th><th>kind</th><th>verdict</th><th>from</th><th>max |err|</th>\
             <th>ULPs at max</th></tr></thead><tbody>",
        );
        for c in &b.checkpoints {
            let _ =
                write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td></tr>",
                esc(&c.oracle),
                esc(&c.value),
                c.op_index.map_or("-".into(), |i| format!("#{i}")),
                esc(&c.loc),
                c.kind.name(),
                if c.passed { "pass" } else { "fail" },
                c.verdict_from.name(),
                c.metrics.as_ref().map_or("-".into(), |m| num(m.max_abs)),
                c.metrics.as_ref().map_or("-".into(), |m| num(m.ulps_at_max)),
            );
        }
        out.push_str("</tbody></table>");
    }
    if !b.shadow.is_empty() {
        out.push_str(
            "<h3>f64 shadow, per operation of the region</h3><table class=\"small\"><thead><tr>\
             <th>op</th><th>name</th><th>location</th><th>result</th><th>accumulated ULPs</th>\
             <th>local ULPs</th><th>flagged</th></tr></thead><tbody>",
        );
        for s in &b.shadow {
            let _ = write!(
                out,
                "<tr{}><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if s.flagged { " class=\"fail\"" } else { "" },
                s.op_index,
                esc(&s.op_name),
                esc(&s.loc),
                esc(&s.result_type),
                num(s.accumulated_ulps),
                s.local_ulps.map_or("-".into(), num),
                if s.flagged { "yes" } else { "" }
            );
        }
        out.push_str("</tbody></table>");
    }
    if let Some(r) = &b.repair {
        repair(out, r);
    }
    if let Some(c) = &b.confirmation {
        confirmation(out, c);
    }
    if !b.probe_log.is_empty() {
        let _ = write!(
            out,
            "<h3>Probes</h3><pre class=\"code\">{}</pre>",
            esc(&b.probe_log.join("\n"))
        );
    }
    for o in &b.observer_effect {
        let _ = write!(out, "<p class=\"errors\">observer effect: {}</p>", esc(o));
    }
    if let Some(dir) = &b.reproducer {
        let q = shell_quote(dir);
        let cmds = format!("sh {q}/run.sh\nparity check {q}/stages.yaml");
        let _ = write!(
            out,
            "<h3>Reproducer</h3><div class=\"copy\"><pre class=\"code\">{}</pre>\
             <button type=\"button\" class=\"copy-btn\">copy</button></div>",
            esc(&cmds)
        );
    }
}

/// Writes the repair search's surviving edits and, for ambiguous ones,
/// whether they compute one function.
fn repair(out: &mut String, r: &RepairSearch) {
    let verdict = match (r.claimed, &r.equivalence) {
        (Some(o), _) => format!("every edit acts at #{o}: named with repair evidence"),
        (None, Some(eq)) if eq.holds() => format!(
            "ambiguous: they act at several operations and compute one function on {} \
             perturbed inputs, so no oracle tensor at the region's end can separate them",
            eq.inputs
        ),
        (None, Some(eq)) if eq.unedited_differs => format!(
            "ambiguous: they act at several operations; {} of them differ from the first on \
             {} perturbed inputs, so another case's oracle tensors can separate them",
            eq.differ.len(),
            eq.inputs
        ),
        (None, _) => "ambiguous: they act at several operations".into(),
    };
    let _ = write!(
        out,
        "<h3>Repair search</h3><p>{} of {} edits make the region match the oracle ({}); {}.</p>\
         <table class=\"small\"><thead><tr><th>op</th><th>name</th><th>location</th>\
         <th>edit</th><th>end ULPs</th><th>same function as the first</th></tr></thead><tbody>",
        r.candidates.len(),
        r.tried,
        esc(&r.judged_by),
        esc(&verdict)
    );
    for (i, c) in r.candidates.iter().enumerate() {
        let same = match &r.equivalence {
            Some(eq) if eq.agree.contains(&i) => "yes",
            Some(eq) if eq.differ.contains(&i) => "no",
            _ => "-",
        };
        let _ = write!(
            out,
            "<tr><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{same}</td></tr>",
            c.op_index,
            esc(&c.op_name),
            esc(&c.loc),
            esc(&c.edit),
            num(c.ulps)
        );
    }
    out.push_str("</tbody></table>");
    if let Some(c) = &r.cross_case {
        cross_case(out, c);
    }
}

/// Writes the cross-case check: the cases that judged the repairs, the
/// repairs dropped there, the cases not used.
fn cross_case(out: &mut String, c: &parity_record::CrossCase) {
    let _ = write!(
        out,
        "<h3>Cross-case check</h3><p>{}.</p>",
        esc(&localised::cross_case_summary(c))
    );
    // Why a repair was not judged, and why a case was not used: one item
    // each, not one long sentence.
    for (title, items) in [
        (
            "Not carried (not judged there, still candidates)",
            &c.uncarried,
        ),
        ("Cases not used", &c.skipped),
    ] {
        if items.is_empty() {
            continue;
        }
        let _ = write!(out, "<p>{title}:</p><ul class=\"small\">");
        for i in items {
            let _ = write!(out, "<li>{}</li>", esc(i));
        }
        out.push_str("</ul>");
    }
    if c.dropped.is_empty() {
        return;
    }
    out.push_str(
        "<table class=\"small\"><thead><tr><th>op</th><th>name</th><th>location</th>\
         <th>edit</th><th>end ULPs here</th><th>case</th><th>end ULPs there</th></tr></thead>\
         <tbody>",
    );
    for d in &c.dropped {
        let _ = write!(
            out,
            "<tr><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            d.candidate.op_index,
            esc(&d.candidate.op_name),
            esc(&d.candidate.loc),
            esc(&d.candidate.edit),
            num(d.candidate.ulps),
            esc(&d.case),
            num(d.ulps)
        );
    }
    out.push_str("</tbody></table>");
}

/// Writes the confirmation of the shadow's candidates: the region's end as it
/// is and with each candidate's result taken from the shadow.
fn confirmation(out: &mut String, c: &Confirmation) {
    let _ = write!(
        out,
        "<h3>Confirmation of the shadow's candidates</h3><p>The region's end against {}, \
         budget {} ULPs at max: {} ULPs as it is; {}.</p><table class=\"small\"><thead><tr>\
         <th>op</th><th>name</th><th>location</th><th>own ULPs</th>\
         <th>end ULPs with its result from the shadow</th><th>holds</th></tr></thead><tbody>",
        esc(&c.before.against),
        num(c.budget_ulps),
        num(c.before.ulps_at_max),
        match c.confirmed {
            Some(o) => format!("confirmed: #{o}"),
            None => "none holds, no operation named from the shadow".into(),
        }
    );
    for x in &c.candidates {
        let _ = write!(
            out,
            "<tr{}><td>#{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if x.holds { "" } else { " class=\"fail\"" },
            x.op_index,
            esc(&x.op_name),
            esc(&x.loc),
            num(x.local_ulps),
            num(x.after.ulps_at_max),
            if x.holds { "yes" } else { "no" }
        );
    }
    out.push_str("</tbody></table>");
}

/// Writes a localised region: its bounds and operations.
pub fn region(out: &mut String, r: &Region) {
    let _ = write!(
        out,
        "<h3>Region: {} operations from {} to {}</h3><pre class=\"code\">{}</pre>",
        r.ops,
        if r.passing.is_empty() {
            "the stage inputs".to_string()
        } else {
            esc(&r.passing.join(", "))
        },
        esc(&r.failing),
        esc(&r.op_list.join("\n"))
    );
}

/// Writes the localised operation: its location in brief (the whole one
/// behind a disclosure), its text, and the error at its inputs and output
/// when they were measured.
pub fn op(out: &mut String, op: &DivergentOp) {
    let _ = write!(
        out,
        "<div class=\"op\"><p><b>{}</b> (op #{} of <code>{}</code>, stage {}) at <code class=\"loc\">{}</code>; \
         evidence: <b>{}</b>; {} probes.</p>{}<pre class=\"code\">{}</pre>\
         <p>operands: {}<br>results: {}</p>",
        esc(&op.op_name),
        op.op_index,
        esc(&op.function),
        esc(&op.stage),
        esc(&localised::op_loc(op)),
        op.evidence.name(),
        op.probes,
        whole_location(op),
        esc(localised::op_text(op)),
        esc(&op.operand_types.join(", ")),
        esc(&op.result_types.join(", "))
    );
    if op.metrics.inputs.is_empty() && op.metrics.output.is_empty() {
        // Repair evidence measures the region's end, not this op's values:
        // no table of nothing (the repair search's table says what it saw).
        out.push_str("</div>");
        return;
    }
    out.push_str(
        "<table class=\"small\"><thead><tr><th></th><th>value</th><th>against</th><th>max |err|</th>\
         <th>RMS</th><th>max |ref|</th><th>ULPs at max</th></tr></thead><tbody>",
    );
    let line = |out: &mut String, side: &str, m: &ValueMetrics| {
        let _ = write!(
            out,
            "<tr><td>{side}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&m.value),
            esc(&m.against),
            num(m.max_abs),
            num(m.rms),
            num(m.max_ref),
            num(m.ulps_at_max)
        );
    };
    for m in &op.metrics.inputs {
        line(out, "input", m);
    }
    for m in &op.metrics.output {
        line(out, "output", m);
    }
    out.push_str("</tbody></table></div>");
}

/// The op's whole location behind a disclosure, when the brief leaves
/// something out (a traceback); nothing when the brief is all there is.
fn whole_location(op: &DivergentOp) -> String {
    let raw = op.loc_raw.trim();
    let inner = raw
        .strip_prefix("loc(")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(raw)
        .replace('"', "");
    if raw.is_empty() || inner == localised::op_loc(op) {
        return String::new();
    }
    format!(
        "<details class=\"loc-raw\"><summary>whole location ({} bytes)</summary>\
         <pre class=\"code\">{}</pre></details>",
        raw.len(),
        esc(raw)
    )
}

/// Quotes `s` for a POSIX shell when it needs quoting.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
