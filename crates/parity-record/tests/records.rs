//! Records round-trip through JSON, and reading names the file on every failure.

use parity_record::*;
use std::path::Path;

fn round_trip(record: AnyRecord) {
    let text = record.to_json();
    let back = AnyRecord::parse(&text, Path::new("r.json")).unwrap();
    assert_eq!(back, record);
    assert_eq!(back.to_json(), text, "a re-render is byte-identical");
}

#[test]
fn every_sample_round_trips() {
    round_trip(samples::passing_run().into());
    round_trip(samples::failing_run().into());
    round_trip(samples::bisect_op().into());
    round_trip(samples::bisect_region().into());
    round_trip(samples::bisect_ambiguous().into());
    round_trip(samples::compare_fail().into());
}

#[test]
fn a_re_rendered_record_keeps_every_number_to_the_last_digit() {
    let mut run = samples::failing_run();
    let m = run.stages[1].outputs[0].metrics.as_mut().unwrap();
    m.cosine = 0.9999999999999999;
    m.rel_l2 = 0.30000000000000004;
    m.rms = 5e-324;
    m.mean_abs = 2.2250738585072014e-308;
    run.elapsed_s = 1.0000000000000002;
    let text = AnyRecord::Run(run).to_json();
    assert!(text.contains("\"cosine\": 0.9999999999999999,"), "{text}");
    let first = AnyRecord::parse(&text, Path::new("run.json"))
        .unwrap()
        .to_json();
    assert_eq!(first, text, "the first re-render writes what was read");
    let second = AnyRecord::parse(&first, Path::new("again.json"))
        .unwrap()
        .to_json();
    assert_eq!(
        second, first,
        "a re-render of the re-render is byte-identical"
    );
}

#[test]
fn non_finite_metrics_survive_where_v1_lost_them() {
    let mut run = samples::failing_run();
    let m = run.stages[1].outputs[0].metrics.as_mut().unwrap();
    m.max_abs = f64::INFINITY;
    m.cosine = f64::NAN;
    let text = AnyRecord::Run(run).to_json();
    assert!(text.contains("\"max_abs\": \"inf\""), "{text}");
    let AnyRecord::Run(back) = AnyRecord::parse(&text, Path::new("r.json")).unwrap() else {
        panic!("a run record")
    };
    let m = back.stages[1].outputs[0].metrics.as_ref().unwrap();
    assert_eq!(m.max_abs, f64::INFINITY);
    assert!(m.cosine.is_nan());
}

#[test]
fn typed_fields_have_their_documented_json_form() {
    let v: serde_json::Value =
        serde_json::from_str(&AnyRecord::Run(samples::failing_run()).to_json()).unwrap();
    assert_eq!(v["schema"], "parity.run-record/2");
    let crit = &v["stages"][1]["outputs"][0]["criteria"];
    assert_eq!(
        crit[0]["criterion"],
        serde_json::json!({"tolerance": {"max_abs": 1e-5}})
    );
    assert_eq!(crit[1]["criterion"], "padded_zero");
    let err = &v["stages"][4]["error"];
    assert_eq!(err["kind"], "input");
    assert_eq!(err["location"]["argument"], 1);
    assert!(
        err["location"].get("file").is_none(),
        "unknown parts are left out"
    );
    let b: serde_json::Value =
        serde_json::from_str(&AnyRecord::Bisect(samples::bisect_op()).to_json()).unwrap();
    assert_eq!(b["schema"], "parity.bisect/2");
    assert_eq!(b["first_divergent_op"]["evidence"], "oracle");
    assert_eq!(b["checkpoints"][0]["kind"], "convention");
    assert_eq!(b["checkpoints"][1]["kind"], "stage-output");
    assert_eq!(b["checkpoints"][1]["verdict_from"], "run");
    assert_eq!(b["strategy"], "bisection");
}

#[test]
fn localisations_hold_an_op_or_a_region() {
    let op = samples::bisect_op().localisation().unwrap();
    assert_eq!(op.evidence(), Evidence::Oracle);
    let v = serde_json::to_value(&op).unwrap();
    assert_eq!(v["kind"], "op");
    assert_eq!(v["op_name"], "stablehlo.divide");
    let region = samples::bisect_region().localisation().unwrap();
    assert_eq!(region.evidence(), Evidence::Region);
    let v = serde_json::to_value(&region).unwrap();
    assert_eq!(v["kind"], "region");
    assert_eq!(v["region"]["ops"], 3);
    let mut run = samples::failing_run();
    run.first_divergent_op = Some(region);
    round_trip(run.into());
    let mut errored = samples::bisect_op();
    errored.status = Status::Error;
    assert_eq!(
        errored.localisation(),
        None,
        "no claim without a finished bisection"
    );
}

#[test]
fn exit_codes_come_from_the_one_table() {
    assert_eq!(samples::passing_run().exit_code(), ExitCode::Pass);
    assert_eq!(
        samples::failing_run().exit_code(),
        ExitCode::Input,
        "input error beats the failure"
    );
    let mut r = samples::failing_run();
    r.stages.retain(|s| s.error.is_none());
    assert_eq!(r.exit_code(), ExitCode::Fail);
    r.errors
        .push(ErrorRecord::execution("module `main`: compile failed"));
    assert_eq!(r.exit_code(), ExitCode::Execution);
    assert_eq!(r.derived_status(), Status::Error);
    assert_eq!(samples::bisect_op().exit_code(), ExitCode::Fail);
    assert_eq!(samples::compare_fail().exit_code().code(), 1);
}

#[test]
fn bad_files_are_named_in_the_error() {
    let p = Path::new("reports/run.json");
    let e = AnyRecord::parse("{\"schema\": \"parity.run-record/1\"}", p).unwrap_err();
    assert!(matches!(e, RecordError::UnknownSchema { .. }));
    let m = e.to_string();
    assert!(
        m.contains("reports/run.json")
            && m.contains("parity.run-record/1")
            && m.contains("parity.run-record/2"),
        "{m}"
    );
    let e = AnyRecord::parse("not json", p).unwrap_err();
    assert!(matches!(e, RecordError::NotARecord { .. }), "{e}");
    assert!(e.to_string().contains("reports/run.json"));
    let mut text = AnyRecord::Run(samples::passing_run()).to_json();
    let edited = text.replacen("\"status\": \"pass\"", "\"status\": \"green\"", 1);
    let e = AnyRecord::parse(&edited, p).unwrap_err();
    assert!(matches!(e, RecordError::Damaged { .. }), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("damaged parity.run-record/2 record") && m.contains("green"),
        "{m}"
    );
    text.truncate(text.len() / 2);
    let e = AnyRecord::parse(&text, p).unwrap_err();
    assert!(matches!(e, RecordError::NotARecord { .. }), "{e}");
    assert!(e.to_string().contains("EOF"), "{e}");
    // A verdict its parts contradict: `pass` over a failing stage.
    let mut r = samples::failing_run();
    r.stages.retain(|s| s.error.is_none());
    r.status = Status::Fail;
    let text = AnyRecord::Run(r).to_json();
    let edited = text.replacen("\"status\": \"fail\"", "\"status\": \"pass\"", 1);
    let e = AnyRecord::parse(&edited, p).unwrap_err();
    assert!(matches!(e, RecordError::Inconsistent { .. }), "{e}");
    let m = e.to_string();
    assert!(
        m.starts_with("reports/run.json: parity.run-record/2 record contradicts itself at `status`: it is `pass` but the stages and errors say `fail`"),
        "{m}"
    );
    let e = AnyRecord::read(Path::new("/nonexistent/run.json")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/run.json"), "{e}");
}
