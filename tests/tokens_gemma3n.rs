//! `parity tokens` on the bundled Gemma3n subject's language model (JAX ->
//! StableHLO on IREE against mlx-vlm 0.7.10's own language model, fed by the
//! oracle's audio path): the patched oracle token for token, the as-shipped
//! oracle's two bugs as two findings, the late-divergence fault, bf16.

mod common;

use common::{parity, repo};
use serde_json::Value;

/// `parity tokens SPEC` from the repository root; (exit code, stdout, record).
fn tokens(spec: &str) -> (i32, String, Value) {
    let out = tempfile::tempdir().unwrap();
    let o = parity(
        &repo(),
        &["tokens", spec, "--out-dir", out.path().to_str().unwrap()],
    );
    let stdout = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.path().join("tokens.json")).expect("tokens.json");
    (
        o.status.code().unwrap_or(-1),
        stdout,
        serde_json::from_str(&text).unwrap(),
    )
}

#[test]
fn f32_production_matches_the_patched_oracle_token_for_token_in_both_modes() {
    let (code, stdout, r) = tokens("stages.yaml");
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r["schema"], "parity.tokens/1");
    assert!(r["first_divergent_token"].is_null(), "{stdout}");
    let cases = r["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, ["full128", "two_clips", "text_short", "near_tie"]);
    for c in cases {
        let oracle = &c["oracle_tokens"];
        assert_eq!(oracle.as_array().unwrap().len(), 24, "{}", c["case"]);
        assert_eq!(&c["greedy_tokens"], oracle, "{}", c["case"]);
        assert_eq!(&c["teacher_forced_tokens"], oracle, "{}", c["case"]);
    }
}

#[test]
fn as_shipped_mlx_vlm_gives_two_findings_and_the_truth_sides_with_production() {
    let (code, stdout, r) = tokens("subject/gemma3n/tokens-as-shipped.yaml");
    assert_eq!(code, 1, "{stdout}");
    let first = &r["first_divergent_token"];
    assert_eq!(first["case"], "full128");
    assert_eq!(first["step"], 0);
    assert_eq!(first["verdict"], "divergent", "{stdout}");
    // The f64 truth (HF semantics) picks production's token: the oracle is wrong.
    assert_eq!(first["truth_token"], first["production_token"], "{first}");
    assert_ne!(first["oracle_token"], first["production_token"]);
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{stdout}");
    // 1: the unscaled prefill text rows, before any layer.
    assert_eq!(findings[0]["step"], 0);
    assert_eq!(
        findings[0]["first_divergent_layer"]["stage"], "embed",
        "{stdout}"
    );
    // 2: the KV-shared layers' query rope at the donor's advanced offset:
    // layer 4 is the first KV-shared layer; layers 0-3 agree.
    assert!(findings[1]["step"].as_u64().unwrap() >= 1, "{stdout}");
    assert_eq!(
        findings[1]["first_divergent_layer"]["stage"], "layer_4",
        "{stdout}"
    );
    // The op: the query rope's position, which matches the oracle only when
    // offset by +1 (the donor layer's advanced cache offset at decode).
    let op = &findings[1]["first_divergent_op"];
    assert_eq!(op["kind"], "op", "{op}");
    assert_eq!(op["evidence"], "repair", "{op}");
    assert_eq!(
        op["loc"], "layer_4/attention/q_rope/convert_element_type",
        "{op}"
    );
    let notes = findings[1]["notes"].to_string();
    assert!(notes.contains("offset by +1"), "{notes}");
    // The layer's isolated f64 truth (on the oracle's own inputs) sides with
    // production: the oracle is wrong there.
    let v = &findings[1]["layer_vs_f64"];
    assert_eq!(v["wrong"], "oracle", "{v}");
    assert!(
        v["oracle_vs_truth"].as_f64().unwrap() > 1e4 * v["production_vs_truth"].as_f64().unwrap(),
        "{v}"
    );
    assert!(
        stdout.contains("who is wrong there: the oracle"),
        "{stdout}"
    );
    // The oracle lies far from its own truth: the truth is refused as a noise
    // source and production's perturbation gives the noise.
    let noise = &r["cases"][0]["reference_noise"];
    assert_eq!(noise["source"], "perturbation", "{noise}");
    assert!(noise["sources"][1]["value"].is_null(), "{noise}");
    assert!(
        noise["sources"][1]["detail"]
            .as_str()
            .unwrap()
            .starts_with("refused"),
        "{noise}"
    );
    // The hand-written step functions reproduce their calls bit for bit on
    // the calls' own inputs: prefill's chain reads `per_layer_inputs`, which
    // prefill takes as `hf_dense_ple` (on the oracle's own rows the chain's
    // logits differ by 4.1e-6: the input, not the function).
    for f in findings {
        let check = &f["chain_check"];
        assert_eq!(check["bit_identical"], true, "{check}");
    }
    assert_eq!(
        findings[0]["chain_check"]["inputs"][2],
        "`full128.s00/per_layer_inputs` <- prefill's oracle input `{case}/hf_dense_ple` (the one input of its dtype and shape; not equal to the oracle's)"
    );
    assert!(!stdout.contains("not trusted"), "{stdout}");
}

