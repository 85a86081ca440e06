//! The compiled modules of a run loaded into one IREE runtime per target,
//! shared by the run's worker threads (one per mode): each module loads
//! once, its weights and parameters go to the device once, and a thread
//! calling it holds its lock (an IREE VM context takes one caller at a
//! time). A per-function module's artifacts load when first called.

use super::artifacts::Artifacts;
use super::module_error::ModuleError;
use super::modules::Compiled;
use crate::target::Target;
use parity_iree::{IreeError, IreeRuntime, LoadedModule, Signature};
use parity_tensor::Tensor;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// One module as loaded.
enum Loaded {
    /// A whole-module vmfb.
    Whole(Mutex<LoadedModule>),
    /// Per-function artifacts, each loaded when a function it holds is first called.
    PerFunction {
        /// Function name -> the key of the artifact holding it, or why it has none.
        functions: BTreeMap<String, Result<String, String>>,
        /// Artifact key -> the artifact.
        artifacts: BTreeMap<String, Lazy>,
    },
}

/// One artifact's vmfb and, once a function in it is called, its loaded module.
struct Lazy {
    vmfb: Arc<Vec<u8>>,
    loaded: OnceLock<Result<Mutex<LoadedModule>, ModuleError>>,
}

/// The modules of a run loaded into one runtime, or why each could not be
/// loaded. `Sync`: the threads of a run on one target share it.
pub struct ModuleSet {
    modules: BTreeMap<String, Result<Loaded, ModuleError>>,
    load_errors: Mutex<Vec<ModuleError>>,
    // Declared last so the modules are dropped before their runtime.
    runtime: Result<IreeRuntime, ModuleError>,
}

impl ModuleSet {
    /// Creates a runtime on `target`'s device and loads every compiled whole
    /// module into it (per-function artifacts load when first called).
    /// [`Target::load`] is the way in.
    pub(crate) fn load(target: &Target, compiled: &Compiled) -> ModuleSet {
        ModuleSet::on(ModuleSet::runtime_for(target), compiled)
    }

    /// A new runtime on `target`'s device (serving its parameter files),
    /// or the error a [`ModuleSet`] reports for every module without one.
    pub(crate) fn runtime_for(target: &Target) -> Result<IreeRuntime, ModuleError> {
        target.runtime().map_err(|e| ModuleError::Runtime {
            driver: target.device().to_string(),
            source: Arc::new(e),
        })
    }

    /// Loads every compiled whole module into `runtime` (per-function
    /// artifacts load when first called).
    pub(crate) fn on(runtime: Result<IreeRuntime, ModuleError>, compiled: &Compiled) -> ModuleSet {
        let mut load_errors = Vec::new();
        let mut modules = BTreeMap::new();
        for (name, artifacts) in compiled {
            let loaded = match (&runtime, artifacts) {
                (_, Err(e)) => Err(e.clone()),
                (Err(e), _) => Err(e.clone()),
                (Ok(runtime), Ok(Artifacts::Whole(bytes))) => {
                    let loaded = runtime.load(bytes, name);
                    loaded.map(|m| Loaded::Whole(Mutex::new(m))).map_err(|e| {
                        let e = ModuleError::Load {
                            module: name.clone(),
                            function: None,
                            source: Arc::new(e),
                        };
                        load_errors.push(e.clone());
                        e
                    })
                }
                (Ok(_), Ok(Artifacts::PerFunction(per))) => Ok(Loaded::PerFunction {
                    functions: per.functions.clone(),
                    artifacts: per
                        .artifacts
                        .iter()
                        .map(|(key, vmfb)| {
                            let lazy = Lazy {
                                vmfb: Arc::clone(vmfb),
                                loaded: OnceLock::new(),
                            };
                            (key.clone(), lazy)
                        })
                        .collect(),
                }),
            };
            modules.insert(name.clone(), loaded);
        }
        if let Err(e) = &runtime {
            load_errors.push(e.clone());
        }
        ModuleSet {
            modules,
            load_errors: Mutex::new(load_errors),
            runtime,
        }
    }

