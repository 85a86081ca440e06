//! The fuzz section of the HTML report (`parity.fuzz/1`): the verdict and
//! the run's seed, one table row per invariant with its tolerance, cases and
//! negative control, the replayed seeds, and every violation with its
//! minimal case (which frames are valid, what was written where, which
//! output element moved, from what to what) and the command that replays it.

use super::esc::esc;
use crate::report::fuzz_text::{at, on, sides};
use parity_record::{FuzzRecord, InvariantRecord, Violation};
use std::fmt::Write as _;

/// A float as the page shows it (`-` when absent); `data-v` keeps the exact value.
fn num(x: Option<f64>) -> (String, String) {
    match x {
        Some(0.0) => ("0 (bit for bit)".into(), "0".into()),
        Some(v) => (format!("{v:.4e}"), format!("{v:e}")),
        None => ("-".into(), String::new()),
    }
}

/// One section per fuzz record; `i` numbers it on a page with several.
pub fn section(out: &mut String, r: &FuzzRecord, i: usize) {
    let status = r.status.name();
    let _ = write!(
        out,
        "<section class=\"fuzz\" id=\"fuzz-{i}\"><h2>Mask fuzzer: <code>{}</code></h2>\
         <div class=\"verdict {status}\"><span class=\"badge {status}\">{}</span> \
         {} invariant(s), {} violation(s) (exit code {})</div>\
         <p>Seed <b data-seed>{}</b>, {} case(s) per invariant, {:.1} s. Replay the run: \
         <code>parity fuzz {} --seed {}</code></p>",
        esc(&r.spec),
        status.to_uppercase(),
        r.invariants.len(),
        r.violations.len(),
        r.exit_code().code(),
        r.seed,
        r.cases,
        r.elapsed_s,
        esc(&r.spec),
        r.seed
    );
    invariants(out, &r.invariants);
    triangulation(out, r);
    if !r.replayed.is_empty() {
        out.push_str(
            "<h3>Persisted seeds replayed first</h3><table class=\"fuzz-replayed\">\
             <tr><th>invariant</th><th>seed</th><th>now</th></tr>",
        );
        for p in &r.replayed {
            let (class, now) = if p.still_fails {
                ("fail", "still fails")
            } else {
                ("pass", "passes")
            };
            let _ = write!(
                out,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{now}</td></tr>",
                esc(&p.invariant),
                p.seed
            );
        }
        out.push_str("</table>");
    }
    for (k, v) in r.violations.iter().enumerate() {
        violation(out, r, v, k);
    }
    if !r.errors.is_empty() {
        out.push_str("<ul class=\"errors\">");
        for e in &r.errors {
            let _ = write!(
                out,
                "<li><b>{} error</b>: {}</li>",
                e.kind.name(),
                esc(&e.message)
            );
        }
        out.push_str("</ul>");
    }
    for w in &r.warnings {
        let _ = write!(out, "<p class=\"note\">warning: {}</p>", esc(w));
    }
    out.push_str("</section>");
}

fn invariants(out: &mut String, all: &[InvariantRecord]) {
    out.push_str(
        "<h3>Invariants</h3><table class=\"fuzz-invariants\"><thead><tr><th>invariant</th>\
         <th>status</th><th>compares</th><th>tolerance</th><th>cases</th><th>failed</th>\
         <th>max diff (passing cases)</th><th>negative control</th><th>control diff</th>\
         <th>note</th></tr></thead><tbody>",
    );
    for inv in all {
        let (diff, diff_v) = num(inv.max_diff);
        let (control, fired, cdiff) = match &inv.control {
            Some(c) if c.fired => (esc(&c.description), "fired", num(Some(c.max_diff))),
            Some(c) => (
                format!(
                    "<b>did not fire: the check cannot fail</b> ({})",
                    esc(&c.description)
                ),
                "silent",
                num(Some(c.max_diff)),
            ),
            None => ("none".to_string(), "none", num(None)),
        };
        let _ = write!(
            out,
            "<tr class=\"{st}\" data-invariant=\"{name}\"><td>{name}</td>\
             <td><span class=\"badge {st}\">{st}</span></td><td>{}</td><td>{}</td>\
             <td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{diff_v}\">{diff}</td>\
             <td class=\"control {fired}\" data-control=\"{fired}\">{control}</td>\
             <td data-v=\"{}\">{}</td><td>{}</td></tr>",
            esc(&inv.description),
            esc(&inv.tolerance),
            inv.cases_run,
            inv.cases_run,
            inv.cases_failed,
            inv.cases_failed,
            cdiff.1,
            cdiff.0,
            esc(inv.note.as_deref().unwrap_or("")),
            st = inv.status.name(),
            name = esc(&format!("{}{}", inv.name, at(&inv.target))),
        );
    }
    out.push_str("</tbody></table>");
}

