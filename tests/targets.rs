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

/// The stage record named `name` (the first of its modes).
fn stage<'r>(record: &'r serde_json::Value, name: &str) -> &'r serde_json::Value {
    record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage `{name}` in {record}"))
}

/// Runs `parity check` on the basic example with `targets` and `args`,
/// expecting the preflight's refusal: exit 2 and one error; returns it.
fn refused(targets: &str, args: &[&str]) -> String {
    let dir = basic_copy();
    with_targets(dir.path(), targets);
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", args);
    assert_eq!(code, 2, "{stderr}");
    let message = only_error(&record.unwrap());
    // Said once, not once per stage.
    let printed = format!("{stdout}{stderr}");
    assert_eq!(printed.matches(&message).count(), 1, "{printed}");
    message
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
    let message = refused(
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    sync: {backend: llvm-cpu, device: local-sync}\n",
        &["--target", "gb10"],
    );
    assert!(
        message.contains("no target named `gb10`") && message.contains("cpu, sync"),
        "{message}"
    );
}

#[test]
fn a_driver_that_is_not_built_in_is_one_exit_2_before_anything_runs() {
    let message = refused("  targets:\n    amd: {backend: rocm, device: hip}\n", &[]);
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
    // The runtime has the CUDA driver: it loads libcuda.so at run time, so
    // only creating the device can fail. Where a CUDA device exists (a GPU
    // machine), this refusal cannot happen and the test has nothing to check.
    if parity_iree::available_devices("cuda").is_ok_and(|d| !d.is_empty()) {
        eprintln!("a CUDA device exists here; nothing to refuse");
        return;
    }
    let message = refused(
        "  targets:\n    gb10: {backend: cuda, device: cuda, flags: [--iree-cuda-target=sm_121]}\n",
        &[],
    );
    assert!(
        message.contains("target `gb10`")
            && message.contains("device `cuda`")
            && message.contains("no usable CUDA device"),
        "{message}"
    );
    // The driver is built in: IREE's message is not "no driver registered".
    assert!(!message.contains("no driver"), "{message}");
}

#[test]
fn the_basic_example_runs_on_vulkan_over_lavapipe() {
    // Mesa's lavapipe (ci/setup.sh installs mesa-vulkan-drivers) is a real
    // Vulkan 1.3 driver on the CPU: the vulkan-spirv modules really run.
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    vulkan: {backend: vulkan-spirv, device: vulkan}\n",
    );
    let (code, _, stderr, record) = check(
        dir.path(),
        "stages.yaml",
        &["--mode", "isolated", "--target", "vulkan"],
    );
    let record = record.expect("run.json");
    let status = |name: &str| stage(&record, name)["status"].clone();
    // Within the tolerances measured on the CPU (docs/gpu.md).
    for name in [
        "layer_norm",
        "strided_conv",
        "scores",
        "masked_softmax",
        "proj_bf16",
    ] {
        assert_eq!(status(name), "pass", "{name} on vulkan: {stderr}");
    }
    // IREE 3.13's default Vulkan target has no bf16 storage: `attend` (bf16
    // arguments) does not compile for it, an execution error for that stage
    // only, naming the function and the backend.
    assert_eq!(status("attend"), "error");
    assert_eq!(code, 3, "{stderr}");
    let message = stage(&record, "attend")["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("function @attend") && message.contains("vulkan-spirv"),
        "{message}"
    );
}

#[test]
fn cuda_modules_compile_here_and_a_module_for_another_device_is_refused_before_anything_runs() {
    // CUDA compiles without a GPU or toolkit (PTX embedded), for a GB10
    // (sm_121) and for Ada/Hopper PTX (sm_89).
    let dir = basic_copy();
    let compiler = parity_iree::IreeCompiler::load(None).expect("the IREE compiler");
    let mlir = std::fs::read(dir.path().join("model.mlir")).unwrap();
    for sm in ["sm_121", "sm_89"] {
        let options = parity_iree::CompileOptions::new(
            "cuda".to_string(),
            vec![
                "--iree-input-type=stablehlo".to_string(),
                format!("--iree-cuda-target={sm}"),
            ],
        );
        let vmfb = compiler
            .compile("model.mlir", &mlir, &options)
            .unwrap_or_else(|e| panic!("cuda {sm}: {e}"));
        std::fs::write(dir.path().join(format!("model.{sm}.vmfb")), vmfb).unwrap();
    }
    // The module for a GB10, named as a prebuilt module of a CPU target.
    let path = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text
        .replacen(
            "basic: {mlir: model.mlir}",
            "basic: {vmfb: model.sm_121.vmfb}",
            1,
        )
        .replacen(
            "  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]\n",
            "",
            1,
        );
    std::fs::write(&path, text).unwrap();
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stderr}");
    let message = only_error(&record.unwrap());
    assert!(
        message.contains("target `default` (device `local-task`)")
            && message.contains("module `basic` (")
            && message.contains("model.sm_121.vmfb")
            && message.contains("model.sm_121.vmfb) cannot run on device `local-task`: it holds cuda-nvptx-fb (PTX sm_121, ISA 8.8) executables, which only the `cuda` driver runs, not `local-task`"),
        "{message}"
    );
}

