//! Fuzz and serving records in the HTML report, in a real headless Chromium:
//! the page `parity fuzz` writes (verdict, one row per invariant with its
//! negative control, the violation's minimal case: which frames, which
//! values, which output moved), and the multi-record page `parity report
//! A.json B.json ... --html` (one section per record: a run, a fuzz run and
//! a serving record). The run and fuzz records come from real runs of
//! examples/basic and examples/masked; the serving record is built by hand
//! with parity-record's own types, because a real `parity serve` compiles the
//! Gemma3n serving module (minutes), over this test's budget. Screenshots are
//! kept under target/tmp/report-html-all/.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::Browser;
use common::{basic_copy, check_to, parity, repo};
use parity_record::{ServingRecord, ServingRequestRecord, ServingVerdict, Status};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const HOSTILE: &str = "<script>alert(1)</script>";

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-html-all")
}

/// `parity fuzz examples/masked/fuzz-bug.yaml` into `out` (the committed seed
/// replayed from a copy); returns the record.
fn fuzz_bug(out: &Path) -> Value {
    let seeds = out.join("seeds");
    std::fs::copy(
        repo().join("examples/masked/fuzz-regressions.seeds"),
        &seeds,
    )
    .unwrap();
    let o = parity(
        &repo(),
        &[
            "fuzz",
            "examples/masked/fuzz-bug.yaml",
            "--only",
            "pad_content",
            "--cases",
            "2",
            "--out-dir",
            out.to_str().unwrap(),
            "--regressions",
            seeds.to_str().unwrap(),
            "--no-persist",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("fuzz.json")).unwrap()).unwrap()
}

/// Checks every page must pass: nothing fetched, no console error, no alert.
fn clean(b: &mut Browser, page: &browser::Page, shot: &str) {
    let external = b.eval(
        page,
        "Array.from(document.querySelectorAll('[src],link[href]')).filter(e => \
         !(e.getAttribute('src') || e.getAttribute('href')).startsWith('data:')).length",
    );
    assert_eq!(external, json!(0), "no external resources");
    b.screenshot(page, &shots().join(shot));
    let errors = b.errors(page);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    assert!(b.dialogs(page).is_empty(), "an alert opened");
}

fn text(b: &mut Browser, page: &browser::Page, selector: &str) -> String {
    let v = b.eval(
        page,
        &format!("(document.querySelector({selector:?}) || {{}}).textContent || ''"),
    );
    v.as_str().unwrap_or_default().to_string()
}

#[test]
fn fuzz_page_shows_invariants_controls_and_the_minimal_case() {
    let out = tempfile::tempdir().unwrap();
    let record = fuzz_bug(out.path());
    let mut b = Browser::launch();
    let page = b.open(&out.path().join("fuzz.html"));
    assert_eq!(text(&mut b, &page, "section.fuzz .verdict .badge"), "FAIL");
    assert_eq!(text(&mut b, &page, "[data-seed]"), "3");
    let rows = b.eval(
        &page,
        "Array.from(document.querySelectorAll('table.fuzz-invariants tbody tr')).map(r => \
         [r.dataset.invariant, r.cells[1].textContent, r.cells[4].dataset.v, r.cells[5].dataset.v, \
          r.cells[7].dataset.control])",
    );
    let inv = &record["invariants"][0];
    assert_eq!(
        rows,
        json!([[
            "pad_content",
            "fail",
            inv["cases_run"].to_string(),
            "1",
            "silent"
        ]])
    );
    // The minimal case: one padded frame (0) before the only valid frame (1);
    // 1.0 written there moves mean[0, 0] from 0 to 1.
    let v = "section.violation";
    assert_eq!(
        text(&mut b, &page, &format!("{v} [data-field=function] code")),
        "masked_mean_c1_b8"
    );
    assert_eq!(
        text(&mut b, &page, &format!("{v} [data-valid-frames]")),
        "1..2"
    );
    assert_eq!(
        text(&mut b, &page, &format!("{v} [data-field=change]")),
        "padded clip 0: frame 0 (every feature) = 1"
    );
    assert_eq!(
        text(&mut b, &page, &format!("{v} [data-field=output]")),
        "mean[0, 0]"
    );
    let values = b.eval(
        &page,
        "['expected', 'actual', 'max_diff'].map(f => \
         Number(document.querySelector(`section.violation [data-field=${f}]`).dataset.v))",
    );
    assert_eq!(values, json!([0, 1, 1]));
    let replay = text(&mut b, &page, &format!("{v} [data-field=replay]"));
    assert_eq!(
        replay,
        format!(
            "parity fuzz examples/masked/fuzz-bug.yaml --replay pad_content:{}",
            record["violations"][0]["seed"]
        )
    );
    assert_eq!(
        b.eval(
            &page,
            "document.querySelectorAll('table.fuzz-replayed tr.fail').length"
        ),
        json!(1)
    );
    clean(&mut b, &page, "fuzz.png");
}

