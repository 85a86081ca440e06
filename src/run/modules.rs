//! Compiles (through the artifact cache) and loads every module of a spec once per run.

use super::record::{ErrorKind, RunError, RunRecord};
use super::RunOptions;
use parity_iree::{ArtifactCache, CompileOptions, IreeCompiler, IreeRuntime, LoadedModule};
use parity_spec::{ModuleSource, Spec};
use parity_tensor::Tensor;
use std::collections::BTreeMap;

/// The loaded modules of a run, or why each could not be loaded.
pub struct ModuleSet {
    runtime: Option<IreeRuntime>,
    modules: BTreeMap<String, Result<LoadedModule, String>>,
}

impl ModuleSet {
    /// Compiles and loads every module the spec declares. Failures are recorded
    /// in `record.errors` (execution errors) and remembered per module, so the
    /// stages using a broken module error while the others run.
    pub fn prepare(spec: &Spec, options: &RunOptions, record: &mut RunRecord) -> ModuleSet {
        let fail = |record: &mut RunRecord, message: String| {
            record.errors.push(RunError {
                kind: ErrorKind::Execution,
                message: message.clone(),
            });
            message
        };
        let runtime = match IreeRuntime::new(&spec.subject.driver) {
            Ok(r) => r,
            Err(e) => {
                let message = fail(record, format!("IREE runtime: {e}"));
                let modules = spec
                    .subject
                    .modules
                    .keys()
                    .map(|k| (k.clone(), Err(message.clone())))
                    .collect();
                return ModuleSet {
                    runtime: None,
                    modules,
                };
            }
        };
        let needs_compiler = spec
            .subject
            .modules
            .values()
            .any(|m| matches!(m.source, ModuleSource::Mlir(_)));
        let compiler = if needs_compiler {
            match IreeCompiler::load(options.compiler_lib.as_deref()) {
                Ok(c) => {
                    record.compiler_revision = Some(c.revision());
                    Ok(c)
                }
                Err(e) => Err(fail(record, e.to_string())),
            }
        } else {
            Err(String::new())
        };
        let cache = ArtifactCache::new(&options.cache_dir);
        let mut modules = BTreeMap::new();
        for (name, module) in &spec.subject.modules {
            let vmfb = match &module.source {
                ModuleSource::Vmfb(path) => std::fs::read(path)
                    .map_err(|e| format!("module `{name}`: cannot read {}: {e}", path.display())),
                ModuleSource::Mlir(path) => match &compiler {
                    Err(message) => Err(format!("module `{name}`: {message}")),
                    Ok(compiler) => std::fs::read(path)
                        .map_err(|e| {
                            format!("module `{name}`: cannot read {}: {e}", path.display())
                        })
                        .and_then(|mlir| {
                            let mut flags = spec.subject.flags.clone();
                            flags.extend(module.flags.iter().cloned());
                            let options = CompileOptions {
                                target_backend: spec.subject.target_backend.clone(),
                                flags,
                            };
                            cache
                                .get_or_compile(
                                    compiler,
                                    &path.display().to_string(),
                                    &mlir,
                                    &options,
                                )
                                .map(|(bytes, _)| bytes)
                                .map_err(|e| format!("module `{name}`: {e}"))
                        }),
                },
            };
            let loaded = vmfb.and_then(|bytes| {
                runtime
                    .load(&bytes, name)
                    .map_err(|e| format!("module `{name}`: {e}"))
            });
            let loaded = loaded.map_err(|m| fail(record, m));
            modules.insert(name.clone(), loaded);
        }
        ModuleSet {
            runtime: Some(runtime),
            modules,
        }
    }

    /// Invokes `function` of `module` on `args`.
    pub fn invoke(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
    ) -> Result<Vec<Tensor>, String> {
        let _runtime = self.runtime.as_ref();
        match self.modules.get(module) {
            None => Err(format!("module `{module}` is not declared in the subject")),
            Some(Err(message)) => Err(message.clone()),
            Some(Ok(loaded)) => loaded.invoke(function, args).map_err(|e| e.to_string()),
        }
    }
}
