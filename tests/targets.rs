//! Production targets (`subject.targets`, `--target`) and the preflight that
//! checks a target's device before anything runs, end to end on the real
//! binary and IREE runtime.

mod common;

use common::{basic_copy, check};
use std::path::Path;

const LEGACY: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";

/// Replaces the basic example's `target_backend` / `driver` pair with `targets`.
fn with_targets(dir: &Path, targets: &str) {
    let path = dir.join("stages.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(LEGACY), "examples/basic/stages.yaml changed");
    std::fs::write(&path, text.replacen(LEGACY, targets, 1)).unwrap();
}

/// The one error of a run that stopped before any stage, and the record.
fn only_error(record: &serde_json::Value) -> String {
    assert_eq!(record["status"], "error", "{record}");
    assert!(
        record["stages"].as_array().unwrap().is_empty(),
        "nothing ran: {record}"
    );
    let errors = record["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "one message, not one per stage: {record}");
    assert_eq!(errors[0]["kind"], "input");
    errors[0]["message"].as_str().unwrap().to_string()
}

#[test]
fn a_target_is_selected_by_name_and_the_first_is_the_default() {
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    sync: {backend: llvm-cpu, device: local-sync}\n    task: {backend: llvm-cpu, device: local-task}\n",
    );
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 0, "{stderr}");
    let default_run = record.unwrap();
    let (code, _, stderr, record) = check(
        dir.path(),
        "stages.yaml",
        &["--mode", "isolated", "--target", "task"],
    );
    assert_eq!(code, 0, "{stderr}");
    let task_run = record.unwrap();
    // Same backend and flags: the same artifacts, the same numbers on either device.
    let metrics = |r: &serde_json::Value| {
        r["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].clone(),
                    s["outputs"][0]["metrics"]["max_abs"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(metrics(&default_run), metrics(&task_run));
    assert_eq!(metrics(&default_run).len(), 6);
}

#[test]
fn an_unknown_target_is_exit_2_naming_the_spec_targets() {
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    sync: {backend: llvm-cpu, device: local-sync}\n",
    );
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &["--target", "gb10"]);
    assert_eq!(code, 2, "{stderr}");
    let message = only_error(&record.unwrap());
    assert!(
        message.contains("no target named `gb10`") && message.contains("cpu, sync"),
        "{message}"
    );
}

#[test]
fn a_driver_that_is_not_built_in_is_one_exit_2_before_anything_runs() {
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    amd: {backend: rocm, device: hip}\n",
    );
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stderr}");
    let message = only_error(&record.unwrap());
    assert!(
        message.contains("stages.yaml:")
            && message.contains("target `amd`")
            && message.contains("device `hip`")
            && message.contains("local-sync, local-task, vulkan, cuda"),
        "{message}"
    );
}

#[test]
fn a_cuda_target_without_a_cuda_device_is_one_exit_2_before_anything_runs() {
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    gb10: {backend: cuda, device: cuda, flags: [--iree-cuda-target=sm_121]}\n",
    );
    // The runtime has the CUDA driver: it loads libcuda.so at run time, so
    // only creating the device can fail. Where a CUDA device exists (a GPU
    // machine), this refusal cannot happen and the test has nothing to check.
    let spec = parity_spec::Spec::load(dir.path().join("stages.yaml")).unwrap();
    let target = parity::target::Target::select(&spec, None).unwrap();
    if target.runtime().is_ok() {
        eprintln!("a CUDA device exists here; nothing to refuse");
        return;
    }
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stderr}");
    let message = only_error(&record.unwrap());
    assert!(
        message.contains("target `gb10`")
            && message.contains("device `cuda`")
            && message.contains("no usable CUDA device"),
        "{message}"
    );
    // The driver is built in: IREE's message is not "no driver registered".
    assert!(!message.contains("no driver"), "{message}");
    // Said once, not once per stage.
    let printed = format!("{stdout}{stderr}");
    assert_eq!(printed.matches("device `cuda`").count(), 1, "{printed}");
}
