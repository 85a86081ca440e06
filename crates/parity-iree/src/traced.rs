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

use crate::compiler::{diagnostics_text, CompileOptions, IreeCompiler, COMPILE_LOCK};
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
        options.validate(source_name)?;
        // Locations printed inline (process-wide printing flags, set once).
        self.global_flags(&[]);
        let _one_at_a_time = COMPILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: eerie::compiler::CompilerError| IreeError::Compile {
            source_name: source_name.to_string(),
            diagnostics: diagnostics_text(&e, source_name),
        };
        let mut session = self.inner.create_session();
        session.set_flags(options.effective_flags()).map_err(fail)?;
        let flow_ir = {
            let source = session.create_source_from_buf(mlir).map_err(fail)?;
            let mut invocation = session.create_invocation();
            let mut out = eerie::compiler::MemBufferOutput::new(&self.inner).map_err(fail)?;
            invocation
                .parse_source(source)
                .map_err(fail)?
                .set_verify_ir(true)
                .set_compile_to_phase("flow")
                .map_err(fail)?
                .pipeline(eerie::compiler::Pipeline::Std)
                .map_err(fail)?
                .run_pass_pipeline(TRACE_PASS)
                .map_err(fail)?
                .output_ir(&mut out)
                .map_err(fail)?;
            String::from_utf8_lossy(out.map_memory().map_err(fail)?).into_owned()
        };
        let source = session
            .create_source_from_buf(flow_ir.as_bytes())
            .map_err(fail)?;
        let mut invocation = session.create_invocation();
        let mut out = eerie::compiler::MemBufferOutput::new(&self.inner).map_err(fail)?;
        invocation
            .parse_source(source)
            .map_err(fail)?
            .set_verify_ir(true)
            .set_compile_from_phase("flow")
            .map_err(fail)?
            .pipeline(eerie::compiler::Pipeline::Std)
            .map_err(fail)?
            .output_vm_byte_code(&mut out)
            .map_err(fail)?;
        let vmfb = out.map_memory().map_err(fail)?.to_vec();
        Ok(TracedArtifact { vmfb, flow_ir })
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
