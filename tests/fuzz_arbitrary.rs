//! `parity fuzz` on examples/masked (a masked mean whose contract promises
//! arbitrary masks and takes a lengths argument), real IREE: the buggy
//! variant (valid frames taken as the prefix 0..lengths) is found only
//! through a mask with a hole, and its committed seed shrinks to one padded
//! frame before one valid frame; the correct variant keeps every invariant
//! bit for bit; a user's batch with a hole is accepted, and one whose
//! lengths disagree with its mask is refused before IREE.

mod common;

use common::invariant;
use parity_tensor::{DType, Tensor};
use serde_json::{json, Value};
use std::path::Path;

const SEEDS: &str = "examples/masked/fuzz-regressions.seeds";

fn fuzz(spec: &str, args: &[&str]) -> (i32, String, Value) {
    common::fuzz(SEEDS, spec, args)
}

#[test]
fn prefix_lengths_bug_is_found_through_a_hole_and_shrinks_to_it() {
    let (code, text, r) = fuzz(
        "examples/masked/fuzz-bug.yaml",
        &["--only", "pad_content", "--cases", "2", "--no-persist"],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(r["replayed"][0]["still_fails"], true, "{r:#}");
    let v = &r["violations"][0];
    assert_eq!(v["seed"], r["replayed"][0]["seed"]);
    // Minimal: one padded frame (0), then the only valid frame (1); writing
    // 1.0 into the padded frame moves the mean from 0 (the hole's zeros,
    // which the bug averages) to 1.
    let case = &v["case"];
    assert_eq!(case["function"], "masked_mean_c1_b8");
    assert_eq!(case["valid"], json!([1]));
    assert_eq!(case["valid_frames"], json!(["1..2"]));
    assert_eq!(case["change"], "padded clip 0: frame 0 (every feature) = 1");
    assert_eq!(v["moved"]["output"], "mean");
    assert_eq!(v["moved"]["index"], json!([0, 0]));
    assert_eq!(v["moved"]["expected"], 0.0);
    assert_eq!(v["moved"]["actual"], 1.0);
    assert_eq!(v["moved"]["differing"], 4);
    assert!(text.contains("valid [1] at 1..2"), "{text}");
    // The control (garbage in the drawn case's last valid frame, 6) is silent
    // on this model: a second face of the bug, which reads frames 0..lengths
    // only and so never sees valid frame 6. On the correct model it fires.
    let control = &invariant(&r, "pad_content")["control"];
    assert_eq!(control["fired"], false, "{control:#}");
    assert!(
        control["description"].as_str().unwrap().contains("(6..7)"),
        "{control:#}"
    );
}

#[test]
fn correct_masked_mean_keeps_every_invariant_with_holes() {
    let (code, text, r) = fuzz(
        "examples/masked/fuzz.yaml",
        &["--cases", "4", "--no-persist"],
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(r["replayed"][0]["still_fails"], false, "{r:#}");
    for name in [
        "malformed",
        "pad_content",
        "bucket",
        "batch_order",
        "batch_company",
        "history",
        "lengths",
    ] {
        let i = invariant(&r, name);
        assert_eq!(i["status"], "pass", "{name}: {i:#}");
        assert!(i["cases_run"].as_u64().unwrap() >= 4, "{name}: {i:#}");
        if name != "malformed" {
            assert_eq!(i["max_diff"].as_f64(), Some(0.0), "{name}: {i:#}");
        }
        if name != "lengths" {
            assert_eq!(i["control"]["fired"], true, "{name}: {i:#}");
        }
    }
}

fn write_case(dir: &Path, name: &str, mask: &[f64], lengths: i32) -> String {
    let path = dir.join(name);
    let mel: Vec<f32> = (0..32).map(|i| i as f32 * 0.25).collect();
    let mel = Tensor::from_f32(vec![1, 8, 4], &mel).unwrap();
    let mask = Tensor::from_f64_as(DType::Bool, vec![1, 8], mask).unwrap();
    let lengths = Tensor::from_f64_as(DType::I32, vec![1], &[f64::from(lengths)]).unwrap();
    parity_tensor::write_npz(
        &path,
        &[("mel", &mel), ("mask", &mask), ("lengths", &lengths)],
        false,
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn the_lengths_contract_holds_end_to_end_for_a_users_batch() {
    let dir = tempfile::tempdir().unwrap();
    // true = padded: frames 0 and 3 valid, a hole between them.
    let holed = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    let ok = write_case(dir.path(), "hole.npz", &holed, 2);
    let (code, text, r) = fuzz("examples/masked/fuzz.yaml", &["--input", &ok]);
    assert_eq!(code, 0, "{text}");
    let pad = invariant(&r, "pad_content");
    assert_eq!(pad["cases_run"], 3, "{pad:#}");
    assert_eq!(pad["max_diff"], 0.0);
    // The bug reads frames 0..2: frame 1 is padded, so NaN written there moves it.
    let (code, text, r) = fuzz("examples/masked/fuzz-bug.yaml", &["--input", &ok]);
    assert_eq!(code, 1, "{text}");
    assert_eq!(
        r["violations"][0]["case"]["valid_frames"],
        json!(["0..1, 3..4"])
    );
    // Lengths that disagree with the mask never reach IREE.
    let bad = write_case(dir.path(), "lengths.npz", &holed, 3);
    let (code, text, r) = fuzz("examples/masked/fuzz.yaml", &["--input", &bad]);
    assert_eq!(code, 2, "{text}");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("malformed input refused before IREE: clip 0: length 3 disagrees with the mask (2 valid frames)"),
        "{message}"
    );
    assert!(r["compiler_revision"].is_null(), "{r:#}");
}

/// Issue 28: the same holed batch with NaN in its valid frames passed the
/// buggy variant with "no difference (exact)" (NaN out on both sides,
/// compared equal), while the finite batch fails. A non-finite valid frame
/// is now refused before IREE, naming the file, the key and the index.
#[test]
fn nan_valid_frames_cannot_hide_the_leak() {
    let dir = tempfile::tempdir().unwrap();
    let holed = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0];
    let path = dir.path().join("nan.npz");
    let mut mel: Vec<f32> = (0..32).map(|i| i as f32 * 0.25).collect();
    mel[3 * 4 + 1] = f32::NAN; // clip 0, valid frame 3, feature 1
    let mel = Tensor::from_f32(vec![1, 8, 4], &mel).unwrap();
    let mask = Tensor::from_f64_as(DType::Bool, vec![1, 8], &holed).unwrap();
    let lengths = Tensor::from_f64_as(DType::I32, vec![1], &[2.0]).unwrap();
    parity_tensor::write_npz(
        &path,
        &[("mel", &mel), ("mask", &mask), ("lengths", &lengths)],
        false,
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let (code, text, r) = fuzz("examples/masked/fuzz-bug.yaml", &["--input", path]);
    assert_eq!(code, 2, "{text}");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("case `{path}`"))
            && message.contains("key `mel` index [0, 3, 1] is NaN in a valid frame"),
        "{message}"
    );
    assert!(r["invariants"].as_array().unwrap().is_empty(), "{r:#}");
}
