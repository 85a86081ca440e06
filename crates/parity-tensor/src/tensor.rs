//! The in-memory tensor: a dtype, a row-major shape, and little-endian bytes
//! that are either owned or borrowed from a memory map.

use crate::dtype::DType;
use half::{bf16, f16};
use std::sync::Arc;

/// Where a tensor's bytes live.
#[derive(Clone, Debug)]
enum Storage {
    Owned(Arc<Vec<u8>>),
    Mapped {
        map: Arc<memmap2::Mmap>,
        offset: usize,
        len: usize,
    },
}

/// A dense, row-major (C order) tensor with little-endian element bytes.
///
/// Cloning is cheap: the bytes are shared. The bytes are not guaranteed to be
/// aligned for their element type, so read elements through [`Tensor::get_f64`]
/// or by decoding byte chunks, never by casting the slice.
#[derive(Clone, Debug)]
pub struct Tensor {
    dtype: DType,
    shape: Vec<usize>,
    storage: Storage,
}

/// A tensor whose byte length does not match its shape and dtype.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tensor of dtype {dtype} and shape {shape:?} needs {expected} bytes, got {actual}")]
pub struct ByteLengthMismatch {
    /// The declared dtype.
    pub dtype: DType,
    /// The declared shape.
    pub shape: Vec<usize>,
    /// Bytes the shape and dtype require (None when the product overflows).
    pub expected: u128,
    /// Bytes supplied.
    pub actual: usize,
}

/// Number of elements for a shape, or None when the product overflows usize.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Number of bytes for a shape and dtype, or None when it overflows usize.
pub fn checked_nbytes(shape: &[usize], dtype: DType) -> Option<usize> {
    checked_numel(shape)?.checked_mul(dtype.size())
}

fn expected_bytes(shape: &[usize], dtype: DType) -> u128 {
    shape.iter().fold(dtype.size() as u128, |acc, &d| {
        acc.saturating_mul(d as u128)
    })
}

impl Tensor {
    /// Builds a tensor from owned little-endian bytes, checking their length.
    pub fn from_bytes(
        dtype: DType,
        shape: Vec<usize>,
        bytes: Vec<u8>,
    ) -> Result<Self, ByteLengthMismatch> {
        if checked_nbytes(&shape, dtype) != Some(bytes.len()) {
            return Err(ByteLengthMismatch {
                expected: expected_bytes(&shape, dtype),
                dtype,
                shape,
                actual: bytes.len(),
            });
        }
        Ok(Tensor {
            dtype,
            shape,
            storage: Storage::Owned(Arc::new(bytes)),
        })
    }

    /// Builds a tensor that borrows `len` bytes at `offset` of a memory map.
    pub fn from_mmap(
        dtype: DType,
        shape: Vec<usize>,
        map: Arc<memmap2::Mmap>,
        offset: usize,
        len: usize,
    ) -> Result<Self, ByteLengthMismatch> {
        let in_range = offset.checked_add(len).is_some_and(|end| end <= map.len());
        if !in_range || checked_nbytes(&shape, dtype) != Some(len) {
            return Err(ByteLengthMismatch {
                expected: expected_bytes(&shape, dtype),
                dtype,
                shape,
                actual: if in_range {
                    len
                } else {
                    map.len().saturating_sub(offset)
                },
            });
        }
        Ok(Tensor {
            dtype,
            shape,
            storage: Storage::Mapped { map, offset, len },
        })
    }

    /// An f32 tensor from values.
    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Result<Self, ByteLengthMismatch> {
        Self::from_bytes(
            DType::F32,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// An f64 tensor from values.
    pub fn from_f64(shape: Vec<usize>, values: &[f64]) -> Result<Self, ByteLengthMismatch> {
        Self::from_bytes(
            DType::F64,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// A tensor of `dtype` from f64 values, rounding (to nearest even) or
    /// truncating toward zero for integers; bool is `v != 0`.
    pub fn from_f64_as(
        dtype: DType,
        shape: Vec<usize>,
        values: &[f64],
    ) -> Result<Self, ByteLengthMismatch> {
        let mut bytes = Vec::with_capacity(values.len() * dtype.size());
        for &v in values {
            match dtype {
                DType::Bool => bytes.push((v != 0.0) as u8),
                DType::U8 => bytes.push(v as u8),
                DType::I8 => bytes.extend((v as i8).to_le_bytes()),
                DType::I16 => bytes.extend((v as i16).to_le_bytes()),
                DType::I32 => bytes.extend((v as i32).to_le_bytes()),
                DType::I64 => bytes.extend((v as i64).to_le_bytes()),
                DType::F16 => bytes.extend(f16::from_f64(v).to_le_bytes()),
                DType::Bf16 => bytes.extend(bf16::from_f64(v).to_le_bytes()),
                DType::F32 => bytes.extend((v as f32).to_le_bytes()),
                DType::F64 => bytes.extend(v.to_le_bytes()),
            }
        }
        Self::from_bytes(dtype, shape, bytes)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The row-major shape; empty for a scalar.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        // The constructors checked that the product fits.
        self.shape.iter().product()
    }

    /// The raw little-endian bytes, row-major.
    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Owned(v) => v,
            Storage::Mapped { map, offset, len } => &map[*offset..*offset + *len],
        }
    }

    /// True when the bytes are borrowed from a memory map rather than owned.
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped { .. })
    }

    /// Element `i` (flat, row-major) widened to f64. Panics if `i >= numel`.
    pub fn get_f64(&self, i: usize) -> f64 {
        let s = self.dtype.size();
        let b = &self.bytes()[i * s..(i + 1) * s];
        decode_f64(self.dtype, b)
    }

    /// All elements widened to f64 (exact for every dtype except i64 beyond 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        let s = self.dtype.size();
        self.bytes()
            .chunks_exact(s)
            .map(|b| decode_f64(self.dtype, b))
            .collect()
    }

    /// The same bytes under a new shape with the same element count.
    pub fn reshaped(&self, shape: Vec<usize>) -> Option<Tensor> {
        (checked_numel(&shape) == Some(self.numel())).then(|| Tensor {
            dtype: self.dtype,
            shape,
            storage: self.storage.clone(),
        })
    }
}

/// Decodes one little-endian element of `dtype` from `b` (exactly `dtype.size()` bytes).
#[inline]
pub fn decode_f64(dtype: DType, b: &[u8]) -> f64 {
    match dtype {
        DType::Bool => (b[0] != 0) as u8 as f64,
        DType::U8 => b[0] as f64,
        DType::I8 => b[0] as i8 as f64,
        DType::I16 => i16::from_le_bytes([b[0], b[1]]) as f64,
        DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        DType::I64 => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f64,
        DType::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::Bf16 => bf16::from_le_bytes([b[0], b[1]]).to_f64(),
        DType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        DType::F64 => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}
