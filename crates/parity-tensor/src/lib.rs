//! Dtypes, tensors, and the npy / npz / safetensors readers and writers parity uses.

pub mod dtype;
pub mod error;
mod fsio;
mod json_unique;
pub mod load;
pub mod npy;
mod npy_header;
pub mod npz;
pub mod safetensors;
pub mod store;
pub mod tensor;

pub use dtype::{DType, UnknownDType};
pub use error::TensorError;
pub use load::{load_tensor, open_tensor_file, TensorFile};
pub use npy::{parse_npy_bytes, read_npy, write_npy};
pub use npz::{read_npz, write_npz, NpzArchive};
pub use safetensors::{read_safetensors, write_safetensors, SafetensorsFile};
pub use store::{ManifestEntry, OracleStore, MANIFEST_SCHEMA};
pub use tensor::{checked_nbytes, checked_numel, decode_f64, ByteLengthMismatch, Tensor};
