//! `parity tokens` on examples/llama: a Llama-style decoder written in JAX,
//! prefill and decode exported as separate modules and called with `bind:`,
//! against mlx-lm's own llama model (the oracle recorded by
//! parity_mlx_recorder.record_generation). Real IREE. Each fault is a hand
//! edit of one exported module and must fail (exit 1) at the right step,
//! localised to the right layer through `slice:` stages of the faulty
//! function itself (no second copy of the model).

mod common;

use common::{parity, repo};
use serde_json::Value;

fn tokens(spec: &str) -> (i32, String, Value) {
    let out = tempfile::tempdir().unwrap();
    let o = parity(
        &repo().join("examples/llama"),
        &["tokens", spec, "--out-dir", out.path().to_str().unwrap()],
    );
    let text = std::fs::read_to_string(out.path().join("tokens.json")).expect("tokens.json");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        serde_json::from_str(&text).unwrap(),
    )
}

/// (case, step, first divergent layer) of every finding.
fn findings(r: &Value) -> Vec<(String, u64, Option<String>)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["case"].as_str().unwrap().to_string(),
                f["step"].as_u64().unwrap(),
                f["first_divergent_layer"]["stage"]
                    .as_str()
                    .map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn the_clean_modules_match_mlx_lm_token_for_token() {
    let (code, stdout, r) = tokens("stages.yaml");
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r["cases"].as_array().unwrap().len(), 3);
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "pass", "{}", c["case"]);
        assert_eq!(c["oracle_tokens"].as_array().unwrap().len(), 12);
        assert_eq!(c["greedy_tokens"], c["oracle_tokens"]);
        // f32 IREE against f32 mlx: rounding-level, under the spec's 2.4e-5.
        let d = c["summary"]["max_abs_delta_logit"].as_f64().unwrap();
        assert!(d > 0.0 && d < 2.4e-5, "{}: {d}", c["case"]);
        assert_eq!(c["reference_noise"]["source"], "spec");
    }
}

/// Layer 1's decode attention scale times 1.6: the first 4 tokens of `alpha`
/// agree, step 4 flips and is divergent; every decode step's logits fail the
/// gate; decode's own slices put it in layer_1.
#[test]
fn a_decode_attention_scale_error_fails_at_step_4_in_layer_1() {
    let (code, stdout, r) = tokens("stages-decode-scale.yaml");
    assert_eq!(code, 1, "{stdout}");
    let first = &r["first_divergent_token"];
    assert_eq!(
        (first["case"].as_str(), first["step"].as_u64()),
        (Some("alpha"), Some(4))
    );
    assert_eq!(first["verdict"], "divergent");
    assert_eq!(first["counted"], true);
    let alpha = &r["cases"][0];
    let stream = |k: &str| alpha[k].as_array().unwrap()[..5].to_vec();
    assert_eq!(stream("greedy_tokens")[..4], stream("oracle_tokens")[..4]);
    assert_ne!(stream("greedy_tokens")[4], stream("oracle_tokens")[4]);
    assert_eq!(
        alpha["logits_gate"]["failed_steps"][0], 1,
        "decode step 1 on"
    );
    assert_eq!(
        findings(&r)[0],
        ("alpha".into(), 4, Some("layer_1".into())),
        "{stdout}"
    );
    assert_eq!(r["first_divergent_layer"]["case"], "alpha.s04");
    assert!(
        stdout.contains("first divergent layer: layer_1"),
        "{stdout}"
    );
    // decode's own slices, run chained on decode's inputs of step 4 (its
    // token, position and caches), give decode's logits bit for bit.
    let check = &r["findings"][0]["chain_check"];
    assert_eq!(check["call"], "decode");
    assert_eq!(check["bit_identical"], true, "{check}");
    assert_eq!(check["max_abs"], 0.0);
    assert_eq!(check["ulps"], 0);
    let inputs: Vec<&str> = check["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(
        inputs,
        [
            "`alpha.s04/token` <- decode's token (by name)",
            "`alpha.s04/pos` <- decode's position (by name)",
            "`alpha.s04/k_cache` <- decode's state `k_cache` (by name)",
            "`alpha.s04/v_cache` <- decode's state `v_cache` (by name)",
        ]
    );
    assert!(
        stdout.contains("step chain: reproduces `decode`'s logits bit for bit"),
        "{stdout}"
    );
    assert!(!stdout.contains("not trusted"), "{stdout}");
}

