//! Bad input end to end: each kind gets a clear message naming the file,
//! stage or tensor, a distinct exit code, and every result that could still be
//! computed is in the run record.

mod common;

use common::{basic_copy, check, stage};
use std::path::Path;

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn unknown_spec_key_is_exit_2_with_line_and_column() {
    let dir = basic_copy();
    // A previous passing run's reports are in the out dir: they must not
    // survive to be published as this run's.
    let (code, _, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(
        (code, record.unwrap()["status"].clone()),
        (0, "pass".into())
    );
    edit(
        &dir.path().join("stages.yaml"),
        "    function: scores\n",
        "    function: scores\n    fnuction: typo\n",
    );
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stderr}");
    // An invalid spec runs nothing, and says so in an error record and JUnit.
    let record = record.expect("an error record replaces the previous run.json");
    assert_eq!(record["status"], "error");
    assert!(record["stages"].as_array().unwrap().is_empty());
    let error = &record["errors"][0];
    assert_eq!(error["kind"], "input");
    assert!(
        error["message"].as_str().unwrap().contains("fnuction"),
        "{error}"
    );
    assert!(error["location"]["line"].as_u64().unwrap() > 1, "{error}");
    assert!(error["location"]["col"].as_u64().is_some(), "{error}");
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    assert!(
        junit.contains("errors=\"1\"") && junit.contains("fnuction"),
        "{junit}"
    );
    assert!(
        !junit.contains("<testcase name=\"scores"),
        "no stale passing cases: {junit}"
    );
    // The HTML page is replaced by an error page naming the file, line and column.
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("data-error-page"), "{html}");
    assert!(
        html.contains("Nothing ran") && html.contains("fnuction"),
        "{html}"
    );
    assert!(
        !html.contains("class=\"results sortable\""),
        "no stale table: {html}"
    );
    let line = error["location"]["line"].as_u64().unwrap();
    assert!(html.contains(&format!("<td>{line}</td>")), "{html}");
    assert!(stderr.contains("stages.yaml:"), "{stderr}");
    assert!(stderr.contains("fnuction"), "{stderr}");
    // file:line:col
    let loc = stderr.split("stages.yaml:").nth(1).unwrap();
    let mut parts = loc.split(':');
    assert!(parts.next().unwrap().parse::<usize>().is_ok(), "{stderr}");
    assert!(
        parts.next().unwrap().trim().parse::<usize>().is_ok(),
        "{stderr}"
    );
}

#[test]
fn missing_oracle_tensor_errors_that_stage_only() {
    let dir = basic_copy();
    edit(
        &dir.path().join("stages.yaml"),
        "        oracle: scores\n",
        "        oracle: scores_nope\n",
    );
    let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}");
    let record = record.expect("record written despite the error");
    assert_eq!(record["status"], "error");
    let scores = stage(&record, "scores", "isolated");
    assert_eq!(scores["status"], "error");
    let msg = scores["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("scores_nope") && msg.contains("scores"),
        "{msg}"
    );
    // Results that did not need the missing tensor are kept.
    assert_eq!(stage(&record, "layer_norm", "isolated")["status"], "pass");
    assert_eq!(stage(&record, "proj_bf16", "isolated")["status"], "pass");
}

#[test]
fn truncated_oracle_file_names_the_file() {
    let dir = basic_copy();
    let conv = dir.path().join("oracle/conv.npy");
    let bytes = std::fs::read(&conv).unwrap();
    std::fs::write(&conv, &bytes[..bytes.len() - 7]).unwrap();
    let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}");
    let record = record.unwrap();
    let conv_stage = stage(&record, "strided_conv", "isolated");
    assert_eq!(conv_stage["status"], "error");
    let msg = conv_stage["error"]["message"].as_str().unwrap();
    assert!(msg.contains("conv.npy"), "{msg}");
    assert_eq!(stage(&record, "layer_norm", "isolated")["status"], "pass");
}

