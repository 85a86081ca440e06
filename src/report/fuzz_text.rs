//! `parity.fuzz/1` for people and CI: the terminal text (seed, one line per
//! invariant with its control, every violation with its minimal case), the
//! Markdown summary and the JUnit report (one test case per invariant); the
//! HTML section is `html::fuzz`.

use super::sanitize;
use parity_record::{ErrorRecord, FuzzRecord, FuzzTriangulationRow, InvariantRecord, Status};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::fmt::Write;
use std::time::Duration;

fn control_text(i: &InvariantRecord) -> String {
    match &i.control {
        Some(c) if c.fired => format!("control fired (diff {:.3e}: {})", c.max_diff, c.description),
        Some(c) => format!(
            "CONTROL DID NOT FIRE ({}): the check cannot fail",
            c.description
        ),
        None => "no control".into(),
    }
}

/// ` @NAME` after a row of a several-target run, nothing otherwise.
pub(super) fn at(target: &Option<String>) -> String {
    target
        .as_deref()
        .map_or_else(String::new, |t| format!(" @{}", sanitize::terminal(t)))
}

/// ` --target NAME` for a replay command of a several-target run.
pub(super) fn on(target: &Option<String>) -> String {
    target
        .as_deref()
        .map_or_else(String::new, |t| format!(" --target {t}"))
}

