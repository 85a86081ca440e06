//! IREE parameters for parity: the weights of a module kept out of it as
//! `util.global`s initialised from `#flow.parameter.named<"scope"::"key">`,
//! read at run time from `.irpa`, `.safetensors` or `.gguf` files.
//!
//! [`Parameters::open`] memory-maps each file (never reads it into memory),
//! wraps the mapping in an IREE file handle and indexes it with IREE's own
//! parsers (`iree_io_parse_file_index`), one index per scope;
//! [`Parameters::entries`] lists what the files hold (for checks before a
//! run); [`Parameters::module`] makes IREE's io-parameters VM module over
//! those indices, which a program registers before its bytecode module
//! (`eerie::runtime::Runtime::load_vmfb_with`, vendor/eerie).
//!
//! The IREE C code behind this is compiled by build.rs from the sources in
//! the eerie-sys crate (eerie-sys's own build leaves it out).

#![warn(missing_docs)]

mod ffi;
mod mapped;

use eerie::runtime::NativeModule;
use std::path::{Path, PathBuf};

use mapped::MappedFile;

/// A parameter file or scope IREE cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParameterError {
    /// The file cannot be opened or mapped (missing, unreadable, a directory).
    #[error("parameter file {} (scope `{scope}`): {message}", path.display())]
    Open {
        /// The scope it was given for.
        scope: String,
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
    /// IREE's parser refuses the file (an unknown extension, a truncated or
    /// malformed header).
    #[error("parameter file {} (scope `{scope}`): IREE cannot index it: {message}", path.display())]
    Parse {
        /// The scope it was given for.
        scope: String,
        /// The file.
        path: PathBuf,
        /// IREE's message.
        message: String,
    },
    /// IREE cannot make the io-parameters module or a scope's provider.
    #[error("parameters: {message}")]
    Module {
        /// IREE's message.
        message: String,
    },
}

/// One parameter a file holds, as IREE's index has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its scope (the spec's `parameters:` key).
    pub scope: String,
    /// Its key in the file.
    pub key: String,
    /// Its length in bytes.
    pub length: u64,
    /// The file it is read from; None for a splat (a repeated pattern the
    /// archive stores without data).
    pub file: Option<PathBuf>,
    /// Its byte offset in that file.
    pub offset: u64,
}

/// One scope: its IREE index and the files indexed into it.
struct Scope {
    name: String,
    index: *mut ffi::ParameterIndex,
    files: Vec<MappedFile>,
}

/// The parameter files of a subject, mapped and indexed by IREE, one index
/// per scope. Not `Send` (IREE objects of one runtime's thread).
pub struct Parameters {
    scopes: Vec<Scope>,
}

impl Parameters {
    /// Maps and indexes `scopes` (scope name, its files in order). A key
    /// in two files of a scope is kept twice; lookups (IREE's and
    /// [`Parameters::lookup`]) take the first file's.
    pub fn open(scopes: &[(String, Vec<PathBuf>)]) -> Result<Parameters, ParameterError> {
        let mut out = Parameters { scopes: Vec::new() };
        for (name, files) in scopes {
            let mut index = std::ptr::null_mut();
            // SAFETY: plain constructor; on success `index` holds one reference,
            // which `Parameters::drop` releases.
            ffi::check(unsafe {
                ffi::iree_io_parameter_index_create(ffi::system_allocator(), &mut index)
            })
            .map_err(|message| ParameterError::Module { message })?;
            out.scopes.push(Scope {
                name: name.clone(),
                index,
                files: Vec::new(),
            });
            let scope = out.scopes.last_mut().expect("just pushed");
            for path in files {
                let file = MappedFile::open(path).map_err(|message| ParameterError::Open {
                    scope: name.clone(),
                    path: path.clone(),
                    message,
                })?;
                // IREE picks the parser by the path's extension.
                let path_text = path.to_string_lossy();
                // SAFETY: `file.handle()` is a live handle this `MappedFile` owns a
                // reference to; the index retains it for every entry it adds, so
                // entries stay valid after the `MappedFile` is dropped; the path
                // view outlives the call.
                ffi::check(unsafe {
                    ffi::iree_io_parse_file_index(
                        ffi::string_view(&path_text),
                        file.handle(),
                        scope.index,
                        ffi::system_allocator(),
                    )
                })
                .map_err(|message| ParameterError::Parse {
                    scope: name.clone(),
                    path: path.clone(),
                    message,
                })?;
                scope.files.push(file);
            }
        }
        Ok(out)
    }

