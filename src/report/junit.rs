//! JUnit XML through quick-junit: per run, one test suite per case and mode
//! and one test case per stage output; a bisect or compare record is one
//! suite with one case. Every string is first cut down to what XML 1.0 can
//! hold ([`sanitize::xml`]), so the file always parses.

use super::sanitize;
use super::{Renderer, ReportError};
use parity_record::{
    AnyRecord, BaselineRecord, BisectRecord, CompareRecord, ErrorRecord, RunRecord, Status,
};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use std::collections::BTreeMap;
use std::time::Duration;

/// JUnit XML for CI test-report publishers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Junit;

impl Renderer for Junit {
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, ReportError> {
        let report = match record {
            AnyRecord::Run(r) => run_report(r),
            AnyRecord::Bisect(b) => bisect_report(b),
            AnyRecord::Compare(c) => compare_report(c),
            AnyRecord::Tokens(t) => tokens_report(t),
            AnyRecord::Serving(s) => serving_report(s),
            AnyRecord::Baseline(b) => baseline_report(b),
            AnyRecord::Fuzz(f) => super::fuzz_text::junit(f),
            AnyRecord::History(h) => super::history_text::junit(h),
            AnyRecord::Dispatches(d) => super::dispatches_text::junit(d),
        };
        Ok(report.to_string()?.into_bytes())
    }
}

fn x(s: &str) -> String {
    sanitize::xml(s).into_owned()
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

fn failure(message: &str, description: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status
        .set_message(x(message))
        .set_type("parity")
        .set_description(x(description));
    status
}

fn error(e: &ErrorRecord) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status
        .set_message(x(&e.message))
        .set_type(e.kind.name())
        .set_description(x(&e.message));
    status
}

fn case(name: &str, classname: &str, status: TestCaseStatus, secs: f64) -> TestCase {
    let mut tc = TestCase::new(x(name), status);
    tc.set_classname(x(classname)).set_time(seconds(secs));
    tc
}

fn run_report(record: &RunRecord) -> Report {
    let mut suites: BTreeMap<(String, &str), TestSuite> = BTreeMap::new();
    let multi = record.is_multi_target();
    for stage in &record.stages {
        let mode = stage.mode.name();
        // In a run over several targets, each target's runs are a suite of their own.
        let (suite_key, suite_name, classname) = if multi {
            (
                format!("{}\u{0}{}", stage.target, stage.case),
                format!("{} ({mode}, {})", stage.case, stage.target),
                format!("parity.{}.{}.{mode}", stage.target, stage.case),
            )
        } else {
            (
                stage.case.clone(),
                format!("{} ({mode})", stage.case),
                format!("parity.{}.{mode}", stage.case),
            )
        };
        let suite = suites
            .entry((suite_key, mode))
            .or_insert_with(|| TestSuite::new(x(&suite_name)));
        let secs = stage.invoke_ms / 1e3;
        if stage.outputs.is_empty() {
            let status = match (&stage.error, stage.status) {
                (Some(e), _) => error(e),
                (None, Status::Skipped) => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(x(stage.skipped_because.as_deref().unwrap_or("")));
                    s
                }
                (None, _) => error(&ErrorRecord::execution("no outputs were compared")),
            };
            suite.add_test_case(case(&stage.name, &classname, status, secs));
            continue;
        }
        for out in &stage.outputs {
            let status = match out.status {
                Status::Pass => TestCaseStatus::success(),
                Status::Fail => {
                    let failed: Vec<String> = out
                        .criteria
                        .iter()
                        .filter(|r| !r.passed)
                        .map(|r| {
                            format!(
                                "{} observed {:e} (threshold {:e}, would pass at {:e})",
                                r.criterion.name(),
                                r.observed,
                                r.threshold,
                                r.min_passing
                            )
                        })
                        .collect();
                    failure(&failed.join("; "), &failed.join("\n"))
                }
                _ => match out.error.as_ref().or(stage.error.as_ref()) {
                    Some(e) => error(e),
                    None => error(&ErrorRecord::execution("error")),
                },
            };
            let name = format!("{}.{}", stage.name, out.name);
            suite.add_test_case(case(&name, &classname, status, secs));
        }
    }
    let mut report = Report::new("parity");
    report.set_time(seconds(record.elapsed_s));
    report.add_test_suites(suites.into_values());
    if !record.errors.is_empty() {
        let mut suite = TestSuite::new("run");
        for (i, e) in record.errors.iter().enumerate() {
            suite.add_test_case(case(&format!("run-error-{i}"), "parity.run", error(e), 0.0));
        }
        report.add_test_suite(suite);
    }
    report
}

