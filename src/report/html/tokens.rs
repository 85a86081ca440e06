//! The tokens section of the HTML report: the verdict, per case the token
//! streams aligned in a table with mismatches marked, a logit-gap chart
//! (hand-written SVG) and the teacher-forced metrics, then the first
//! divergent token's evidence, the layer and the operation.

use super::bisect;
use super::esc::esc;
use super::table::num;
use crate::report::tokens_text::{localisation_lines, token_line};
use parity_record::{Localisation, TokenCaseRecord, TokensRecord};
use std::fmt::Write as _;

/// The whole section.
pub fn section(out: &mut String, r: &TokensRecord) {
    let status = r.status.name();
    let _ = write!(
        out,
        "<section class=\"tokens\" id=\"tokens\"><div class=\"verdict {status}\"><span class=\"badge {status}\">{status}</span> {}</div>",
        esc(&match &r.first_divergent_token {
            Some(d) => format!("first divergent token: {}", token_line(d)),
            None => "no token differs from the oracle".to_string(),
        })
    );
    for line in localisation_lines(r) {
        let _ = write!(out, "<p class=\"first-divergence\">{}</p>", esc(&line));
    }
    let triangulation = crate::report::tokens_targets_text::lines(r);
    if let Some((head, rows)) = triangulation.split_first() {
        let _ = write!(out, "<h2>Triangulation</h2><p>{}</p><ul>", esc(head));
        for row in rows {
            let _ = write!(out, "<li>{}</li>", esc(row.trim_start()));
        }
        out.push_str("</ul>");
    }
    for c in &r.cases {
        case_section(out, c);
    }
    if let Some(d) = &r.first_divergent_token {
        out.push_str("<h2>First divergent token</h2><table><tr><th>rank</th><th>production token</th><th>logit</th><th>oracle token</th><th>logit</th></tr>");
        for i in 0..d.production_top_k.len().max(d.oracle_top_k.len()) {
            let cell = |l: &[parity_record::TokenLogit]| match l.get(i) {
                Some(x) => format!("<td>{}</td><td>{}</td>", x.token, num(x.logit)),
                None => "<td></td><td></td>".to_string(),
            };
            let _ = write!(
                out,
                "<tr><td>{}</td>{}{}</tr>",
                i + 1,
                cell(&d.production_top_k),
                cell(&d.oracle_top_k)
            );
        }
        let _ = write!(
            out,
            "</table><p>top-1 &minus; top-2: production {} ULP, oracle {} ULP ({}); margins production {}, oracle {}; reference noise {} ({}); verdict <b>{}</b>{}{}.</p>",
            d.production_gap_ulp,
            d.oracle_gap_ulp,
            esc(&d.ulp_dtype),
            num(d.production_margin),
            num(d.oracle_margin),
            d.noise.map_or("none".into(), num),
            d.noise_source.map_or("", |s| s.name()),
            d.verdict.name(),
            d.rule.map(|r| format!(" (decided by {})", r.name())).unwrap_or_default(),
            match (d.truth_gap, d.truth_margin) {
                (Some(g), Some(m)) => format!("; f64 truth gap {}, truth margin (oracle token over production token) {}", num(g), num(m)),
                _ => String::new(),
            }
        );
    }
    // An untrusted chain's op is the chain's, never presented as the answer.
    let untrusted = r
        .findings
        .first()
        .and_then(|f| f.chain_check.as_ref())
        .is_some_and(|c| !c.trusted());
    let mark = if untrusted {
        " of the step chain (not trusted)"
    } else {
        ""
    };
    match &r.first_divergent_op {
        Some(Localisation::Op(op)) => {
            let _ = write!(out, "<h2>First divergent operation{mark}</h2>");
            bisect::op(out, op);
        }
        Some(Localisation::Region(g)) => {
            let _ = write!(out, "<h2>First divergent region{mark}</h2>");
            bisect::region(out, &g.region);
        }
        None => {}
    }
    let errors: Vec<_> = r.all_errors().collect();
    if !errors.is_empty() {
        out.push_str("<h2>Errors</h2><ul class=\"errors\">");
        for e in errors {
            let _ = write!(out, "<li>{}: {}</li>", e.kind.name(), esc(&e.message));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>");
}

fn case_section(out: &mut String, c: &TokenCaseRecord) {
    let _ = write!(
        out,
        "<h2>Case {}{} <span class=\"badge {}\">{}</span></h2><div class=\"scroll\"><table class=\"streams\"><tr><th>step</th>",
        esc(&c.case),
        esc(&crate::report::tokens_targets_text::at(c.target.as_deref())),
        c.status.name(),
        c.status.name()
    );
    let n = [&c.oracle_tokens, &c.greedy_tokens, &c.teacher_forced_tokens]
        .iter()
        .map(|s| s.len())
        .max()
        .unwrap_or(0);
    for s in 0..n {
        let _ = write!(out, "<th>{s}</th>");
    }
    out.push_str("</tr>");
    for (label, stream) in [
        ("oracle", &c.oracle_tokens),
        ("greedy", &c.greedy_tokens),
        ("teacher-forced top-1", &c.teacher_forced_tokens),
    ] {
        if stream.is_empty() {
            continue;
        }
        let _ = write!(out, "<tr><th>{label}</th>");
        for (s, tok) in stream.iter().enumerate() {
            let differs = label != "oracle" && c.oracle_tokens.get(s) != Some(tok);
            let _ = write!(
                out,
                "<td{}>{tok}</td>",
                if differs {
                    " class=\"mismatch\" title=\"differs from the oracle\""
                } else {
                    ""
                }
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    if !c.steps.is_empty() {
        let _ = write!(
            out,
            "<figure class=\"chart\">{}<figcaption>Top-1 &minus; top-2 logit gap per teacher-forced step (oracle, production) and max |&Delta;logit| against the oracle; a red step is a top-1 disagreement. A step whose gap is under the reference noise can flip by rounding alone.</figcaption></figure>",
            gap_chart(c)
        );
        if let Some(s) = &c.summary {
            let _ = write!(
                out,
                "<p>teacher-forced: top-1 agreement {:.1}% of {} steps, mean KL {}, max KL {}, RMS &Delta;p {}, max |&Delta;p| {}, max |&Delta;logit| {}</p>",
                s.top1_agreement * 100.0,
                s.steps,
                num(s.mean_kl),
                num(s.max_kl),
                num(s.rms_delta_p),
                num(s.max_abs_delta_p),
                num(s.max_abs_delta_logit)
            );
        }
    }
}

/// Log-scale SVG: per step the oracle's gap (dot), the production's (ring)
/// and max |Δlogit| (bar); disagreeing steps tinted.
fn gap_chart(c: &TokenCaseRecord) -> String {
    let (w, h, left, bottom) = (720.0, 220.0, 50.0, 30.0);
    let values: Vec<f64> = c
        .steps
        .iter()
        .flat_map(|s| [s.oracle_gap, s.production_gap, s.max_abs_delta_logit])
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(1e-7)
        .log10()
        .floor();
    let hi = values
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(1.0)
        .log10()
        .ceil();
    let n = c.steps.len().max(1) as f64;
    let x = |s: usize| left + (s as f64 + 0.5) * (w - left - 10.0) / n;
    let y = |v: f64| {
        let v = if v > 0.0 { v.log10().clamp(lo, hi) } else { lo };
        10.0 + (hi - v) / (hi - lo).max(1.0) * (h - bottom - 10.0)
    };
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"logit gaps of case {}\">", esc(&c.case));
    let mut e = lo as i32;
    while e <= hi as i32 {
        let yy = y(10f64.powi(e));
        let _ = write!(svg, "<line x1=\"{left}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">1e{e}</text>", w - 10.0, left - 4.0, yy + 3.0);
        e += 1;
    }
    let bw = ((w - left - 10.0) / n * 0.5).max(1.0);
    for s in &c.steps {
        let xx = x(s.step);
        if !s.top1_agree {
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"10\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fdecea\"/>",
                xx - bw,
                2.0 * bw,
                h - bottom - 10.0
            );
        }
        let top = y(s.max_abs_delta_logit);
        let _ = write!(svg, "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"#9e9e9e\"><title>step {}: max |Δlogit| {}</title></rect>", xx - bw / 2.0, (h - bottom - top).max(0.0), s.step, num(s.max_abs_delta_logit));
        let _ = write!(svg, "<circle cx=\"{xx:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"#1f77b4\"><title>step {}: oracle gap {}</title></circle>", y(s.oracle_gap), s.step, num(s.oracle_gap));
        let _ = write!(svg, "<circle cx=\"{xx:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\"><title>step {}: production gap {}</title></circle>", y(s.production_gap), s.step, num(s.production_gap));
        let _ = write!(
            svg,
            "<text x=\"{xx:.1}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\">{}</text>",
            h - bottom + 12.0,
            s.step
        );
    }
    svg.push_str("<text x=\"60\" y=\"214\" font-size=\"10\">● oracle gap  ○ production gap  ▮ max |Δlogit|  (step →)</text></svg>");
    svg
}
