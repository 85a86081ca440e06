//! Running compiled modules on the IREE runtime.
//!
//! Threading model: one [`IreeRuntime`] (a HAL device, its resident weights
//! and its parameter providers) is shared by every thread of a run on one
//! target: it is `Send + Sync` and cloning it shares it. A [`LoadedModule`]
//! (one VM context) is `Send` but not `Sync`: IREE VM contexts are
//! thread-compatible, so a module loaded once is used by one thread at a
//! time (behind a lock when several threads call it).

use crate::convert::value_to_tensor;
use crate::error::IreeError;
use crate::signature::{parse_declaration, Signature};
use crate::vmfb::{self, ModuleInfo};
use parity_tensor::Tensor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The default HAL driver: multi-threaded CPU execution.
pub const DEFAULT_DRIVER: &str = "local-task";

/// The HAL drivers this runtime is built with (eerie's `cuda` and `vulkan`
/// features beside its CPU drivers; see this crate's Cargo.toml).
pub const DRIVERS_BUILT_IN: &[&str] = &["local-sync", "local-task", "vulkan", "cuda"];

/// One device a HAL driver sees on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFound {
    /// The driver's ordinal for it.
    pub ordinal: usize,
    /// Its path (e.g. a GPU's UUID), may be empty.
    pub path: String,
    /// Its name as the driver reports it.
    pub name: String,
}

/// The devices `driver` sees here, or why it cannot list them (a driver
/// that is not built in, or whose system library is missing: libcuda.so,
/// libvulkan.so.1).
pub fn available_devices(driver: &str) -> Result<Vec<DeviceFound>, IreeError> {
    let found = eerie::runtime::Runtime::available_devices(eerie::runtime::Driver::custom(
        driver.to_string(),
    ))
    .map_err(|e| IreeError::Driver {
        driver: driver.to_string(),
        message: status_text(&e),
    })?;
    Ok(found
        .into_iter()
        .map(|d| DeviceFound {
            ordinal: d.ordinal(),
            path: d.path().to_string(),
            name: d.name().to_string(),
        })
        .collect())
}

/// An IREE runtime bound to one HAL device, with its resident weights and
/// parameter files. `Send + Sync`; clones share the device and the weights.
#[derive(Clone)]
pub struct IreeRuntime {
    pub(crate) shared: Arc<Shared>,
}

/// What every clone of an [`IreeRuntime`] and every module loaded in it share.
pub(crate) struct Shared {
    driver: String,
    // Declared before `inner`: resident buffers are released before the runtime.
    resident: crate::resident::Resident,
    /// Module loads that read parameters (each reads its globals once).
    pub(crate) parameter_loads: AtomicU64,
    /// The subject's parameter files and IREE's io-parameters module over
    /// them (made at the first load), when it has any.
    pub(crate) parameters: Option<(
        parity_iree_io::Parameters,
        OnceLock<eerie::runtime::NativeModule>,
    )>,
    pub(crate) inner: eerie::runtime::Runtime,
}

// SAFETY: eerie marks its runtime objects !Send/!Sync conservatively; what
// `Shared` holds and how it is used from several threads is thread-safe in
// IREE: the VM instance is process-wide and shared by eerie already; a HAL
// device and its allocator are thread-safe (iree/hal/device.h; the only
// exceptions, replacing the allocator or channel provider, are never
// called); buffer views are immutable once uploaded and their reference
// counts are atomic; parameter indices are insert-only and thread-safe and
// providers "may be shared by several contexts simultaneously"
// (iree/io/parameter_provider.h, parameter_index.h); VM modules (the
// io-parameters module, made once under a OnceLock) are thread-safe, only
// contexts are not, and contexts live in `LoadedModule`s, not here. The
// resident store is behind a Mutex, the counters are atomics. eerie's own
// RwLock orders runtime creation and destruction against invocations.
unsafe impl Send for Shared {}
// SAFETY: see `Send` above: every method reachable through `&Shared` is thread-safe.
unsafe impl Sync for Shared {}

impl IreeRuntime {
    /// Creates a runtime on the default device of `driver` (`local-task` or `local-sync`).
    pub fn new(driver: &str) -> Result<IreeRuntime, IreeError> {
        let spec = eerie::runtime::DeviceSpec::custom(driver.to_string());
        let inner = eerie::runtime::Runtime::new(spec).map_err(|e| IreeError::Driver {
            driver: driver.to_string(),
            message: status_text(&e),
        })?;
        Ok(IreeRuntime {
            shared: Arc::new(Shared {
                driver: driver.to_string(),
                resident: Default::default(),
                parameter_loads: AtomicU64::new(0),
                parameters: None,
                inner,
            }),
        })
    }