fn bisect_report(b: &BisectRecord) -> Report {
    let stage = b.stage.as_deref().unwrap_or("-");
    let status = match (b.errors.first(), b.localisation()) {
        (Some(e), _) => error(e),
        (None, Some(l)) => {
            let text = match &l {
                parity_record::Localisation::Op(op) => format!(
                    "{} ({} evidence)",
                    super::localised::op_place(op),
                    op.evidence.name()
                ),
                parity_record::Localisation::Region(r) => super::localised::region_line(r),
            };
            failure(&format!("localised to {text}"), &text)
        }
        (None, None) => TestCaseStatus::success(),
    };
    let mut suite = TestSuite::new("bisect");
    suite.add_test_case(case(stage, "parity.bisect", status, 0.0));
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}

fn compare_report(c: &CompareRecord) -> Report {
    let name = format!("{} vs {}", c.actual.file, c.expected.file);
    let status = match (c.errors.first(), c.status) {
        (Some(e), _) => error(e),
        (None, Status::Fail) => {
            let failed: Vec<&str> = c
                .criteria
                .iter()
                .filter(|r| !r.passed)
                .map(|r| r.criterion.name())
                .collect();
            failure(&format!("fails {}", failed.join(", ")), "")
        }
        _ => TestCaseStatus::success(),
    };
    let mut suite = TestSuite::new("compare");
    suite.add_test_case(case(&name, "parity.compare", status, 0.0));
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}

/// One suite `parity tokens`, one test case per token case (failure: a
/// counted mismatch; error: the case's errors), plus one for run-level errors.
fn tokens_report(t: &parity_record::TokensRecord) -> Report {
    let mut suite = TestSuite::new("parity tokens");
    for c in &t.cases {
        let counted = c
            .first_divergent_token
            .iter()
            .chain(&c.later_mismatches)
            .find(|d| d.counted);
        let status = match (c.errors.first(), counted) {
            (Some(e), _) => error(e),
            (None, Some(d)) => failure(
                &super::tokens_text::token_line(d),
                &super::tokens_text::text(t),
            ),
            (None, None) => TestCaseStatus::success(),
        };
        // In a run over several targets, one test case per case and target.
        let name = format!(
            "{}{}",
            c.case,
            super::tokens_targets_text::at(c.target.as_deref())
        );
        suite.add_test_case(case(&name, "parity.tokens", status, 0.0));
    }
    let run_errors: Vec<&ErrorRecord> = t
        .errors
        .iter()
        .chain(t.localisation.iter().flat_map(|l| l.run.all_errors()))
        .collect();
    if let Some(e) = run_errors.first() {
        suite.add_test_case(case("run", "parity.tokens", error(e), t.elapsed_s));
    }
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}

/// One suite, one test case per request: a failure names its first failed check.
fn serving_report(s: &parity_record::ServingRecord) -> Report {
    let mut suite = TestSuite::new("parity serve");
    for r in &s.requests {
        let line = super::serving_text::request_line(r);
        let status = match (&r.error, r.status) {
            (Some(e), _) => error(&ErrorRecord::execution(e.clone())),
            (None, parity_record::Status::Fail) => failure(&line, &super::serving_text::text(s)),
            _ => TestCaseStatus::success(),
        };
        suite.add_test_case(case(&r.id, "parity.serve", status, 0.0));
    }
    if let Some(e) = s.errors.first() {
        suite.add_test_case(case("run", "parity.serve", error(e), s.elapsed_s));
    }
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}

/// One suite, one test case per output compared: a failure names the metrics that regressed.
fn baseline_report(b: &BaselineRecord) -> Report {
    let mut suite = TestSuite::new("baseline");
    for o in &b.outputs {
        let regressed: Vec<String> = o
            .metrics
            .iter()
            .filter(|m| m.change == parity_record::Change::Regressed)
            .map(|m| {
                format!(
                    "{} {} -> {} (limit {})",
                    m.metric.name(),
                    super::baseline::value(m.metric, m.baseline),
                    super::baseline::value(m.metric, m.current),
                    super::table::num(m.limit)
                )
            })
            .collect();
        let status = if regressed.is_empty() {
            TestCaseStatus::success()
        } else {
            failure(
                &format!("regressed against {}: {}", b.baseline, regressed.join("; ")),
                "",
            )
        };
        let classname = format!("parity.baseline.{}.{}", o.case, o.mode.name());
        suite.add_test_case(case(
            &format!("{}/{}", o.stage, o.output),
            &classname,
            status,
            0.0,
        ));
    }
    let mut report = Report::new("parity");
    report.add_test_suite(suite);
    report
}
