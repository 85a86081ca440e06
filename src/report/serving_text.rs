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
            clean(&r.id).into_owned(),
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
        "parity serve {}: {} ({} slots, context {}, {} steps, target {})\n{table}\n",
        s.status.name().to_uppercase(),
        clean(&s.scenario),
        s.slots,
        s.context,
        s.steps,
        s.target
    );
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
    for r in &s.requests {
        let _ = writeln!(
            out,
            "- `{}` ({}): {} — {}",
            r.id,
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
        "<h1>parity serve {}</h1><p>{} &middot; {} slots &middot; context {} &middot; {} steps &middot; target {}</p>",
        s.status.name().to_uppercase(),
        esc(&s.scenario),
        s.slots,
        s.context,
        s.steps,
        esc(&s.target)
    );
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
                r.slot == Some(slot)
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
            esc(&r.id),
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
