//! The preflight of prebuilt modules: each `vmfb:` module a target runs
//! (the subject's, or the target's own `modules:`) is checked against the
//! target's device before anything runs. First from the file alone: its
//! executable formats, CPU arch and PTX ([`super::vmfb`],
//! [`super::module_check`]), with the CUDA device's compute capability and
//! driver version from libcuda when the target is a CUDA device; then by
//! loading it on the device, for what the file does not say.

use super::cuda::{ordinal, query_device};
use super::module_check::{host_arch, module_problem};
use super::vmfb::executables;
use super::{Target, TargetError};
use parity_iree::IreeError;
use parity_spec::Spec;

impl Target {
    /// Checks that every prebuilt module this target runs can run on its
    /// device: one input error naming each module that cannot, its file,
    /// spec position and why (a CUDA module on Vulkan or a CPU, machine code
    /// for another CPU, PTX for another SM or a newer driver, or IREE's
    /// `INCOMPATIBLE` when loading it). MLIR modules are compiled for this
    /// target, so they match by construction. Other load failures are left
    /// to the run, which reports them as execution errors.
    pub fn preflight_modules(&self, spec: &Spec) -> Result<(), TargetError> {
        let prebuilt: Vec<_> = spec
            .subject
            .modules
            .iter()
            .map(|(name, m)| (name, self.module(name, m)))
            .filter_map(|(name, m)| match &m.source {
                parity_spec::ModuleSource::Vmfb(path) => Some(PrebuiltFile {
                    name,
                    path,
                    at: format!(
                        "{}:{}:{}: module `{name}` ({})",
                        self.spec_path.display(),
                        m.location.line,
                        m.location.col,
                        path.display()
                    ),
                }),
                parity_spec::ModuleSource::Mlir(_) => None,
            })
            .collect();
        self.preflight_files(&prebuilt)
    }

    /// [`Target::preflight_modules`] for prebuilt module files named
    /// anywhere (a serving scenario's `vmfb:` too): one input error naming
    /// each file that cannot run on this target's device, at its `at`.
    pub fn preflight_files(&self, prebuilt: &[PrebuiltFile<'_>]) -> Result<(), TargetError> {
        if prebuilt.is_empty() {
            return Ok(());
        }
        let device = self.device();
        // The CUDA device's facts, when this is a CUDA target on a machine
        // with libcuda (never on this project's machines: see cuda.rs).
        let cuda = (device.split(':').next() == Some("cuda"))
            .then(|| ordinal(device).and_then(|o| query_device(o).ok()))
            .flatten();
        let runtime = self.runtime().ok(); // preflight() reports a missing device
        let mut modules = Vec::new();
        for PrebuiltFile { name, path, at } in prebuilt {
            let Ok(bytes) = parity_tensor::read_module_bytes(path) else {
                continue; // the run reports an unreadable file, naming it
            };
            let problem = executables(&bytes)
                .and_then(|e| module_problem(&e, device, host_arch(), cuda.as_ref()));
            if let Some(problem) = problem {
                modules.push(format!("{at} cannot run on device `{device}`: {problem}"));
                continue;
            }
            let Some(runtime) = &runtime else { continue };
            if let Err(IreeError::Load { message, .. }) = runtime.load(&bytes, name) {
                if message.contains("INCOMPATIBLE") {
                    modules.push(format!(
                        "{at} is built for {} and cannot run on this device",
                        built_for(&message)
                    ));
                }
            }
        }
        if modules.is_empty() {
            return Ok(());
        }
        Err(TargetError::Modules {
            target: self.spec.name.clone(),
            device: self.spec.device.clone(),
            modules,
        })
    }
}

/// One prebuilt module file to check: the name it loads under, its path,
/// and where it is declared (`FILE:LINE:COL: module `NAME` (PATH)`).
pub struct PrebuiltFile<'a> {
    /// The module name it is loaded under.
    pub name: &'a str,
    /// The vmfb.
    pub path: &'a std::path::Path,
    /// Where it is declared, for the message.
    pub at: String,
}

/// What an `INCOMPATIBLE` load message says a module is built for: its
/// HAL device, executable backend and format, and (for GPUs) its arch, e.g.
/// `device "cuda" (cuda, cuda-nvptx-fb, arch sm_89)`.
fn built_for(message: &str) -> String {
    let quoted_after = |marker: &str, skip: usize| -> Option<String> {
        let rest = &message[message.find(marker)? + marker.len()..];
        rest.split('"').nth(1 + 2 * skip).map(str::to_string)
    };
    let device = quoted_after("#hal.device.target<", 0);
    let backend = quoted_after("#hal.executable.target<", 0);
    let format = quoted_after("#hal.executable.target<", 1);
    let arch = quoted_after("arch = ", 0);
    match (device, backend, format) {
        (Some(d), Some(b), Some(f)) => {
            let arch = arch.map(|a| format!(", arch {a}")).unwrap_or_default();
            format!("device \"{d}\" ({b}, {f}{arch})")
        }
        _ => "another device".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::built_for;

    #[test]
    fn built_for_reads_device_backend_format_and_arch_from_iree_messages() {
        // IREE 3.13's messages, as measured (docs/gpu.md).
        let cuda = r#"<vm>:0: INCOMPATIBLE; HAL device `__device_0` not found or unavailable: #hal.device.target<"cuda", [#hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_89", features = "+ptx84", wgp = <>>}>]>;"#;
        assert_eq!(
            built_for(cuda),
            r#"device "cuda" (cuda, cuda-nvptx-fb, arch sm_89)"#
        );
        let cpu = r#"<vm>:0: INCOMPATIBLE; HAL device `__device_0` not found or unavailable: #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = ""}>]>;"#;
        assert_eq!(
            built_for(cpu),
            r#"device "local" (llvm-cpu, embedded-elf-x86_64)"#
        );
        assert_eq!(built_for("INCOMPATIBLE; something else"), "another device");
    }
}