#[test]
fn the_late_divergence_fault_diverges_at_step_16_in_layer_2s_attention_mask() {
    let (code, stdout, r) = tokens("subject/gemma3n/faults/tokens-full_attention_window_32.yaml");
    assert_eq!(code, 1, "{stdout}");
    let first = &r["first_divergent_token"];
    assert_eq!(first["step"], 16, "{stdout}");
    assert_eq!(first["verdict"], "divergent", "{stdout}");
    // The truth's top-1 is the oracle's token, by far more than the reference
    // noise (the oracle's own distance from the truth).
    assert_eq!(first["noise_source"], "truth", "{first}");
    assert_eq!(first["rule"], "truth", "{first}");
    assert_eq!(first["truth_token"], first["oracle_token"], "{first}");
    assert!(
        first["truth_margin"].as_f64().unwrap() > 1e3 * first["noise"].as_f64().unwrap(),
        "{first}"
    );
    assert_eq!(r["first_divergent_layer"]["stage"], "layer_2", "{stdout}");
    // The injected mask is three ops (subtract, compare, and); two edits
    // disable it, on two of them (the subtract's operands swapped, the `and`
    // bypassed), so the repair search names one of the three or, when both
    // survive, none (ambiguous), listing only ops of the mask.
    let op = &r["first_divergent_op"];
    let in_mask = |l: &str| l.starts_with("layer_2/attention/mask/");
    if op["kind"] == "op" {
        assert!(op["loc"].as_str().is_some_and(in_mask), "{op}");
    } else {
        let notes = op["notes"].to_string();
        assert!(notes.contains("(ambiguous)"), "{op}");
        let listed: Vec<&str> = notes
            .split(" @ ")
            .skip(1)
            .filter_map(|t| t.split(" (").next())
            .collect();
        assert!(
            !listed.is_empty() && listed.iter().all(|l| in_mask(l)),
            "{listed:?}: {op}"
        );
    }
}

#[test]
fn bf16_storage_flips_a_near_tie_and_records_it() {
    let (code, stdout, r) = tokens("subject/gemma3n/stages-bf16.yaml");
    assert_eq!(code, 0, "near ties do not fail the gate\n{stdout}");
    let first = &r["first_divergent_token"];
    assert_eq!(first["case"], "full128", "{stdout}");
    assert_eq!(first["step"], 7, "{stdout}");
    assert_eq!(first["verdict"], "near_tie", "{stdout}");
    // The noise is the spec's `tokens.logits` max_abs, measured on this
    // known-good bf16 run; the truth's 5e-5 is the f32 oracle's.
    assert_eq!(first["noise_source"], "spec", "{first}");
    assert_eq!(first["noise"], 4.0, "{first}");
    assert_eq!(first["rule"], "truth", "{first}");
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "pass", "{}", c["case"]);
        assert_eq!(c["logits_gate"]["failed_steps"], serde_json::json!([]));
        let all = c["first_divergent_token"]
            .as_object()
            .into_iter()
            .map(|_| &c["first_divergent_token"]);
        for m in all.chain(c["later_mismatches"].as_array().unwrap()) {
            assert_eq!(m["verdict"], "near_tie", "{m}");
        }
    }
    assert!(stdout.contains("localised step: full128.s07"), "{stdout}");
}