    /// The scopes, in the order given.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(|s| s.name.as_str())
    }

    /// Every parameter of every scope, in index order.
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for scope in &self.scopes {
            // SAFETY: `scope.index` is live (released only in drop).
            let count = unsafe { ffi::iree_io_parameter_index_count(scope.index) };
            for i in 0..count {
                let mut entry: *const ffi::IndexEntry = std::ptr::null();
                // SAFETY: `i < count`; IREE returns a pointer into the index,
                // valid while the index lives and is not added to (it is not
                // after `open`), read right away.
                let ok = ffi::check(unsafe {
                    ffi::iree_io_parameter_index_get(scope.index, i, &mut entry)
                });
                if ok.is_err() || entry.is_null() {
                    continue;
                }
                // SAFETY: see above; the key view points into the index's storage.
                let e = unsafe { &*entry };
                let file = (e.storage_type == ffi::STORAGE_FILE)
                    .then(|| {
                        scope
                            .files
                            .iter()
                            .find(|f| f.handle() == e.file_handle)
                            .map(|f| f.path().to_path_buf())
                    })
                    .flatten();
                out.push(Entry {
                    scope: scope.name.clone(),
                    // SAFETY: the key view is valid while the index is.
                    key: unsafe { ffi::view_text(&e.key) },
                    length: e.length,
                    file,
                    offset: e.file_offset,
                });
            }
        }
        out
    }

    /// The entry `key` of `scope`, if a file of that scope holds it.
    pub fn lookup(&self, scope: &str, key: &str) -> Option<Entry> {
        self.entries()
            .into_iter()
            .find(|e| e.scope == scope && e.key == key)
    }

    /// The files given for `scope` (empty for an unknown scope).
    pub fn files(&self, scope: &str) -> Vec<&Path> {
        self.scopes
            .iter()
            .filter(|s| s.name == scope)
            .flat_map(|s| s.files.iter().map(MappedFile::path))
            .collect()
    }

    /// IREE's io-parameters VM module serving every scope from its index
    /// (one provider per scope), to register before a bytecode module.
    pub fn module(&self) -> Result<NativeModule, ParameterError> {
        let mut providers: Vec<*mut ffi::ParameterProvider> = Vec::new();
        let mut result = Ok(());
        for scope in &self.scopes {
            let mut provider = std::ptr::null_mut();
            // SAFETY: the index is live; the provider retains it; the scope
            // view outlives the call (IREE copies the scope name).
            result = ffi::check(unsafe {
                ffi::iree_io_parameter_index_provider_create(
                    ffi::string_view(&scope.name),
                    scope.index,
                    ffi::DEFAULT_MAX_CONCURRENT_OPERATIONS,
                    ffi::system_allocator(),
                    &mut provider,
                )
            });
            if result.is_err() {
                break;
            }
            providers.push(provider);
        }
        let module = result.and_then(|()| {
            // SAFETY: `create` hands IREE the shared VM instance and the slot
            // eerie owns afterwards; the module retains every provider, and
            // on failure IREE leaves the slot unset.
            unsafe {
                NativeModule::create(|instance, out| {
                    ffi::iree_io_parameters_module_create(
                        instance,
                        providers.len(),
                        providers.as_ptr(),
                        ffi::system_allocator(),
                        out,
                    )
                })
            }
            .map_err(|e| e.to_string())
        });
        for provider in providers {
            // SAFETY: our one reference from `_provider_create`; the module
            // holds its own.
            unsafe { ffi::iree_io_parameter_provider_release(provider) };
        }
        module.map_err(|message| ParameterError::Module { message })
    }
}

impl Drop for Parameters {
    fn drop(&mut self) {
        for scope in &mut self.scopes {
            // Entries hold their own file references; the mappings close when
            // the last of them goes (MappedFile's release callback).
            scope.files.clear();
            // SAFETY: our one reference from `_index_create`; providers and
            // modules made from it hold theirs.
            unsafe { ffi::iree_io_parameter_index_release(scope.index) };
        }
    }
}
