//! Modules compiled with IREE's dispatch tracing, run with a debug sink that
//! hands every dispatch's inputs and outputs to the caller as they are made
//! (`parity dispatches`; design in docs/dispatches.md).
//!
//! IREE's own switch, `--iree-flow-trace-dispatch-tensors`, is a process-wide
//! option the in-process compiler session rejects ("option not found"). The
//! same pass is run here between two halves of the standard pipeline instead:
//! compile to the `flow` phase, run `iree-flow-inject-dispatch-tracing`, and
//! compile on from `flow`. Dispatch formation happens before the split, so the
//! dispatches are those of an untraced compile with the same flags.

use crate::compiler::{CompileOptions, IreeCompiler};
use crate::error::IreeError;
use crate::runtime::{status_text, IreeRuntime, LoadedModule};
use parity_tensor::{DType, Tensor};
use std::marker::PhantomData;
use std::ops::Deref;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The pass pipeline (nested in the module the invocation holds) that inserts a `flow.tensor.trace` of every dispatch's
/// operands (`KEY inputs`) and results (`KEY outputs`), KEY being
/// `EXECUTABLE::ENTRY_POINT`.
pub const TRACE_PASS: &str = "util.func(iree-flow-inject-dispatch-tracing)";

/// A traced module: its vmfb, and its IR at the end of the flow phase (the
/// dispatch executables with the locations of the operations they hold).
#[derive(Clone, Debug)]
pub struct TracedArtifact {
    /// The compiled module.
    pub vmfb: Vec<u8>,
    /// The flow-phase IR, generic form with inline locations.
    pub flow_ir: String,
    /// Executables a `--iree-hal-substitute-executable-source` of the
    /// options names that this module does not hold (nothing substituted).
    pub unmatched_substitutions: Vec<String>,
}

impl IreeCompiler {
    /// Compiles `mlir` like [`IreeCompiler::compile`] with every dispatch's
    /// inputs and outputs traced to the HAL module's debug sink.
    pub fn compile_traced(
        &self,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
    ) -> Result<TracedArtifact, IreeError> {
        let phased = self.compile_phased(source_name, mlir, options, Some(TRACE_PASS))?;
        let flow_ir = phased.flow_ir.unwrap_or_default();
        Ok(TracedArtifact {
            vmfb: phased.vmfb,
            flow_ir,
            unmatched_substitutions: phased.unmatched,
        })
    }
}

/// Called with each trace key and its tensors, read back to the host, while
/// the program runs; an `Err` aborts the invocation.
pub type OnTrace = Box<dyn FnMut(&str, Vec<Tensor>) -> Result<(), String>>;

impl IreeRuntime {
    /// Loads a traced vmfb ([`IreeCompiler::compile_traced`]): every
    /// `KEY inputs` / `KEY outputs` trace its calls make goes to `on_trace`.
    /// A traced tensor parity cannot read (an element type it does not
    /// carry) aborts the call with a message naming the key.
    pub fn load_traced(
        &self,
        vmfb: &[u8],
        name: &str,
        mut on_trace: OnTrace,
    ) -> Result<TracedModule, IreeError> {
        let load_err = |e: eerie::runtime::RuntimeError| IreeError::Load {
            name: name.to_string(),
            message: status_text(&e),
        };
        let natives: Vec<&eerie::runtime::NativeModule> =
            self.parameter_module()?.into_iter().collect();
        let sink: eerie::runtime::TraceFn = Box::new(move |key, buffers| {
            let tensors = buffers
                .into_iter()
                .enumerate()
                .map(|(i, b)| to_tensor(b).map_err(|m| format!("{key}: tensor {i}: {m}")))
                .collect::<Result<Vec<_>, _>>()?;
            on_trace(key, tensors)
        });
        let program = self
            .shared
            .inner
            .load_vmfb_traced(vmfb, &natives, sink)
            .map_err(load_err)?;
        if !natives.is_empty() {
            self.shared.parameter_loads.fetch_add(1, Ordering::Relaxed);
        }
        Ok(TracedModule {
            module: LoadedModule {
                name: name.to_string(),
                info: crate::vmfb::inspect(vmfb),
                program,
                shared: Arc::clone(&self.shared),
            },
            _one_thread: PhantomData,
        })
    }
}

/// A traced module: a [`LoadedModule`] whose HAL module holds the trace
/// closure. Not `Send` (unlike a `LoadedModule`): the closure is not, and
/// it runs on the thread that invokes.
pub struct TracedModule {
    module: LoadedModule,
    _one_thread: PhantomData<Rc<()>>,
}

impl Deref for TracedModule {
    type Target = LoadedModule;
    fn deref(&self) -> &LoadedModule {
        &self.module
    }
}

/// A traced buffer as a tensor of the dtype IREE reports.
fn to_tensor(b: eerie::runtime::TracedBuffer) -> Result<Tensor, String> {
    let name = b.element_type_name();
    let dtype: DType = name
        .parse()
        .map_err(|_| format!("element type {name} is not supported by parity"))?;
    Tensor::from_bytes(dtype, b.shape, b.bytes).map_err(|e| e.to_string())
}
