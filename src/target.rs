//! The production target: the one object that knows where the subject runs.
//!
//! A [`Target`] owns what depends on the target: the compile options of every
//! module (subject flags, then the target's, then the module's), the runtime
//! device, and the modules loaded on it ([`Target::load`]). Executors (check,
//! tokens, serve, fuzz, bisect, bench, points) get their compile options and
//! devices from it and never read the spec's targets themselves, so a
//! target-aware feature (GPU drivers, preflight, several targets in one run,
//! resident weights) is written once, here.
//!
//! A `Target` is `Send + Sync` and cheap to clone. IREE runtimes are not
//! `Send`: each thread asks the target for its own ([`Target::runtime`],
//! [`Target::load`]).

mod compile_check;
pub mod cuda;
pub mod module_check;
mod parameters;
mod prebuilt;
pub use prebuilt::PrebuiltFile;
pub mod vmfb;

use crate::run::{Compiled, ModuleSet};
use parity_iree::{CompileOptions, IreeError, IreeRuntime, DRIVERS_BUILT_IN};
use parity_spec::{Module, Spec, TargetSpec};
use std::path::PathBuf;

/// One production target of a spec, selected by name.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    spec: TargetSpec,
    /// The spec file that declares it (for messages).
    spec_path: PathBuf,
    /// The subject's flags, which every target's compiles start with.
    subject_flags: Vec<String>,
    /// `subject.parameters`: (scope, files), which every runtime serves.
    parameters: Vec<(String, Vec<PathBuf>)>,
}

/// A `--target` selection the spec cannot satisfy (an input error, exit 2).
#[derive(Debug, Clone, thiserror::Error)]
pub enum TargetError {
    /// No target of that name.
    #[error("{}: no target named `{name}` (the spec's targets: {known}); name one of them with --target", spec.display())]
    Unknown {
        /// The spec file.
        spec: PathBuf,
        /// The name asked for.
        name: String,
        /// The spec's target names, comma-separated.
        known: String,
    },
    /// The target's device cannot be created: its driver is not built in,
    /// or the machine has no such device.
    #[error("{at}: target `{target}`: device `{device}` cannot be created: {message}")]
    Device {
        /// `spec:line:col` of the target's declaration.
        at: String,
        /// The target's name.
        target: String,
        /// Its device.
        device: String,
        /// What IREE said, then what to do about it.
        message: String,
    },
    /// The compiler rejects the target's flags (an unknown option, a CUDA SM
    /// it has no target for), found by compiling a one-op probe.
    #[error("{at}: target `{target}` ({backend}): {message}")]
    Flags {
        /// `spec:line:col` of the target's declaration.
        at: String,
        /// The target's name.
        target: String,
        /// Its backend.
        backend: String,
        /// What the compiler said, and what to do.
        message: String,
    },
    /// Parameters a module declares that the spec's parameter files do not
    /// hold as declared (a missing key or scope, another size, dtype or
    /// shape), or a parameter file IREE cannot index.
    #[error("target `{target}`: parameters:\n  {}", problems.join("\n  "))]
    Parameters {
        /// The target's name.
        target: String,
        /// One line per problem, naming the parameter, file, module and stages.
        problems: Vec<String>,
    },
    /// Prebuilt modules of the spec are built for another device than the
    /// target's (a CUDA module on Vulkan, an llvm-cpu module on CUDA, ...).
    #[error("target `{target}` (device `{device}`): {}", modules.join("; "))]
    Modules {
        /// The target's name.
        target: String,
        /// Its device.
        device: String,
        /// One line per module that cannot run there.
        modules: Vec<String>,
    },
}

