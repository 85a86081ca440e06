//! The bundled subject end to end: the small-config Gemma3n audio path
//! (JAX/HF semantics exported to StableHLO, compiled and run by IREE) against
//! mlx-vlm's own implementation (the oracle) and a JAX x64 truth.

mod common;

use common::{check_to, repo, stage};
use serde_json::Value;

fn faults() -> Vec<Value> {
    let path = repo().join("subject/gemma3n/faults/faults.json");
    let text = std::fs::read_to_string(&path).expect("faults.json");
    let v: Value = serde_json::from_str(&text).expect("faults.json is JSON");
    v["faults"].as_array().expect("faults array").clone()
}

#[test]
fn embedded_default_f32_passes_every_stage_in_both_modes() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, record) = check_to(&repo(), "stages.yaml", out.path(), &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record_in(out.path()).or(record).expect("run.json");
    let stages = record["stages"].as_array().unwrap();
    // 30 stages (22 audio: per-stage entry functions plus the two pipeline functions; 8 language:
    // lm_embed, lm_layer_0..5, lm_head, the prefill) x 5 cases x 2 modes.
    assert_eq!(stages.len(), 300);
    assert!(stages.iter().all(|s| s["status"] == "pass"));
    let cases: std::collections::BTreeSet<_> =
        stages.iter().map(|s| s["case"].as_str().unwrap()).collect();
    assert_eq!(cases.len(), 5);
    // Weights stay on the device: each is uploaded once per run and target
    // (one runtime shared by both modes' threads), however many stages,
    // cases and modes read it.
    let uploads = &record["provenance"]["uploads"][0];
    assert_eq!(uploads["target"], "cpu");
    assert_eq!(uploads["runtimes"], 1);
    let n = |k: &str| {
        uploads[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k}: {uploads}"))
    };
    let (tensors, bytes) = weight_file();
    // Measured: 202 distinct weights (1.5 MB) read by the stages; with one
    // runtime per mode it was 404 uploads (3.0 MB) and 2206 reuses.
    assert_eq!(n("weight_uploads"), 202, "{uploads}");
    assert!(n("weight_uploads") <= tensors, "{uploads}");
    assert_eq!(n("weight_bytes"), 1_495_392, "{uploads}");
    assert!(n("weight_bytes") <= bytes, "{uploads}");
    // Every weight argument of the 300 stage runs: uploaded once or reused.
    assert_eq!(n("weight_uploads") + n("weight_reuses"), 2610, "{uploads}");
    assert!(
        n("weight_bytes_saved") > 10 * n("weight_bytes"),
        "{uploads}"
    );
    assert!(n("other_uploads") > 0 && n("other_bytes") > 0, "{uploads}");
    assert_eq!(n("parameter_loads"), 0, "{uploads}");
    shards_add_up(uploads);
}

