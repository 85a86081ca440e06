//! `parity bench --scale small` end to end: tools/scale/make_scale.py
//! generates the Conformer feed-forward stack (bf16 parameters, the MLX
//! oracle recorded by python/parity_mlx_recorder)
//! into a work dir, to_irpa.py makes its .irpa, and the bench runs the
//! gate cold and warm (real IREE compiler and runtime) and the raw IREE
//! floor, and prints the table. The e2b/e4b configs are the same code at
//! the real widths (docs/performance.md has their figures); too slow for CI.
//!
//! Needs `PARITY_TENSOR_PYTHON` (mlx, numpy, ml_dtypes, safetensors) and
//! `EERIE_PYTHON` (iree.runtime), as ci/test.sh exports them.

mod common;

use common::{parity, repo};

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
        "weights.irpa",
        "stages.yaml",
        "oracle/manifest.json",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scale.json")).unwrap()).unwrap();
    // 2 layers x 2 blocks x (64x256 + 256x64 bf16 + 2 x 64 f32 gains).
    assert_eq!(
        summary["weight_bytes"],
        2 * 2 * (2 * 64 * 256 * 2 + 2 * 64 * 4)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("small "))
        .unwrap_or_else(|| panic!("no `small` row in:\n{stdout}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "64/256/2/8", "{row}");
    assert_eq!(cols[2], "0.3", "weights MB: {row}");
    assert_eq!(cols.last(), Some(&"Pass"), "the gate passes: {row}");
    let num = |i: usize| -> f64 { cols[i].trim_end_matches('%').parse().unwrap() };
    // cold, warm, floor are times; the floor is a real measurement.
    assert!(num(3) > 0.0 && num(4) > 0.0 && num(5) > 0.0, "{row}");
    // Each module artifact reads its parameters once for both modes.
    assert!((1.0..=2.0).contains(&num(11)), "parameter loads: {row}");
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
}
