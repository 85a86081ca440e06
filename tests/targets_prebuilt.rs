//! Prebuilt modules per target (`targets.NAME.modules`) and the preflight
//! that reads a prebuilt vmfb's executable formats and PTX before anything
//! runs, on modules really compiled by IREE (CUDA compiles here without a
//! GPU: PTX embedded) and the real binary.

mod common;

use common::{basic_copy, check, compile_vmfb};
use parity::target::cuda::CudaDevice;
use parity::target::module_check::{host_arch, module_problem, summary};
use parity::target::vmfb::{executables, Executable, Ptx};
use std::path::Path;

const LEGACY: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";

/// A one-dispatch module (f32 add), small enough to compile for every backend in seconds.
const ADD: &str = "func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
";

/// Replaces the basic example's `target_backend` / `driver` pair with `targets`.
fn with_targets(dir: &Path, targets: &str) {
    let path = dir.join("stages.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(LEGACY), "examples/basic/stages.yaml changed");
    std::fs::write(&path, text.replacen(LEGACY, targets, 1)).unwrap();
}

/// The basic example's model compiled for `backend` with the spec's flags and `extra`.
fn basic_module(dir: &Path, file: &str, backend: &str, extra: &[&str]) {
    let mlir = std::fs::read(dir.join("model.mlir")).unwrap();
    let mut flags = vec!["--iree-input-type=stablehlo"];
    flags.extend_from_slice(extra);
    std::fs::write(
        dir.join(file),
        compile_vmfb("model.mlir", &mlir, backend, &flags),
    )
    .unwrap();
}

#[test]
fn the_formats_of_real_compiled_vmfbs_are_read_from_the_file() {
    let add = ADD.as_bytes();
    let sm89 = compile_vmfb("add.mlir", add, "cuda", &["--iree-cuda-target=sm_89"]);
    let sm121 = compile_vmfb("add.mlir", add, "cuda", &["--iree-cuda-target=sm_121"]);
    let vulkan = compile_vmfb("add.mlir", add, "vulkan-spirv", &[]);
    let cpu = compile_vmfb(
        "add.mlir",
        add,
        "llvm-cpu",
        &["--iree-llvmcpu-target-cpu=generic"],
    );
    let arm = compile_vmfb(
        "add.mlir",
        add,
        "llvm-cpu",
        &[
            "--iree-llvmcpu-target-triple=aarch64-unknown-linux-gnu",
            "--iree-llvmcpu-target-cpu=generic",
        ],
    );
    let cuda = |target: &str, version| Executable::Cuda {
        ptx: vec![Ptx {
            target: target.to_string(),
            version,
        }],
    };
    // IREE 3.13 emits PTX ISA 8.4 for sm_89 and 8.8 for sm_121.
    assert_eq!(executables(&sm89), Some(vec![cuda("sm_89", (8, 4))]));
    assert_eq!(executables(&sm121), Some(vec![cuda("sm_121", (8, 8))]));
    assert_eq!(executables(&vulkan), Some(vec![Executable::Vulkan]));
    let elf = |arch: &str| Executable::Elf { arch: arch.into() };
    assert_eq!(executables(&cpu), Some(vec![elf("x86_64")]));
    assert_eq!(executables(&arm), Some(vec![elf("arm_64")]));
    assert_eq!(summary(&executables(&arm).unwrap()), "embedded-elf-arm_64");

    // The first user's case, on a real module: sm_121 PTX relabelled sm_90a
    // (IREE 3.13 cannot compile for sm_90a), judged against a GB10 as
    // libcuda would describe it (no GPU here: the values are given).
    let mut sm90a = sm121.clone();
    let at = sm90a
        .windows(14)
        .position(|w| w == b".target sm_121")
        .expect("PTX .target line");
    sm90a[at + 8..at + 14].copy_from_slice(b"sm_90a");
    let read = executables(&sm90a).unwrap();
    assert_eq!(read, vec![cuda("sm_90a", (8, 8))]);
    let gb10 = CudaDevice {
        ordinal: 0,
        name: "NVIDIA GB10".into(),
        compute_capability: (12, 1),
        driver_version: 13000,
    };
    let problem = module_problem(&read, "cuda", host_arch(), Some(&gb10)).expect("refused");
    assert_eq!(
        problem,
        "its PTX is built for sm_90a (architecture-specific: compute capability 9.0 only), and device 0 `NVIDIA GB10` (compute capability 12.1, CUDA driver 13.0) cannot run it (no kernel image is available for the device); rebuild it with --iree-cuda-target=sm_121"
    );
    let sm121_read = executables(&sm121).unwrap();
    assert_eq!(
        module_problem(&sm121_read, "cuda", host_arch(), Some(&gb10)),
        None
    );
}

/// The one input error of a run refused before anything ran.
fn refusal(dir: &Path, args: &[&str]) -> String {
    let (code, stdout, stderr, record) = check(dir, "stages.yaml", args);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let record = record.expect("run.json");
    assert!(record["stages"].as_array().unwrap().is_empty(), "{record}");
    let errors = record["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{record}");
    assert_eq!(errors[0]["kind"], "input");
    let message = errors[0]["message"].as_str().unwrap().to_string();
    assert_eq!(format!("{stdout}{stderr}").matches(&message).count(), 1);
    message
}

#[test]
fn a_cuda_vmfb_given_to_a_vulkan_or_cpu_target_is_refused_before_anything_runs() {
    let dir = basic_copy();
    basic_module(
        dir.path(),
        "model.sm_89.vmfb",
        "cuda",
        &["--iree-cuda-target=sm_89"],
    );
    with_targets(
        dir.path(),
        "  targets:\n    cpu:\n      backend: llvm-cpu\n      device: local-task\n      modules: {basic: model.sm_89.vmfb}\n    vulkan:\n      backend: vulkan-spirv\n      device: vulkan\n      modules: {basic: model.sm_89.vmfb}\n",
    );
    for (target, line) in [("cpu", 20), ("vulkan", 24)] {
        let message = refusal(dir.path(), &["--target", target]);
        assert_eq!(
            message,
            format!(
                "target `{target}` (device `{target_device}`): stages.yaml:{line}:24: module `basic` (./model.sm_89.vmfb) cannot run on device `{target_device}`: it holds cuda-nvptx-fb (PTX sm_89, ISA 8.4) executables, which only the `cuda` driver runs, not `{target_device}`",
                target_device = if target == "cpu" { "local-task" } else { "vulkan" },
            )
        );
    }
}

#[test]
fn an_llvm_cpu_vmfb_for_another_cpu_arch_is_refused_before_anything_runs() {
    let dir = basic_copy();
    let triple = if host_arch() == "arm_64" {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let flag = format!("--iree-llvmcpu-target-triple={triple}");
    basic_module(
        dir.path(),
        "model.other.vmfb",
        "llvm-cpu",
        &[&flag, "--iree-llvmcpu-target-cpu=generic"],
    );
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task, modules: {basic: model.other.vmfb}}\n",
    );
    let message = refusal(dir.path(), &[]);
    let other = if host_arch() == "arm_64" {
        "x86_64"
    } else {
        "arm_64"
    };
    assert!(
        message.starts_with("target `cpu` (device `local-task`): ")
            && message.contains("module `basic` (")
            && message.contains("model.other.vmfb) cannot run on device `local-task`")
            && message.contains(&format!(
                "its machine code is for {other} (embedded-elf-{other}), and this host is {}",
                host_arch()
            )),
        "{message}"
    );
}