impl Target {
    /// The target `name` of `spec`, or its first (default) target when None.
    pub fn select(spec: &Spec, name: Option<&str>) -> Result<Target, TargetError> {
        let found = spec
            .subject
            .target(name)
            .ok_or_else(|| TargetError::Unknown {
                spec: spec.path.clone(),
                name: name.unwrap_or_default().to_string(),
                known: spec
                    .subject
                    .targets
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Ok(Target {
            spec: found.clone(),
            spec_path: spec.path.clone(),
            subject_flags: spec.subject.flags.clone(),
            parameters: spec
                .subject
                .parameters
                .iter()
                .map(|p| (p.scope.clone(), p.files.clone()))
                .collect(),
        })
    }

    /// [`Target::select`], then [`Target::preflight`],
    /// [`Target::preflight_parameters`] and [`Target::preflight_modules`]:
    /// the target every executor runs on, checked before anything runs.
    pub fn ready(spec: &Spec, name: Option<&str>) -> Result<Target, TargetError> {
        let target = Target::select(spec, name)?;
        target.preflight()?;
        target.preflight_parameters(spec)?;
        target.preflight_modules(spec)?;
        Ok(target)
    }

    /// The module this target runs for the subject module `name` declared
    /// as `declared`: the target's own prebuilt vmfb (`targets.NAME.modules`)
    /// when it gives one, else the declared module.
    pub fn module<'a>(&'a self, name: &str, declared: &'a Module) -> &'a Module {
        self.spec.modules.get(name).unwrap_or(declared)
    }

    /// The target's name in the spec.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The compiler backend (`--iree-hal-target-backends`).
    pub fn backend(&self) -> &str {
        &self.spec.backend
    }

    /// The runtime device (a HAL driver name, optionally with a device).
    pub fn device(&self) -> &str {
        &self.spec.device
    }

    /// The spec's declaration of this target.
    pub fn spec(&self) -> &TargetSpec {
        &self.spec
    }

    /// The compile options of a module with `module_flags`: the subject's
    /// flags, then the target's, then the module's own.
    pub fn compile_options(&self, module_flags: &[String]) -> CompileOptions {
        CompileOptions {
            target_backend: self.spec.backend.clone(),
            flags: [
                self.subject_flags.as_slice(),
                self.spec.flags.as_slice(),
                module_flags,
            ]
            .concat(),
        }
    }

    /// The compile options of the spec module `module` (no module flags when
    /// the spec does not declare it).
    pub fn module_options(&self, spec: &Spec, module: &str) -> CompileOptions {
        let flags = spec
            .subject
            .modules
            .get(module)
            .map(|m| m.flags.as_slice())
            .unwrap_or_default();
        self.compile_options(flags)
    }

    /// The same target run on another device of the same kind (the fixture
    /// server's `--driver`).
    pub fn with_device(&self, device: &str) -> Target {
        let mut t = self.clone();
        t.spec.device = device.to_string();
        t
    }

    /// Checks, before anything runs, that this target's device can be
    /// created here: one clear input error (exit 2) instead of one execution
    /// error per stage.
    pub fn preflight(&self) -> Result<(), TargetError> {
        // The device alone: parameter files are preflight_parameters' to check.
        let error = match IreeRuntime::new(&self.spec.device) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let message = error.to_string();
        let driver = self.device().split(':').next().unwrap_or_default();
        let hint = if !DRIVERS_BUILT_IN.contains(&driver) {
            format!(
                "parity's runtime is built with the drivers {}; name one of them as the target's `device`",
                DRIVERS_BUILT_IN.join(", ")
            )
        } else if driver == "cuda" {
            "this machine has no usable CUDA device (an NVIDIA GPU, its kernel driver and libcuda.so); run on one, or pick another target with --target".to_string()
        } else if driver == "vulkan" {
            "this machine has no usable Vulkan device (a Vulkan loader, libvulkan.so.1, and a driver: a GPU's, or Mesa's lavapipe from `mesa-vulkan-drivers` on the CPU); install one, or pick another target with --target".to_string()
        } else {
            "pick another target with --target".to_string()
        };
        Err(TargetError::Device {
            at: self.at(),
            target: self.spec.name.clone(),
            device: self.spec.device.clone(),
            message: format!("{message}; {hint}"),
        })
    }

    /// A new runtime on this target's device, for the calling thread,
    /// serving the subject's parameter files (mapped, not read).
    pub fn runtime(&self) -> Result<IreeRuntime, IreeError> {
        IreeRuntime::with_parameters(&self.spec.device, &self.parameters)
    }

    /// A runtime on this target's device with every compiled whole module
    /// loaded (per-function artifacts load when first called), for the
    /// calling thread.
    pub fn load(&self, compiled: &Compiled) -> ModuleSet {
        ModuleSet::load(self, compiled)
    }
}
