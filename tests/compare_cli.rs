//! `parity compare A B` on real oracle files of the example subject.

mod common;

use common::{parity, repo};

fn oracle(name: &str) -> String {
    repo()
        .join("examples/basic/oracle")
        .join(name)
        .display()
        .to_string()
}

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["compare"];
    all.extend_from_slice(args);
    all.extend(["--json", "-"]);
    let out = parity(&repo(), &all);
    let text = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text} / {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), value)
}

/// A `parity.compare/1` record's metrics, with `passed` (status pass) and
/// `note` (the first criterion note) beside them, for the NaN/empty tests.
fn flat(v: &serde_json::Value) -> serde_json::Value {
    let mut m = metrics(v).clone();
    let note = v["criteria"].as_array().and_then(|c| {
        c.iter()
            .find_map(|c| c["note"].as_str().map(str::to_string))
    });
    m["passed"] = (v["status"] == "pass").into();
    m["note"] = note.into();
    m
}

/// [`json`], flattened by [`flat`].
fn flat_json(args: &[&str]) -> (i32, serde_json::Value) {
    let (code, v) = json(args);
    (code, flat(&v))
}

/// The metrics of a `parity.compare/1` record.
fn metrics(v: &serde_json::Value) -> &serde_json::Value {
    assert_eq!(v["schema"], "parity.compare/1", "{v}");
    &v["metrics"]
}

#[test]
fn identical_tensors_pass_with_zero_error_and_documented_keys() {
    let (code, record) = json(&[&oracle("normed.npy"), &oracle("normed.npy")]);
    assert_eq!(code, 0);
    let v = metrics(&record);
    for key in [
        "max_abs",
        "mean_abs",
        "rms",
        "rel_l2",
        "cosine",
        "max_ulp",
        "mismatches",
        "count",
        "masked_out",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["max_abs"], 0.0);
    assert_eq!(v["count"], 256);
    assert_eq!(v["masked_out"], 0);
    assert_eq!(record["status"], "pass");
    assert_eq!(record["criteria"][0]["passed"], true);
    assert_eq!(record["actual"]["dtype"], "f32");
}

