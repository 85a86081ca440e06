//! `parity tokens` end to end on examples/tokens (a two-layer toy LM exported
//! from JAX, numpy f32 oracle, f64 truth): real IREE compile and decode.

mod common;

use common::{example_copy, parity, repo};
use serde_json::Value;
use std::path::Path;

/// Runs `parity tokens <spec> <extra>` in `cwd` with reports in `<out>`;
/// returns the exit code, stdout, stderr and the record.
fn tokens(cwd: &Path, out: &Path, spec: &str, extra: &[&str]) -> (i32, String, String, Value) {
    let mut args = vec!["tokens", spec, "--out-dir", out.to_str().expect("utf8")];
    args.extend_from_slice(extra);
    let o = parity(cwd, &args);
    let text = std::fs::read_to_string(out.join("tokens.json")).expect("tokens.json written");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        serde_json::from_str(&text).expect("tokens.json is JSON"),
    )
}

fn example() -> std::path::PathBuf {
    repo().join("examples/tokens")
}

fn case<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

#[test]
fn clean_cases_match_every_token_in_both_modes() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, r) = tokens(
        &example(),
        out.path(),
        "stages.yaml",
        &["--case", "clean_a", "--case", "clean_b"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(r["schema"], "parity.tokens/1");
    assert_eq!(r["status"], "pass");
    assert!(r["first_divergent_token"].is_null());
    for name in ["clean_a", "clean_b"] {
        let c = case(&r, name);
        assert_eq!(c["oracle_tokens"].as_array().unwrap().len(), 16);
        assert_eq!(c["greedy_tokens"], c["oracle_tokens"], "{name}");
        assert_eq!(c["teacher_forced_tokens"], c["oracle_tokens"], "{name}");
        let s = &c["summary"];
        assert_eq!(s["top1_agreement"], 1.0);
        // f32 IREE against f32 numpy: rounding-level differences, not zero, not more.
        let d = s["max_abs_delta_logit"].as_f64().unwrap();
        assert!(d > 0.0 && d < 1e-4, "{name}: max |dlogit| {d}");
        assert!(s["max_kl"].as_f64().unwrap() < 1e-9);
        assert_eq!(c["steps"].as_array().unwrap().len(), 16);
    }
    assert!(
        stdout.contains("every token matches the oracle"),
        "{stdout}"
    );
    // Each mode alone also passes and leaves the other's stream empty.
    for (mode, empty) in [
        ("greedy", "teacher_forced_tokens"),
        ("teacher-forced", "greedy_tokens"),
    ] {
        let (code, _, stderr, r) = tokens(
            &example(),
            out.path(),
            "stages.yaml",
            &["--case", "clean_a", "--mode", mode],
        );
        assert_eq!(code, 0, "{mode}: {stderr}");
        assert_eq!(case(&r, "clean_a")[empty], Value::Array(vec![]), "{mode}");
    }
}

#[test]
fn near_tie_is_named_and_passes_unless_exact_tokens() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, r) = tokens(
        &example(),
        out.path(),
        "stages.yaml",
        &["--case", "near_tie"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let d = &r["first_divergent_token"];
    assert_eq!(d["case"], "near_tie");
    assert_eq!(d["step"], 2);
    assert_eq!(d["verdict"], "near_tie");
    assert_eq!(d["counted"], false);
    assert_eq!(
        (d["production_token"].as_i64(), d["oracle_token"].as_i64()),
        (Some(30), Some(31))
    );
    // The oracle's two logits are 1 f32 ULP apart, the production's tie exactly.
    assert_eq!(d["oracle_gap_ulp"], 1);
    assert_eq!(d["production_gap_ulp"], 0);
    // The noise is the reference's: the oracle's own distance from the f64
    // truth (the spec has no `tokens.logits` tolerance), never the run's.
    assert_eq!(d["noise_source"], "truth");
    assert_eq!(d["noise_steps"], serde_json::json!([]));
    let noise = case(&r, "near_tie")["reference_noise"].clone();
    assert_eq!(noise["source"], "truth");
    assert_eq!(d["noise"], noise["value"]);
    let n = d["noise"].as_f64().unwrap();
    assert!(n > 1e-7 && n < 1e-5, "{noise}");
    let sources: Vec<&str> = noise["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["spec", "truth", "perturbation"]);
    assert!(
        noise["sources"][2]["value"].as_f64().unwrap() > 0.0,
        "{noise}"
    );
    // The truth decides: its two logits lie within the noise of each other.
    assert_eq!(d["rule"], "truth");
    assert_eq!(d["truth_token"], 30);
    assert!(d["truth_margin"].as_f64().unwrap() < 0.0);
    assert!(d["truth_margin"].as_f64().unwrap().abs() <= n);
    // Every step's logits pass the gate.
    let gate = &case(&r, "near_tie")["logits_gate"];
    assert_eq!(gate["failed_steps"], serde_json::json!([]), "{gate}");
    assert_eq!(gate["steps"], 16);
    assert_eq!(d["oracle_top_k"].as_array().unwrap().len(), 5);
    // Every later teacher-forced flip is judged too, and all are near ties.
    let later = case(&r, "near_tie")["later_mismatches"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!later.is_empty());
    assert!(later.iter().all(|m| m["verdict"] == "near_tie"));
    // The step's layers all agree: no layer is named.
    assert!(r["first_divergent_layer"].is_null());
    assert!(
        r["notes"][0].as_str().unwrap().contains("near_tie.s02"),
        "{}",
        r["notes"]
    );
    assert!(stdout.contains("near_tie (not counted)"), "{stdout}");

    let (code, _, _, r) = tokens(
        &example(),
        out.path(),
        "stages-exact.yaml",
        &["--no-localise"],
    );
    assert_eq!(code, 1);
    assert_eq!(r["status"], "fail");
    assert_eq!(r["first_divergent_token"]["verdict"], "near_tie");
    assert_eq!(r["first_divergent_token"]["counted"], true);
}

#[test]
fn late_fault_is_divergent_at_step_10_and_localised_to_layer_1() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, r) = tokens(&example(), out.path(), "stages-fault.yaml", &[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(r["status"], "fail");
    let c = case(&r, "clean_a");
    let (g, o) = (
        c["greedy_tokens"].as_array().unwrap(),
        c["oracle_tokens"].as_array().unwrap(),
    );
    assert_eq!(g[..10], o[..10], "the first 10 tokens agree");
    assert_ne!(g[10], o[10]);
    let d = &r["first_divergent_token"];
    assert_eq!(
        (d["step"].as_u64(), d["position"].as_u64()),
        (Some(10), Some(13))
    );
    assert_eq!(d["verdict"], "divergent");
    assert_eq!(d["counted"], true);
    assert_eq!(d["mode"], "teacher-forced");
    // The truth's top-1 is the oracle's token by far more than the reference noise.
    assert_eq!(d["noise_source"], "truth");
    assert_eq!(d["rule"], "truth");
    assert_eq!(d["truth_token"], d["oracle_token"]);
    assert!(d["truth_margin"].as_f64().unwrap() > 1e4 * d["noise"].as_f64().unwrap());
    // Steps before the window is crossed (position 8) are rounding-level.
    let steps = c["steps"].as_array().unwrap();
    assert!(steps[4]["max_abs_delta_logit"].as_f64().unwrap() < 1e-4);
    assert!(steps[10]["kl"].as_f64().unwrap() > 0.01);
    let layer = &r["first_divergent_layer"];
    assert_eq!(layer["stage"], "layer_1");
    assert_eq!(layer["case"], "clean_a.s10");
    assert_eq!(layer["mode"], "isolated");
    assert_eq!(r["localisation"]["step_case"], "clean_a.s10");
    assert_eq!(r["localisation"]["run"]["schema"], "parity.run-record/2");
    // The hand-written step functions (decode_embed, decode_layer_i, head)
    // live in the faulty module beside `decode` and, run chained on decode's
    // own inputs of step 10 (its caches for the chain's `k_all`/`v_all`),
    // give decode's logits bit for bit: the localisation is trusted.
    let check = &r["findings"][0]["chain_check"];
    assert_eq!(check["bit_identical"], true, "{check}");
    assert_eq!(check["max_abs"], 0.0);
    assert_eq!(
        check["inputs"][2],
        "`clean_a.s10/k_all` <- decode's state `k_cache` (the nearest in value of 2 step inputs of its dtype and shape)"
    );
    assert!(stdout.contains("step chain: reproduces `decode`'s logits bit for bit"));
    let op = &r["first_divergent_op"];
    assert!(op["kind"] == "op" || op["kind"] == "region", "{op}");
    assert_eq!(op["stage"], "layer_1");
    // The fault is the window's mask: a semantic difference the f64 shadow
    // cannot name, so bisect stops at the region ending at the masked scores,
    // which holds the mask's compare and select.
    assert_eq!(op["kind"], "region", "{op}");
    assert_eq!(
        op["region"]["failing"],
        "clean_a.s10/layer_1_attention_masked"
    );
    let ops = op["region"]["op_list"].as_array().unwrap();
    assert!(
        ops.iter().any(|o| o
            .as_str()
            .unwrap()
            .contains("stablehlo.select @ layer_1/attention/masked")),
        "{ops:?}"
    );
    assert!(
        stdout.contains("first divergent layer: layer_1"),
        "{stdout}"
    );

    // Every report is written, and `parity report` re-renders the record.
    let html = std::fs::read_to_string(out.path().join("tokens.html")).unwrap();
    assert!(
        html.contains("class=\"mismatch\"") && html.contains("<svg"),
        "html"
    );
    let junit = std::fs::read_to_string(out.path().join("tokens-junit.xml")).unwrap();
    assert!(
        junit.contains("<failure") && junit.contains("step 10"),
        "{junit}"
    );
    let again = parity(out.path(), &["report", "tokens.json"]);
    assert_eq!(again.status.code(), Some(1));
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("first divergent token: case clean_a, step 10"),
        "{text}"
    );
}

#[test]
fn bad_input_is_exit_2_naming_the_tensor_and_other_cases_still_run() {
    let dir = example_copy("tokens");
    let manifest = dir.path().join("oracle/manifest.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["tensors"]
        .as_object_mut()
        .unwrap()
        .remove("clean_a/logits");
    std::fs::write(&manifest, serde_json::to_string(&m).unwrap()).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, _, r) = tokens(
        dir.path(),
        &out,
        "stages.yaml",
        &["--case", "clean_a", "--case", "clean_b", "--mode", "greedy"],
    );
    assert_eq!(code, 2, "{stdout}");
    assert_eq!(case(&r, "clean_a")["status"], "error");
    let msg = case(&r, "clean_a")["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("clean_a/logits"), "{msg}");
    assert_eq!(case(&r, "clean_b")["status"], "pass");

    // A decode argument the compiled function refuses: the spec's line is named.
    let spec = std::fs::read_to_string(dir.path().join("stages.yaml")).unwrap();
    let bad = spec.replace(
        "{position: {dtype: i32, shape: []}}",
        "{position: {dtype: i64, shape: []}}",
    );
    std::fs::write(dir.path().join("bad.yaml"), bad).unwrap();
    let (code, _, _, r) = tokens(dir.path(), &out, "bad.yaml", &["--case", "clean_b"]);
    assert_eq!(code, 2);
    let msg = case(&r, "clean_b")["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("bad.yaml:") && msg.contains("argument 1 of `lm.decode`"),
        "{msg}"
    );

    // A spec mistake is exit 2 at its line and column, with a record written.
    let typo = spec.replace("{state: v_cache}", "{state: v_cach}");
    std::fs::write(dir.path().join("typo.yaml"), typo).unwrap();
    let (code, _, _, r) = tokens(dir.path(), &out, "typo.yaml", &[]);
    assert_eq!(code, 2);
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("typo.yaml:") && msg.contains("state `v_cach`"),
        "{msg}"
    );

    // `parity check` refuses a token-only spec instead of passing zero stages.
    let o = parity(
        dir.path(),
        &["check", "stages.yaml", "--out-dir", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("run it with `parity tokens`"));

    // A spec without a tokens: section.
    let (code, _, _, r) = tokens(&repo().join("examples/basic"), &out, "stages.yaml", &[]);
    assert_eq!(code, 2);
    assert!(r["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("no `tokens:` section"));
}

/// Issue 28: `prompt_length: "30"` for a 4-token prompt on the 24-position
/// toy passed with `--case` (exit 0, 14 of 16 greedy tokens wrong). It is
/// exit 2 naming the spec position, the case and the prompt's length; with
/// `context_length: 24` in the spec it is refused before anything compiles.
#[test]
fn a_prompt_length_past_the_prompt_or_the_context_is_exit_2() {
    let dir = example_copy("tokens");
    let out = dir.path().join("out");
    let spec = std::fs::read_to_string(dir.path().join("stages.yaml")).unwrap();
    let long = spec.replace("prompt_length: \"4\"", "prompt_length: \"30\"");
    assert_ne!(long, spec);
    std::fs::write(dir.path().join("long.yaml"), &long).unwrap();
    let (code, stdout, _, r) = tokens(dir.path(), &out, "long.yaml", &["--case", "clean_a"]);
    assert_eq!(code, 2, "{stdout}");
    let c = case(&r, "clean_a");
    assert_eq!(c["status"], "error");
    assert!(c["greedy_tokens"].as_array().unwrap().is_empty());
    let msg = c["errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("long.yaml:16:18")
            && msg.contains("case `clean_a` is 30")
            && msg.contains("`clean_a/prompt`")
            && msg.contains("at most 4 fit"),
        "{msg}"
    );

    let ctx = long.replace(
        "  max_new_tokens: 16\n",
        "  max_new_tokens: 16\n  context_length: 24\n",
    );
    std::fs::write(dir.path().join("ctx.yaml"), ctx).unwrap();
    let (code, _, _, r) = tokens(dir.path(), &out, "ctx.yaml", &["--case", "clean_a"]);
    assert_eq!(code, 2);
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("ctx.yaml:17:18")
            && msg.contains("past context_length 24")
            && msg.contains("at most 9 prompt tokens fit"),
        "{msg}"
    );
    assert!(r["compiler_revision"].is_null(), "{r:#}");
}

/// The steps before `step` whose top-1 agree, and the largest max |Δlogit|
/// among them: the noise parity used to measure on the run under test
/// (before the reference noise), for the mutation checks below.
fn run_measured_noise(steps: &[Value], step: usize) -> f64 {
    steps[..step]
        .iter()
        .filter(|s| s["top1_agree"] == true)
        .map(|s| s["max_abs_delta_logit"].as_f64().unwrap())
        .fold(0.0, f64::max)
}

#[test]
fn a_decode_attention_scale_error_fails_at_step_3_in_layer_1_and_is_no_near_tie() {
    // examples/tokens/model_scale.mlir: layer 1's decode attention scale is
    // 1.25 / sqrt(D) instead of 1 / sqrt(D); prefill is clean. Before the
    // reference noise this run exited 0: both flips of clean_a were near ties
    // against a noise of 0.91 measured on its own faulty steps, and its
    // localisation's "production is wrong" did not count.
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, r) = tokens(&example(), out.path(), "stages-scale.yaml", &[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(r["status"], "fail");
    let a = case(&r, "clean_a");
    assert_eq!(a["status"], "fail");
    let (g, o) = (
        a["greedy_tokens"].as_array().unwrap(),
        a["oracle_tokens"].as_array().unwrap(),
    );
    assert_eq!(g[..3], o[..3], "the first 3 tokens agree");
    assert_ne!(g[3], o[3]);
    let d = &r["first_divergent_token"];
    assert_eq!(
        (d["case"].as_str(), d["step"].as_u64()),
        (Some("clean_a"), Some(3))
    );
    assert_eq!(d["verdict"], "divergent", "{d}");
    assert_eq!(d["counted"], true);
    assert_eq!(d["rule"], "truth");
    assert_eq!(d["noise_source"], "truth");
    assert_eq!(d["truth_token"], d["oracle_token"]);
    let later = a["later_mismatches"].as_array().unwrap();
    assert_eq!(later.len(), 1, "{later:?}");
    assert_eq!(later[0]["step"], 5);
    assert_eq!(later[0]["verdict"], "divergent");
    // Every decode step's logits fail the gate, prefill's pass.
    let gate = &a["logits_gate"];
    let failed: Vec<u64> = gate["failed_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(failed, (1..16).collect::<Vec<u64>>(), "{gate}");
    // clean_b flips no token, but its logits move 10^5 times the clean
    // difference: the gate fails it.
    let b = case(&r, "clean_b");
    assert!(b["first_divergent_token"].is_null());
    assert_eq!(b["status"], "fail");
    assert_eq!(
        b["logits_gate"]["failed_steps"].as_array().unwrap().len(),
        15
    );
    let moved = b["summary"]["max_abs_delta_logit"].as_f64().unwrap();
    assert!(moved > 1e4 * b["reference_noise"]["value"].as_f64().unwrap());
    // Localised to the faulty layer, and the layer's truth names production.
    let layer = &r["first_divergent_layer"];
    assert_eq!(layer["stage"], "layer_1", "{stdout}");
    assert_eq!(layer["case"], "clean_a.s03");
    assert_eq!(r["layer_vs_f64"]["wrong"], "production");
    assert!(stdout.contains("case clean_a (P = 4): fail"), "{stdout}");
    assert!(stdout.contains("case clean_b (P = 4): fail"), "{stdout}");

    // Mutation: with the old run-measured noise in place of the reference
    // noise, the margins rule calls every flip a near tie and the gate passes
    // every step: the run would be green again. These checks fail if the
    // verdict regresses to a noise measured on the run it judges.
    let steps = a["steps"].as_array().unwrap();
    for m in std::iter::once(d).chain(later) {
        let s = m["step"].as_u64().unwrap() as usize;
        let old = run_measured_noise(steps, s);
        let (pm, om) = (
            m["production_margin"].as_f64().unwrap(),
            m["oracle_margin"].as_f64().unwrap(),
        );
        let (with_old, _) = parity::tokens::math::verdict_rule(pm, om, None, Some(old));
        assert_eq!(
            with_old,
            parity_record::TokenVerdict::NearTie,
            "step {s}: old noise {old}"
        );
        let (with_reference, _) =
            parity::tokens::math::verdict_rule(pm, om, None, m["noise"].as_f64());
        assert_eq!(
            with_reference,
            parity_record::TokenVerdict::Divergent,
            "step {s}"
        );
    }
    let old = run_measured_noise(steps, 16);
    assert!(steps
        .iter()
        .all(|s| s["max_abs_delta_logit"].as_f64().unwrap()
            <= parity_record::NOISE_GATE_FACTOR * old));
}

#[test]
fn a_prefill_only_fault_fails_though_no_token_flips() {
    // examples/tokens/model_prefill.mlir: layer 0's prefill attention scale is
    // 1.5 / sqrt(D); decode is clean but reads the prefill's caches. No token
    // flips; before the gate this run exited 0.
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, r) = tokens(&example(), out.path(), "stages-prefill.yaml", &[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let a = case(&r, "clean_a");
    assert!(a["first_divergent_token"].is_null(), "{stdout}");
    assert_eq!(a["greedy_tokens"], a["oracle_tokens"]);
    assert_eq!(a["status"], "fail");
    let gate = &a["logits_gate"];
    assert_eq!(gate["failed_steps"][0], 0, "{gate}");
    assert!(
        gate["first_failure"]
            .as_str()
            .unwrap()
            .starts_with("step 0: max |Δlogit|"),
        "{gate}"
    );
    assert_eq!(a["steps"][0]["logits_pass"], false);
    // The prefill step is a finding of its own (examples/tokens has no prefill chain).
    let f = &r["findings"][0];
    assert_eq!(
        (f["step"].as_u64(), f["logits_gate"].as_bool()),
        (Some(0), Some(true))
    );
    assert!(f["notes"][0]
        .as_str()
        .unwrap()
        .contains("no `tokens.step_stages.prefill`"));
    assert!(stdout.contains("case clean_a (P = 4): fail"), "{stdout}");
    assert!(
        !stdout.contains("every token matches the oracle"),
        "{stdout}"
    );
}
