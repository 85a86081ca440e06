//! `parity.dispatches/1` as text, Markdown and JUnit (the HTML section is
//! in html/dispatches.rs).

use super::sanitize;
use parity_record::{DispatchRow, DispatchStage, DispatchesRecord, Status};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::fmt::Write as _;

/// `1.2e-2`, or `-` when not measured.
pub fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.3e}"))
}

/// `#12 stablehlo.exponential @ layer/softmax, #13 ...` (at most `limit`).
pub fn ops_text(d: &DispatchRow, limit: usize) -> String {
    if d.ops.is_empty() {
        return "no source operation located (its locations are not the stage's)".into();
    }
    let mut s: Vec<String> = d
        .ops
        .iter()
        .take(limit)
        .map(|o| format!("#{} {} @ {}", o.index, o.name, o.loc))
        .collect();
    if d.ops.len() > limit {
        s.push(format!("and {} more", d.ops.len() - limit));
    }
    s.join(", ")
}

/// Whether a divergent dispatch's inputs already differed.
pub fn origin(d: &DispatchRow) -> String {
    if d.inputs_differ {
        format!(
            "accumulated: its inputs already differ (max |Δ| {})",
            num(Some(d.inputs_max_abs))
        )
    } else {
        "local: its inputs agree within tolerance, its outputs do not".to_string()
    }
}

/// The one-paragraph summary of one stage.
pub fn stage_text(r: &DispatchesRecord, s: &DispatchStage) -> String {
    let mut out = String::new();
    let by_ops = s
        .dispatches
        .iter()
        .filter(|d| d.aligned_by == "ops")
        .count();
    let _ = writeln!(
        out,
        "stage {}, case {}: {}: {} dispatches on {}, {} on {}, {} aligned ({} by key, {} by operations), {} unaligned",
        s.stage,
        s.case,
        s.status.name(),
        s.reference_count,
        r.reference,
        s.target_count,
        r.target,
        s.dispatches.len(),
        s.dispatches.len() - by_ops,
        by_ops,
        s.unaligned.len()
    );
    if let Some(d) = s.divergent() {
        let _ = writeln!(
            out,
            "  first divergent dispatch: #{} {} ({} #{})",
            d.ordinal, d.key, r.target, d.target_ordinal
        );
        let _ = writeln!(out, "    {}", origin(d));
        if d.inputs_differ {
            let before: Vec<String> = s
                .unaligned
                .iter()
                .filter(|u| u.target == r.target && u.ordinal < d.target_ordinal)
                .map(|u| format!("#{} {}", u.ordinal, u.key))
                .collect();
            if !before.is_empty() {
                let _ = writeln!(
                    out,
                    "    before it, {} ran dispatches the reference has no counterpart for: {}",
                    r.target,
                    before.join(", ")
                );
            }
        }
        for o in &d.outputs {
            let _ = writeln!(
                out,
                "    output {} {}: {} max |Δ| {}{}{}",
                o.index,
                o.ty,
                o.status.name(),
                num(o.max_abs),
                o.max_ulp.map(|u| format!(" ({u} ULP)")).unwrap_or_default(),
                // Counted by elementwise criteria only (atol/rtol); a bound
                // on ULPs or on the maximum fails with none counted.
                if o.mismatched > 0 {
                    format!(", {} elements outside tolerance", o.mismatched)
                } else {
                    String::new()
                }
            );
        }
        let _ = writeln!(out, "    operations: {}", ops_text(d, 8));
        if let Some(i) = &s.inside {
            match &i.op {
                Some(op) => {
                    let _ = writeln!(
                        out,
                        "    inside: #{} {} @ {} differs first (max |Δ| {}): {}",
                        op.index,
                        op.name,
                        op.loc,
                        num(i.max_abs),
                        i.note
                    );
                }
                None => {
                    let _ = writeln!(out, "    inside: {}", i.note);
                }
            }
            if let Some(v) = &i.vs_f64 {
                let _ = writeln!(out, "    {}", vs_f64_text(v, &r.reference, &r.target));
            }
        }
    } else if s.status == Status::Fail {
        let worst = s
            .results
            .iter()
            .filter_map(|d| d.max_abs)
            .fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "  the stage's results differ (max |Δ| {}), but no aligned dispatch does: the divergence lies in the {} dispatch(es) that could not be aligned (dispatch formation differs); parity cannot name one",
            num(Some(worst)),
            s.unaligned.len()
        );
    } else if let (Status::Pass, Some(d)) = (s.status, s.absorbed.and_then(|i| s.dispatches.get(i)))
    {
        let _ = writeln!(
            out,
            "  the results agree within tolerance; dispatch #{} {} differs beyond it first (max |Δ| {}), absorbed before the output: not a divergence",
            d.ordinal,
            d.key,
            num(d.outputs.iter().filter_map(|o| o.max_abs).reduce(f64::max))
        );
    } else if s.status == Status::Pass {
        let worst = s
            .dispatches
            .iter()
            .flat_map(|d| d.outputs.iter().filter_map(|o| o.max_abs))
            .fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "  no dispatch differs beyond tolerance (largest |Δ| {})",
            num(Some(worst))
        );
    } else if s.status == Status::Skipped {
        let _ = writeln!(
            out,
            "  NOT judged: {} bytes of traced tensors were over the byte budget (raise --max-trace-bytes)",
            s.dropped_bytes
        );
    }
    for u in s.unaligned.iter().take(5) {
        let _ = writeln!(out, "  unaligned: {} #{} {}", u.target, u.ordinal, u.key);
    }
    for f in &s.fidelity {
        if !f.bit_identical {
            let _ = writeln!(
                out,
                "  tracing changed {}'s results (max |Δ| {} from the untraced module): the dispatches are those of the traced program",
                f.target,
                num(Some(f.max_abs))
            );
        }
    }
    out
}