#[test]
fn chained_mode_skips_stages_downstream_of_an_error() {
    let dir = basic_copy();
    // strided_conv's weight is missing: it errors; chained stages after it are
    // skipped, isolated ones still run on oracle inputs.
    edit(
        &dir.path().join("stages.yaml"),
        "{weight: conv.weight}",
        "{weight: conv.weight_nope}",
    );
    let (code, _, _, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2);
    let record = record.unwrap();
    assert_eq!(stage(&record, "strided_conv", "chained")["status"], "error");
    assert_eq!(stage(&record, "scores", "chained")["status"], "skipped");
    let why = stage(&record, "scores", "chained")["skipped_because"]
        .as_str()
        .unwrap();
    assert!(why.contains("strided_conv"), "{why}");
    assert_eq!(stage(&record, "scores", "isolated")["status"], "pass");
    assert!(
        stage(&record, "strided_conv", "isolated")["error"]["message"]
            .as_str()
            .unwrap()
            .contains("conv.weight_nope")
    );
}

#[test]
fn mlir_compile_failure_is_exit_3_and_keeps_the_record() {
    let dir = basic_copy();
    let mlir = dir.path().join("model.mlir");
    let mut text = std::fs::read_to_string(&mlir).unwrap();
    text.push_str("\nfunc.func @broken( {\n");
    std::fs::write(&mlir, text).unwrap();
    let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 3, "{stdout}");
    let record = record.unwrap();
    let errors = record["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["kind"] == "execution"
                && e["message"].as_str().unwrap().contains("model.mlir")),
        "{errors:?}"
    );
    assert_eq!(
        stage(&record, "layer_norm", "isolated")["error"]["kind"],
        "execution"
    );
    assert!(stdout.contains("error:"), "{stdout}");
}

#[test]
fn nan_in_the_oracle_is_counted_apart_and_fails() {
    let dir = basic_copy();
    let path = dir.path().join("oracle/normed.npy");
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let data = 10 + header_len;
    bytes[data..data + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}");
    let record = record.unwrap();
    let m = &stage(&record, "layer_norm", "isolated")["outputs"][0]["metrics"];
    assert_eq!(m["nan_mismatch"], 1);
    // The NaN does not poison the numeric metrics of the other elements.
    assert_eq!(m["max_abs"], 0.0);
    assert_eq!(record["first_divergence"]["stage"], "layer_norm");
}

#[test]
fn oracle_shape_mismatch_is_an_input_error_naming_the_tensor() {
    let dir = basic_copy();
    // Compare `conv` (2x4x16) against the scores tensor (2x4x4).
    edit(
        &dir.path().join("stages.yaml"),
        "        oracle: conv\n",
        "        oracle: scores\n",
    );
    let (code, _, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2);
    let record = record.unwrap();
    let out = &stage(&record, "strided_conv", "isolated")["outputs"][0];
    assert_eq!(out["status"], "error");
    let msg = out["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("strided_conv") && msg.contains("scores"),
        "{msg}"
    );
    assert!(
        msg.contains("[2, 4, 16]") && msg.contains("[2, 4, 4]"),
        "{msg}"
    );
}

#[test]
fn malformed_mask_is_an_input_error() {
    let dir = basic_copy();
    // mask is 2x8 but strided_conv's output is 2x4x16.
    edit(
        &dir.path().join("stages.yaml"),
        "mask: {oracle: mask_sub, axes: [0, 1], padded: true}",
        "mask: {oracle: mask, axes: [0, 1], padded: true}",
    );
    let (code, _, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2);
    let record = record.unwrap();
    let out = &stage(&record, "strided_conv", "isolated")["outputs"][0];
    assert_eq!(out["status"], "error");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("mask"),
        "{out}"
    );
}

#[test]
fn missing_weights_file_is_exit_2_naming_it() {
    let dir = basic_copy();
    std::fs::remove_file(dir.path().join("weights.safetensors")).unwrap();
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let text = format!(
        "{stdout}{stderr}{}",
        record.map(|r| r.to_string()).unwrap_or_default()
    );
    assert!(text.contains("weights.safetensors"), "{text}");
}

