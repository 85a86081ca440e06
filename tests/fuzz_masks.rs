//! `parity fuzz` on the bundled Gemma3n subject's `audio_encode` entry
//! points, real IREE: the shipped path is not pad-content invariant (the
//! committed regression seed replays and shrinks to one valid frame and the
//! padded frame after it), the zero-padding variant keeps every invariant bit
//! for bit, every negative control fires, and malformed batches are refused
//! with exit 2 before IREE runs anything.

mod common;

use common::invariant;
use parity_tensor::{DType, Tensor};
use serde_json::Value;
use std::path::Path;

const SEEDS: &str = "subject/gemma3n/fuzz-regressions/audio_encode.seeds";

fn fuzz(spec: &str, args: &[&str]) -> (i32, String, Value) {
    common::fuzz(SEEDS, spec, args)
}

#[test]
fn shipped_subject_is_not_pad_content_invariant_and_the_case_shrinks() {
    let (code, text, r) = fuzz(
        "subject/gemma3n/fuzz.yaml",
        &["--only", "pad_content", "--cases", "2", "--no-persist"],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(r["schema"], "parity.fuzz/1");
    // The committed regression seed is replayed first and still fails.
    let replayed = r["replayed"].as_array().unwrap();
    assert_eq!(replayed.len(), 1, "{r:#}");
    assert_eq!(replayed[0]["still_fails"], true);
    let v = &r["violations"][0];
    assert_eq!(v["invariant"], "pad_content");
    assert_eq!(v["seed"], replayed[0]["seed"]);
    // Minimal: one valid frame in the 32-frame bucket, the padded frame right
    // after it set to 1.0, and the clip's first output token moves.
    let case = &v["case"];
    assert_eq!(case["function"], "audio_encode_c1_b32");
    assert_eq!(case["valid"], serde_json::json!([1]));
    assert_eq!(case["change"], "padded clip 0: frame 1 (every feature) = 1");
    assert_eq!(v["moved"]["output"], "projected_audio");
    assert_eq!(v["moved"]["index"], serde_json::json!([0, 0, 0]));
    assert_eq!(v["moved"]["differing"], 48);
    let moved = v["moved"]["max_diff"].as_f64().unwrap();
    assert!(moved > 0.1, "{moved}");
    assert!(text.contains("--replay pad_content:"), "{text}");
    let pad = invariant(&r, "pad_content");
    assert_eq!(pad["status"], "fail");
    assert_eq!(pad["control"]["fired"], true);
}

#[test]
fn zero_padding_variant_keeps_every_invariant_bit_for_bit() {
    let (code, text, r) = fuzz(
        "subject/gemma3n/fuzz-zeropad.yaml",
        &["--cases", "3", "--no-persist"],
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
        assert!(i["cases_run"].as_u64().unwrap() >= 1, "{name}: {i:#}");
        if name != "malformed" {
            assert_eq!(i["max_diff"].as_f64(), Some(0.0), "{name}: {i:#}");
        }
        if name != "lengths" {
            // Each check is shown able to fail.
            assert_eq!(i["control"]["fired"], true, "{name}: {i:#}");
        }
    }
    assert!(r["violations"].as_array().unwrap().is_empty());
}

fn write_case(dir: &Path, name: &str, mel: Tensor, mask: Tensor) -> String {
    let path = dir.join(name);
    parity_tensor::write_npz(&path, &[("mel", &mel), ("mel_mask", &mask)], false).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn malformed_batches_are_refused_with_exit_2_before_iree() {
    let dir = tempfile::tempdir().unwrap();
    let mel =
        |clips: usize| Tensor::from_f32(vec![clips, 32, 32], &vec![0.5; clips * 1024]).unwrap();
    // true = padded: frames 0..4 valid, 4 padded, 5 valid again.
    let mut hole = vec![1.0; 32];
    hole[..4].fill(0.0);
    hole[5] = 0.0;
    let bool_mask =
        |v: &[f64], clips| Tensor::from_f64_as(DType::Bool, vec![clips, 32], v).unwrap();
    // A NaN in a valid frame (clip 0, frame 2, feature 3) would make both
    // runs' outputs NaN and hide any leak from the padding.
    let mut nan_mel = vec![0.5f32; 1024];
    nan_mel[2 * 32 + 3] = f32::NAN;
    let mut prefix = vec![1.0; 32];
    prefix[..4].fill(0.0);
    let cases = [
        ("nan_valid.npz", Tensor::from_f32(vec![1, 32, 32], &nan_mel).unwrap(), bool_mask(&prefix, 1),
            "clip 0: key `mel` index [0, 2, 3] is NaN in a valid frame"),
        ("hole.npz", mel(1), bool_mask(&hole, 1), "clip 0: hole in a prefix mask: frame 4 is padded but frame 5 is valid"),
        ("all_padded.npz", mel(1), bool_mask(&[1.0; 32], 1), "clip 0: every frame is padded"),
        ("f32_mask.npz", mel(1), Tensor::from_f32(vec![1, 32], &[0.0; 32]).unwrap(), "mask: dtype f32 (the contract says bool)"),
        ("three_clips.npz", mel(3), bool_mask(&[0.0; 96], 3), "too many clips: 3 (the entry points take at most 2)"),
        ("b48.npz", Tensor::from_f32(vec![1, 48, 32], &[0.5; 48 * 32]).unwrap(),
            Tensor::from_f64_as(DType::Bool, vec![1, 48], &[0.0; 48]).unwrap(),
            "no entry point for 1 clip(s) of 48 frames (compiled: c1 b32, c1 b64, c1 b128, c2 b128)"),
    ];
    for (name, mel, mask, want) in cases {
        let path = write_case(dir.path(), name, mel, mask);
        let (code, text, r) = fuzz("subject/gemma3n/fuzz.yaml", &["--input", &path]);
        assert_eq!(code, 2, "{name}: {text}");
        let message = r["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains(&format!("case `{path}`")), "{message}");
        assert!(
            message.contains("malformed input refused before IREE"),
            "{message}"
        );
        assert!(message.contains(want), "{name}: {message}");
        // Refused before anything was compiled or run.
        assert!(r["compiler_revision"].is_null(), "{r:#}");
        assert!(r["invariants"].as_array().unwrap().is_empty());
    }
}
