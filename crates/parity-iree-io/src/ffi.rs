//! Hand-written declarations of the IREE C functions this crate compiles
//! (build.rs) and eerie-sys's bindings do not cover, over eerie-sys's types.
//! Signatures as in the IREE headers of eerie-sys 0.5.0 (IREE 3.13):
//! iree/io/parameter_index.h, parameter_index_provider.h,
//! parameter_provider.h, formats/parser_registry.h and
//! modules/io/parameters/module.h.

use eerie_sys::runtime as sys;
use std::ffi::c_void;

/// `iree_io_parameter_index_t`: opaque.
#[repr(C)]
pub struct ParameterIndex {
    _opaque: [u8; 0],
}

/// `iree_io_parameter_provider_t`: opaque.
#[repr(C)]
pub struct ParameterProvider {
    _opaque: [u8; 0],
}

/// `IREE_IO_PARAMETER_INDEX_ENTRY_STORAGE_TYPE_FILE`.
pub const STORAGE_FILE: u32 = 1;

/// `IREE_IO_PARAMETER_INDEX_PROVIDER_DEFAULT_MAX_CONCURRENT_OPERATIONS`.
pub const DEFAULT_MAX_CONCURRENT_OPERATIONS: usize = 16;

/// The leading fields of `iree_io_parameter_index_entry_t`, up to its file
/// storage (the splat storage shares the union and is not read here).
/// csrc/layout_check.c fails the build if the C layout differs. Only ever
/// read through pointers IREE hands out, never built here.
#[repr(C)]
pub struct IndexEntry {
    /// `key`.
    pub key: sys::iree_string_view_t,
    /// `metadata`.
    pub metadata: sys::iree_const_byte_span_t,
    /// `length` in bytes.
    pub length: u64,
    /// `type`: [`STORAGE_FILE`] or splat (0).
    pub storage_type: u32,
    /// `storage.file.handle` (valid when `storage_type` is [`STORAGE_FILE`]).
    pub file_handle: *mut sys::iree_io_file_handle_t,
    /// `storage.file.offset`.
    pub file_offset: u64,
}

unsafe extern "C" {
    /// The system allocator's control function (`iree_allocator_system()`
    /// is a header inline over it).
    pub fn iree_allocator_libc_ctl(
        self_: *mut c_void,
        command: sys::iree_allocator_command_t,
        params: *const c_void,
        inout_ptr: *mut *mut c_void,
    ) -> sys::iree_status_t;

    pub fn iree_io_parameter_index_create(
        host_allocator: sys::iree_allocator_t,
        out_index: *mut *mut ParameterIndex,
    ) -> sys::iree_status_t;
    pub fn iree_io_parameter_index_release(index: *mut ParameterIndex);
    pub fn iree_io_parameter_index_count(index: *mut ParameterIndex) -> usize;
    pub fn iree_io_parameter_index_get(
        index: *mut ParameterIndex,
        i: usize,
        out_entry: *mut *const IndexEntry,
    ) -> sys::iree_status_t;

    pub fn iree_io_parse_file_index(
        path: sys::iree_string_view_t,
        file_handle: *mut sys::iree_io_file_handle_t,
        index: *mut ParameterIndex,
        host_allocator: sys::iree_allocator_t,
    ) -> sys::iree_status_t;

    pub fn iree_io_parameter_index_provider_create(
        scope: sys::iree_string_view_t,
        index: *mut ParameterIndex,
        max_concurrent_operations: usize,
        host_allocator: sys::iree_allocator_t,
        out_provider: *mut *mut ParameterProvider,
    ) -> sys::iree_status_t;
    pub fn iree_io_parameter_provider_release(provider: *mut ParameterProvider);

    pub fn iree_io_parameters_module_create(
        instance: *mut sys::iree_vm_instance_t,
        provider_count: usize,
        providers: *const *mut ParameterProvider,
        host_allocator: sys::iree_allocator_t,
        out_module: *mut *mut sys::iree_vm_module_t,
    ) -> sys::iree_status_t;
}

/// `iree_allocator_system()`.
pub fn system_allocator() -> sys::iree_allocator_t {
    sys::iree_allocator_t {
        self_: std::ptr::null_mut(),
        ctl: Some(iree_allocator_libc_ctl),
    }
}

/// A string view over `s`, valid while `s` is.
pub fn string_view(s: &str) -> sys::iree_string_view_t {
    sys::iree_string_view_t {
        data: s.as_ptr().cast(),
        size: s.len(),
    }
}

/// The text of a string view IREE owns, copied out (lossy for non-UTF-8 bytes).
///
/// # Safety
/// `view` must point at `size` readable bytes (or have size 0).
pub unsafe fn view_text(view: &sys::iree_string_view_t) -> String {
    if view.size == 0 || view.data.is_null() {
        return String::new();
    }
    // SAFETY: the caller guarantees `size` readable bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(view.data.cast::<u8>(), view.size) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// Ok for an OK status; otherwise IREE's text for it (and the status freed).
pub fn check(status: sys::iree_status_t) -> Result<(), String> {
    // An OK status is the null pointer (IREE_STATUS_OK with no payload).
    if status.is_null() {
        return Ok(());
    }
    let allocator = system_allocator();
    let mut buffer: *mut std::os::raw::c_char = std::ptr::null_mut();
    let mut length = 0usize;
    // SAFETY: `status` is a failed status this function owns; IREE writes a
    // buffer it allocated with `allocator` into `buffer`/`length`, which is
    // read once and freed with that allocator; the status is freed last.
    unsafe {
        if sys::iree_status_to_string(status, &allocator, &mut buffer, &mut length) {
            let bytes = std::slice::from_raw_parts(buffer.cast::<u8>(), length);
            let text = String::from_utf8_lossy(bytes).into_owned();
            sys::iree_allocator_free(allocator, buffer.cast());
            sys::iree_status_free(status);
            Err(text)
        } else {
            // Consuming the code frees the status.
            Err(format!(
                "IREE status code {}",
                sys::iree_status_consume_code(status)
            ))
        }
    }
}
