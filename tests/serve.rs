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

/// `parity serve SCENARIO --out-dir D` from the repository root, its
/// reports under their default names; (exit code, stdout, record).
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
            "--out-dir",
            out.path().to_str().unwrap(),
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
    let junit = std::fs::read_to_string(out.path().join("serving-junit.xml")).expect("junit");
    assert!(junit.contains("<testsuite"), "{junit}");
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
    // Audio only (no text), arriving at step 3: it waits for `one_clip`'s slot
    // and decodes beside `text`, with its solo run's tokens and logits.
    let audio_only = request(&r, "audio_only");
    assert_eq!(audio_only["kind"], "audio");
    assert_eq!(
        (
            audio_only["slot"].as_u64(),
            audio_only["admitted_step"].as_u64()
        ),
        (Some(0), Some(6)),
        "{audio_only}"
    );
    assert_eq!(tokens(&audio_only["tokens"]), AUDIO_ONLY[..6], "{stdout}");
    assert_eq!(tokens(&audio_only["solo_tokens"]), AUDIO_ONLY[..6]);
    assert_eq!(audio_only["bitwise_logits"], true);
    assert_eq!(audio_only["effective_length"], 13);
    for check in [
        "oracle_tokens",
        "batch_invariance",
        "effective_length",
        "dense_ple",
        "slot_reuse",
    ] {
        assert_eq!(
            verdict(audio_only, check)["status"],
            "pass",
            "{check}: {stdout}"
        );
    }
    let overflow = request(&r, "overflow");
    assert!(overflow["slot"].is_null() && tokens(&overflow["tokens"]).is_empty());
    let why = overflow["refused"].as_str().unwrap();
    assert!(
        why.contains("expanded length 28 (prompt 12 text + 16 audio tokens from 2 clip(s)) + max_new_tokens 40 = 68 exceeds the context 64"),
        "{why}"
    );
}

/// mlx-vlm's greedy tokens for the audio-only prompt (one clip, no text;
/// oracle-dumps/gemma3n/audio_only_lm.npz), the first 8.
const AUDIO_ONLY: [i64; 8] = [31, 9, 25, 6, 31, 18, 43, 40];

#[test]
fn an_audio_only_prompt_gives_the_oracle_tokens_and_its_solo_run_bit_for_bit() {
    let (code, stdout, r) = serve("audio-only-scenario.yaml");
    assert_eq!(code, 0, "{stdout}");
    let q = request(&r, "audio_only");
    assert_eq!(q["kind"], "audio");
    assert_eq!(q["case"], "audio_only");
    assert_eq!(tokens(&q["tokens"]), AUDIO_ONLY, "{stdout}");
    assert_eq!(tokens(&q["oracle_tokens"])[..8], AUDIO_ONLY);
    assert_eq!(tokens(&q["solo_tokens"]), AUDIO_ONLY);
    assert_eq!(q["bitwise_logits"], true);
    // BOS, "\n\n", <boa>, 8 soft tokens, <eoa>, "\n\n": the slot holds 13 rows.
    assert_eq!(q["effective_length"], 13);
    assert_eq!(q["solo_effective_length"], 13);
    assert_eq!(
        q["dense_ple_sha256"].as_str().map(str::len),
        Some(64),
        "{q}"
    );
    for check in [
        "admission",
        "oracle_tokens",
        "batch_invariance",
        "effective_length",
        "dense_ple",
    ] {
        assert_eq!(verdict(q, check)["status"], "pass", "{check}: {stdout}");
    }
}

