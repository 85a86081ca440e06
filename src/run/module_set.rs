//! The compiled modules of a run loaded into one IREE runtime per worker
//! thread; a per-function module's artifacts load when first called.

use super::artifacts::Artifacts;
use super::module_error::ModuleError;
use super::modules::Compiled;
use crate::target::Target;
use parity_iree::{IreeError, IreeRuntime, LoadedModule, Signature};
use parity_tensor::Tensor;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One module as loaded.
enum Loaded {
    /// A whole-module vmfb.
    Whole(LoadedModule),
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
    loaded: OnceCell<Result<LoadedModule, ModuleError>>,
}

/// The modules of a run loaded into one runtime (one per thread: IREE
/// runtimes cannot move between threads), or why each could not be loaded.
pub struct ModuleSet {
    modules: BTreeMap<String, Result<Loaded, ModuleError>>,
    load_errors: RefCell<Vec<ModuleError>>,
    // Declared last so the modules are dropped before their runtime.
    runtime: Result<IreeRuntime, ModuleError>,
}

impl ModuleSet {
    /// Creates a runtime on `target`'s device and loads every compiled whole
    /// module into it (per-function artifacts load when first called).
    /// [`Target::load`] is the way in.
    pub(crate) fn load(target: &Target, compiled: &Compiled) -> ModuleSet {
        let mut load_errors = Vec::new();
        let runtime = target.runtime().map_err(|e| ModuleError::Runtime {
            driver: target.device().to_string(),
            source: Arc::new(e),
        });
        let mut modules = BTreeMap::new();
        for (name, artifacts) in compiled {
            let loaded = match (&runtime, artifacts) {
                (_, Err(e)) => Err(e.clone()),
                (Err(e), _) => Err(e.clone()),
                (Ok(runtime), Ok(Artifacts::Whole(bytes))) => {
                    runtime.load(bytes, name).map(Loaded::Whole).map_err(|e| {
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
                                loaded: OnceCell::new(),
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
            load_errors: RefCell::new(load_errors),
            runtime,
        }
    }

    /// Load failures so far (not compile failures, which `compile_all` recorded).
    pub fn load_errors(&self) -> Vec<ModuleError> {
        self.load_errors.borrow().clone()
    }

    /// The loaded module holding `function` of `module`: the whole module, or
    /// the function's own (loaded now if this is its first call).
    fn find(&self, module: &str, function: &str) -> Result<&LoadedModule, ModuleError> {
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
            runtime.load(&one.vmfb, module).map_err(|e| {
                let e = ModuleError::Load {
                    module: module.to_string(),
                    function: Some(function.to_string()),
                    source: Arc::new(e),
                };
                self.load_errors.borrow_mut().push(e.clone());
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
        loaded.signature(function).and_then(Result::ok)
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
        loaded
            .invoke_keyed(function, args, keys)
            .map_err(|e| ModuleError::Invoke(Arc::new(e)))
    }

    /// What this set's runtime uploaded so far (zero when it has none).
    pub fn upload_stats(&self) -> parity_iree::UploadStats {
        self.runtime
            .as_ref()
            .map(|r| r.upload_stats())
            .unwrap_or_default()
    }
}