#[test]
fn a_flag_the_compiler_rejects_is_one_exit_2_before_anything_runs() {
    let message = refused(
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    odd: {backend: llvm-cpu, device: local-task, flags: [--iree-llvmcpu-no-such-flag]}\n",
        &["--target", "odd"],
    );
    assert!(
        message.contains("stages.yaml:")
            && message.contains("target `odd` (llvm-cpu)")
            && message.contains("option not found: iree-llvmcpu-no-such-flag")
            && message.contains("fix the target's `flags:`"),
        "{message}"
    );
}

#[test]
fn doctor_names_a_cuda_sm_the_compiler_has_no_target_for_and_the_alternatives() {
    // The first user's case: a binary built for sm_90a on a GB10. IREE 3.13
    // has no sm_90a target; the compile preflight says so before anything
    // compiles, whether or not this machine has a GPU.
    let dir = basic_copy();
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    hopper: {backend: cuda, device: cuda, flags: [--iree-cuda-target=sm_90a]}\n    gb10: {backend: cuda, device: cuda, flags: [--iree-cuda-target=sm_121]}\n",
    );
    let out = common::parity(dir.path(), &["doctor", "stages.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no `{name}` line in {text}"))
            .to_string()
    };
    let hopper = line("hopper");
    assert!(
        hopper.contains("no CUDA target `sm_90a`")
            && hopper.contains("use sm_121")
            && hopper.contains("use sm_89"),
        "{hopper}"
    );
    // sm_121 compiles: its only possible problem here is the missing device.
    assert!(!line("gb10").contains("no CUDA target"), "{text}");
    assert!(line("cpu").ends_with("ready"), "{text}");
}

#[test]
fn a_target_tolerance_replaces_the_outputs_tolerance_on_that_target_only() {
    // stages-faulty.yaml's layer_norm misses the oracle by max_abs 0.090
    // (variance / (N-1)); the target `loose` allows max_abs 0.1 for it.
    let dir = basic_copy();
    let path = dir.path().join("stages-faulty.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(LEGACY),
        "examples/basic/stages-faulty.yaml changed"
    );
    let targets = "  targets:\n    strict: {backend: llvm-cpu, device: local-task}\n    loose:\n      backend: llvm-cpu\n      device: local-task\n      tolerances:\n        normed: [{max_abs: 0.1}]\n";
    std::fs::write(&path, text.replacen(LEGACY, targets, 1)).unwrap();
    let args = |target: &'static str| {
        [
            "--stage",
            "layer_norm",
            "--mode",
            "isolated",
            "--target",
            target,
        ]
    };
    let (code, _, stderr, record) = check(dir.path(), "stages-faulty.yaml", &args("strict"));
    assert_eq!(code, 1, "{stderr}");
    let strict = record.unwrap();
    let (code, _, stderr, record) = check(dir.path(), "stages-faulty.yaml", &args("loose"));
    assert_eq!(code, 0, "{stderr}");
    let loose = record.unwrap();
    let output = |r: &serde_json::Value| stage(r, "layer_norm")["outputs"][0].clone();
    let (s, l) = (output(&strict), output(&loose));
    // The same numbers, judged by other criteria.
    assert_eq!(s["metrics"]["max_abs"], l["metrics"]["max_abs"]);
    let max_abs = l["metrics"]["max_abs"].as_f64().unwrap();
    assert!(max_abs > 0.08 && max_abs < 0.1, "{max_abs}");
    assert_eq!(s["status"], "fail");
    assert_eq!(s["criteria"].as_array().unwrap().len(), 4, "{s:#}");
    assert_eq!(l["status"], "pass");
    let criteria = l["criteria"].as_array().unwrap();
    assert_eq!(criteria.len(), 1, "{l:#}");
    assert_eq!(criteria[0]["threshold"], 0.1, "{l:#}");
}
