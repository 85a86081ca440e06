//! A parameter file memory-mapped (private, copy-on-write) and wrapped in an
//! IREE file handle over the mapping: IREE reads the bytes it needs from the
//! mapping (on the CPU it imports them as buffers in place where their
//! alignment allows), nothing is read into memory here.

use crate::ffi;
use eerie_sys::runtime as sys;
use memmap2::{MmapMut, MmapOptions};
use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// A file mapped copy-on-write and the IREE file handle over its mapping. The
/// mapping lives as long as the handle: IREE's index retains the handle for
/// each entry it reads from it, and the handle's release callback unmaps.
pub(crate) struct MappedFile {
    path: PathBuf,
    handle: *mut sys::iree_io_file_handle_t,
}

/// The handle's release callback: unmaps the file.
///
/// # Safety
/// `user_data` is the `Box<MmapMut>` leaked in [`MappedFile::open`]; IREE calls
/// this once, when the handle's last reference goes.
unsafe extern "C" fn release_mapping(
    user_data: *mut c_void,
    _primitive: sys::iree_io_file_handle_primitive_t,
) {
    // SAFETY: see the function's contract: the box is reclaimed exactly once.
    drop(unsafe { Box::from_raw(user_data.cast::<MmapMut>()) });
}

impl MappedFile {
    /// Maps `path` read-only and wraps it; Err: why it cannot (missing,
    /// unreadable, a directory).
    pub(crate) fn open(path: &Path) -> Result<MappedFile, String> {
        let file = std::fs::File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => e.to_string(),
        })?;
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a regular file".to_string());
        }
        // SAFETY: a private copy-on-write mapping of a regular file: pages
        // are read from the file and a write (IREE imports the mapping as a
        // device buffer in place where it can, on the CPU, and a program may
        // write a mutable global initialised from a parameter) copies the
        // page instead of reaching the file, so the mutable span below is
        // sound. Like every mmap, its bytes change (or the process faults)
        // if another process truncates or rewrites the file while it is
        // mapped; parameter files are inputs a run does not write.
        let mut map = unsafe { MmapOptions::new().map_copy(&file) }
            .map_err(|e| format!("cannot map it: {e}"))?;
        let span = sys::iree_byte_span_t {
            data: map.as_mut_ptr(),
            data_length: map.len(),
        };
        let user_data = Box::into_raw(Box::new(map));
        let callback = sys::iree_io_file_handle_release_callback_t {
            fn_: Some(release_mapping),
            user_data: user_data.cast(),
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: `span` points into the boxed mapping, which stays alive
        // until `release_mapping` runs (when the handle's last reference
        // goes); on failure IREE does not call the callback, so the box is
        // reclaimed here.
        let status = unsafe {
            sys::iree_io_file_handle_wrap_host_allocation(
                sys::iree_io_file_access_bits_t_IREE_IO_FILE_ACCESS_READ,
                span,
                callback,
                ffi::system_allocator(),
                &mut handle,
            )
        };
        if let Err(message) = ffi::check(status) {
            // SAFETY: IREE did not take the box (see above).
            drop(unsafe { Box::from_raw(user_data) });
            return Err(message);
        }
        Ok(MappedFile {
            path: path.to_path_buf(),
            handle,
        })
    }

    /// The file's path as given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The IREE file handle (borrowed: valid while `self` is).
    pub(crate) fn handle(&self) -> *mut sys::iree_io_file_handle_t {
        self.handle
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: our one reference from `_wrap_host_allocation`.
        unsafe { sys::iree_io_file_handle_release(self.handle) };
    }
}
