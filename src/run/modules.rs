//! Compiles every module of a spec once per run (through the artifact cache),
//! and the generated slice modules beside them, then loads the artifacts into one IREE runtime per worker thread.

use super::slices::SliceModule;
use super::RunOptions;
use parity_iree::{
    ArtifactCache, Cached, CompileOptions, IreeCompiler, IreeError, IreeRuntime, LoadedModule,
    Signature,
};
use parity_record::{ErrorKind, ErrorRecord, RunRecord};
use parity_spec::{ModuleSource, Spec};
use parity_tensor::Tensor;
use std::collections::BTreeMap;

/// Each module's compiled vmfb, or why it could not be had.
pub type Compiled = BTreeMap<String, Result<Vec<u8>, String>>;

/// Loads the IREE compiler when `needed` (some module is MLIR, or a stage is a
/// slice), recording its revision; `Err` says why it is not available.
pub fn load_compiler(
    options: &RunOptions,
    needed: bool,
    record: &mut RunRecord,
) -> Result<IreeCompiler, String> {
    if !needed {
        return Err("the IREE compiler was not loaded".to_string());
    }
    match IreeCompiler::load(options.compiler_lib.as_deref()) {
        Ok(c) => {
            record.compiler_revision = Some(c.revision());
            Ok(c)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The compile options of a spec module: subject flags, then the module's own.
pub(crate) fn compile_options(spec: &Spec, module: &parity_spec::Module) -> CompileOptions {
    let mut flags = spec.subject.flags.clone();
    flags.extend(module.flags.iter().cloned());
    CompileOptions {
        target_backend: spec.subject.target_backend.clone(),
        flags,
    }
}

/// Compiles (or reads) every module the spec declares. Failures are recorded
/// in `record.errors` and remembered per module, so the stages using a broken
/// module error while the others run: a module file that cannot be read (or is
/// not a regular file) is an input error, a failed compile an execution error.
/// Cache problems are warnings (`record.warnings`, and stderr), never errors.
pub fn compile_all(
    spec: &Spec,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, String>,
    record: &mut RunRecord,
) -> Compiled {
    let cache = ArtifactCache::new(&options.cache_dir);
    let mut compiled = BTreeMap::new();
    for (name, module) in &spec.subject.modules {
        let read = |path: &std::path::Path| {
            parity_tensor::read_module_bytes(path).map_err(|e| {
                (
                    ErrorKind::Input,
                    format!("module `{name}`: cannot read {}: {e}", path.display()),
                )
            })
        };
        let vmfb = match &module.source {
            ModuleSource::Vmfb(path) => read(path),
            ModuleSource::Mlir(path) => match compiler {
                Err(message) => Err((ErrorKind::Execution, format!("module `{name}`: {message}"))),
                Ok(compiler) => read(path).and_then(|mlir| {
                    cache
                        .get_or_compile(
                            compiler,
                            &path.display().to_string(),
                            &mlir,
                            &compile_options(spec, module),
                        )
                        .map(|cached| keep_warnings(cached, record))
                        .map_err(|e| (ErrorKind::Execution, format!("module `{name}`: {e}")))
                }),
            },
        };
        let vmfb = vmfb.map_err(|(kind, message)| {
            record.errors.push(ErrorRecord {
                kind,
                message: message.clone(),
                location: None,
            });
            message
        });
        compiled.insert(name.clone(), vmfb);
    }
    compiled
}

/// The vmfb of a cache lookup; its warnings go to the run record and stderr,
/// where a user sees them (the run goes on with the module in memory).
fn keep_warnings(cached: Cached, record: &mut RunRecord) -> Vec<u8> {
    for warning in cached.warnings {
        eprintln!("parity: warning: {warning}");
        record.warnings.push(warning);
    }
    cached.vmfb
}

/// Compiles the generated slice modules with their parent module's flags
/// (through the same cache) and adds them to `compiled` under their own names.
pub fn compile_slices(
    spec: &Spec,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, String>,
    slices: &[SliceModule],
    compiled: &mut Compiled,
    record: &mut RunRecord,
) {
    let cache = ArtifactCache::new(&options.cache_dir);
    for slice in slices {
        let vmfb = match (compiler, spec.subject.modules.get(&slice.parent)) {
            (Err(message), _) => Err(format!("module `{}`: {message}", slice.name)),
            (_, None) => Err(format!(
                "module `{}`: parent module `{}` is not declared",
                slice.name, slice.parent
            )),
            (Ok(compiler), Some(parent)) => {
                let source_name = match &parent.source {
                    ModuleSource::Mlir(p) | ModuleSource::Vmfb(p) => {
                        format!("{}#slices", p.display())
                    }
                };
                cache
                    .get_or_compile(
                        compiler,
                        &source_name,
                        slice.mlir.as_bytes(),
                        &compile_options(spec, parent),
                    )
                    .map(|cached| keep_warnings(cached, record))
                    .map_err(|e| format!("module `{}`: {e}", slice.name))
            }
        };
        if let Err(message) = &vmfb {
            record.errors.push(ErrorRecord::execution(message.clone()));
        }
        compiled.insert(slice.name.clone(), vmfb);
    }
}

/// The modules of a run loaded into one runtime (one per thread: IREE
/// runtimes cannot move between threads), or why each could not be loaded.
pub struct ModuleSet {
    modules: BTreeMap<String, Result<LoadedModule, String>>,
    load_errors: Vec<String>,
    // Declared last so the modules are dropped before their runtime.
    _runtime: Option<IreeRuntime>,
}

impl ModuleSet {
    /// Creates a runtime on `driver` and loads every compiled module into it.
    pub fn load(driver: &str, compiled: &Compiled) -> ModuleSet {
        let mut load_errors = Vec::new();
        let runtime = IreeRuntime::new(driver).map_err(|e| format!("IREE runtime `{driver}`: {e}"));
        let mut modules = BTreeMap::new();
        for (name, vmfb) in compiled {
            let loaded = match (&runtime, vmfb) {
                (_, Err(message)) => Err(message.clone()),
                (Err(message), _) => Err(message.clone()),
                (Ok(runtime), Ok(bytes)) => runtime.load(bytes, name).map_err(|e| {
                    let message = format!("module `{name}`: {e}");
                    load_errors.push(message.clone());
                    message
                }),
            };
            modules.insert(name.clone(), loaded);
        }
        if let Err(message) = &runtime {
            load_errors.push(message.clone());
        }
        ModuleSet {
            modules,
            load_errors,
            _runtime: runtime.ok(),
        }
    }

    /// Load failures (not compile failures, which `compile_all` recorded).
    pub fn load_errors(&self) -> Vec<String> {
        self.load_errors.clone()
    }

    /// The typed signature of `function` of `module`, when the module is
    /// loaded and its vmfb declares one parity can read (otherwise nothing is
    /// checked before invoking and IREE's own checks apply).
    pub fn signature(&self, module: &str, function: &str) -> Option<Signature> {
        match self.modules.get(module) {
            Some(Ok(loaded)) => loaded.signature(function).and_then(Result::ok),
            _ => None,
        }
    }

    /// Invokes `function` of `module` on `args`. A function the module does
    /// not export, an undeclared module or an argument IREE cannot take are
    /// input errors (the spec is wrong); a failure inside IREE is an execution error.
    pub fn invoke(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
    ) -> Result<Vec<Tensor>, (ErrorKind, String)> {
        match self.modules.get(module) {
            None => Err((
                ErrorKind::Input,
                format!("module `{module}` is not declared in the subject"),
            )),
            Some(Err(message)) => Err((ErrorKind::Execution, message.clone())),
            Some(Ok(loaded)) => loaded.invoke(function, args).map_err(|e| {
                let kind = match e {
                    IreeError::UnknownFunction { .. } | IreeError::Argument { .. } => {
                        ErrorKind::Input
                    }
                    _ => ErrorKind::Execution,
                };
                (kind, e.to_string())
            }),
        }
    }
}