    /// [`IreeRuntime::new`] with IREE parameter files (scope, its files):
    /// each file is memory-mapped and indexed now, and every module loaded
    /// in this runtime reads its `#flow.parameter.named` globals from them.
    /// No scopes: a plain runtime.
    pub fn with_parameters(
        driver: &str,
        scopes: &[(String, Vec<std::path::PathBuf>)],
    ) -> Result<IreeRuntime, IreeError> {
        let mut runtime = IreeRuntime::new(driver)?;
        if !scopes.is_empty() {
            let parameters = parity_iree_io::Parameters::open(scopes)?;
            let shared = Arc::get_mut(&mut runtime.shared).expect("not shared yet");
            shared.parameters = Some((parameters, OnceLock::new()));
        }
        Ok(runtime)
    }

    /// The parameter files this runtime serves, if any.
    pub fn parameters(&self) -> Option<&parity_iree_io::Parameters> {
        self.shared.parameters.as_ref().map(|(p, _)| p)
    }

    /// The HAL driver name this runtime was created with.
    pub fn driver(&self) -> &str {
        &self.shared.driver
    }

    /// What this runtime (all its clones) has uploaded so far: resident
    /// (keyed) arguments once each, every other argument at each call, and
    /// the module loads that read parameters.
    pub fn upload_stats(&self) -> crate::resident::UploadStats {
        crate::resident::UploadStats {
            parameter_loads: self.shared.parameter_loads.load(Ordering::Relaxed),
            ..self.shared.resident.stats()
        }
    }

    /// IREE's io-parameters module over the subject's parameter files, made
    /// at the first call (one per runtime, shared by its programs); None
    /// when the subject has no parameters.
    pub(crate) fn parameter_module(
        &self,
    ) -> Result<Option<&eerie::runtime::NativeModule>, IreeError> {
        let Some((parameters, module)) = &self.shared.parameters else {
            return Ok(None);
        };
        Ok(Some(match module.get() {
            Some(m) => m,
            None => {
                let made = parameters.module()?;
                module.get_or_init(|| made)
            }
        }))
    }

    /// Loads a vmfb; `name` labels errors (usually the module name from stages.yaml).
    pub fn load(&self, vmfb: &[u8], name: &str) -> Result<LoadedModule, IreeError> {
        let load_err = |e: eerie::runtime::RuntimeError| IreeError::Load {
            name: name.to_string(),
            message: status_text(&e),
        };
        let shared = &self.shared;
        let program = match &shared.parameters {
            None => shared.inner.load_vmfb(vmfb).map_err(load_err)?,
            Some((parameters, _)) => {
                let module = self.parameter_module()?.expect("parameters are set");
                let program = shared.inner.load_vmfb_with(vmfb, &[module]).map_err(|e| {
                    let mut e = load_err(e);
                    // IREE names the key; say which files were searched.
                    if let IreeError::Load { message, .. } = &mut e {
                        if e_is_parameter(message) {
                            message.push_str(&describe_files(parameters));
                        }
                    }
                    e
                })?;
                shared.parameter_loads.fetch_add(1, Ordering::Relaxed);
                program
            }
        };
        Ok(LoadedModule {
            name: name.to_string(),
            info: vmfb::inspect(vmfb),
            program,
            shared: Arc::clone(&self.shared),
        })
    }
}

/// A module loaded into an [`IreeRuntime`], ready to invoke: one VM
/// context. `Send` but not `Sync`: one thread at a time.
pub struct LoadedModule {
    pub(crate) name: String,
    pub(crate) info: Option<ModuleInfo>,
    pub(crate) program: eerie::runtime::Program,
    // Declared after `program`: the context is released before the device.
    pub(crate) shared: Arc<Shared>,
}

// SAFETY: a `LoadedModule` owns its VM context (eerie's `Program`, whose
// `Rc`s are cloned only into the `Function` handle `invoke_keyed` makes and
// drops within the call), so moving it to another thread moves every
// reference to that context with it. IREE VM contexts are thread-compatible
// (iree/vm/context.h: externally synchronised), which `&mut`-free use from
// one thread at a time satisfies; it is not `Sync`, so two threads never
// call into it at once. `Shared` is `Send + Sync` (see there).
unsafe impl Send for LoadedModule {}

impl LoadedModule {
    /// The label given at load time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The VM module name inside the vmfb (`module` for an unnamed MLIR module),
    /// when the vmfb could be inspected.
    pub fn vm_module_name(&self) -> Option<&str> {
        self.info.as_ref().map(|i| i.name.as_str())
    }