#[test]
fn a_target_runs_its_own_prebuilt_vmfb_and_is_triangulated_against_the_compiled_one() {
    // The gpu-check shape: one target compiles the MLIR, another runs a
    // prebuilt module of its own, both in one `--target a,b` run.
    let dir = basic_copy();
    basic_module(
        dir.path(),
        "model.cpu.vmfb",
        "llvm-cpu",
        &["--iree-llvmcpu-target-cpu=generic"],
    );
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    prebuilt: {backend: llvm-cpu, device: local-sync, modules: {basic: model.cpu.vmfb}}\n",
    );
    let (code, stdout, stderr, record) = check(
        dir.path(),
        "stages.yaml",
        &["--target", "cpu,prebuilt", "--mode", "isolated"],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    let record = record.expect("run.json");
    let modules = record["provenance"]["modules"].as_array().unwrap();
    let source = |name: &str| {
        modules
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no module {name} in {modules:?}"))["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(source("cpu:basic").ends_with("model.mlir"), "{modules:?}");
    assert!(
        source("prebuilt:basic").ends_with("model.cpu.vmfb"),
        "{modules:?}"
    );
    // The same machine code on both: every output the same on each target.
    let stages = record["stages"].as_array().unwrap();
    let on = |target: &str| {
        stages
            .iter()
            .filter(|s| s["target"] == target)
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_string(),
                    s["status"].clone(),
                    s["outputs"][0]["metrics"]["max_abs"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(on("cpu").len(), 6);
    assert_eq!(on("cpu"), on("prebuilt"));
    assert!(
        on("prebuilt").iter().all(|s| s.1 == "pass"),
        "{:?}",
        on("prebuilt")
    );
}

#[test]
fn doctor_reads_each_prebuilt_module_of_each_target() {
    let dir = basic_copy();
    basic_module(
        dir.path(),
        "model.sm_121.vmfb",
        "cuda",
        &["--iree-cuda-target=sm_121"],
    );
    with_targets(
        dir.path(),
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    wrong: {backend: llvm-cpu, device: local-task, modules: {basic: model.sm_121.vmfb}}\n",
    );
    let out = common::parity(dir.path(), &["doctor", "stages.yaml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("module `basic` (")
            && text.contains("model.sm_121.vmfb): cuda-nvptx-fb (PTX sm_121, ISA 8.8)")
            && text.contains("which only the `cuda` driver runs, not `local-task`"),
        "{text}"
    );
    assert!(text.contains("cuda devices (libcuda):"), "{text}");
}
