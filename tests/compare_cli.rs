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
    all.push("--json");
    let out = parity(&repo(), &all);
    let text = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text} / {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), value)
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
