//! `parity serve` on the bundled Gemma3n subject: the slot entry points
//! (subject/gemma3n/serving) driven on IREE through the committed scenarios,
//! judged against mlx-vlm's greedy tokens and each request's solo run.
//! Real IREE, real dumps; each serving module compiles once per test run
//! (the shared artifact cache).

mod common;

use common::{parity, repo};
use serde_json::Value;

/// Scenarios that use the same serving module run one at a time, so the
/// module compiles once (the second finds it in the artifact cache) instead
/// of twice at once on a 2-core runner.
static MAIN_MODULE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `parity serve SCENARIO --json F` from the repository root; (exit code, stdout, record).
fn serve(scenario: &str) -> (i32, String, Value) {
    let _one_at_a_time = (!scenario.starts_with("leak")).then(|| {
        MAIN_MODULE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("serving.json");
    let html = out.path().join("serving.html");
    let o = parity(
        &repo(),
        &[
            "serve",
            &format!("subject/gemma3n/serving/{scenario}"),
            "--json",
            json.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    );
    let stdout = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("serving.json");
    let page = std::fs::read_to_string(&html).expect("serving.html");
    assert!(page.contains("Timeline (slots &times; steps)"), "{page}");
    (
        o.status.code().unwrap_or(-1),
        stdout,
        serde_json::from_str(&text).unwrap(),
    )
}

fn request<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == id)
        .unwrap_or_else(|| panic!("no request {id}"))
}

fn verdict<'a>(req: &'a Value, check: &str) -> &'a Value {
    req["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["check"] == check)
        .unwrap_or_else(|| panic!("no {check} verdict in {req}"))
}

fn tokens(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

#[test]
fn clips_of_two_lengths_and_text_interleave_token_exact_and_overflow_is_refused() {
    let (code, stdout, r) = serve("mixed-scenario.yaml");
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r["schema"], "parity.serving/1");
    // The oracle's greedy tokens (mlx-vlm, oracle-dumps/gemma3n/*_lm.npz), as many as requested.
    for (id, want) in [
        ("one_clip", vec![21, 4, 62, 56, 6, 31]),
        ("two_clips", vec![35, 8, 8, 3]),
        ("text", vec![13, 29, 27, 25, 16, 62]),
    ] {
        let q = request(&r, id);
        assert_eq!(tokens(&q["tokens"]), want, "{id}: {stdout}");
        assert_eq!(tokens(&q["oracle_tokens"])[..want.len()], want[..], "{id}");
        assert_eq!(tokens(&q["solo_tokens"]), want, "{id}");
        assert_eq!(q["bitwise_logits"], true, "{id}");
        assert_eq!(verdict(q, "oracle_tokens")["status"], "pass");
        assert_eq!(q["effective_length"], q["solo_effective_length"]);
    }
    assert_eq!(request(&r, "one_clip")["kind"], "audio");
    assert_eq!(request(&r, "one_clip")["effective_length"], 18);
    assert_eq!(request(&r, "two_clips")["effective_length"], 28);
    // Both slots busy when `text` arrives at step 2: it waits for `two_clips`'s slot.
    let text = request(&r, "text");
    assert_eq!(text["admitted_step"], 5);
    assert_eq!(text["slot"], 1);
    assert_eq!(verdict(text, "slot_reuse")["status"], "pass");
    let overflow = request(&r, "overflow");
    assert!(overflow["slot"].is_null() && tokens(&overflow["tokens"]).is_empty());
    let why = overflow["refused"].as_str().unwrap();
    assert!(
        why.contains("expanded length 28 (prompt 12 text + 16 audio tokens from 2 clip(s)) + max_new_tokens 40 = 68 exceeds the context 64"),
        "{why}"
    );
}

#[test]
fn cancellation_frees_the_slot_for_reuse_and_an_all_padded_clip_is_refused() {
    let (code, stdout, r) = serve("text-cancel-reuse-scenario.yaml");
    assert_eq!(code, 0, "{stdout}");
    let first = request(&r, "first");
    assert_eq!(first["cancelled_step"], 3);
    assert_eq!(tokens(&first["tokens"]), [13, 29, 27]);
    let second = request(&r, "second");
    assert_eq!(
        (second["slot"].as_u64(), second["admitted_step"].as_u64()),
        (Some(0), Some(3))
    );
    assert_eq!(tokens(&second["tokens"]), [62, 1, 4, 16, 42, 62]);
    assert_eq!(verdict(second, "slot_reuse")["status"], "pass", "{stdout}");
    let padded = request(&r, "padded");
    assert!(padded["slot"].is_null());
    assert!(
        padded["refused"]
            .as_str()
            .unwrap()
            .contains("clip 0 of case `full128` is all padding"),
        "{padded}"
    );
    assert_eq!(tokens(&request(&r, "late")["tokens"]), [13, 29, 27, 25]);
}

#[test]
fn a_kv_region_not_reset_on_reuse_is_caught_naming_request_slot_and_step() {
    let (code, stdout, r) = serve("leak-kv-scenario.yaml");
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(request(&r, "long")["status"], "pass", "{stdout}");
    let reuse = request(&r, "reuse");
    assert_eq!(reuse["status"], "fail");
    assert_eq!(reuse["slot"], 0);
    let admitted = reuse["admitted_step"].as_u64().unwrap();
    let length = verdict(reuse, "effective_length");
    assert_eq!(length["status"], "fail");
    assert_eq!(length["step"].as_u64(), Some(admitted));
    assert_eq!(length["slot"], 0);
    let m = length["message"].as_str().unwrap();
    assert!(
        m.contains("request `reuse` (slot 0)") && m.contains("alone 10"),
        "{m}"
    );
    assert_eq!(verdict(reuse, "slot_reuse")["status"], "fail");
}

#[test]
fn a_ple_row_from_the_wrong_slot_is_caught_naming_request_slot_and_step() {
    let (code, stdout, r) = serve("leak-ple-scenario.yaml");
    assert_eq!(code, 1, "{stdout}");
    for (id, slot) in [("left", 0), ("right", 1)] {
        let q = request(&r, id);
        let inv = verdict(q, "batch_invariance");
        assert_eq!(inv["status"], "fail", "{id}: {stdout}");
        assert_eq!(inv["slot"], slot);
        // Prefill (step 0) is clean; the leak is in decode, from step 1.
        assert!(inv["step"].as_u64().unwrap() >= 1, "{inv}");
        assert!(inv["message"]
            .as_str()
            .unwrap()
            .contains(&format!("request `{id}`")));
    }
}

#[test]
fn a_malformed_scenario_is_an_input_error_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-scenario.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nspec: {root}/subject/gemma3n/stages.yaml\nmodule: {root}/subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz\nslots: 2\nrequests:\n  - {{id: a, case: text_short, max_new_tokens: 0, arrive: 0}}\n",
            root = repo().display()
        ),
    )
    .unwrap();
    let o = parity(&repo(), &["serve", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("bad-scenario.yaml:6:"), "{out}");
    assert!(out.contains("`max_new_tokens` must be at least 1"), "{out}");
}
