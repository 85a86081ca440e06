//! Dtypes, tensors, and the npy / npz / safetensors readers and writers parity uses.

pub mod dtype;
pub mod tensor;

pub use dtype::{DType, UnknownDType};
pub use tensor::{checked_nbytes, checked_numel, decode_f64, ByteLengthMismatch, Tensor};