    /// Exported function names (unqualified), in export order, without IREE's
    /// internal `__init`-style entry points; empty if the vmfb could not be inspected.
    pub fn function_names(&self) -> Vec<String> {
        self.info
            .as_ref()
            .map(|i| {
                i.exports
                    .iter()
                    .filter(|e| !e.name.starts_with("__"))
                    .map(|e| e.name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// IREE's ABI declaration of `function` (argument and result tensor types), if known.
    pub fn declaration(&self, function: &str) -> Option<&str> {
        let info = self.info.as_ref()?;
        let local = function
            .strip_prefix(&format!("{}.", info.name))
            .unwrap_or(function);
        info.exports
            .iter()
            .find(|e| e.name == local)
            .and_then(|e| e.declaration.as_deref())
    }

    /// The typed signature of `function`, parsed from its declaration; None
    /// when the vmfb carries no declaration, Err when it cannot be read.
    pub fn signature(&self, function: &str) -> Option<Result<Signature, String>> {
        self.declaration(function).map(parse_declaration)
    }

    /// Calls `function` (unqualified, or qualified as `module.fn`) with `args` and
    /// returns its results in order, each with the dtype and shape IREE reports.
    pub fn invoke(&self, function: &str, args: &[Tensor]) -> Result<Vec<Tensor>, IreeError> {
        self.invoke_keyed(function, args, &[])
    }

    /// [`LoadedModule::invoke`], where `keys[i]` (when given) names argument
    /// `i` as a resident value (a weight): uploaded to the device on its
    /// first use in this runtime and reused by every later call that names
    /// it, from any module loaded in the same runtime. A key is checked
    /// against the dtype and shape it was uploaded with; a mismatch uploads
    /// afresh without replacing it.
    pub fn invoke_keyed(
        &self,
        function: &str,
        args: &[Tensor],
        keys: &[Option<String>],
    ) -> Result<Vec<Tensor>, IreeError> {
        let unknown = || IreeError::UnknownFunction {
            module: self.name.clone(),
            function: function.to_string(),
            available: self.function_names(),
        };
        if let Some(info) = &self.info {
            let local = function
                .strip_prefix(&format!("{}.", info.name))
                .unwrap_or(function);
            if !info.exports.iter().any(|e| e.name == local) {
                return Err(unknown());
            }
        }
        let resolved = self
            .program
            .function(&self.qualify(function))
            .map_err(|e| {
                let message = status_text(&e);
                if message.contains("NOT_FOUND") {
                    unknown()
                } else {
                    self.invoke_err(function, message)
                }
            })?;
        let mut inputs = Vec::with_capacity(args.len());
        for (index, arg) in args.iter().enumerate() {
            let key = keys.get(index).and_then(Option::as_deref);
            let value = self
                .shared
                .resident
                .value(&self.shared.inner, key, arg)
                .map_err(|message| IreeError::Argument {
                    module: self.name.clone(),
                    function: function.to_string(),
                    index,
                    message,
                })?;
            inputs.push(value);
        }
        let outputs = resolved.invoke(inputs).map_err(|e| {
            let mut message = status_text(&e);
            if let Some(decl) = self.declaration(function) {
                message.push_str(&format!("\n  expected signature: {decl}"));
            }
            message.push_str(&format!("\n  given: {}", describe(args)));
            self.invoke_err(function, message)
        })?;
        outputs
            .iter()
            .enumerate()
            .map(|(i, v)| {
                value_to_tensor(v)
                    .map_err(|m| self.invoke_err(function, format!("result {i}: {m}")))
            })
            .collect()
    }

    /// IREE resolves only `module.fn`; accept the bare name users write in stages.yaml.
    fn qualify(&self, function: &str) -> String {
        match &self.info {
            Some(info) if !function.starts_with(&format!("{}.", info.name)) => {
                format!("{}.{function}", info.name)
            }
            Some(_) => function.to_string(),
            // Uninspectable vmfb: IREE's default module name for an unnamed MLIR module.
            None if !function.contains('.') => format!("module.{function}"),
            None => function.to_string(),
        }
    }

    fn invoke_err(&self, function: &str, message: String) -> IreeError {
        IreeError::Invoke {
            module: self.name.clone(),
            function: function.to_string(),
            message,
        }
    }
}

/// IREE's status text without eerie's `IREE runtime error: Status: "..."` wrapping
/// and with its escaped newlines restored, so the message reads as IREE wrote it.
pub(crate) fn status_text(e: &eerie::runtime::RuntimeError) -> String {
    let s = e.to_string();
    let s = s.strip_prefix("IREE runtime error: ").unwrap_or(&s);
    match s
        .strip_prefix("Status: \"")
        .and_then(|x| x.strip_suffix('"'))
    {
        Some(inner) => inner
            .replace("\\n", "\n")
            .replace("\\\"", "\"")
            .trim_end()
            .to_string(),
        None => s.to_string(),
    }
}

/// Whether a load message is IREE's io-parameters module refusing a key,
/// scope or range (see [`IreeError::is_parameter_input`]).
fn e_is_parameter(message: &str) -> bool {
    IreeError::Load {
        name: String::new(),
        message: message.to_string(),
    }
    .is_parameter_input()
}

/// `\n  parameter files: scope `model`: a.irpa, b.irpa` for every scope.
fn describe_files(parameters: &parity_iree_io::Parameters) -> String {
    parameters
        .scopes()
        .map(|scope| {
            let files: Vec<String> = parameters
                .files(scope)
                .iter()
                .map(|f| f.display().to_string())
                .collect();
            format!("\n  parameter files: scope `{scope}`: {}", files.join(", "))
        })
        .collect()
}

/// `(f32[2, 3], i32[])` style summary of the given arguments.
fn describe(args: &[Tensor]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|t| format!("{}{:?}", t.dtype(), t.shape()))
        .collect();
    format!("({})", parts.join(", "))
}