fn violation(out: &mut String, r: &FuzzRecord, v: &Violation, k: usize) {
    let c = &v.case;
    let m = &v.moved;
    let _ = write!(
        out,
        "<section class=\"violation\" id=\"violation-{k}\" data-invariant=\"{}\">\
         <h3>Violation of <code>{}</code>{}: minimal case</h3><p class=\"first-divergence\">{}</p>\
         <dl class=\"prov\">\
         <dt>entry point</dt><dd data-field=\"function\"><code>{}</code> ({} clip(s) of {} frames)</dd>",
        esc(&v.invariant),
        esc(&v.invariant),
        esc(&at(&v.target)),
        esc(&v.summary),
        esc(&c.function),
        c.clips,
        c.bucket
    );
    for (clip, n) in c.valid.iter().enumerate() {
        let frames = c
            .valid_frames
            .get(clip)
            .map_or_else(|| format!("0..{n}"), |f| f.clone());
        let _ = write!(
            out,
            "<dt>clip {clip}</dt><dd data-field=\"clip-{clip}\">{n} valid frame(s) at \
             <b data-valid-frames>{}</b>; from {}</dd>",
            esc(&frames),
            esc(c.sources.get(clip).map_or("-", String::as_str))
        );
    }
    let _ = write!(
        out,
        "<dt>changed</dt><dd data-field=\"change\">{}</dd>\
         <dt>output moved</dt><dd data-field=\"output\"><code>{}</code>{:?}</dd>\
         <dt>reference</dt><dd data-field=\"expected\" data-v=\"{:e}\">{}</dd>\
         <dt>after the change</dt><dd data-field=\"actual\" data-v=\"{:e}\">{}</dd>\
         <dt>max diff</dt><dd data-field=\"max_diff\" data-v=\"{:e}\">{:.4e}, {} element(s) of the valid region</dd>\
         <dt>found</dt><dd>case seed {}, shrunk in {} step(s)</dd>\
         <dt>replay</dt><dd><code data-field=\"replay\">parity fuzz {} --replay {}:{}{}</code></dd></dl></section>",
        esc(&c.change),
        esc(&m.output),
        m.index,
        m.expected,
        m.expected,
        m.actual,
        m.actual,
        m.max_diff,
        m.max_diff,
        m.differing,
        v.seed,
        v.shrink_steps,
        esc(&r.spec),
        esc(&v.invariant),
        v.seed,
        esc(&on(&v.target))
    );
}

/// With several targets: each invariant whose outcome differs between them,
/// labelled, and every later target's outputs against the first's.
fn triangulation(out: &mut String, r: &FuzzRecord) {
    if r.targets.len() < 2 {
        return;
    }
    let _ = write!(
        out,
        "<h3>Triangulation ({})</h3><ul class=\"triangulation\">",
        esc(&r.targets.join(", "))
    );
    if r.triangulation.is_empty() {
        out.push_str(
            "<li>every invariant has the same outcome on every target, outputs within its tolerance</li>",
        );
    }
    for row in &r.triangulation {
        let _ = write!(
            out,
            "<li data-label=\"{}\">invariant {}: <b>{}</b> ({}): {}</li>",
            row.label.name(),
            esc(&row.invariant),
            row.label.name(),
            esc(&sides(row)),
            esc(&row.explain())
        );
    }
    out.push_str("</ul>");
}
