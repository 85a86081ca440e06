//! parity patch: a HAL module debug sink that hands each traced tensor list
//! (`hal.buffer_view.trace`, emitted by a module compiled with IREE's
//! dispatch tracing) to a Rust closure while the program runs.
//!
//! The callback runs inside an invocation (eerie's runtime lock held for
//! reading) and the sink is released inside the HAL module's destruction
//! (the lock held for writing), so nothing here may take that lock: no
//! eerie `Device` or `Value` is made or dropped. The device is held by a
//! raw reference and traced buffers are copied out with the raw HAL calls.

use alloc::{boxed::Box, string::String, vec, vec::Vec};

use eerie_sys::runtime as sys;

use super::hal::Device;

/// One traced tensor, copied to the host.
#[derive(Clone, Debug)]
pub struct TracedBuffer {
    /// IREE's element type code (`iree_hal_element_type_t`).
    pub element_type: u32,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its bytes, dense row-major, little-endian.
    pub bytes: Vec<u8>,
}

impl TracedBuffer {
    /// The element type's name (`f32`, `bf16`, `i32`, `bool`, ...; signed
    /// and signless integers alike), or `unknown`.
    pub fn element_type_name(&self) -> &'static str {
        let signed = [
            (sys::iree_hal_element_types_t_IREE_HAL_ELEMENT_TYPE_SINT_8, "i8"),
            (sys::iree_hal_element_types_t_IREE_HAL_ELEMENT_TYPE_SINT_16, "i16"),
            (sys::iree_hal_element_types_t_IREE_HAL_ELEMENT_TYPE_SINT_32, "i32"),
            (sys::iree_hal_element_types_t_IREE_HAL_ELEMENT_TYPE_SINT_64, "i64"),
        ];
        signed
            .iter()
            .find(|(code, _)| *code as u32 == self.element_type)
            .map(|(_, name)| *name)
            .unwrap_or_else(|| super::hal::element_type_name(self.element_type as _))
    }
}

/// Called with a trace key (e.g. `main_dispatch_0::main_dispatch_0_matmul_4x16x8_f32
/// outputs`) and the traced tensors. An `Err` aborts the running invocation
/// (IREE status ABORTED).
pub type TraceFn = Box<dyn FnMut(&str, Vec<TracedBuffer>) -> Result<(), String>>;

/// What the sink's `user_data` points at.
struct SinkState {
    /// A retained HAL device, or null for an inline runtime (host memory).
    device: *mut sys::iree_hal_device_t,
    on_trace: TraceFn,
}

/// A debug sink owning `on_trace`; the HAL module releases it (and with it
/// the closure and the device reference) when the module is destroyed.
pub(crate) fn sink(device: &Device, on_trace: TraceFn) -> sys::iree_hal_module_debug_sink_t {
    let raw = device.raw_hal_device().unwrap_or(core::ptr::null_mut());
    if !raw.is_null() {
        unsafe { sys::iree_hal_device_retain(raw) };
    }
    let state = Box::into_raw(Box::new(SinkState {
        device: raw,
        on_trace,
    }));
    sys::iree_hal_module_debug_sink_t {
        release: sys::iree_hal_module_debug_sink_release_callback_t {
            fn_: Some(release),
            user_data: state.cast(),
        },
        buffer_view_trace: sys::iree_hal_module_buffer_view_trace_callback_t {
            fn_: Some(trace),
            user_data: state.cast(),
        },
    }
}

unsafe extern "C" fn release(user_data: *mut core::ffi::c_void) {
    if user_data.is_null() {
        return;
    }
    let state = unsafe { Box::from_raw(user_data.cast::<SinkState>()) };
    if !state.device.is_null() {
        unsafe { sys::iree_hal_device_release(state.device) };
    }
}

/// Copies one buffer view to the host.
unsafe fn read(
    device: *mut sys::iree_hal_device_t,
    view: *mut sys::iree_hal_buffer_view_t,
) -> Result<TracedBuffer, ()> {
    let rank = unsafe { sys::iree_hal_buffer_view_shape_rank(view) };
    let shape = (0..rank)
        .map(|i| unsafe { sys::iree_hal_buffer_view_shape_dim(view, i) } as usize)
        .collect();
    let element_type = unsafe { sys::iree_hal_buffer_view_element_type(view) } as u32;
    let len = unsafe { sys::iree_hal_buffer_view_byte_length(view) } as usize;
    let buffer = unsafe { sys::iree_hal_buffer_view_buffer(view) };
    let mut bytes = vec![0u8; len];
    if len > 0 {
        let status = if device.is_null() {
            unsafe { sys::iree_hal_buffer_map_read(buffer, 0, bytes.as_mut_ptr().cast(), len as _) }
        } else {
            unsafe {
                sys::iree_hal_device_transfer_d2h(
                    device,
                    buffer,
                    0,
                    bytes.as_mut_ptr().cast(),
                    len as _,
                    sys::iree_hal_transfer_buffer_flag_bits_t_IREE_HAL_TRANSFER_BUFFER_FLAG_DEFAULT
                        as _,
                    sys::iree_timeout_t {
                        type_: sys::iree_timeout_type_e_IREE_TIMEOUT_ABSOLUTE,
                        nanos: i64::MAX,
                    },
                )
            }
        };
        if !status.is_null() {
            unsafe { sys::iree_status_ignore(status) };
            return Err(());
        }
    }
    Ok(TracedBuffer {
        element_type,
        shape,
        bytes,
    })
}

unsafe extern "C" fn trace(
    user_data: *mut core::ffi::c_void,
    key: sys::iree_string_view_t,
    buffer_view_count: sys::iree_host_size_t,
    buffer_views: *mut *mut sys::iree_hal_buffer_view_t,
    _host_allocator: sys::iree_allocator_t,
) -> sys::iree_status_t {
    let state = unsafe { &mut *user_data.cast::<SinkState>() };
    let key_bytes: &[u8] = if key.data.is_null() {
        &[]
    } else {
        unsafe { core::slice::from_raw_parts(key.data.cast::<u8>(), key.size) }
    };
    let key = core::str::from_utf8(key_bytes).unwrap_or("<non-utf8 trace key>");
    let mut buffers = Vec::with_capacity(buffer_view_count);
    for i in 0..buffer_view_count {
        match unsafe { read(state.device, *buffer_views.add(i)) } {
            Ok(b) => buffers.push(b),
            Err(()) => return sys::iree_status_code_e_IREE_STATUS_DATA_LOSS as usize as _,
        }
    }
    let on_trace = &mut state.on_trace;
    // A panic must not unwind into C.
    #[cfg(feature = "std")]
    let outcome =
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| on_trace(key, buffers)));
    #[cfg(not(feature = "std"))]
    let outcome: Result<Result<(), String>, ()> = Ok(on_trace(key, buffers));
    match outcome {
        Ok(Ok(())) => core::ptr::null_mut(),
        // `iree_status_from_code`: a code-only status (no message storage).
        _ => sys::iree_status_code_e_IREE_STATUS_ABORTED as usize as _,
    }
}
