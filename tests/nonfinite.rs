//! NaN, non-finite truth and empty comparisons through the real binary on
//! copies of examples/basic (real IREE): NaN never equals NaN unless the
//! output says `equal_nan: true`, a non-finite f64 truth is an input error
//! naming the tensor, and zero compared elements fail unless `allow_empty: true`.

mod common;

use common::{basic_copy, check, parity, stage};
use parity_tensor::{load_tensor, read_npz, write_npy, write_npz, DType, Tensor};
use std::path::Path;

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// Rewrites the npy file `path` with `f` applied to its values (dtype kept).
fn rewrite_npy(path: &Path, f: impl FnOnce(&mut [f64])) {
    let t = load_tensor(path, None).unwrap();
    let mut v = t.to_f64_vec();
    f(&mut v);
    let t = Tensor::from_f64_as(t.dtype(), t.shape().to_vec(), &v).unwrap();
    write_npy(path, &t).unwrap();
}

/// The layer_norm stage alone, isolated: production normed from oracle x.
fn check_layer_norm(dir: &Path) -> (i32, String, serde_json::Value) {
    let (code, stdout, stderr, record) = check(
        dir,
        "stages.yaml",
        &["--mode", "isolated", "--stage", "layer_norm"],
    );
    let record = record.unwrap_or_else(|| panic!("no run.json: {stdout} {stderr}"));
    (code, stdout, record)
}

fn normed_output(record: &serde_json::Value) -> &serde_json::Value {
    &stage(record, "layer_norm", "isolated")["outputs"][0]
}

/// Frame (0, 0) of x and of the oracle `normed` set to NaN: IREE's layer
/// norm of a row holding a NaN is NaN across the row, so production and
/// oracle are NaN at the same 16 places.
fn nan_row_in_both(dir: &Path) {
    let oracle = dir.join("oracle");
    rewrite_npy(&oracle.join("x.npy"), |v| v[0] = f64::NAN);
    rewrite_npy(&oracle.join("normed.npy"), |v| {
        v[..16].iter_mut().for_each(|x| *x = f64::NAN)
    });
}

const NAN_BOTH_NOTE: &str =
    "16 elements are NaN in both (NaN never equals NaN; set equal_nan: true to accept)";