/// Dispatch evidence in a bisect record, as lines.
pub fn evidence_text(e: &parity_record::DispatchEvidence) -> String {
    let r = DispatchesRecord::new("", &e.reference, &e.target);
    format!(
        "dispatch evidence ({} matches the oracle, {} does not; the program unchanged):\n{}",
        e.reference,
        e.target,
        stage_text(&r, &e.stage)
    )
}

/// The terminal text.
pub fn text(r: &DispatchesRecord) -> String {
    let mut out = format!(
        "parity dispatches {}: {} (reference) vs {}\n",
        r.status.name().to_uppercase(),
        r.reference,
        r.target
    );
    for s in &r.stages {
        out.push_str(&stage_text(r, s));
    }
    for e in &r.errors {
        let _ = writeln!(out, "error ({}): {}", e.kind.name(), e.message);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(out, "{:.1} s", r.elapsed_s);
    sanitize::terminal(&out).into_owned()
}

/// The Markdown summary: the text in a fenced block under a heading.
pub fn markdown(r: &DispatchesRecord) -> String {
    let body = sanitize::xml(&text(r)).replace("```", "'''");
    format!(
        "## parity dispatches: {}\n\n```text\n{body}```\n",
        r.status.name().to_uppercase()
    )
}

fn x(s: &str) -> String {
    sanitize::xml(s).into_owned()
}

/// One suite, one test case per stage and case.
pub fn junit(r: &DispatchesRecord) -> Report {
    let mut suite = TestSuite::new(x(&format!(
        "parity dispatches {} vs {}",
        r.reference, r.target
    )));
    for s in &r.stages {
        let status = match s.status {
            Status::Pass => TestCaseStatus::success(),
            Status::Skipped => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(x("traced tensors over the byte budget"));
                st
            }
            Status::Fail | Status::Error => {
                let kind = if s.status == Status::Fail {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                };
                let mut st = TestCaseStatus::non_success(kind);
                st.set_message(x(stage_text(r, s).lines().nth(1).unwrap_or("")))
                    .set_type("parity")
                    .set_description(x(&stage_text(r, s)));
                st
            }
        };
        let mut tc = TestCase::new(x(&format!("{} [{}]", s.stage, s.case)), status);
        tc.set_classname("parity.dispatches");
        suite.add_test_case(tc);
    }
    for e in &r.errors {
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
        st.set_message(x(&e.message)).set_type(e.kind.name());
        let mut tc = TestCase::new("error", st);
        tc.set_classname("parity.dispatches");
        suite.add_test_case(tc);
    }
    suite.set_time(std::time::Duration::try_from_secs_f64(r.elapsed_s).unwrap_or_default());
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}

/// The f64 check of the operation named inside a dispatch, in one line.
pub fn vs_f64_text(v: &parity_record::InsideVsF64, reference: &str, target: &str) -> String {
    let verdict = match &v.off {
        Some(t) => format!("{t} is the one off"),
        None => "neither is twice as far as the other".to_string(),
    };
    format!(
        "vs f64 (the operation alone in f64 from {reference}'s operands): {reference} {}, {target} {}: {verdict}",
        num(Some(v.reference_err)),
        num(Some(v.target_err)),
    )
}
