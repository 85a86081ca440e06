//! `parity.serving/1` rendered: the terminal table (one row per request),
//! the JUnit suite (one test case per request), the Markdown head, and the
//! HTML page with its slots x steps timeline.

use super::html::esc::esc;
use super::sanitize::terminal as clean;
use comfy_table::{presets, ContentArrangement, Table};
use parity_record::{ServingRecord, ServingRequestRecord, Status};
use std::fmt::Write;

fn opt<T: std::fmt::Display>(x: Option<T>) -> String {
    x.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn tokens(t: &[u32]) -> String {
    t.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

/// A request's id, with `@target` in a run over several targets.
fn id_at(r: &ServingRequestRecord) -> String {
    match &r.target {
        Some(t) => format!("{} @{t}", r.id),
        None => r.id.clone(),
    }
}

/// Where the scenario ran: `target X`, or `targets a, b`.
fn ran_on(s: &ServingRecord) -> String {
    if s.targets.len() > 1 {
        format!("targets {}", s.targets.join(", "))
    } else {
        format!("target {}", s.target)
    }
}

/// The triangulation lines of a run over several targets (none for one).
pub fn triangulation_lines(s: &ServingRecord) -> Vec<String> {
    if s.targets.len() < 2 {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "triangulation over {}: {} failing request{}",
        s.targets.join(", "),
        s.triangulation.len(),
        if s.triangulation.len() == 1 { "" } else { "s" }
    )];
    for row in &s.triangulation {
        lines.push(format!(
            "{}: request `{}`: {}",
            row.label.name(),
            row.request,
            row.explain()
        ));
    }
    lines
}

/// The first failed verdict's message of a request, or its refusal / error.
pub fn request_line(r: &ServingRequestRecord) -> String {
    if let Some(e) = &r.error {
        return format!("error: {e}");
    }
    if let Some(v) = r.verdicts.iter().find(|v| v.status == Status::Fail) {
        return format!("{}: {}", v.check, v.message);
    }
    match &r.refused {
        Some(why) => format!("refused: {why}"),
        None => format!(
            "{} checks pass",
            r.verdicts
                .iter()
                .filter(|v| v.status == Status::Pass)
                .count()
        ),
    }
}

/// The terminal text.
pub fn text(s: &ServingRecord) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header([
            "request",
            "case",
            "slot",
            "arrive",
            "admitted",
            "cancelled",
            "finished",
            "tokens",
            "status",
            "detail",
        ]);
    for r in &s.requests {
        table.add_row([
            clean(&id_at(r)).into_owned(),
            format!("{} ({})", clean(&r.case), r.kind),
            opt(r.slot),
            r.arrive.to_string(),
            opt(r.admitted_step),
            opt(r.cancelled_step),
            opt(r.finished_step),
            tokens(&r.tokens),
            r.status.name().to_string(),
            clean(&request_line(r)).into_owned(),
        ]);
    }
    let mut out = format!(
        "parity serve {}: {} ({} slots, context {}, {} steps, {})\n{table}\n",
        s.status.name().to_uppercase(),
        clean(&s.scenario),
        s.slots,
        s.context,
        s.steps,
        clean(&ran_on(s))
    );
    for line in triangulation_lines(s) {
        let _ = writeln!(out, "{}", clean(&line));
    }
    for e in &s.errors {
        let _ = writeln!(out, "error ({}): {}", e.kind.name(), clean(&e.message));
    }
    out
}

/// The Markdown head (a summary line per request).
pub fn markdown(s: &ServingRecord) -> String {
    let mut out = format!(
        "## parity serve {}: `{}`\n\n",
        s.status.name().to_uppercase(),
        s.scenario
    );
    for line in triangulation_lines(s) {
        let _ = writeln!(out, "{line}\n");
    }
    for r in &s.requests {
        let _ = writeln!(
            out,
            "- `{}` ({}): {} — {}",
            id_at(r),
            r.case,
            r.status.name(),
            request_line(r)
        );
    }
    out
}