/// A copy of the bundled spec (subject/gemma3n/stages.yaml, absolute
/// paths) whose text module is the committed one with `edit` applied: a hand
/// edit made here, so no fixture has to be regenerated.
fn edited_subject(edit: impl FnOnce(String) -> String) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::io::Read as _;
    let subject = repo().join("subject/gemma3n");
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(subject.join("gemma3n_text_f32.mlir.gz")).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("text.mlir");
    std::fs::write(&module, edit(text)).unwrap();
    let abs = |p: &str| subject.join(p).display().to_string();
    let spec = std::fs::read_to_string(subject.join("stages.yaml"))
        .unwrap()
        .replace(
            "{mlir: gemma3n_audio_f32.mlir.gz}",
            &format!("{{mlir: {}}}", abs("gemma3n_audio_f32.mlir.gz")),
        )
        .replace(
            "{mlir: gemma3n_text_f32.mlir.gz}",
            &format!("{{mlir: {}}}", module.display()),
        )
        .replace(
            "[weights.safetensors]",
            &format!("[{}]", abs("weights.safetensors")),
        )
        .replace(
            "oracle: ../../oracle-dumps/gemma3n",
            &format!("oracle: {}", abs("../../oracle-dumps/gemma3n")),
        );
    let path = dir.path().join("edited.yaml");
    std::fs::write(&path, spec).unwrap();
    (dir, path)
}