#[test]
fn assert_zero_fails_when_padded_positions_are_not_zero() {
    let dir = basic_copy();
    // `normed` is not zero at padded frames (they normalise to beta), so
    // asserting zero padding there must fail with the count of such elements.
    edit(
        &dir.path().join("stages.yaml"),
        "mask: {oracle: mask, axes: [0, 1], padded: true}",
        "mask: {oracle: mask, axes: [0, 1], padded: true, assert_zero: true}",
    );
    let (code, _, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1);
    let record = record.unwrap();
    let out = &stage(&record, "layer_norm", "isolated")["outputs"][0];
    assert_eq!(out["status"], "fail");
    let crit = out["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["criterion"] == "padded_zero")
        .expect("padded_zero criterion");
    assert_eq!(crit["passed"], false);
    // 3 padded frames x 16 channels, all equal to a non-zero beta.
    assert_eq!(out["metrics"]["padded_nonzero"], 48);
    assert_eq!(crit["observed"], 48.0);
}

#[test]
fn an_unwritable_out_dir_shows_the_result_first_and_keeps_a_failure_exit_1() {
    let dir = basic_copy();
    // Root ignores permissions: a directory below a regular file cannot be made.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let out = blocker.join("reports");
    let (code, stdout, stderr, _) = common::check_to(
        dir.path(),
        "stages-faulty.yaml",
        &out,
        &["--mode", "isolated"],
    );
    assert_eq!(code, 1, "the parity failure stays exit 1: {stderr}");
    assert!(stdout.contains("FAIL"), "the verdict is printed: {stdout}");
    assert!(
        stdout.contains("first divergence: stage `layer_norm` output `normed`"),
        "{stdout}"
    );
    assert!(stderr.contains("reports not written"), "{stderr}");
    assert!(stderr.contains("not-a-dir"), "names the path: {stderr}");
    assert!(
        stderr.contains("parity failure"),
        "says the run's own outcome: {stderr}"
    );
    // A passing run whose reports cannot be written exits 2, saying it passed.
    let (code, stdout, stderr, _) =
        common::check_to(dir.path(), "stages.yaml", &out, &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.contains("PASS"), "{stdout}");
    assert!(stderr.contains("the run itself: pass"), "{stderr}");
}

#[test]
fn terminal_escapes_in_stage_names_are_shown_escaped() {
    let dir = basic_copy();
    edit(
        &dir.path().join("stages.yaml"),
        "  - name: proj_bf16\n",
        "  - name: \"proj_bf16\\e[2J\\e]0;pwned\\a\"\n",
    );
    let (_, stdout, stderr, _) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\x07'),
        "{stdout:?}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
    assert!(
        stdout.contains("proj_bf16\\x1b[2J\\x1b]0;pwned\\x07"),
        "{stdout}{stderr}"
    );
}

/// Issue 28: a module nesting 10,000 regions deep overflowed the stack of the
/// compiler's recursive parser (an abort, no record). It is refused before
/// the compiler sees it: exit 2 naming the module file, line and column.
#[test]
fn a_module_nested_past_the_parser_bound_is_exit_2_at_its_line() {
    let dir = basic_copy();
    let mlir = dir.path().join("model.mlir");
    let mut text = std::fs::read_to_string(&mlir)
        .unwrap()
        .trim_end()
        .to_string();
    let lines = text.lines().count();
    text.push_str("\nfunc.func private @deep() {\n");
    text.push_str(&"\"test.nest\"() ({\n".repeat(10_000));
    std::fs::write(&mlir, text).unwrap();
    let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}");
    let record = record.unwrap();
    let errors = record["errors"].as_array().unwrap();
    // `@deep() {` (line lines + 1) leaves depth 1; nest line k adds `(` and `{`
    // (its `()` closes), so the `{` of line k (column 16) reaches depth 2k + 1:
    // 1001 at k = 500.
    let at = format!("model.mlir: line {}:16", lines + 1 + 500);
    assert!(
        errors.iter().any(|e| e["kind"] == "input"
            && e["message"].as_str().unwrap().contains(&at)
            && e["message"]
                .as_str()
                .unwrap()
                .contains("more than 1000 deep")),
        "{at}: {errors:?}"
    );
}