#[test]
fn f32_oracle_vs_f64_truth_from_an_npz_key() {
    // normed (f32, MLX) against its f64 truth inside truth_f64.npz.
    let truth = oracle("truth_f64.npz");
    let (code, v) = json(&[&oracle("normed.npy"), &truth, "--key-b", "normed"]);
    assert_eq!(code, 0, "{v}");
    let max_abs = metrics(&v)["max_abs"].as_f64().unwrap();
    assert!(
        max_abs > 0.0 && max_abs < 1e-6,
        "f32 rounding only: {max_abs}"
    );
    // With zero tolerance the same pair fails, exit 1.
    let (code, v) = json(&[
        &oracle("normed.npy"),
        &truth,
        "--key-b",
        "normed",
        "--atol",
        "0",
        "--rtol",
        "0",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["status"], "fail");
    assert!(metrics(&v)["mismatches"].as_u64().unwrap() > 0);
}

#[test]
fn mask_excludes_padded_positions() {
    let (code, v) = json(&[
        &oracle("normed.npy"),
        &oracle("normed.npy"),
        "--mask",
        &oracle("mask.npy"),
        "--mask-axes",
        "0,1",
    ]);
    assert_eq!(code, 0);
    assert_eq!(metrics(&v)["masked_out"], 48);
    assert_eq!(metrics(&v)["count"], 256 - 48);
    assert_eq!(v["mask"]["file"], oracle("mask.npy"));
}

#[test]
fn bad_inputs_are_exit_2_naming_the_file() {
    let out = parity(
        &repo(),
        &["compare", &oracle("normed.npy"), "/nonexistent/x.npy"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.npy"));
    // Shape mismatch: normed is 2x8x16, conv is 2x4x16.
    let out = parity(
        &repo(),
        &["compare", &oracle("normed.npy"), &oracle("conv.npy")],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("shape"), "{err}");
    // npz without --key
    let out = parity(
        &repo(),
        &[
            "compare",
            &oracle("truth_f64.npz"),
            &oracle("truth_f64.npz"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Writes f32 `values` of `shape` as `<dir>/<name>.npy` and returns the path.
fn npy(dir: &std::path::Path, name: &str, shape: &[usize], values: &[f32]) -> String {
    let path = dir.join(format!("{name}.npy"));
    let t = parity_tensor::Tensor::from_f32(shape.to_vec(), values).unwrap();
    parity_tensor::write_npy(&path, &t).unwrap();
    path.display().to_string()
}

#[test]
fn nan_in_both_fails_unless_equal_nan() {
    let dir = tempfile::tempdir().unwrap();
    let a = npy(dir.path(), "a", &[4], &[f32::NAN, 1.0, f32::NAN, 2.0]);
    let (code, v) = flat_json(&[&a, &a]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        (v["nan_both"].as_u64(), v["mismatches"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(v["passed"], false);
    assert!(v["note"].as_str().unwrap().starts_with(
        "2 elements are NaN in both (NaN never equals NaN; set equal_nan: true to accept)"
    ));
    let (code, v) = flat_json(&[&a, &a, "--equal-nan"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["nan_both"].as_u64(), v["mismatches"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(
        (v["equal_nan"].as_bool(), v["passed"].as_bool()),
        (Some(true), Some(true))
    );
    // NaN on one side only fails with --equal-nan too.
    let b = npy(dir.path(), "b", &[4], &[f32::NAN, 1.0, 0.0, 2.0]);
    let (code, v) = flat_json(&[&a, &b, "--equal-nan"]);
    assert_eq!((code, v["nan_mismatch"].as_u64()), (1, Some(1)));
    // Equal infinities match; opposite ones do not.
    let inf = npy(dir.path(), "inf", &[2], &[f32::INFINITY, f32::NEG_INFINITY]);
    let flipped = npy(dir.path(), "flip", &[2], &[f32::INFINITY, f32::INFINITY]);
    assert_eq!(json(&[&inf, &inf]).0, 0);
    let (code, v) = flat_json(&[&inf, &flipped]);
    assert_eq!((code, v["inf_mismatch"].as_u64()), (1, Some(1)));
    // The text form prints the count and the note.
    let out = parity(&repo(), &["compare", &a, &a]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("2 NaN in both"), "{text}");
    assert!(text.contains("note: 2 elements are NaN in both"), "{text}");
}

#[test]
fn empty_and_all_masked_comparisons_fail_unless_allow_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = npy(dir.path(), "empty", &[0, 3], &[]);
    let (code, v) = flat_json(&[&empty, &empty]);
    assert_eq!((code, v["count"].as_u64()), (1, Some(0)));
    assert_eq!(
        v["note"],
        "0 elements compared (empty tensor); set allow_empty: true to accept"
    );
    let (code, v) = flat_json(&[&empty, &empty, "--allow-empty"]);
    assert_eq!((code, v["passed"].as_bool()), (0, Some(true)));

    // The oracle is off everywhere, but every element is padding.
    let a = npy(dir.path(), "a", &[4], &[1.0, 2.0, 3.0, 4.0]);
    let e = npy(dir.path(), "e", &[4], &[9.0; 4]);
    let mask = dir.path().join("mask.npy");
    let t =
        parity_tensor::Tensor::from_f64_as(parity_tensor::DType::Bool, vec![4], &[1.0; 4]).unwrap();
    parity_tensor::write_npy(&mask, &t).unwrap();
    let mask = mask.display().to_string();
    let (code, v) = flat_json(&[&a, &e, "--mask", &mask]);
    assert_eq!((code, v["masked_out"].as_u64()), (1, Some(4)));
    assert_eq!(
        v["note"],
        "0 elements compared (all 4 masked); set allow_empty: true to accept"
    );
    assert_eq!(json(&[&a, &e, "--mask", &mask, "--allow-empty"]).0, 0);
}

/// A file whose name is not UTF-8 is read by its real name (the record shows
/// it lossily): the path was reopened from its display string and so was
/// "No such file or directory" for a file that exists.
#[cfg(unix)]
#[test]
fn a_file_named_with_non_utf8_bytes_is_read() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let odd = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"conv-\xff.npy"));
    std::fs::copy(repo().join("examples/basic/oracle/conv.npy"), &odd).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parity"))
        .arg("compare")
        .arg(&odd)
        .arg(oracle("conv.npy"))
        .args(["--json", "-"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "pass", "{v}");
    assert!(
        v["actual"]["file"]
            .as_str()
            .unwrap()
            .contains("conv-\u{fffd}.npy"),
        "{v}"
    );
}
