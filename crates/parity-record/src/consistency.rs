//! Whether a record read back agrees with itself: its verdict (`status`)
//! with the parts it was judged from, and so with the exit code, which is
//! always computed from the parts.
//!
//! parity writes only consistent records; one that is not was edited or
//! damaged. `parity report` refuses it (exit 2, naming the field) rather
//! than print one verdict and exit with another.

use crate::any_record::AnyRecord;
use crate::baseline::{BaselineRecord, Change};
use crate::common::Status;
use crate::exit::ExitCode;
use crate::run::{RunRecord, StageRecord};

/// A field whose value its parts contradict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inconsistency {
    /// The field, as a JSON path (`status`, `stages[3].status`).
    pub field: String,
    /// What it says and what its parts say.
    pub detail: String,
}

/// Checks `record`'s verdicts against their parts (see the module docs).
pub fn check(record: &AnyRecord) -> Result<(), Inconsistency> {
    match record {
        AnyRecord::Run(r) => check_run(r)?,
        AnyRecord::Tokens(t) => derived("the cases and errors", t.status, t.derived_status())?,
        AnyRecord::Serving(s) => derived("the requests and errors", s.status, s.derived_status())?,
        AnyRecord::Fuzz(f) => derived("the invariants and errors", f.status, f.derived_status())?,
        AnyRecord::Dispatches(d) => derived("the stages and errors", d.status, d.derived_status())?,
        AnyRecord::Baseline(b) => check_baseline(b)?,
        AnyRecord::History(h) => derived(
            "the stages' growth in the newest run",
            h.status,
            h.derived_status(),
        )?,
        AnyRecord::Bisect(_) | AnyRecord::Compare(_) => {}
    }
    agrees_with_exit_code(record)
}

/// The verdict text and the exit code say the same: pass is 0, fail is not
/// 0 (a bisection that localised the divergence and then could not write its
/// reproducer is `fail` with an execution error, exit 3), error is 2 or 3.
fn agrees_with_exit_code(record: &AnyRecord) -> Result<(), Inconsistency> {
    let status = match record {
        AnyRecord::Run(r) => r.status,
        AnyRecord::Bisect(r) => r.status,
        AnyRecord::Compare(r) => r.status,
        AnyRecord::Tokens(r) => r.status,
        AnyRecord::Serving(r) => r.status,
        AnyRecord::Baseline(r) => r.status,
        AnyRecord::Fuzz(r) => r.status,
        AnyRecord::History(r) => r.status,
        AnyRecord::Dispatches(r) => r.status,
    };
    let code = record.exit_code();
    let agree = matches!(
        (status, code),
        (Status::Pass, ExitCode::Pass)
            | (
                Status::Fail,
                ExitCode::Fail | ExitCode::Input | ExitCode::Execution
            )
            | (Status::Error, ExitCode::Input | ExitCode::Execution)
    );
    if agree {
        return Ok(());
    }
    Err(Inconsistency {
        field: "status".into(),
        detail: format!(
            "it is `{}` but its errors and results call for exit code {}",
            status.name(),
            code.code()
        ),
    })
}

/// A top-level status that must equal the one its parts imply.
fn derived(parts: &str, status: Status, derived: Status) -> Result<(), Inconsistency> {
    if status == derived {
        return Ok(());
    }
    Err(Inconsistency {
        field: "status".into(),
        detail: format!(
            "it is `{}` but {parts} say `{}`",
            status.name(),
            derived.name()
        ),
    })
}

fn check_run(run: &RunRecord) -> Result<(), Inconsistency> {
    for (i, stage) in run.stages.iter().enumerate() {
        check_stage(i, stage)?;
    }
    let derived = run.derived_status();
    if run.status == derived {
        return Ok(());
    }
    let why = if let Some(e) = run.all_errors().next() {
        let mut message = e.message.clone();
        if message.chars().count() > 120 {
            message = message.chars().take(120).collect::<String>() + "...";
        }
        format!("`error` (an error: {message})")
    } else if let Some(s) = run.stages.iter().find(|s| s.status == Status::Fail) {
        format!(
            "`fail` (stage `{}` of case `{}` ({}) failed)",
            s.name,
            s.case,
            s.mode.name()
        )
    } else {
        "`pass` (no stage failed and nothing errored)".into()
    };
    Err(Inconsistency {
        field: "status".into(),
        detail: format!(
            "it is `{}` but the stages and errors say {why}",
            run.status.name()
        ),
    })
}

/// A stage's status is the worst of its outputs; `error` comes with its error.
fn check_stage(i: usize, stage: &StageRecord) -> Result<(), Inconsistency> {
    let at = |field: &str| format!("stages[{i}].{field}");
    let name = format!(
        "stage `{}` of case `{}` ({})",
        stage.name,
        stage.case,
        stage.mode.name()
    );
    let outputs = &stage.outputs;
    let worst = if outputs.iter().any(|o| o.status == Status::Error) {
        Status::Error
    } else if outputs.iter().any(|o| o.status == Status::Fail) {
        Status::Fail
    } else {
        Status::Pass
    };
    let bad = |field: &str, detail: String| {
        Err(Inconsistency {
            field: at(field),
            detail: format!("{name}: {detail}"),
        })
    };
    match stage.status {
        Status::Error if stage.error.is_none() => bad(
            "error",
            "the status is `error` but no error is recorded".into(),
        ),
        Status::Error => Ok(()),
        Status::Skipped if stage.error.is_some() || !outputs.is_empty() => bad(
            "status",
            "the status is `skipped` but it has an error or outputs".into(),
        ),
        Status::Skipped => Ok(()),
        status if stage.error.is_some() => bad(
            "status",
            format!("the status is `{}` but an error is recorded", status.name()),
        ),
        status if status != worst => bad(
            "status",
            format!(
                "the status is `{}` but its outputs say `{}`",
                status.name(),
                worst.name()
            ),
        ),
        _ => Ok(()),
    }
}

