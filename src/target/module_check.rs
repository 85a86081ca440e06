//! Whether a prebuilt module's executables can run on a target's device,
//! judged from the vmfb alone (its formats, CPU arch, PTX) and, for CUDA,
//! the device's compute capability and driver: a pure function, so the
//! verdicts are tested with values on machines without the device.

use super::cuda::{ptx_problem, CudaDevice};
use super::vmfb::Executable;

/// This host's CPU arch in IREE's naming (`embedded-elf-<arch>`).
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "x86" => "x86_32",
        "aarch64" => "arm_64",
        "arm" => "arm_32",
        "riscv64" => "riscv_64",
        other => other,
    }
}

/// One executable as a message names it: its format, and for CUDA its PTX.
pub fn describe(executable: &Executable) -> String {
    match executable {
        Executable::Cuda { ptx } if !ptx.is_empty() => {
            let p: Vec<String> = ptx
                .iter()
                .map(|p| format!("{}, ISA {}.{}", p.target, p.version.0, p.version.1))
                .collect();
            format!("cuda-nvptx-fb (PTX {})", dedup(p).join("; "))
        }
        other => other.format(),
    }
}

/// The distinct descriptions of `executables`, in order.
pub fn summary(executables: &[Executable]) -> String {
    dedup(executables.iter().map(describe).collect()).join(", ")
}

fn dedup(items: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Why a module holding `executables` cannot run on `device` (an IREE
/// device string: `local-task`, `vulkan`, `cuda://1`) of a host of CPU arch
/// `host`, with the CUDA device's facts when known; None when it can, or
/// when the module holds a format this check does not know (IREE's own
/// load check still runs). A module is refused when none of its
/// executables is for the device's driver (a module with variants for
/// several devices is fine), when its machine code is for another CPU, or
/// when its PTX needs another SM or a newer driver than the CUDA device's.
pub fn module_problem(
    executables: &[Executable],
    device: &str,
    host: &str,
    cuda: Option<&CudaDevice>,
) -> Option<String> {
    let driver = device.split(':').next().unwrap_or_default();
    if executables.is_empty() || executables.iter().any(|e| e.drivers().is_none()) {
        return None;
    }
    let ours: Vec<&Executable> = executables
        .iter()
        .filter(|e| e.drivers().is_some_and(|d| d.contains(&driver)))
        .collect();
    if ours.is_empty() {
        let mut drivers: Vec<&str> = Vec::new();
        for d in executables.iter().filter_map(Executable::drivers).flatten() {
            if !drivers.contains(d) {
                drivers.push(d);
            }
        }
        return Some(format!(
            "it holds {} executables, which only the {} driver runs, not `{driver}`",
            summary(executables),
            drivers
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(" / ")
        ));
    }
    let elf_arches: Vec<&str> = ours
        .iter()
        .filter_map(|e| match e {
            Executable::Elf { arch } => Some(arch.as_str()),
            _ => None,
        })
        .collect();
    if !elf_arches.is_empty() && !elf_arches.contains(&host) {
        return Some(format!(
            "its machine code is for {} (embedded-elf-{}), and this host is {host}; rebuild it for this host (--iree-llvmcpu-target-triple)",
            elf_arches[0], elf_arches[0]
        ));
    }
    let device = cuda?;
    ours.iter()
        .filter_map(|e| match e {
            Executable::Cuda { ptx } => Some(ptx),
            _ => None,
        })
        .flatten()
        .find_map(|p| ptx_problem(p, device))
}

#[cfg(test)]
#[path = "module_check_tests.rs"]
mod tests;