#[test]
fn nan_in_both_at_the_same_places_fails_and_says_why() {
    let dir = basic_copy();
    nan_row_in_both(dir.path());
    let (code, stdout, record) = check_layer_norm(dir.path());
    assert_eq!(code, 1, "{stdout}");
    let out = normed_output(&record);
    assert_eq!(out["status"], "fail");
    let m = &out["metrics"];
    assert_eq!(
        (m["nan_both"].as_u64(), m["nan_mismatch"].as_u64()),
        (Some(16), Some(0))
    );
    assert_eq!(m["equal_nan"], false);
    assert_eq!(m["mismatches"], 16);
    assert_eq!(m["first_violation"]["index"], serde_json::json!([0, 0, 0]));
    // Production is NaN where the f64 truth is finite: vs_f64 sees it too.
    let truth = &m["vs_f64"];
    assert_eq!(truth["actual_nonfinite"], 16);
    assert_eq!(truth["actual_vs_truth"], "inf", "{truth}");
    assert_eq!(truth["expected_nonfinite"], 16);
    let criteria = out["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 4);
    for c in &criteria[..3] {
        // max_abs, rms, max_ulp: observed over the finite elements, no threshold passes.
        assert_eq!(c["passed"], false, "{c}");
        assert!(!c["min_passing"].is_number(), "no threshold passes: {c}");
        assert!(
            c["note"].as_str().unwrap().starts_with(NAN_BOTH_NOTE),
            "{c}"
        );
    }
    let vs = &criteria[3];
    assert_eq!(vs["passed"], false);
    assert!(
        !vs["observed"].is_number() && !vs["min_passing"].is_number(),
        "{vs}"
    );
    assert!(vs["note"]
        .as_str()
        .unwrap()
        .starts_with("16 production elements are NaN or infinite where the f64 truth is finite"));
    // The table says why, never "passes at 0".
    assert!(
        stdout.contains("no threshold passes: 16 elements are NaN in both"),
        "{stdout}"
    );
    assert!(!stdout.contains("passes at 0"), "{stdout}");
    // The record re-renders (its non-finite numbers are JSON null).
    let again = parity(dir.path(), &["report", "out/run.json"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("no threshold passes"));
}

#[test]
fn equal_nan_accepts_nan_in_both() {
    let dir = basic_copy();
    nan_row_in_both(dir.path());
    let spec = dir.path().join("stages.yaml");
    // NaN where the f64 truth is finite fails vs_f64 whatever equal_nan says,
    // so this output drops its truth.
    edit(
        &spec,
        "        truth: normed@f64\n",
        "        equal_nan: true\n",
    );
    edit(
        &spec,
        "          - {vs_f64: {factor: 2.0, tol: 1.0e-7}}\n\n  - name: strided_conv",
        "\n  - name: strided_conv",
    );
    let (code, stdout, record) = check_layer_norm(dir.path());
    assert_eq!(code, 0, "{stdout}");
    let out = normed_output(&record);
    assert_eq!(out["status"], "pass");
    let m = &out["metrics"];
    assert_eq!(
        (m["nan_both"].as_u64(), m["mismatches"].as_u64()),
        (Some(16), Some(0))
    );
    assert_eq!(m["equal_nan"], true);
    for c in out["criteria"].as_array().unwrap() {
        assert_eq!(c["passed"], true, "{c}");
        assert_eq!(
            c["note"],
            "16 elements are NaN in both, accepted by equal_nan"
        );
    }
}

#[test]
fn a_nan_in_the_f64_truth_is_an_input_error_naming_it() {
    let dir = basic_copy();
    let path = dir.path().join("oracle/truth_f64.npz");
    let archive = read_npz(&path).unwrap();
    let mut tensors: Vec<(String, Tensor)> = archive
        .keys()
        .iter()
        .map(|k| (k.clone(), archive.get(k).unwrap()))
        .collect();
    drop(archive);
    let normed = tensors.iter_mut().find(|(k, _)| k == "normed").unwrap();
    let mut v = normed.1.to_f64_vec();
    v[5] = f64::NAN; // [0, 0, 5], an unmasked frame
    normed.1 = Tensor::from_f64_as(DType::F64, normed.1.shape().to_vec(), &v).unwrap();
    let members: Vec<(&str, &Tensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    write_npz(&path, &members, false).unwrap();
    let (code, stdout, record) = check_layer_norm(dir.path());
    assert_eq!(code, 2, "{stdout}");
    let s = stage(&record, "layer_norm", "isolated");
    assert_eq!(s["error"]["kind"], "input");
    let error = s["error"]["message"].as_str().unwrap();
    assert!(
        error.contains("f64 truth `normed@f64` holds NaN at index [0, 0, 5]"),
        "{error}"
    );
    assert!(error.contains("stage `layer_norm`"), "{error}");
}

#[test]
fn an_all_padded_mask_fails_with_a_note_unless_allow_empty() {
    let dir = basic_copy();
    rewrite_npy(&dir.path().join("oracle/mask.npy"), |v| v.fill(1.0));
    let (code, stdout, record) = check_layer_norm(dir.path());
    assert_eq!(code, 1, "{stdout}");
    let out = normed_output(&record);
    assert_eq!(
        (
            out["metrics"]["count"].as_u64(),
            out["metrics"]["masked_out"].as_u64()
        ),
        (Some(0), Some(256))
    );
    let note = "0 elements compared (all 256 masked); set allow_empty: true to accept";
    for c in out["criteria"].as_array().unwrap() {
        assert_eq!(c["passed"], false, "{c}");
        assert_eq!(c["note"], note, "{c}");
        assert!(!c["min_passing"].is_number(), "no threshold passes: {c}");
    }
    assert!(
        stdout.contains("0 elements compared (all 256 masked)"),
        "{stdout}"
    );

    edit(
        &dir.path().join("stages.yaml"),
        "        truth: normed@f64\n",
        "        truth: normed@f64\n        allow_empty: true\n",
    );
    let (code, stdout, record) = check_layer_norm(dir.path());
    assert_eq!(code, 0, "{stdout}");
    let out = normed_output(&record);
    assert_eq!(out["status"], "pass");
    assert_eq!(
        out["criteria"][0]["note"],
        "0 elements compared (all 256 masked); accepted by allow_empty"
    );
}
