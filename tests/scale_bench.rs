//! `parity bench --scale small` end to end: tools/scale/make_scale.py
//! generates the Conformer feed-forward stack and two text decoder layers
//! (tools/scale/text_layers.py: the bundled subject's layer lowered by JAX;
//! bf16 parameters; the MLX oracle, mlx-vlm's decoder layer for the text,
//! recorded by python/parity_mlx_recorder) into a work dir, to_irpa.py makes its .irpa, and the bench runs the
//! gate cold and warm (real IREE compiler and runtime) and the raw IREE
//! floor, and prints the table. The e2b/e4b configs are the same code at
//! the real widths (docs/performance.md has their figures); too slow for CI.
//!
//! Needs `PARITY_TENSOR_PYTHON` (mlx, numpy, ml_dtypes, safetensors) and
//! `EERIE_PYTHON` (iree.runtime), as ci/test.sh exports them.

mod common;

use common::{parity, repo};
use std::path::Path;

/// Zeroes an f32 .npy's data, keeping its header (format 1.0: the header
/// length is the u16 at bytes 8..10).
fn zero_npy(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let start = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[start..].fill(0);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn bench_scale_small_generates_runs_and_prints_the_table() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let out = parity(
        &repo(),
        &["bench", "--elems", "0", "--scale", "small", "--work-dir", w],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The generated subject: parameters as an .irpa, an indexed MLX oracle.
    let dir = work.path().join("small");
    for f in [
        "model.mlir",
        "text_0.mlir",
        "text_1.mlir",
        "weights.irpa",
        "stages.yaml",
        "oracle/manifest.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scale.json")).unwrap()).unwrap();
    // Audio: 2 layers x 2 blocks x (64x256 + 256x64 bf16 + 2 x 64 f32
    // gains); text: 2 layers of 40848 bf16 weights each (hidden 64, 2 heads
    // of 32, 1 KV head, feed-forward 128, laurel 8, per-layer input 16).
    assert_eq!(
        summary["weight_bytes"],
        2 * 2 * (2 * 64 * 256 * 2 + 2 * 64 * 4) + 2 * 40848 * 2
    );
    assert_eq!(
        summary["stage_args"]["text_1"],
        serde_json::json!([[4, 1, 8, 64], [1, 8, 6, 16]])
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("small "))
        .unwrap_or_else(|| panic!("no `small` row in:\n{stdout}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "64/256/2/8", "{row}");
    assert_eq!(cols[2], "64/128/2/8", "text layers: {row}");
    assert_eq!(cols[3], "0.4", "weights MB: {row}");
    assert_eq!(cols.last(), Some(&"Pass"), "the gate passes: {row}");
    let num = |i: usize| -> f64 {
        cols[i]
            .trim_end_matches(['%', '*'])
            .parse()
            .unwrap_or_else(|_| panic!("column {i} of {row}"))
    };
    // cold, warm, floor are times; the floor is a real measurement.
    assert!(num(4) > 0.0 && num(5) > 0.0 && num(6) > 0.0, "{row}");
    // The warm gate's own peak RSS was measured (reset after the cold gate)
    // and is no more than the process's peak up to then plus what it adds.
    assert!(!cols[9].ends_with('*'), "the peak was reset: {row}");
    assert!(num(9) > 0.0 && num(8) > 0.0, "{row}");
    // One artifact per function (2 audio layers, 2 text layers), each
    // reading its parameters once for both modes.
    assert_eq!(num(13), 4.0, "parameter loads: {row}");

    // A second bench reuses the generated subject.
    let again = parity(
        &repo(),
        &["bench", "--elems", "0", "--scale", "small", "--work-dir", w],
    );
    assert_eq!(again.status.code(), Some(0));
    let err = parity(
        &repo(),
        &["bench", "--elems", "0", "--scale", "e9b", "--work-dir", w],
    );
    assert_ne!(err.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&err.stderr).contains("unknown --scale config `e9b`"),
        "{err:?}"
    );

    // The text tolerance has teeth: feed the text layers zero per-layer
    // inputs (as a layer that dropped them would compute) and the gate fails
    // at text_0, by about 43% relative L2 against the 0.15 limit.
    zero_npy(&dir.join("oracle/default/text_pli.npy"));
    let (out_dir, cache) = (work.path().join("out"), dir.join("cache"));
    let failed = parity(
        &dir,
        &[
            "check",
            "stages.yaml",
            "--out-dir",
            out_dir.to_str().unwrap(),
            // The bench's warm artifacts: nothing is compiled again.
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(failed.status.code(), Some(1), "{text}");
    assert!(
        text.contains("first divergence: stage `text_0` output `y` (case default, isolated)"),
        "{text}"
    );
    let audio_pass = text
        .lines()
        .filter(|l| l.contains("layer_") && l.contains("PASS"))
        .count();
    assert_eq!(audio_pass, 2, "the audio layers still pass:\n{text}");
}