/// The HTML body: the timeline (one row per slot, one column per step, each
/// cell naming the request that held the slot: P prefill, digits decode, C
/// cancelled), then the per-request table with every verdict.
pub fn html(s: &ServingRecord) -> String {
    let mut b = format!(
        "<h1>parity serve {}</h1><p>{} &middot; {} slots &middot; context {} &middot; {} steps &middot; {}</p>",
        s.status.name().to_uppercase(),
        esc(&s.scenario),
        s.slots,
        s.context,
        s.steps,
        esc(&ran_on(s))
    );
    if s.targets.len() > 1 {
        let _ = write!(
            b,
            "<h2>Triangulation</h2><p>{}</p><table class=\"triangulation\"><tr><th>request</th><th>label</th>",
            esc(&triangulation_lines(s)[0])
        );
        for t in &s.targets {
            let _ = write!(b, "<th>{}</th>", esc(t));
        }
        b.push_str("<th>why</th></tr>");
        for row in &s.triangulation {
            let _ = write!(
                b,
                "<tr data-label=\"{}\"><td>{}</td><td>{}</td>",
                row.label.name(),
                esc(&row.request),
                row.label.name()
            );
            for side in &row.targets {
                let _ = write!(
                    b,
                    "<td class=\"{}\" data-target=\"{}\">{}</td>",
                    side.status.name(),
                    esc(&side.target),
                    side.status.name()
                );
            }
            let _ = write!(b, "<td>{}</td></tr>", esc(&row.explain()));
        }
        b.push_str("</table>");
    }
    // The timeline is the first target's (slots are per engine).
    let first = s.targets.first();
    b.push_str(
        "<h2>Timeline (slots &times; steps)</h2><table class=\"timeline\"><tr><th>slot</th>",
    );
    for step in 0..s.steps {
        let _ = write!(b, "<th>{step}</th>");
    }
    b.push_str("</tr>");
    for slot in 0..s.slots {
        let _ = write!(b, "<tr><th>{slot}</th>");
        for step in 0..s.steps {
            let held = s.requests.iter().find(|r| {
                (first.is_none() || r.target.as_ref() == first)
                    && r.slot == Some(slot)
                    && r.admitted_step.is_some_and(|a| a <= step)
                    && r.finished_step
                        .or(r.cancelled_step)
                        .is_none_or(|e| step <= e)
            });
            match held {
                Some(r) => {
                    let mark = if r.admitted_step == Some(step) {
                        "P".to_string()
                    } else if r.cancelled_step == Some(step) {
                        "C".to_string()
                    } else {
                        (step - r.admitted_step.unwrap_or(step)).to_string()
                    };
                    let bad = r
                        .verdicts
                        .iter()
                        .any(|v| v.status == Status::Fail && v.step == Some(step));
                    let _ = write!(
                        b,
                        "<td class=\"{}\" title=\"{}\">{}<br>{mark}</td>",
                        if bad { "fail" } else { r.status.name() },
                        esc(&request_line(r)),
                        esc(&r.id)
                    );
                }
                None => b.push_str("<td></td>"),
            }
        }
        b.push_str("</tr>");
    }
    b.push_str("</table>");
    let refused: Vec<&ServingRequestRecord> =
        s.requests.iter().filter(|r| r.refused.is_some()).collect();
    if !refused.is_empty() {
        b.push_str("<h2>Refused at admission</h2><ul>");
        for r in refused {
            let _ = write!(
                b,
                "<li><b>{}</b> (step {}): {}</li>",
                esc(&r.id),
                r.arrive,
                esc(r.refused.as_deref().unwrap_or(""))
            );
        }
        b.push_str("</ul>");
    }
    b.push_str("<h2>Requests</h2><table><tr><th>request</th><th>case</th><th>slot</th><th>steps</th><th>tokens</th><th>oracle</th><th>solo</th><th>bitwise</th><th>verdicts</th></tr>");
    for r in &s.requests {
        let verdicts: String = r
            .verdicts
            .iter()
            .map(|v| {
                format!(
                    "<div class=\"{}\">{} {}: {}</div>",
                    v.status.name(),
                    v.status.name(),
                    esc(&v.check),
                    esc(&v.message)
                )
            })
            .collect();
        let _ = write!(
            b,
            "<tr class=\"{}\"><td>{}</td><td>{} ({})</td><td>{}</td><td>{}..{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
            r.status.name(),
            esc(&id_at(r)),
            esc(&r.case),
            esc(&r.kind),
            opt(r.slot),
            opt(r.admitted_step),
            opt(r.finished_step.or(r.cancelled_step)),
            tokens(&r.tokens),
            r.oracle_tokens.iter().map(i64::to_string).collect::<Vec<_>>().join(" "),
            tokens(&r.solo_tokens),
            opt(r.bitwise_logits),
            verdicts,
            r.error.as_deref().map(|e| format!("<div class=\"error\">error: {}</div>", esc(e))).unwrap_or_default()
        );
    }
    b.push_str("</table>");
    for e in &s.errors {
        let _ = write!(
            b,
            "<p class=\"error\">error ({}): {}</p>",
            e.kind.name(),
            esc(&e.message)
        );
    }
    b
}