/// `text` with the query of `function`'s attention scores (its one
/// `dot_general` batching [1] x [0], contracting [2] x [2]) times `factor`:
/// an attention scale error in that function alone.
fn scale_query(text: String, function: &str, factor: f64) -> String {
    let start = text
        .find(&format!("func.func public @{function}("))
        .unwrap();
    let end = start + text[start..].find("\n  func.func ").unwrap();
    let body = &text[start..end];
    let marker = "batching_dims = [1] x [0], contracting_dims = [2] x [2]";
    assert_eq!(body.matches(marker).count(), 1, "{function}'s scores");
    let at = body.find(marker).unwrap();
    let line_start = body[..at].rfind('\n').unwrap() + 1;
    let line_end = at + body[at..].find('\n').unwrap();
    let line = &body[line_start..line_end];
    let query = line
        .split("dot_general ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let ty = line
        .split(": (")
        .nth(1)
        .unwrap()
        .split(", ")
        .next()
        .unwrap();
    let edited = format!(
        "    %q_fault = stablehlo.constant dense<{factor:?}> : {ty}\n    \
         %q_scaled = stablehlo.multiply {query}, %q_fault : {ty}\n{}",
        line.replacen(
            &format!("dot_general {query},"),
            "dot_general %q_scaled,",
            1
        )
    );
    format!(
        "{}{}{edited}{}{}",
        &text[..start],
        &body[..line_start],
        &body[line_end..],
        &text[end..]
    )
}

/// `parity tokens SPEC --case CASE`; (exit code, stdout, record).
fn tokens_case(spec: &std::path::Path, case: &str) -> (i32, String, Value) {
    let out = tempfile::tempdir().unwrap();
    let o = parity(
        &repo(),
        &[
            "tokens",
            spec.to_str().unwrap(),
            "--case",
            case,
            "--out-dir",
            out.path().to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(out.path().join("tokens.json")).expect("tokens.json");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        serde_json::from_str(&text).unwrap(),
    )
}

/// (case, step, first divergent layer, chain bit-identical) of a finding.
fn finding(f: &Value) -> (&str, u64, Option<&str>, Option<bool>) {
    (
        f["case"].as_str().unwrap(),
        f["step"].as_u64().unwrap(),
        f["first_divergent_layer"]["stage"].as_str(),
        f["chain_check"]["bit_identical"].as_bool(),
    )
}

/// An attention scale error in one decode layer (decode_layer_1's query
/// times 1.5, which `decode` calls): full128's first 9 tokens agree, step 9
/// flips and is divergent, localised to layer_1 by a trusted chain, whose
/// f64 truth names production wrong.
#[test]
fn an_attention_scale_error_in_one_decode_layer_fails_at_step_9_in_layer_1() {
    let (_dir, spec) = edited_subject(|t| scale_query(t, "decode_layer_1", 1.5));
    let (code, stdout, r) = tokens_case(&spec, "full128");
    assert_eq!(code, 1, "{stdout}");
    let c = &r["cases"][0];
    let agree = |k: &str| c[k].as_array().unwrap()[..9].to_vec();
    assert_eq!(agree("greedy_tokens"), agree("oracle_tokens"), "{stdout}");
    assert_eq!(r["first_divergent_token"]["step"], 9, "{stdout}");
    assert_eq!(r["first_divergent_token"]["verdict"], "divergent");
    let f = &r["findings"][0];
    assert_eq!(
        finding(f),
        ("full128", 9, Some("layer_1"), Some(true)),
        "{stdout}"
    );
    assert_eq!(f["layer_vs_f64"]["wrong"], "production", "{f}");
}

/// A prefill-only fault (layer_1_p18's query times 1.5, P = 18): no token
/// flips at step 0 but its logits fail the gate; step 0 is localised to
/// prefill's layer_1 by a trusted chain; decode, clean, is not blamed (its
/// layers pass on the oracle's caches).
#[test]
fn a_prefill_only_fault_fails_at_step_0_in_prefill_layer_1() {
    let (_dir, spec) = edited_subject(|t| scale_query(t, "layer_1_p18", 1.5));
    let (code, stdout, r) = tokens_case(&spec, "full128");
    assert_eq!(code, 1, "{stdout}");
    let gate = &r["cases"][0]["logits_gate"];
    assert_eq!(gate["failed_steps"][0], 0, "{gate}");
    let f = &r["findings"][0];
    assert_eq!(
        finding(f),
        ("full128", 0, Some("layer_1"), Some(true)),
        "{stdout}"
    );
    assert_eq!(f["logits_gate"], true);
    assert_eq!(f["chain_check"]["call"], "prefill");
    assert_eq!(f["layer_vs_f64"]["wrong"], "production", "{f}");
    for f in r["findings"].as_array().unwrap().iter().skip(1) {
        assert!(f["first_divergent_layer"].is_null(), "decode is clean: {f}");
    }
}

/// A fault in `decode` alone: an edit of decode's own body between two of
/// its layer calls (layer 2's hidden state times 1.02 before layer 3), in no
/// separately exported function. The step stages are slices of `decode`
/// itself (tools/fixtures/production/lm_specs.py), so the edit lies inside
/// the `layer_3` slice (from `layer_2` to `layer_3`): the run fails (exit 1)
/// at decode step 1 on the logits gate, the chain reproduces decode's logits
/// bit for bit on decode's own inputs, and the first divergent layer is
/// layer_3. Before the slices (separately exported step functions) the chain
/// was clean, computed something else than `decode`, and named no layer.
#[test]
fn a_fault_in_decode_alone_fails_at_step_1_in_layer_3_by_a_trusted_chain() {
    let call = "    %4:3 = call @decode_layer_3(%3#0, ";
    let (_dir, spec) = edited_subject(|t| {
        assert_eq!(t.matches(call).count(), 1, "decode's call of layer 3");
        t.replace(
            call,
            "    %cst_fault = stablehlo.constant dense<1.020000e+00> : tensor<4x1x1x48xf32>\n    \
             %fault = stablehlo.multiply %3#0, %cst_fault : tensor<4x1x1x48xf32>\n    \
             %4:3 = call @decode_layer_3(%fault, ",
        )
    });
    let (code, stdout, r) = tokens_case(&spec, "text_short");
    assert_eq!(code, 1, "{stdout}");
    let f = &r["findings"][0];
    assert_eq!(
        finding(f),
        ("text_short", 1, Some("layer_3"), Some(true)),
        "{stdout}"
    );
    assert_eq!(f["chain_check"]["call"], "decode", "{f}");
    assert_eq!(f["chain_check"]["max_abs"], 0.0, "{f}");
    assert_eq!(f["layer_vs_f64"]["wrong"], "production", "{f}");
    // Bisect names the inserted multiply itself (repair evidence: bypassing
    // it makes the layer match the oracle), paired with the next op it feeds.
    let op = &f["first_divergent_op"];
    assert_eq!(
        (op["kind"].as_str(), op["op_name"].as_str()),
        (Some("op"), Some("stablehlo.multiply")),
        "{op}"
    );
    assert!(!stdout.contains("not trusted"), "{stdout}");
    // Mutation: no token flips, so with the old run-measured noise (the
    // largest |Δlogit| of the agreeing steps, every one carrying the fault)
    // every step would pass the gate and the run would be green. Measured
    // with that noise patched into src/tokens/case.rs: exit 0.
    let steps = r["cases"][0]["steps"].as_array().unwrap();
    assert!(r["cases"][0]["first_divergent_token"].is_null(), "{stdout}");
    let delta = |s: &Value| s["max_abs_delta_logit"].as_f64().unwrap();
    let old = steps
        .iter()
        .filter(|s| s["top1_agree"] == true)
        .map(delta)
        .fold(0.0, f64::max);
    assert!(
        steps
            .iter()
            .all(|s| delta(s) <= parity_record::NOISE_GATE_FACTOR * old),
        "old noise {old}"
    );
    let reference = r["cases"][0]["reference_noise"]["value"].as_f64().unwrap();
    assert!(old > 1e3 * reference, "{old} vs {reference}");
}
