//! Dtypes, tensors, and the npy / npz / safetensors readers and writers parity uses.
//!
//! - [`read_npy`] / [`write_npy`]: `.npy` v1.0/2.0/3.0; big-endian and Fortran-order
//!   data are converted to little-endian C order; bfloat16 is `<V2` (what numpy +
//!   ml_dtypes and MLX write).
//! - [`read_npz`] / [`write_npz`]: `.npz` with stored (mapped in place) or deflated members.
//! - [`read_safetensors`] / [`write_safetensors`]: `.safetensors`, fully validated on open.
//! - [`OracleStore`]: a dump directory indexed by `manifest.json`.
//! - [`index::index_dir`]: builds a store's `manifest.json` from a directory of dumps.
//! - [`load_tensor`]: one tensor from any of the above, format by extension.
//!
//! Readers memory-map files and tensors borrow the map where the bytes need
//! no conversion; writers replace files atomically (temp file + rename). All
//! errors are [`TensorError`], naming the file and, where relevant, the array.

#![warn(missing_docs)]

pub mod dtype;
pub mod error;
mod fsio;
pub mod index;
mod json_unique;
pub mod load;
pub mod npy;
mod npy_header;
pub mod npz;
pub mod safetensors;
mod safetensors_header;
pub mod store;
pub mod tensor;

pub use dtype::{DType, UnknownDType};
pub use error::TensorError;
pub use fsio::{
    open_regular, read_module_bytes, read_regular, remove_stale_temp_files, write_file_atomic,
    STALE_TEMP_AGE, TEMP_PREFIX,
};
pub use load::{load_tensor, open_tensor_file, TensorFile};
pub use npy::{parse_npy_bytes, read_npy, write_npy};
pub use npz::{read_npz, write_npz, NpzArchive};
pub use safetensors::{read_safetensors, write_safetensors, SafetensorsFile};
pub use store::{ManifestEntry, OracleStore, MANIFEST_SCHEMA};
pub use tensor::{checked_nbytes, checked_numel, decode_f64, ByteLengthMismatch, Tensor};