/// The same fault, but the decode step stages slice the clean module: the
/// chain is not the function production ran, so its answer (no divergent
/// layer) is labelled not trusted; the divergence itself still fails.
#[test]
fn a_step_chain_that_is_not_decode_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let here = repo().join("examples/llama");
    let text = std::fs::read_to_string(here.join("stages-decode-scale.yaml")).unwrap();
    let abs = |p: &str| here.join(p).display().to_string();
    let (head, chain) = text.split_once("    decode:\n      - name: embed").unwrap();
    let spec = format!(
        "{head}    decode:\n      - name: embed{}",
        chain.replace("        module: decode\n", "        module: clean\n")
    )
    .replace("{mlir: ", &format!("{{mlir: {}/", here.display()))
    .replace(
        "    decode: {mlir:",
        &format!(
            "    clean: {{mlir: {}}}\n    decode: {{mlir:",
            abs("decode.mlir")
        ),
    )
    .replace("[../mlx-lm/", &format!("[{}/", abs("../mlx-lm")))
    .replace("oracle: oracle", &format!("oracle: {}", abs("oracle")));
    let path = dir.path().join("stages-chain-elsewhere.yaml");
    std::fs::write(&path, spec).unwrap();
    let (code, stdout, r) = tokens(path.to_str().unwrap());
    assert_eq!(code, 1, "the divergence stands: {stdout}");
    assert_eq!(r["first_divergent_token"]["step"], 4);
    let check = &r["findings"][0]["chain_check"];
    assert_eq!(check["bit_identical"], false, "{check}");
    let d = check["max_abs"].as_f64().unwrap();
    assert!(d > 0.01, "the scale fault moves decode's logits: {d}");
    assert!(
        stdout.contains(&format!(
            "localisation not trusted: the step chain computes something else than `decode` (max |Δ| {d:.4}"
        )),
        "{stdout}"
    );
}

/// Layer 0's decode RMS-norm epsilon (a fault in `decode` alone): alpha
/// flips at step 3, localised to layer_0 through decode's slices.
#[test]
fn a_fault_in_decode_alone_is_localised_to_its_layer() {
    let (code, stdout, r) = tokens("stages-decode-eps.yaml");
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(r["first_divergent_token"]["step"], 3);
    assert_eq!(findings(&r)[0], ("alpha".into(), 3, Some("layer_0".into())));
    assert_eq!(r["findings"][0]["chain_check"]["bit_identical"], true);
}

/// Layer 0's prefill attention scale: gamma's step 0 flips, localised to the
/// prefill's layer_0; decode, clean but fed prefill's caches, fails the gate
/// from step 1 and its layers (on the oracle's caches) all pass.
#[test]
fn a_prefill_only_fault_fails_at_step_0_in_layer_0() {
    let (code, stdout, r) = tokens("stages-prefill-scale.yaml");
    assert_eq!(code, 1, "{stdout}");
    let first = &r["first_divergent_token"];
    assert_eq!(
        (first["case"].as_str(), first["step"].as_u64()),
        (Some("gamma"), Some(0))
    );
    let f = findings(&r);
    assert_eq!(f[0], ("gamma".into(), 0, Some("layer_0".into())));
    assert_eq!((f[1].1, &f[1].2), (1, &None), "decode's layers are clean");
    // Both chains reproduce their call bit for bit, prefill's on the prompt.
    let check = |i: usize| &r["findings"][i]["chain_check"];
    assert_eq!(check(0)["call"], "prefill");
    assert_eq!(check(0)["bit_identical"], true, "{}", check(0));
    assert_eq!(check(1)["call"], "decode");
    assert_eq!(check(1)["bit_identical"], true, "{}", check(1));
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "fail", "{}", c["case"]);
    }
}