/// One line per side: `cpu pass; vulkan fail at seed 7, outputs apart from cpu`.
pub(super) fn sides(row: &FuzzTriangulationRow) -> String {
    row.targets
        .iter()
        .map(|t| {
            let mut s = format!("{} {}", t.target, t.status.name());
            if let Some(seed) = t.seed {
                let _ = write!(s, " at seed {seed}");
            }
            if t.vs_first == Some(Status::Fail) {
                let _ = write!(s, ", outputs apart from {}", row.targets[0].target);
            }
            s
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn cross_text(i: &InvariantRecord) -> Option<String> {
    let c = i.vs_first.as_ref()?;
    Some(match (&c.moved, c.seed) {
        (Some(m), Some(seed)) => format!(
            "vs {}: {} case(s), OUTPUTS APART at case seed {seed}: `{}`{:?} {} on {} vs {} on {} (max diff {:.3e}, tolerance {})",
            c.target,
            c.cases,
            m.output,
            m.index,
            m.actual,
            i.target.as_deref().unwrap_or("?"),
            m.expected,
            c.target,
            c.max_diff,
            i.tolerance
        ),
        _ => format!(
            "vs {}: {} case(s) agree within {} (max diff {:.3e})",
            c.target, c.cases, i.tolerance, c.max_diff
        ),
    })
}

fn diff_text(i: &InvariantRecord) -> String {
    match i.max_diff {
        Some(0.0) => "no difference".into(),
        Some(d) => format!("max diff {d:.3e}"),
        None => "-".into(),
    }
}

/// The terminal text.
pub fn text(r: &FuzzRecord) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "parity fuzz {}: {} (seed {}, {} case(s) per invariant, {:.1} s)",
        r.status.name().to_uppercase(),
        sanitize::terminal(&r.spec),
        r.seed,
        r.cases,
        r.elapsed_s
    );
    let _ = writeln!(
        s,
        "replay: parity fuzz {} --seed {}",
        sanitize::terminal(&r.spec),
        r.seed
    );
    for p in &r.replayed {
        let _ = writeln!(
            s,
            "  replayed {}{} {}: {}",
            p.invariant,
            at(&p.target),
            p.seed,
            if p.still_fails {
                "still fails"
            } else {
                "passes now"
            }
        );
    }
    for i in &r.invariants {
        let _ = writeln!(
            s,
            "  {:<13} {:<7} {:>3} case(s), {} failed; {} ({}); {}",
            format!("{}{}", i.name, at(&i.target)),
            i.status.name(),
            i.cases_run,
            i.cases_failed,
            diff_text(i),
            i.tolerance,
            control_text(i)
        );
        if let Some(n) = &i.note {
            let _ = writeln!(s, "                {}", sanitize::terminal(n));
        }
        if let Some(c) = cross_text(i) {
            let _ = writeln!(s, "                {}", sanitize::terminal(&c));
        }
    }
    for v in &r.violations {
        let _ = writeln!(
            s,
            "VIOLATION{} {}",
            at(&v.target),
            sanitize::terminal(&v.summary)
        );
        let _ = writeln!(
            s,
            "  minimal case: `{}` c{} b{}, valid {:?} at {}, {}; change: {}",
            v.case.function,
            v.case.clips,
            v.case.bucket,
            v.case.valid,
            sanitize::terminal(&v.case.valid_frames.join(" | ")),
            sanitize::terminal(&v.case.sources.join(", ")),
            sanitize::terminal(&v.case.change)
        );
        let _ = writeln!(
            s,
            "  replay: parity fuzz {} --replay {}:{}{}",
            sanitize::terminal(&r.spec),
            v.invariant,
            v.seed,
            sanitize::terminal(&on(&v.target))
        );
    }
    if r.targets.len() >= 2 {
        let _ = writeln!(s, "fuzz triangulation ({}):", r.targets.join(", "));
        if r.triangulation.is_empty() {
            let _ = writeln!(
                s,
                "  every invariant has the same outcome on every target, outputs within its tolerance"
            );
        }
        for row in &r.triangulation {
            let _ = writeln!(
                s,
                "  invariant {}: {} ({}): {}",
                row.invariant,
                row.label.name(),
                sides(row),
                row.explain()
            );
        }
    }
    for e in &r.errors {
        let _ = writeln!(
            s,
            "error ({}): {}",
            e.kind.name(),
            sanitize::terminal(&e.message)
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {}", sanitize::terminal(w));
    }
    s
}

/// The Markdown summary: the text in a fenced block under a heading.
pub fn markdown(r: &FuzzRecord) -> String {
    let body = sanitize::xml(&text(r)).replace("```", "'''");
    format!(
        "## parity fuzz: {}\n\n```text\n{body}```\n",
        r.status.name().to_uppercase()
    )
}

fn x(s: &str) -> String {
    sanitize::xml(s).into_owned()
}

fn error_case(e: &ErrorRecord) -> TestCase {
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
    st.set_message(x(&e.message)).set_type(e.kind.name());
    let mut tc = TestCase::new("error", st);
    tc.set_classname("parity.fuzz");
    tc
}

/// One suite, one test case per invariant (a failure carries its violation).
pub fn junit(r: &FuzzRecord) -> Report {
    let mut suite = TestSuite::new(x(&format!("parity fuzz (seed {})", r.seed)));
    for i in &r.invariants {
        let status = match i.status {
            Status::Pass if i.control.as_ref().is_some_and(|c| !c.fired) => {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_message(x(&control_text(i))).set_type("parity");
                st
            }
            Status::Pass => TestCaseStatus::success(),
            Status::Skipped => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(x(i.note.as_deref().unwrap_or("")));
                st
            }
            Status::Fail | Status::Error => {
                let kind = if i.status == Status::Fail {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                };
                let mut st = TestCaseStatus::non_success(kind);
                let message = r
                    .violations
                    .iter()
                    .find(|v| v.invariant == i.name)
                    .map(|v| v.summary.clone())
                    .or_else(|| i.note.clone())
                    .unwrap_or_default();
                st.set_message(x(&message)).set_type("parity");
                st
            }
        };
        let mut tc = TestCase::new(x(&format!("{}{}", i.name, at(&i.target))), status);
        tc.set_classname("parity.fuzz");
        suite.add_test_case(tc);
    }
    for e in &r.errors {
        suite.add_test_case(error_case(e));
    }
    suite.set_time(Duration::try_from_secs_f64(r.elapsed_s).unwrap_or_default());
    let mut report = Report::new("parity fuzz");
    report.add_test_suite(suite);
    report
}