fn serving_record() -> ServingRecord {
    let mut s = ServingRecord::new(
        "subject/gemma3n/serving/leak-kv-scenario.yaml".into(),
        "in-process".into(),
        env!("CARGO_PKG_VERSION"),
        "2026-12-01T19:00:00Z".into(),
    );
    s.slots = 2;
    s.context = 64;
    s.steps = 4;
    let request = |id: &str, slot, status, verdicts| ServingRequestRecord {
        id: id.into(),
        case: "text_a".into(),
        kind: "text".into(),
        status,
        arrive: 0,
        slot: Some(slot),
        admitted_step: Some(0),
        cancelled_step: None,
        finished_step: Some(3),
        tokens: vec![5, 6, 7],
        oracle_tokens: vec![5, 6, 8],
        solo_tokens: vec![5, 6, 8],
        logprobs: Vec::new(),
        finish: None,
        bitwise_logits: Some(false),
        effective_length: None,
        solo_effective_length: None,
        dense_ple_sha256: None,
        reused_slot: false,
        refused: None,
        error: None,
        verdicts,
        target: None,
    };
    s.requests = vec![
        request("r0", 0, Status::Pass, Vec::new()),
        request(
            HOSTILE,
            1,
            Status::Fail,
            vec![ServingVerdict {
                check: "token_exact".into(),
                status: Status::Fail,
                message: "token 2 is 7, the oracle's is 8".into(),
                step: Some(2),
                slot: Some(1),
                divergent_token: None,
            }],
        ),
    ];
    s.status = s.derived_status();
    s
}

#[test]
fn report_page_has_one_section_per_record_run_fuzz_and_serving() {
    let dir = basic_copy();
    let out = tempfile::tempdir().unwrap();
    let (code, _, stderr, run) = check_to(dir.path(), "stages.yaml", &out.path().join("run"), &[]);
    assert_eq!(code, 0, "{stderr}");
    let run = run.unwrap();
    let fuzz = fuzz_bug(out.path());
    let serving = out.path().join("serving.json");
    std::fs::write(&serving, serde_json::to_string(&serving_record()).unwrap()).unwrap();
    let html = out.path().join("all.html");
    let o = parity(
        &repo(),
        &[
            "report",
            out.path().join("run/run.json").to_str().unwrap(),
            out.path().join("fuzz.json").to_str().unwrap(),
            serving.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    // The worst of the records: the fuzz violation and the serving failure (1).
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut b = Browser::launch();
    let page = b.open(&html);
    let sections = b.eval(
        &page,
        "['section.run', 'section.fuzz', 'section.serving'].map(s => document.querySelectorAll(s).length)",
    );
    assert_eq!(sections, json!([1, 1, 1]));
    // The run: one results row per stage output and mode, and its verdict.
    let rows: usize = run["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outputs"].as_array().map_or(0, Vec::len).max(1))
        .sum();
    assert_eq!(
        b.eval(
            &page,
            "document.querySelectorAll('section.run table.results tbody tr.out').length"
        ),
        json!(rows)
    );
    assert_eq!(text(&mut b, &page, "section.run .verdict .badge"), "PASS");
    // The fuzz run: its invariant and its minimal case.
    assert_eq!(text(&mut b, &page, "section.fuzz .verdict .badge"), "FAIL");
    assert_eq!(
        text(
            &mut b,
            &page,
            "section.fuzz section.violation [data-valid-frames]"
        ),
        "1..2"
    );
    assert_eq!(
        b.eval(
            &page,
            "document.querySelectorAll('section.fuzz table.fuzz-invariants tbody tr').length"
        ),
        json!(fuzz["invariants"].as_array().unwrap().len())
    );
    // The serving record: its timeline (2 slots x 4 steps), the failing cell at
    // slot 1 step 2, and the hostile request id as inert text.
    assert_eq!(
        b.eval(
            &page,
            "document.querySelectorAll('section.serving table.timeline tr').length"
        ),
        json!(3)
    );
    assert_eq!(
        b.eval(
            &page,
            "document.querySelector('section.serving table.timeline').rows[2].cells[3].className"
        ),
        json!("fail")
    );
    assert_eq!(
        b.eval(
            &page,
            "document.querySelectorAll('section.serving script').length"
        ),
        json!(0)
    );
    let ids = b.eval(
        &page,
        "Array.from(document.querySelector('section.serving table:not(.timeline)').rows).slice(1).map(r => r.cells[0].textContent)",
    );
    assert_eq!(ids, json!(["r0", HOSTILE]));
    clean(&mut b, &page, "all.png");
}
