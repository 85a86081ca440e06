//! `parity fuzz --target cpu,vulkan` on examples/masked (Vulkan on Mesa's
//! lavapipe, a real Vulkan driver on the CPU): every invariant's cases on
//! each target, every row naming its target, each case's outputs compared
//! between the targets, and an invariant whose outcome differs labelled the
//! way stage and token triangulation label an output.

mod common;

use common::{compile_vmfb, example_copy, parity_with_record, with_targets};
use serde_json::Value;
use std::path::Path;

const CPU: &str = "    cpu: {backend: llvm-cpu, device: local-task}\n";
const VULKAN: &str = "    vulkan: {backend: vulkan-spirv, device: vulkan}\n";

/// `parity fuzz SPEC --target cpu,vulkan --no-persist EXTRA`: exit code, text, record.
fn fuzz(dir: &Path, spec: &str, extra: &[&str]) -> (i32, String, Value) {
    let out = dir.join("out");
    let mut args = vec![
        "fuzz",
        spec,
        "--target",
        "cpu,vulkan",
        "--no-persist",
        "--out-dir",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    parity_with_record(dir, &args, &out.join("fuzz.json"))
}

/// The record of invariant `name` on `target`.
fn invariant<'r>(r: &'r Value, name: &str, target: &str) -> &'r Value {
    r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name && i["target"] == target)
        .unwrap_or_else(|| panic!("no invariant {name} @{target} in {r:#}"))
}

fn rows(r: &Value) -> Vec<(String, String)> {
    r["triangulation"].as_array().map_or_else(Vec::new, |rows| {
        rows.iter()
            .map(|row| {
                (
                    row["invariant"].as_str().unwrap().to_string(),
                    row["label"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    })
}

#[test]
fn a_correct_model_keeps_every_invariant_on_both_targets_and_they_agree() {
    let dir = example_copy("masked");
    with_targets(dir.path(), "fuzz.yaml", &format!("{CPU}{VULKAN}"));
    let (code, text, r) = fuzz(dir.path(), "fuzz.yaml", &["--cases", "4"]);
    assert_eq!(r["targets"], serde_json::json!(["cpu", "vulkan"]), "{text}");
    for target in ["cpu", "vulkan"] {
        for name in ["malformed", "pad_content", "batch_order", "lengths"] {
            let i = invariant(&r, name, target);
            assert_eq!(i["status"], "pass", "{name} @{target}: {i:#}\n{text}");
        }
    }
    // Every generated case's outputs were compared between the targets.
    let pad = invariant(&r, "pad_content", "vulkan");
    assert_eq!(pad["vs_first"]["target"], "cpu", "{pad:#}");
    assert!(pad["vs_first"]["cases"].as_u64().unwrap() >= 4, "{pad:#}");
    assert!(invariant(&r, "pad_content", "cpu")
        .get("vs_first")
        .is_none());
    // Every replayed seed names the target it ran on.
    let replayed = r["replayed"].as_array().unwrap();
    assert_eq!(replayed.len(), 2, "{r:#}");
    assert_eq!(
        (&replayed[0]["target"], &replayed[1]["target"]),
        (&"cpu".into(), &"vulkan".into())
    );
    assert_eq!(code, 0, "{text}");
    assert!(rows(&r).is_empty(), "{r:#}");
    assert!(
        text.contains("pad_content @vulkan")
            && text.contains("fuzz triangulation (cpu, vulkan):")
            && text.contains("every invariant has the same outcome on every target"),
        "{text}"
    );
}

#[test]
fn an_invariant_violated_on_one_target_only_is_backend_specific() {
    // The Vulkan target runs its own prebuilt module, the buggy masked mean
    // (model_bug.mlir: valid frames taken as the prefix 0..lengths) compiled
    // for vulkan-spirv: a backend that computes something else than the port.
    let dir = example_copy("masked");
    let mlir = std::fs::read(dir.path().join("model_bug.mlir")).unwrap();
    let vmfb = compile_vmfb(
        "model_bug.mlir",
        &mlir,
        "vulkan-spirv",
        &["--iree-input-type=stablehlo"],
    );
    std::fs::write(dir.path().join("bug.vulkan.vmfb"), vmfb).unwrap();
    let vulkan = "    vulkan:\n      backend: vulkan-spirv\n      device: vulkan\n      modules: {toy: bug.vulkan.vmfb}\n";
    with_targets(dir.path(), "fuzz.yaml", &format!("{CPU}{vulkan}"));
    let (code, text, r) = fuzz(
        dir.path(),
        "fuzz.yaml",
        &["--only", "pad_content", "--cases", "4"],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(invariant(&r, "pad_content", "cpu")["status"], "pass");
    assert_eq!(invariant(&r, "pad_content", "vulkan")["status"], "fail");
    let v = r["violations"].as_array().unwrap();
    assert_eq!(v.len(), 1, "{r:#}");
    assert_eq!(v[0]["target"], "vulkan");
    let row = &r["triangulation"][0];
    assert_eq!(row["invariant"], "pad_content", "{r:#}");
    assert_eq!(row["label"], "backend-specific");
    assert_eq!(row["off"], serde_json::json!(["vulkan"]));
    assert!(
        text.contains("VIOLATION @vulkan pad_content:")
            && text.contains(" --target vulkan\n")
            && text.contains(
                "invariant pad_content: backend-specific (cpu pass; vulkan fail at seed "
            )
            && text.contains("vulkan violates it, cpu keeps it: the backend, not the port"),
        "{text}"
    );
}

#[test]
fn an_invariant_violated_on_both_targets_is_labelled_from_both_sides() {
    let dir = example_copy("masked");
    with_targets(dir.path(), "fuzz-bug.yaml", &format!("{CPU}{VULKAN}"));
    let (code, text, r) = fuzz(
        dir.path(),
        "fuzz-bug.yaml",
        &["--only", "pad_content", "--cases", "4"],
    );
    assert_eq!(code, 1, "{text}");
    let (cpu, vk) = (
        invariant(&r, "pad_content", "cpu"),
        invariant(&r, "pad_content", "vulkan"),
    );
    assert_eq!(
        (&cpu["status"], &vk["status"]),
        (&"fail".into(), &"fail".into())
    );
    let v = r["violations"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{r:#}");
    assert_eq!(v[0]["seed"], v[1]["seed"], "the same first failing case");
    assert_eq!(
        rows(&r),
        vec![("pad_content".to_string(), "port".to_string())],
        "{text}"
    );
}

#[test]
fn an_unknown_target_in_the_list_is_exit_2_before_anything_runs() {
    let dir = example_copy("masked");
    with_targets(dir.path(), "fuzz.yaml", CPU);
    let (code, text, r) = fuzz(dir.path(), "fuzz.yaml", &[]);
    assert_eq!(code, 2, "{text}");
    assert!(r["invariants"].as_array().unwrap().is_empty(), "{r:#}");
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