/// The bundled gate in two shards: each shard uploads each weight it reads
/// once, and the shards' counts add up to the whole run's.
fn shards_add_up(whole: &Value) {
    let shard = |i: &str| {
        let out = tempfile::tempdir().unwrap();
        let (code, stdout, stderr, record) =
            check_to(&repo(), "stages.yaml", out.path(), &["--shard", i]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        record.expect("run.json")["provenance"]["uploads"][0].clone()
    };
    let (a, b) = (shard("1/2"), shard("2/2"));
    let n = |u: &Value, k: &str| u[k].as_u64().unwrap_or_else(|| panic!("{k}: {u}"));
    for part in [&a, &b] {
        assert_eq!(n(part, "runtimes"), 1, "{part}");
        assert!(
            n(part, "weight_uploads") <= n(whole, "weight_uploads"),
            "{part}"
        );
    }
    for k in ["other_uploads", "other_bytes"] {
        assert_eq!(n(&a, k) + n(&b, k), n(whole, k), "{k}: {a} {b} {whole}");
    }
    let calls = |u: &Value| n(u, "weight_uploads") + n(u, "weight_reuses");
    assert_eq!(calls(&a) + calls(&b), calls(whole), "{a} {b} {whole}");
}

/// Tensors in the bundled weights file and their data bytes (its safetensors header).
fn weight_file() -> (u64, u64) {
    let b = std::fs::read(repo().join("subject/gemma3n/weights.safetensors")).unwrap();
    let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, Value> = serde_json::from_slice(&b[8..8 + n]).unwrap();
    let tensors: Vec<&Value> = header
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .map(|(_, v)| v)
        .collect();
    let bytes = tensors
        .iter()
        .map(|v| v["data_offsets"][1].as_u64().unwrap() - v["data_offsets"][0].as_u64().unwrap())
        .sum();
    (tensors.len() as u64, bytes)
}

#[test]
fn text_embedding_scale_difference_is_visible_in_the_record() {
    // mlx-vlm 0.7.10's get_input_embeddings does not scale text rows by
    // sqrt(hidden) as HF does; production follows HF. The record shows the
    // oracle ~3.9 RMS from the f64 truth on `text_embeddings` and production at
    // f32 rounding. (`embeddings` is compared with the patched oracle's
    // language-model input `lm_embeddings`, which scales them as HF does.)
    let out = tempfile::tempdir().unwrap();
    let (code, _, _, _) = check_to(
        &repo(),
        "stages.yaml",
        out.path(),
        &[
            "--mode", "isolated", "--case", "full128", "--stage", "merge",
        ],
    );
    assert_eq!(code, 0);
    let record = record_in(out.path()).unwrap();
    let merge = stage(&record, "merge", "isolated");
    let emb = merge["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "text_embeddings")
        .expect("text_embeddings output");
    let m = &emb["metrics"];
    assert!(m["max_abs"].as_f64().unwrap() > 10.0, "{m}");
    let truth = &m["vs_f64"];
    assert!(truth["actual_vs_truth"].as_f64().unwrap() < 1e-5, "{truth}");
    assert!(
        truth["expected_vs_truth"].as_f64().unwrap() > 1.0,
        "{truth}"
    );
}

#[test]
fn bf16_variant_passes() {
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, _) = check_to(
        &repo(),
        "subject/gemma3n/stages-bf16.yaml",
        out.path(),
        &["-q"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record_in(out.path()).unwrap();
    assert_eq!(record["status"], "pass");
    assert_eq!(record["stages"].as_array().unwrap().len(), 300);
}

#[test]
fn every_injected_fault_is_the_first_divergence_and_propagates_when_chained() {
    let faults = faults();
    assert!(faults.len() >= 3, "at least three injected faults");
    for fault in faults {
        let spec = format!("subject/gemma3n/faults/{}", fault["spec"].as_str().unwrap());
        let out = tempfile::tempdir().unwrap();
        let (code, stdout, _, _) = check_to(&repo(), &spec, out.path(), &["-q"]);
        let name = fault["name"].as_str().unwrap();
        assert_eq!(code, 1, "{name}: {stdout}");
        let record = record_in(out.path()).unwrap();
        let first = &record["first_divergence"];
        assert_eq!(first["stage"], fault["stage"], "{name}: {first}");
        assert_eq!(first["output"], fault["output"], "{name}: {first}");
        assert_eq!(first["mode"], "isolated");
        // Every stage upstream of the fault passes in isolated mode.
        let stages = record["stages"].as_array().unwrap();
        let fault_stage = fault["stage"].as_str().unwrap();
        let iso: Vec<&Value> = stages.iter().filter(|s| s["mode"] == "isolated").collect();
        let pos = iso.iter().position(|s| s["name"] == fault_stage).unwrap();
        assert!(iso[..pos].iter().all(|s| s["status"] == "pass"), "{name}");
        // Chained: some stage after the fault that passes in isolation fails,
        // because it is fed the faulty production values.
        let propagated = stages.iter().any(|s| {
            s["mode"] == "chained"
                && s["status"] == "fail"
                && s["name"] != fault_stage
                && iso.iter().any(|i| {
                    i["name"] == s["name"] && i["case"] == s["case"] && i["status"] == "pass"
                })
        });
        assert!(
            propagated,
            "{name}: the error does not propagate downstream when chained"
        );
        let chained_first = record["chained_divergence"].as_array().unwrap();
        assert!(!chained_first.is_empty(), "{name}");
        eprintln!(
            "{name}: first divergence {}/{} (isolated); chained crossings: {}",
            first["stage"],
            first["output"],
            Value::Array(chained_first.clone())
        );
    }
}

fn record_in(dir: &std::path::Path) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("run.json")).ok()?;
    serde_json::from_str(&text).ok()
}
