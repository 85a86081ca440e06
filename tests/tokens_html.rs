//! The tokens section of the HTML report in a real headless Chromium, from a
//! real `parity tokens` run of examples/tokens' late fault. The screenshot is
//! kept under target/tmp/tokens-html/.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::Browser;
use common::{parity, repo};
use serde_json::{json, Value};
use std::path::PathBuf;

#[test]
fn tokens_page_marks_the_mismatches_draws_the_gaps_and_loads_clean() {
    let out = tempfile::tempdir().unwrap();
    let o = parity(
        &repo().join("examples/tokens"),
        &[
            "tokens",
            "stages-fault.yaml",
            "--out-dir",
            out.path().to_str().unwrap(),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("tokens.json")).unwrap())
            .unwrap();
    let mut b = Browser::launch();
    let page = b.open(&out.path().join("tokens.html"));
    // Greedy differs from the oracle at steps 10..15, teacher-forced at step 10.
    let marked = b.eval(
        &page,
        "document.querySelectorAll('table.streams td.mismatch').length",
    );
    assert_eq!(marked, json!(7));
    let bars = b.eval(
        &page,
        "document.querySelectorAll('figure.chart svg rect').length",
    );
    // One bar per step plus a shaded band for the one disagreeing step.
    assert_eq!(bars, json!(16 + 1));
    let top_k = b.eval(
        &page,
        "document.querySelectorAll('section.tokens h2 + table tr').length",
    );
    assert!(top_k.as_u64().unwrap_or(0) >= 2, "top-k table: {top_k}");
    // The localised step's stage run is on the page as a results table.
    let rows = b.eval(
        &page,
        "document.querySelectorAll('table.results tbody tr.out').length",
    );
    let stage_outputs: usize = record["localisation"]["run"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outputs"].as_array().map_or(0, Vec::len).max(1))
        .sum();
    assert_eq!(rows, json!(stage_outputs));
    let external = b.eval(
        &page,
        "Array.from(document.querySelectorAll('[src],link[href]')).filter(e => \
         !(e.getAttribute('src') || e.getAttribute('href')).startsWith('data:')).length",
    );
    assert_eq!(external, json!(0), "no external resources");
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tokens-html");
    b.screenshot(&page, &shots.join("fault.png"));
    let errors = b.errors(&page);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}
