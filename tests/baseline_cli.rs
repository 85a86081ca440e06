//! `parity report RUN --baseline BASE` end to end: a real run of
//! examples/basic (real IREE) against baselines derived from it; and the
//! records `parity report` refuses to re-render or compare.

mod common;

use common::{basic_copy, check_to, parity};
use serde_json::Value;

fn report(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    let out = parity(dir, &all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_error_that_grows_within_tolerance_fails_the_ratchet() {
    let dir = basic_copy();
    let (code, _, _, run) = check_to(
        dir.path(),
        "stages.yaml",
        &dir.path().join("now"),
        &["--mode", "isolated"],
    );
    assert_eq!(code, 0);
    let run = run.expect("run.json");
    let run_file = dir.path().join("now/run.json");
    let run_path = run_file.to_str().unwrap();

    // Against itself: nothing changed, exit 0.
    let (code, stdout, stderr) = report(dir.path(), &[run_path, "--baseline", run_path]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("BASELINE PASS: 7 outputs"), "{stdout}");
    assert!(stdout.contains("0 regressed"), "{stdout}");

    // A baseline where masked_softmax.probs was bit-identical: today's few-ULP
    // difference (inside the 1e-6 tolerance, so the run passes) is a regression.
    let probs_now = run["stages"][3]["outputs"][0]["metrics"]["max_abs"]
        .as_f64()
        .unwrap();
    assert!(probs_now > 0.0 && probs_now < 1e-6, "{probs_now}");
    let mut base = run.clone();
    base["stages"][3]["outputs"][0]["metrics"]["max_abs"] = Value::from(0.0);
    let base_file = dir.path().join("base.json");
    std::fs::write(&base_file, serde_json::to_string(&base).unwrap()).unwrap();
    let base_path = base_file.to_str().unwrap();
    let out_json = dir.path().join("cmp.json");
    let md = dir.path().join("summary.md");
    let (code, stdout, _) = report(
        dir.path(),
        &[
            run_path,
            "--baseline",
            base_path,
            "--metric",
            "max_abs",
            "--baseline-json",
            out_json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains("PASS: 6 stage runs"),
        "the run itself passes: {stdout}"
    );
    assert!(
        stdout.contains("masked_softmax/probs (default, isolated)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("BASELINE FAIL: 7 outputs, 7 metrics (max_abs), band +10% +0: 1 regressed"),
        "{stdout}"
    );
    let cmp: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    assert_eq!(cmp["schema"], "parity.baseline/1");
    assert_eq!(cmp["status"], "fail");
    let row = &cmp["outputs"][3];
    assert_eq!(row["stage"], "masked_softmax");
    assert_eq!(row["metrics"][0]["change"], "regressed");
    assert_eq!(row["metrics"][0]["current"].as_f64(), Some(probs_now));
    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("## parity: PASS") && summary.contains("## baseline: FAIL"),
        "{summary}"
    );
    // The comparison is itself a record `parity report` renders (JUnit for CI).
    let junit = dir.path().join("baseline.xml");
    let (code, _, _) = report(
        dir.path(),
        &[
            out_json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure").count(), 1, "{xml}");

    // A band wide enough in absolute terms lets it through; so does the spec's section.
    let (code, stdout, _) = report(
        dir.path(),
        &[run_path, "--baseline", base_path, "--band-abs", "1e-6"],
    );
    assert_eq!(code, Some(0), "{stdout}");
    let spec = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        format!("{text}\nbaseline: {{band_abs: 1.0e-6, metrics: [max_abs, rms]}}\n"),
    )
    .unwrap();
    let (code, stdout, stderr) = report(dir.path(), &[run_path, "--baseline", base_path]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("7 outputs, 14 metrics (max_abs, rms), band +10% +1.000e-6"),
        "{stdout}"
    );
    // Flags win over the spec.
    let (code, _, _) = report(
        dir.path(),
        &[run_path, "--baseline", base_path, "--band-abs", "0"],
    );
    assert_eq!(code, Some(1));
    // Bad flags are input errors.
    let (code, _, stderr) = report(
        dir.path(),
        &[run_path, "--baseline", base_path, "--metric", "maxabs"],
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown metric `maxabs`"), "{stderr}");
    let (code, _, stderr) = report(
        dir.path(),
        &[run_path, "--baseline", base_path, "--band", "-1"],
    );
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn a_baseline_of_another_spec_and_a_self_contradicting_record_are_input_errors() {
    let dir = basic_copy();
    let (code, _, _, run) = check_to(
        dir.path(),
        "stages.yaml",
        &dir.path().join("now"),
        &["--mode", "isolated"],
    );
    assert_eq!(code, 0);
    let run = run.expect("run.json");
    let run_path = dir.path().join("now/run.json");
    let run_path = run_path.to_str().unwrap();
    let write = |name: &str, record: &Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string_pretty(record).unwrap()).unwrap();
        path.to_str().unwrap().to_string()
    };

    // A baseline whose outputs are all another spec's: nothing is compared,
    // which must not read "BASELINE PASS: 0 outputs".
    let mut other = run.clone();
    other["spec"] = "other/stages.yaml".into();
    for stage in other["stages"].as_array_mut().unwrap() {
        stage["name"] = format!("other_{}", stage["name"].as_str().unwrap()).into();
    }
    let other_path = write("other.json", &other);
    let (code, stdout, stderr) = report(dir.path(), &[run_path, "--baseline", &other_path]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{run_path} and {other_path}: no output in common (7 measured outputs in the run, 7 in the baseline"
        )),
        "{stderr}"
    );
    assert!(!stdout.contains("BASELINE"), "{stdout}");

    // `fail` over passing stages printed FAIL and exited 0.
    let mut edited = run.clone();
    edited["status"] = "fail".into();
    let path = write("fail-over-pass.json", &edited);
    let (code, stdout, stderr) = report(dir.path(), &[&path]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{path}: parity.run-record/2 record contradicts itself at `status`: it is `fail` but the stages and errors say `pass`"
        )),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "no verdict is printed: {stdout}");
    // `pass` over a failing stage printed PASS and exited 1.
    let mut edited = run.clone();
    edited["stages"][3]["status"] = "fail".into();
    edited["stages"][3]["outputs"][0]["status"] = "fail".into();
    let path = write("pass-over-fail.json", &edited);
    let (code, stdout, stderr) = report(dir.path(), &[&path, "--json", "out.json"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("contradicts itself at `status`: it is `pass` but the stages and errors say `fail` (stage `masked_softmax`"),
        "{stderr}"
    );
    // A stage that says pass over its failing output.
    let mut edited = run.clone();
    edited["stages"][3]["outputs"][0]["status"] = "fail".into();
    let path = write("stage-over-output.json", &edited);
    let (code, _, stderr) = report(dir.path(), &[&path]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("contradicts itself at `stages[3].status`: stage `masked_softmax`"),
        "{stderr}"
    );
    // As a baseline too: an edited record is not compared with.
    let (code, _, stderr) = report(dir.path(), &[run_path, "--baseline", &path]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&path), "{stderr}");
}
