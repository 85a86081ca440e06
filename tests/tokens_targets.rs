//! `parity tokens --target cpu,vulkan` on examples/tokens (the toy LM; Vulkan
//! on Mesa's lavapipe, which is deterministic on this model): every token
//! case on each target, per-target verdicts, and a case that fails on one
//! target labelled the way stage triangulation labels an output.

mod common;

use common::{compile_vmfb, example_copy, parity_with_record, with_targets};
use serde_json::Value;
use std::path::Path;

const CPU: &str = "    cpu: {backend: llvm-cpu, device: local-task}\n";

/// `parity tokens SPEC --target cpu,vulkan --no-localise EXTRA`: exit code, stdout, record.
fn tokens(dir: &Path, spec: &str, extra: &[&str]) -> (i32, String, Value) {
    let out = dir.join("out");
    let mut args = vec![
        "tokens",
        spec,
        "--target",
        "cpu,vulkan",
        "--no-localise",
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    parity_with_record(dir, &args, &out.join("tokens.json"))
}

/// The case record of `name` on `target`.
fn case<'r>(r: &'r Value, name: &str, target: &str) -> &'r Value {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == name && c["target"] == target)
        .unwrap_or_else(|| panic!("no case {name} @{target} in {r:#}"))
}

#[test]
fn every_case_runs_on_each_target_and_a_clean_model_agrees_on_both() {
    let dir = example_copy("tokens");
    let vulkan = "    vulkan: {backend: vulkan-spirv, device: vulkan}\n";
    with_targets(dir.path(), "stages.yaml", &format!("{CPU}{vulkan}"));
    let (code, stdout, r) = tokens(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r["targets"], serde_json::json!(["cpu", "vulkan"]));
    assert_eq!(
        r["cases"].as_array().unwrap().len(),
        6,
        "3 cases x 2 targets"
    );
    for name in ["clean_a", "clean_b"] {
        let (cpu, vk) = (case(&r, name, "cpu"), case(&r, name, "vulkan"));
        assert_eq!(cpu["status"], "pass", "{name}");
        assert_eq!(vk["status"], "pass", "{name}");
        assert_eq!(vk["greedy_tokens"], cpu["oracle_tokens"], "{name}");
        let d = vk["summary"]["max_abs_delta_logit"].as_f64().unwrap();
        assert!(d < 1e-4, "{name} on vulkan: max |dlogit| {d}");
    }
    // The near tie flips at step 2 on both targets, not counted: no row.
    for target in ["cpu", "vulkan"] {
        let d = &case(&r, "near_tie", target)["first_divergent_token"];
        assert_eq!(
            (d["step"].as_u64(), &d["verdict"]),
            (Some(2), &Value::from("near_tie"))
        );
    }
    assert!(r.get("triangulation").is_none(), "{r:#}");
    assert!(
        stdout.contains("case clean_a @vulkan (P = 4): pass")
            && stdout.contains("token triangulation (cpu, vulkan):")
            && stdout.contains("every case passes on every target"),
        "{stdout}"
    );
}

#[test]
fn a_case_that_fails_on_one_target_only_is_backend_specific() {
    // The Vulkan target runs its own prebuilt module, the faulty model
    // (model_fault.mlir, a wrong attention window in layer 1) compiled for
    // vulkan-spirv: a backend that computes something else than the port.
    let dir = example_copy("tokens");
    let mlir = std::fs::read(dir.path().join("model_fault.mlir")).unwrap();
    let vmfb = compile_vmfb(
        "model_fault.mlir",
        &mlir,
        "vulkan-spirv",
        &["--iree-input-type=stablehlo"],
    );
    std::fs::write(dir.path().join("fault.vulkan.vmfb"), vmfb).unwrap();
    let vulkan = "    vulkan:\n      backend: vulkan-spirv\n      device: vulkan\n      modules: {lm: fault.vulkan.vmfb}\n";
    with_targets(dir.path(), "stages.yaml", &format!("{CPU}{vulkan}"));
    let (code, stdout, r) = tokens(dir.path(), "stages.yaml", &["--case", "clean_a"]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(case(&r, "clean_a", "cpu")["status"], "pass");
    let vk = case(&r, "clean_a", "vulkan");
    assert_eq!(vk["status"], "fail");
    assert_eq!(vk["first_divergent_token"]["step"], 10);
    let rows = r["triangulation"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["case"], "clean_a");
    assert_eq!(rows[0]["label"], "backend-specific");
    assert_eq!(rows[0]["off"], serde_json::json!(["vulkan"]));
    // The first divergent token is the failing target's.
    assert_eq!(r["divergence_target"], "vulkan");
    assert_eq!(r["first_divergent_token"]["step"], 10);
    assert!(
        stdout.contains("first divergent token @vulkan: case clean_a, step 10")
            && stdout.contains("case clean_a: backend-specific (cpu pass; vulkan fail at step 10"),
        "{stdout}"
    );
}

#[test]
fn a_case_that_fails_the_same_way_on_every_target_is_the_port() {
    let dir = example_copy("tokens");
    let vulkan = "    vulkan: {backend: vulkan-spirv, device: vulkan}\n";
    with_targets(dir.path(), "stages-fault.yaml", &format!("{CPU}{vulkan}"));
    let (code, stdout, r) = tokens(dir.path(), "stages-fault.yaml", &[]);
    assert_eq!(code, 1, "{stdout}");
    let (cpu, vk) = (case(&r, "clean_a", "cpu"), case(&r, "clean_a", "vulkan"));
    assert_eq!(cpu["first_divergent_token"]["step"], 10);
    assert_eq!(vk["first_divergent_token"]["step"], 10);
    assert_eq!(cpu["greedy_tokens"], vk["greedy_tokens"]);
    assert_eq!(cpu["teacher_forced_tokens"], vk["teacher_forced_tokens"]);
    let rows = r["triangulation"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["label"], "port");
    assert_eq!(rows[0]["off"], serde_json::json!(["cpu", "vulkan"]));
    assert_eq!(r["divergence_target"], "cpu");
}

#[test]
fn an_unknown_target_in_the_list_is_exit_2_before_anything_runs() {
    let dir = example_copy("tokens");
    with_targets(dir.path(), "stages.yaml", CPU);
    let (code, stdout, r) = tokens(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stdout}");
    assert!(r["cases"].as_array().unwrap().is_empty(), "{r:#}");
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{r:#}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("no target named `vulkan`"),
        "{r:#}"
    );
}