#[test]
fn a_case_outside_the_token_run_is_judged_on_the_tokens_its_oracle_holds() {
    // partial77 is a prefill-only LM case (its dump holds token 0 only) and
    // not in stages.yaml's tokens: section.
    let _one_at_a_time = MAIN_MODULE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prefill-only-scenario.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nspec: {root}/subject/gemma3n/stages.yaml\nmodule: {root}/subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz\nslots: 2\nrequests:\n  - {{id: p, case: partial77, max_new_tokens: 3, arrive: 0}}\n",
            root = repo().display()
        ),
    )
    .unwrap();
    let o = parity(
        &repo(),
        &[
            "serve",
            path.to_str().unwrap(),
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("serving.json")).unwrap())
            .unwrap();
    let p = request(&r, "p");
    assert_eq!(tokens(&p["oracle_tokens"]).len(), 1, "{p}");
    assert_eq!(tokens(&p["tokens"])[0], tokens(&p["oracle_tokens"])[0]);
    let v = verdict(p, "oracle_tokens");
    assert_eq!(v["status"], "pass");
    assert_eq!(
        v["message"],
        "1 tokens equal the oracle's (2 tokens beyond the oracle's are not judged)"
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

/// Both requests of a two-slot leak scenario (`left` in slot 0, `right` in
/// slot 1) fail batch invariance at a decode step >= `from`, named by request and slot.
fn both_slots_caught(scenario: &str, from: u64) {
    let (code, stdout, r) = serve(scenario);
    assert_eq!(code, 1, "{stdout}");
    for (id, slot) in [("left", 0), ("right", 1)] {
        let q = request(&r, id);
        let inv = verdict(q, "batch_invariance");
        assert_eq!(inv["status"], "fail", "{id}: {stdout}");
        assert_eq!(inv["slot"], slot);
        assert!(inv["step"].as_u64().unwrap() >= from, "{inv}");
        let m = inv["message"].as_str().unwrap();
        assert!(m.contains(&format!("request `{id}` (slot {slot})")), "{m}");
        // Token 0 (prefill) is clean: the leak is in decode.
        assert_eq!(
            tokens(&q["tokens"])[0],
            tokens(&q["solo_tokens"])[0],
            "{id}"
        );
    }
}

#[test]
fn a_ple_row_from_the_wrong_slot_is_caught_naming_request_slot_and_step() {
    // Prefill (step 0) is clean; the leak is in decode, from step 1.
    both_slots_caught("leak-ple-scenario.yaml", 1);
}

#[test]
fn a_mask_length_row_from_the_wrong_slot_is_caught_naming_request_slot_and_step() {
    // The slots' lengths first differ at step 2 (`right` arrived at step 1).
    both_slots_caught("leak-mask-scenario.yaml", 2);
}

#[test]
fn cancel_after_k_tokens_keeps_the_solo_prefix_and_frees_the_slot() {
    let (code, stdout, r) = serve("cancel-after-scenario.yaml");
    assert_eq!(code, 0, "{stdout}");
    let cut = request(&r, "cut");
    assert_eq!(cut["slot"], 0);
    assert_eq!(cut["cancelled_step"], 1, "{cut}");
    assert!(cut["finished_step"].is_null());
    let got = tokens(&cut["tokens"]);
    let solo = tokens(&cut["solo_tokens"]);
    assert_eq!(got.len(), 2, "{cut}");
    assert_eq!(got[..], solo[..2], "{cut}");
    assert_eq!(got[..], tokens(&cut["oracle_tokens"])[..2]);
    let after = request(&r, "after");
    // Slot 1 is busy with `hold`; `after` waits for the slot `cut` left at step 1.
    assert_eq!(
        (after["slot"].as_u64(), after["admitted_step"].as_u64()),
        (Some(0), Some(2)),
        "{after}"
    );
    assert_eq!(after["reused_slot"], true);
    assert_eq!(verdict(after, "slot_reuse")["status"], "pass", "{stdout}");
    assert_eq!(tokens(&after["tokens"]), [13, 29, 27, 25]);
    assert_eq!(after["bitwise_logits"], true);
}

#[test]
fn a_weight_missing_at_prefill_is_an_input_error() {
    // The serving module as committed, with a manifest whose prefill names a
    // weight no weights file holds: admission passes, the prefill cannot load it.
    let dir = tempfile::tempdir().unwrap();
    let serving = repo().join("subject/gemma3n/serving");
    std::fs::copy(
        serving.join("gemma3n_serving_f32.mlir.gz"),
        dir.path().join("gemma3n_serving_f32.mlir.gz"),
    )
    .unwrap();
    let mut manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(serving.join("serving-functions.json")).unwrap(),
    )
    .unwrap();
    manifest["functions"]["slot_prefill_p10_s2"]["weights"][0] =
        Value::String("language_model.no_such_weight".into());
    // And without its audio merge, the audio-only prompt has no bucket.
    manifest["functions"]
        .as_object_mut()
        .unwrap()
        .remove("audio_merge_ple_p13_c1");
    std::fs::write(
        dir.path().join("serving-functions.json"),
        manifest.to_string(),
    )
    .unwrap();
    let path = dir.path().join("weight-scenario.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nspec: {root}/subject/gemma3n/stages.yaml\nmodule: gemma3n_serving_f32.mlir.gz\nslots: 2\nrequests:\n  - {{id: a, case: text_short, max_new_tokens: 2, arrive: 0}}\n  - {{id: b, case: audio_only, max_new_tokens: 2, arrive: 0}}\n",
            root = repo().display()
        ),
    )
    .unwrap();
    let json = dir.path().join("serving.json");
    let o = parity(
        &repo(),
        &[
            "serve",
            path.to_str().unwrap(),
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = request(&r, "a");
    assert_eq!(a["status"], "error");
    let e = a["error"].as_str().unwrap();
    assert!(
        e.contains("request `a`")
            && e.contains("prefill")
            && e.contains("`language_model.no_such_weight`"),
        "{e}"
    );
    assert_eq!(r["errors"][0]["kind"], "input", "{r}");
    let b = request(&r, "b");
    assert!(
        b["slot"].is_null() && tokens(&b["tokens"]).is_empty(),
        "{b}"
    );
    assert_eq!(
        b["refused"],
        "request `b`: prompt length 13 has no bucket in the serving module (no `audio_merge_ple_p13_c1`)"
    );
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
    let reports = dir.path().join("reports");
    let o = parity(
        &repo(),
        &[
            "serve",
            path.to_str().unwrap(),
            "--out-dir",
            reports.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("bad-scenario.yaml:6:"), "{out}");
    assert!(out.contains("`max_new_tokens` must be at least 1"), "{out}");
    // The reports are written by default, under their default names.
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("serving.json")).unwrap())
            .unwrap();
    assert_eq!(r["status"], "error");
    assert!(r["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("bad-scenario.yaml:6:"));
    for f in ["serving.html", "serving-junit.xml"] {
        let text = std::fs::read_to_string(reports.join(f)).unwrap();
        assert!(text.contains("max_new_tokens"), "{f}: {text}");
    }
}

#[test]
fn reports_that_cannot_be_written_keep_the_verdict_and_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-scenario.yaml");
    std::fs::write(&path, "version: 1\nslots: 0\n").unwrap();
    // Root ignores permissions: a directory below a regular file cannot be made.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let o = parity(
        &repo(),
        &[
            "serve",
            path.to_str().unwrap(),
            "--out-dir",
            blocker.join("reports").to_str().unwrap(),
        ],
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        out.contains("bad-scenario.yaml"),
        "the verdict is printed: {out}"
    );
    assert!(
        err.contains("reports not written") && err.contains("not-a-dir"),
        "{err}"
    );
    assert!(err.contains("the run itself: input error; exit 2"), "{err}");
}
