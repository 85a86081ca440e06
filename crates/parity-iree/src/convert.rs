//! Conversions between parity tensors and eerie buffer views.
//!
//! Tensor bytes are little-endian and may be unaligned (memory-mapped npy), so
//! elements are decoded into a typed Vec before upload, never cast in place.

use eerie::runtime::{BufferView, Runtime, Value};
use half::{bf16, f16};
use parity_tensor::{DType, Tensor};

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

/// Uploads a tensor to the runtime's device as a buffer view of its own dtype.
/// Errors are plain text; the caller adds the argument index and function.
pub(crate) fn tensor_to_value(rt: &Runtime, t: &Tensor) -> Result<Value, String> {
    let shape = t.shape();
    let b = t.bytes();
    let up = |e: eerie::runtime::RuntimeError| format!("uploading {} {shape:?}: {e}", t.dtype());
    Ok(match t.dtype() {
        DType::F32 => rt
            .buffer_view(shape, &decode(b, f32::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::F64 => rt
            .buffer_view(shape, &decode(b, f64::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::F16 => rt
            .buffer_view(shape, &decode(b, f16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::Bf16 => rt
            .buffer_view(shape, &decode(b, bf16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I8 => rt
            .buffer_view(shape, &decode(b, i8::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I16 => rt
            .buffer_view(shape, &decode(b, i16::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I32 => rt
            .buffer_view(shape, &decode(b, i32::from_le_bytes))
            .map_err(up)?
            .into(),
        DType::I64 => rt
            .buffer_view(shape, &decode(b, i64::from_le_bytes))
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