/// Every metric's change follows from its values and the band; the status
/// from the changes; and a comparison compares something.
fn check_baseline(b: &BaselineRecord) -> Result<(), Inconsistency> {
    if b.outputs.is_empty() {
        return Err(Inconsistency {
            field: "outputs".into(),
            detail: format!(
                "no output of {} is in {}: nothing was compared",
                b.run, b.baseline
            ),
        });
    }
    for (i, o) in b.outputs.iter().enumerate() {
        for (j, m) in o.metrics.iter().enumerate() {
            let change = Change::of(m.baseline, m.current, &b.band);
            if m.change != change {
                return Err(Inconsistency {
                    field: format!("outputs[{i}].metrics[{j}].change"),
                    detail: format!(
                        "{} {}: it is `{}` but {} then and {} now, with the band, is `{}`",
                        o.label(),
                        m.metric.name(),
                        m.change.name(),
                        m.baseline,
                        m.current,
                        change.name()
                    ),
                });
            }
        }
    }
    let parts = if b.outputs.iter().any(|o| o.regressed()) {
        Status::Fail
    } else {
        Status::Pass
    };
    derived("the metric changes", b.status, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::ErrorRecord;
    use crate::{samples, samples_more, samples_tokens};

    fn field(record: impl Into<AnyRecord>) -> String {
        check(&record.into()).unwrap_err().field
    }

    #[test]
    fn every_sample_is_consistent() {
        let all: Vec<AnyRecord> = vec![
            samples::passing_run().into(),
            samples::failing_run().into(),
            samples::bisect_op().into(),
            samples::bisect_region().into(),
            samples::bisect_ambiguous().into(),
            samples::compare_fail().into(),
            samples::baseline_regression().into(),
            samples_more::serving_leak().into(),
            samples_more::fuzz_violation().into(),
            samples_tokens::tokens_pass().into(),
            samples_tokens::tokens_divergent().into(),
        ];
        for r in all {
            assert_eq!(check(&r), Ok(()), "{}", r.schema());
        }
    }

    #[test]
    fn a_verdict_its_parts_contradict_is_named() {
        // `pass` over a failing stage (printed PASS, exit 1 before).
        let mut r = samples::failing_run();
        r.stages.retain(|s| s.error.is_none());
        r.status = Status::Pass;
        let e = check(&r.clone().into()).unwrap_err();
        assert_eq!(e.field, "status");
        assert!(
            e.detail
                .contains("it is `pass` but the stages and errors say `fail` (stage `norm`"),
            "{}",
            e.detail
        );
        // `fail` over passing stages (printed FAIL, exit 0 before).
        let mut r = samples::passing_run();
        r.status = Status::Fail;
        assert_eq!(field(r), "status");
        // A stage whose outputs fail but that says pass.
        let mut r = samples::failing_run();
        r.stages[1].status = Status::Pass;
        assert_eq!(field(r), "stages[1].status");
        // `error` with nothing that errored.
        let mut r = samples::failing_run();
        r.stages[4].error = None;
        assert_eq!(field(r), "stages[4].error");
        let mut r = samples::passing_run();
        r.status = Status::Error;
        assert_eq!(field(r), "status");
    }

    #[test]
    fn the_other_records_are_held_to_their_parts() {
        let mut t = samples_tokens::tokens_divergent();
        t.status = Status::Pass;
        assert_eq!(field(t), "status");
        let mut t = samples_tokens::tokens_pass();
        t.status = Status::Fail;
        assert_eq!(field(t), "status");
        let mut s = samples_more::serving_leak();
        s.status = Status::Pass;
        assert_eq!(field(s), "status");
        let mut f = samples_more::fuzz_violation();
        f.status = Status::Pass;
        assert_eq!(field(f), "status");
        let mut b = samples::bisect_op();
        b.errors
            .push(ErrorRecord::execution("writing the reproducer failed"));
        assert_eq!(check(&b.clone().into()), Ok(()), "localised, then an error");
        b.status = Status::Pass;
        assert_eq!(field(b), "status");
        let mut b = samples::bisect_op();
        b.status = Status::Error;
        assert_eq!(field(b), "status");
        let mut c = samples::compare_fail();
        c.status = Status::Skipped;
        assert_eq!(field(c), "status");
        let mut b = samples::baseline_regression();
        b.status = Status::Pass;
        assert_eq!(field(b), "status");
        let mut b = samples::baseline_regression();
        b.outputs[0].metrics[0].change = Change::Regressed;
        b.outputs[0].metrics[0].current = b.outputs[0].metrics[0].baseline;
        assert_eq!(field(b), "outputs[0].metrics[0].change");
        let mut b = samples::baseline_regression();
        b.outputs.clear();
        assert_eq!(field(b), "outputs");
    }
}
