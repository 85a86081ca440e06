//! Conversions between parity tensors and eerie buffer views.
//!
//! Tensor bytes are little-endian and may be unaligned (memory-mapped npy):
//! aligned bytes on a little-endian host are uploaded in place, others are
//! decoded into a typed Vec first.

use eerie::runtime::{BufferView, Runtime, Value};
use half::{bf16, f16};
use parity_tensor::{DType, Tensor};
use std::borrow::Cow;

/// Decodes fixed-size little-endian elements.
fn decode<T, const N: usize>(bytes: &[u8], from_le: fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            from_le(a)
        })
        .collect()
}

/// The elements of `bytes`: borrowed in place when the host is little-endian
/// and the bytes are aligned for `T`, else decoded into a Vec. Only called
/// with plain number types (f16, bf16, f32, f64, i8..i64), for which every
/// bit pattern is a valid value.
fn typed<T: Copy, const N: usize>(bytes: &[u8], from_le: fn([u8; N]) -> T) -> Cow<'_, [T]> {
    if cfg!(target_endian = "little")
        && std::mem::size_of::<T>() == N
        && bytes.len().is_multiple_of(N)
        && bytes.as_ptr().align_offset(std::mem::align_of::<T>()) == 0
    {
        // SAFETY: the pointer is aligned for T, the length is a whole number
        // of T, the bytes live as long as the borrow, and T is a plain number
        // type whose little-endian layout is the host's.
        let slice =
            unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / N) };
        return Cow::Borrowed(slice);
    }
    Cow::Owned(decode(bytes, from_le))
}

/// Uploads a tensor to the runtime's device as a buffer view of its own dtype.
/// Errors are plain text; the caller adds the argument index and function.
pub(crate) fn tensor_to_value(rt: &Runtime, t: &Tensor) -> Result<Value, String> {
    let shape = t.shape();
    let b = t.bytes();
    let up = |e: eerie::runtime::RuntimeError| format!("uploading {} {shape:?}: {e}", t.dtype());
    Ok(match t.dtype() {
        DType::F32 => rt
            .buffer_view(shape, &typed(b, f32::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::F64 => rt
            .buffer_view(shape, &typed(b, f64::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::F16 => rt
            .buffer_view(shape, &typed(b, f16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::Bf16 => rt
            .buffer_view(shape, &typed(b, bf16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I8 => rt
            .buffer_view(shape, &typed(b, i8::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I16 => rt
            .buffer_view(shape, &typed(b, i16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I32 => rt
            .buffer_view(shape, &typed(b, i32::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I64 => rt
            .buffer_view(shape, &typed(b, i64::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::U8 => rt.buffer_view(shape, b).map_err(up)?.into(),
        DType::Bool => {
            // IREE's i1 storage is one byte holding exactly 0 or 1; anything else is a
            // corrupt input, not "true".
            if let Some(i) = b.iter().position(|&v| v > 1) {
                return Err(format!(
                    "bool element {i} has byte value {} (expected 0 or 1)",
                    b[i]
                ));
            }
            let bools: Vec<bool> = b.iter().map(|&v| v == 1).collect();
            rt.buffer_view(shape, &bools).map_err(up)?.into()
        }
    })
}

/// Reads a result buffer view back into a tensor with the view's own element type and shape.
pub(crate) fn value_to_tensor(v: &Value) -> Result<Tensor, String> {
    fn read<T: eerie::runtime::BufferElement, const N: usize>(
        view: &BufferView<T>,
        dtype: DType,
        to_le: fn(T) -> [u8; N],
    ) -> Result<Tensor, String> {
        let values = view
            .read()
            .map_err(|e| format!("reading {dtype} result: {e}"))?;
        let bytes: Vec<u8> = values.into_iter().flat_map(to_le).collect();
        Tensor::from_bytes(dtype, view.shape(), bytes).map_err(|e| e.to_string())
    }
    match v {
        Value::F32(view) => read(view, DType::F32, f32::to_le_bytes),
        Value::F64(view) => read(view, DType::F64, f64::to_le_bytes),
        Value::F16(view) => read(view, DType::F16, f16::to_le_bytes),
        Value::Bf16(view) => read(view, DType::Bf16, bf16::to_le_bytes),
        Value::I8(view) => read(view, DType::I8, i8::to_le_bytes),
        Value::I16(view) => read(view, DType::I16, i16::to_le_bytes),
        Value::I32(view) => read(view, DType::I32, i32::to_le_bytes),
        Value::I64(view) => read(view, DType::I64, i64::to_le_bytes),
        Value::U8(view) => read(view, DType::U8, u8::to_le_bytes),
        Value::Bool(view) => read(view, DType::Bool, |b: bool| [b as u8]),
        Value::U16(_) => Err("result element type u16 is not supported by parity".into()),
        Value::U32(_) => Err("result element type u32 is not supported by parity".into()),
        Value::U64(_) => Err("result element type u64 is not supported by parity".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Aligned or not, the elements are the little-endian decoding of the bytes;
        /// aligned ones are borrowed in place (no copy).
        #[test]
        fn typed_equals_decode_at_any_alignment(values in prop::collection::vec(any::<u32>(), 0..64), shift in 0usize..4) {
            let mut buf = vec![0u8; shift];
            for v in &values {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            let bytes = &buf[shift..];
            let got = typed(bytes, u32::from_le_bytes);
            let want = decode(bytes, u32::from_le_bytes);
            prop_assert_eq!(got.as_ref(), want.as_slice());
            let aligned = bytes.as_ptr().align_offset(4) == 0;
            prop_assert_eq!(matches!(got, Cow::Borrowed(_)), aligned && cfg!(target_endian = "little"));
        }
    }
}
