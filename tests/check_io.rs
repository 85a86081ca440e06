//! End to end through the real binary: signature mismatches caught before
//! IREE runs (exit 2, `file:line:col`), run-time name errors with positions,
//! and an unwritable artifact cache that only warns.

mod common;

use common::{basic_copy, check, stage};
use std::path::Path;

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// The 1-based line of the first occurrence of `needle` in `path`.
fn line_of(path: &Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// The isolated `scores` stage's error, after checking it is an input error (exit 2).
fn scores_error(dir: &Path) -> String {
    let (code, stdout, stderr, record) = check(dir, "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.expect("record written");
    let scores = stage(&record, "scores", "isolated");
    assert_eq!(scores["status"], "error");
    assert_eq!(scores["error"]["kind"], "input", "{scores}");
    // The other stages still ran.
    assert_eq!(stage(&record, "layer_norm", "isolated")["status"], "pass");
    scores["error"]["message"].as_str().unwrap().to_string()
}

#[test]
fn a_missing_argument_is_an_input_error_at_the_function_line() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    edit(&spec, "      - {weight: attn.wk}\n", "");
    let line = line_of(&spec, "function: scores");
    let msg = scores_error(dir.path());
    assert!(
        msg.contains(&format!("stages.yaml:{line}:"))
            && msg.contains("takes 3 arguments but the stage passes 2"),
        "{msg}"
    );
}

#[test]
fn a_wrong_argument_shape_or_dtype_names_the_argument_position() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    // mask is an int/bool [B, T] tensor where attn.wk (an f32 matrix) is expected.
    edit(
        &spec,
        "      - {weight: attn.wk}\n",
        "      - {oracle: mask}\n",
    );
    let line = line_of(&spec, "      - {oracle: mask}\n".trim_end());
    let msg = scores_error(dir.path());
    assert!(
        msg.contains(&format!("stages.yaml:{line}:9"))
            && msg.contains("argument 2 of `basic.scores`")
            && msg.contains("but the function takes tensor<"),
        "{msg}"
    );
}

#[test]
fn a_result_count_mismatch_is_found_before_invoking() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    edit(
        &spec,
        "      - name: argmax\n        oracle: argmax\n",
        "      - name: argmax\n        oracle: argmax\n      - name: extra\n        oracle: argmax\n",
    );
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let softmax = stage(record.as_ref().unwrap(), "masked_softmax", "isolated");
    let msg = softmax["error"]["message"].as_str().unwrap();
    let line = line_of(&spec, "function: masked_softmax");
    assert!(
        msg.contains(&format!("stages.yaml:{line}:"))
            && msg.contains("returns 2 results but the spec lists 3 outputs"),
        "{msg}"
    );
    assert_eq!(softmax["invoke_ms"], 0.0, "checked before invoking");
}

#[test]
fn an_unknown_weight_names_its_yaml_position() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    edit(&spec, "{weight: attn.wk}", "{weight: attn.nope}");
    let line = line_of(&spec, "{weight: attn.nope}");
    let msg = scores_error(dir.path());
    assert!(
        msg.contains(&format!("stages.yaml:{line}:9")) && msg.contains("attn.nope"),
        "{msg}"
    );
    // The record's structured location says the same.
    let (_, _, _, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    let error = &stage(record.as_ref().unwrap(), "scores", "isolated")["error"];
    assert_eq!(error["location"]["line"], line as u64, "{error}");
    assert_eq!(error["location"]["col"], 9, "{error}");
}

#[test]
fn a_missing_output_oracle_names_the_outputs_yaml_position_in_text_and_record() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    edit(
        &spec,
        "        oracle: scores\n",
        "        oracle: scores_nope\n",
    );
    // The output's mapping starts at its `name:` line (a block mapping in a list).
    let line = line_of(&spec, "oracle: scores_nope") - 1;
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.expect("record written");
    let scores = stage(&record, "scores", "isolated");
    let error = &scores["outputs"][0]["error"];
    let msg = error["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("stages.yaml:{line}:")) && msg.contains("scores_nope"),
        "{msg}"
    );
    assert_eq!(error["location"]["line"], line as u64, "{error}");
    assert_eq!(error["location"]["stage"], "scores", "{error}");
    assert_eq!(error["location"]["tensor"], "scores_nope", "{error}");
}

#[test]
fn an_unwritable_cache_warns_and_the_run_passes() {
    // Root ignores file modes, so the cache directory is put below a regular
    // file: creating it fails with ENOTDIR for every user.
    let dir = basic_copy();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let cache = blocker.join("cache");
    let (code, stdout, stderr, record) = check(
        dir.path(),
        "stages.yaml",
        &["--mode", "isolated", "--cache-dir", cache.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("warning: artifact cache not written") && stderr.contains("not-a-dir"),
        "{stderr}"
    );
    let record = record.unwrap();
    assert_eq!(record["status"], "pass");
    let warnings = record["warnings"]
        .as_array()
        .expect("warnings in the record");
    assert!(!warnings.is_empty());
}

#[test]
fn a_function_the_module_does_not_export_is_an_input_error() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    edit(&spec, "    function: scores\n", "    function: scroes\n");
    let line = line_of(&spec, "function: scroes");
    let msg = scores_error(dir.path());
    assert!(
        msg.contains(&format!("stages.yaml:{line}:")) && msg.contains("no function `scroes`"),
        "{msg}"
    );
}

#[test]
fn a_killed_runs_temp_file_in_the_out_dir_is_removed() {
    let dir = basic_copy();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A real process that has exited, and the temp file it would have left.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let leftover = out.join(format!("{}{dead}-abc123", parity_tensor::TEMP_PREFIX));
    std::fs::write(&leftover, b"{\"half\": ").unwrap();
    let (code, stdout, stderr, _) = check(
        dir.path(),
        "stages.yaml",
        &["--mode", "isolated", "--stage", "layer_norm"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!leftover.exists());
}