    /// Load failures so far (not compile failures, which `compile_all` recorded).
    pub fn load_errors(&self) -> Vec<ModuleError> {
        lock(&self.load_errors).clone()
    }

    /// The load failures so far as execution error records.
    pub fn load_error_records(&self) -> Vec<parity_record::ErrorRecord> {
        self.load_errors()
            .into_iter()
            .map(|e| parity_record::ErrorRecord::execution(e.to_string()))
            .collect()
    }

    /// The loaded module holding `function` of `module`: the whole module, or
    /// the function's own (loaded now if this is its first call).
    fn find(&self, module: &str, function: &str) -> Result<&Mutex<LoadedModule>, ModuleError> {
        let loaded = match self.modules.get(module) {
            None => {
                return Err(ModuleError::Undeclared {
                    module: module.to_string(),
                })
            }
            Some(Err(e)) => return Err(e.clone()),
            Some(Ok(loaded)) => loaded,
        };
        let (functions, artifacts) = match loaded {
            Loaded::Whole(whole) => return Ok(whole),
            Loaded::PerFunction {
                functions,
                artifacts,
            } => (functions, artifacts),
        };
        // `module.fn` names the function as the vmfb exports it.
        let held = functions.get(function).or_else(|| {
            let (_, local) = function.split_once('.')?;
            functions.get(local)
        });
        let Some(held) = held else {
            let unknown = IreeError::UnknownFunction {
                module: module.to_string(),
                function: function.to_string(),
                available: functions.keys().cloned().collect(),
            };
            return Err(ModuleError::UnknownFunction(Arc::new(unknown)));
        };
        let key = held.as_ref().map_err(|diagnostic| ModuleError::Function {
            module: module.to_string(),
            function: function.to_string(),
            diagnostic: diagnostic.clone(),
        })?;
        let Some(one) = artifacts.get(key) else {
            return Err(ModuleError::MissingArtifact {
                module: module.to_string(),
                function: function.to_string(),
                key: key.clone(),
            });
        };
        let loaded = one.loaded.get_or_init(|| {
            let runtime = self.runtime.as_ref().map_err(ModuleError::clone)?;
            let loaded = runtime.load(&one.vmfb, module);
            loaded.map(Mutex::new).map_err(|e| {
                let e = ModuleError::Load {
                    module: module.to_string(),
                    function: Some(function.to_string()),
                    source: Arc::new(e),
                };
                lock(&self.load_errors).push(e.clone());
                e
            })
        });
        loaded.as_ref().map_err(ModuleError::clone)
    }

    /// The typed signature of `function` of `module`, when the module is
    /// loaded and its vmfb declares one parity can read (otherwise nothing is
    /// checked before invoking and IREE's own checks apply).
    pub fn signature(&self, module: &str, function: &str) -> Option<Signature> {
        let loaded = self.find(module, function).ok()?;
        let signature = lock(loaded).signature(function);
        signature.and_then(Result::ok)
    }

    /// Invokes `function` of `module` on `args`. A function the module does
    /// not export, an undeclared module or an argument IREE cannot take are
    /// input errors (the spec is wrong); a failure inside IREE is an execution error.
    pub fn invoke(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
    ) -> Result<Vec<Tensor>, ModuleError> {
        self.invoke_keyed(module, function, args, &[])
    }

    /// [`ModuleSet::invoke`] with resident arguments: `keys[i]` names
    /// argument `i` as a weight, uploaded once in this set's runtime and
    /// reused by every later call that names it.
    pub fn invoke_keyed(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
        keys: &[Option<String>],
    ) -> Result<Vec<Tensor>, ModuleError> {
        let loaded = self.find(module, function)?;
        let outputs = lock(loaded).invoke_keyed(function, args, keys);
        outputs.map_err(|e| ModuleError::Invoke(Arc::new(e)))
    }

    /// What this set's runtime uploaded so far (zero when it has none).
    pub fn upload_stats(&self) -> parity_iree::UploadStats {
        self.runtime
            .as_ref()
            .map(|r| r.upload_stats())
            .unwrap_or_default()
    }
}

/// `m`'s guard; a thread that panicked holding it left the data whole (a
/// call that failed part-way leaves the VM context as IREE left it).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
