//! Module verdicts from formats, arches and PTX, with values.

use super::*;
use crate::target::vmfb::Ptx;

fn cuda(target: &str) -> Executable {
    Executable::Cuda {
        ptx: vec![Ptx {
            target: target.to_string(),
            version: (8, 8),
        }],
    }
}

fn elf(arch: &str) -> Executable {
    Executable::Elf { arch: arch.into() }
}

#[test]
fn a_cuda_module_is_refused_on_cpu_and_vulkan_devices() {
    for device in ["local-task", "local-sync", "vulkan"] {
        let driver = device;
        let problem = module_problem(&[cuda("sm_121")], device, "x86_64", None).expect(device);
        assert_eq!(
            problem,
            format!("it holds cuda-nvptx-fb (PTX sm_121, ISA 8.8) executables, which only the `cuda` driver runs, not `{driver}`")
        );
    }
    assert_eq!(
        module_problem(&[cuda("sm_121")], "cuda://0", "x86_64", None),
        None
    );
}

#[test]
fn cpu_and_vulkan_modules_are_refused_on_other_drivers() {
    let p = module_problem(&[elf("x86_64")], "cuda", "x86_64", None).unwrap();
    assert!(p.contains("embedded-elf-x86_64 executables, which only the `local-task` / `local-sync` driver runs, not `cuda`"), "{p}");
    let p = module_problem(&[Executable::Vulkan], "local-task", "x86_64", None).unwrap();
    assert!(
        p.contains("vulkan-spirv-fb executables") && p.contains("`vulkan`"),
        "{p}"
    );
    assert_eq!(
        module_problem(&[Executable::Vulkan], "vulkan", "x86_64", None),
        None
    );
}

#[test]
fn an_llvm_cpu_module_for_another_cpu_arch_is_refused() {
    let p = module_problem(
        &[elf("arm_64"), elf("arm_64")],
        "local-task",
        "x86_64",
        None,
    )
    .unwrap();
    assert_eq!(p, "its machine code is for arm_64 (embedded-elf-arm_64), and this host is x86_64; rebuild it for this host (--iree-llvmcpu-target-triple)");
    assert_eq!(
        module_problem(&[elf("arm_64")], "local-sync", "arm_64", None),
        None
    );
    // Variants for several devices: one that runs here is enough.
    assert_eq!(
        module_problem(
            &[cuda("sm_89"), elf("x86_64")],
            "local-task",
            "x86_64",
            None
        ),
        None
    );
}

#[test]
fn unknown_formats_are_left_to_iree() {
    let other = Executable::Other {
        magic: "HIP1".into(),
    };
    assert_eq!(
        module_problem(&[other, cuda("sm_89")], "vulkan", "x86_64", None),
        None
    );
    assert_eq!(module_problem(&[], "vulkan", "x86_64", None), None);
}

#[test]
fn a_cuda_module_for_another_sm_is_refused_on_the_device_libcuda_describes() {
    let gb10 = CudaDevice {
        ordinal: 0,
        name: "NVIDIA GB10".into(),
        compute_capability: (12, 1),
        driver_version: 13000,
    };
    let p = module_problem(&[cuda("sm_90a")], "cuda", "arm_64", Some(&gb10)).unwrap();
    assert!(p.starts_with("its PTX is built for sm_90a (architecture-specific: compute capability 9.0 only), and device 0 `NVIDIA GB10` (compute capability 12.1"), "{p}");
    assert_eq!(
        module_problem(&[cuda("sm_121")], "cuda", "arm_64", Some(&gb10)),
        None
    );
}

#[test]
fn descriptions_name_each_format_once() {
    let s = summary(&[
        cuda("sm_89"),
        cuda("sm_89"),
        Executable::Vulkan,
        elf("x86_64"),
    ]);
    assert_eq!(
        s,
        "cuda-nvptx-fb (PTX sm_89, ISA 8.8), vulkan-spirv-fb, embedded-elf-x86_64"
    );
    assert!(host_arch() == "x86_64" || host_arch() == "arm_64");
}
