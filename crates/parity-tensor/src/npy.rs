//! `.npy` files (format versions 1.0, 2.0 and 3.0): memory-mapped reading and atomic writing.
//!
//! Reading rules:
//! - Little-endian, C-order data is borrowed from the memory map (no copy).
//! - Big-endian (`>`) data is byte-swapped into an owned little-endian tensor.
//! - Fortran-order data is transposed into an owned C-order tensor. MLX's
//!   `mx.save` marks every 0-d and 1-d array (and transposed views) as
//!   `fortran_order: True`, so rejecting Fortran order would reject ordinary
//!   MLX dumps; for 0-d/1-d arrays both orders coincide and the data stays mapped.
//! - bfloat16 is read from descr `<V2`, which is what both numpy + ml_dtypes
//!   (`np.save`) and MLX (`mx.save`) write; the writer uses the same spelling,
//!   so `np.load(...).view(ml_dtypes.bfloat16)` and `mx.load(...)` read it back.
//! - The data region must be exactly as long as dtype and shape require.

use crate::error::TensorError;
use crate::fsio::{map_file, write_all, write_atomic};
use crate::npy_header::{descr_for, parse_header, parse_preamble, NpyHeader, Preamble, MAGIC};
use crate::tensor::{checked_nbytes, Tensor};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Reads an `.npy` file, borrowing little-endian C-order data from a memory map.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Tensor, TensorError> {
    let path = path.as_ref();
    let map = map_file(path)?;
    let len = map.len();
    npy_in_map(map, 0, len, path, "npy")
}

/// Parses an in-memory `.npy` image into an owned tensor; `origin` names it in errors.
pub fn parse_npy_bytes(bytes: &[u8], origin: &Path) -> Result<Tensor, TensorError> {
    let (pre, header) = parse_both(bytes, origin, "npy")?;
    let data = &bytes[pre.data_start()..];
    check_data_len(&header, data.len(), origin, "npy")?;
    owned_tensor(&header, data.to_vec(), origin, "npy")
}

/// Parses the `.npy` image at `map[offset..offset + len]`, borrowing its data
/// from the map when it is little-endian C order. `what` names the member in errors.
pub(crate) fn npy_in_map(
    map: Arc<memmap2::Mmap>,
    offset: usize,
    len: usize,
    path: &Path,
    what: &str,
) -> Result<Tensor, TensorError> {
    let image = offset
        .checked_add(len)
        .and_then(|end| map.get(offset..end))
        .ok_or_else(|| TensorError::malformed(path, what, "member data lies outside the file"))?;
    let (pre, header) = parse_both(image, path, what)?;
    let data_len = len - pre.data_start();
    check_data_len(&header, data_len, path, what)?;
    if header.big_endian || needs_transpose(&header) {
        let data = image[pre.data_start()..].to_vec();
        return owned_tensor(&header, data, path, what);
    }
    Tensor::from_mmap(
        header.dtype,
        header.shape,
        map,
        offset + pre.data_start(),
        data_len,
    )
    .map_err(|source| TensorError::ByteLength {
        path: path.to_path_buf(),
        what: what.to_string(),
        source,
    })
}

/// Builds a tensor from a decoded header and its (already length-checked) data bytes.
pub(crate) fn owned_tensor(
    header: &NpyHeader,
    mut data: Vec<u8>,
    path: &Path,
    what: &str,
) -> Result<Tensor, TensorError> {
    let size = header.dtype.size();
    if header.big_endian {
        for elem in data.chunks_exact_mut(size) {
            elem.reverse();
        }
    }
    if needs_transpose(header) {
        data = fortran_to_c(&data, &header.shape, size);
    }
    Tensor::from_bytes(header.dtype, header.shape.clone(), data).map_err(|source| {
        TensorError::ByteLength {
            path: path.to_path_buf(),
            what: what.to_string(),
            source,
        }
    })
}

/// Parses preamble and header of a complete `.npy` image.
pub(crate) fn parse_both(
    image: &[u8],
    path: &Path,
    what: &str,
) -> Result<(Preamble, NpyHeader), TensorError> {
    let pre = parse_preamble(image).map_err(|r| TensorError::malformed(path, what, r))?;
    let text = image
        .get(pre.header_start..pre.data_start())
        .ok_or_else(|| TensorError::malformed(path, what, "file ends inside the header"))?;
    let header = parse_header(text, pre.major).map_err(|r| header_error(path, what, r))?;
    Ok((pre, header))
}

/// Turns a header parse failure into the matching error variant.
pub(crate) fn header_error(path: &Path, what: &str, reason: String) -> TensorError {
    match reason.strip_prefix("unsupported dtype '") {
        Some(rest) => TensorError::UnsupportedDType {
            path: path.to_path_buf(),
            what: what.to_string(),
            dtype: rest.trim_end_matches('\'').to_string(),
        },
        None => TensorError::malformed(path, what, reason),
    }
}

/// Checks that `data_len` is exactly the size dtype and shape require.
pub(crate) fn check_data_len(
    header: &NpyHeader,
    data_len: usize,
    path: &Path,
    what: &str,
) -> Result<(), TensorError> {
    match checked_nbytes(&header.shape, header.dtype) {
        Some(n) if n == data_len => Ok(()),
        Some(n) => Err(TensorError::malformed(
            path,
            what,
            format!(
                "shape {:?} of {} needs {n} data bytes, file has {data_len}",
                header.shape, header.dtype
            ),
        )),
        None => Err(TensorError::malformed(
            path,
            what,
            format!("shape {:?} is too large to address", header.shape),
        )),
    }
}

/// Fortran order differs from C order only when two or more axes are longer than 1.
fn needs_transpose(header: &NpyHeader) -> bool {
    header.fortran_order && header.shape.iter().filter(|&&d| d > 1).count() > 1
}

/// Reorders column-major element bytes into row-major order.
fn fortran_to_c(src: &[u8], shape: &[usize], size: usize) -> Vec<u8> {
    let numel = src.len() / size.max(1);
    let mut out = Vec::with_capacity(src.len());
    // Column-major strides, in elements.
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1usize;
    for &d in shape {
        strides.push(acc);
        acc = acc.saturating_mul(d);
    }
    let mut index = vec![0usize; shape.len()];
    let mut src_elem = 0usize;
    for _ in 0..numel {
        out.extend_from_slice(&src[src_elem * size..(src_elem + 1) * size]);
        // Advance the row-major odometer, keeping the column-major source offset in step.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            src_elem += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            src_elem -= strides[axis] * shape[axis];
            index[axis] = 0;
        }
    }
    out
}

/// The complete `.npy` preamble + padded header for a C-order little-endian `tensor`.
///
/// Version 1.0 unless the header does not fit its 16-bit length, then 2.0.
/// Padded with spaces and a newline so the data starts on a 64-byte boundary, as numpy does.
pub(crate) fn npy_preamble(tensor: &Tensor) -> Vec<u8> {
    let shape = match tensor.shape() {
        [d] => format!("({d},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr_for(tensor.dtype())
    );
    let build = |major: u8, len_bytes: usize| {
        let unpadded = MAGIC.len() + 2 + len_bytes + dict.len() + 1;
        let header_len = dict.len() + 1 + (64 - unpadded % 64) % 64;
        let mut out = MAGIC.to_vec();
        out.extend([major, 0]);
        if len_bytes == 2 {
            out.extend((header_len as u16).to_le_bytes());
        } else {
            out.extend((header_len as u32).to_le_bytes());
        }
        out.extend(dict.as_bytes());
        out.resize(MAGIC.len() + 2 + len_bytes + header_len - 1, b' ');
        out.push(b'\n');
        (header_len, out)
    };
    match build(1, 2) {
        (len, out) if len <= u16::MAX as usize => out,
        _ => build(2, 4).1,
    }
}

/// Writes `tensor` as an `.npy` image (preamble, header, data) to `out`.
pub(crate) fn write_npy_to(
    out: &mut impl Write,
    tensor: &Tensor,
    path: &Path,
) -> Result<(), TensorError> {
    write_all(out, path, &npy_preamble(tensor))?;
    write_all(out, path, tensor.bytes())
}

/// Writes `tensor` to `path` as `.npy` (v1.0, or v2.0 for huge headers), C order, atomically.
pub fn write_npy(path: impl AsRef<Path>, tensor: &Tensor) -> Result<(), TensorError> {
    let path = path.as_ref();
    write_atomic(path, |out| write_npy_to(out, tensor, path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn fortran_transpose_matches_numpy_layout() {
        // np.asfortranarray(np.arange(6).reshape(2, 3)) stores 0 3 1 4 2 5.
        let src: Vec<u8> = [0u8, 3, 1, 4, 2, 5].to_vec();
        assert_eq!(fortran_to_c(&src, &[2, 3], 1), vec![0, 1, 2, 3, 4, 5]);
        // 2x3x2 arange in Fortran order, from numpy's ravel(order='F').
        let f = [0u8, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11];
        assert_eq!(
            fortran_to_c(&f, &[2, 3, 2], 1),
            (0u8..12).collect::<Vec<_>>()
        );
        assert!(fortran_to_c(&[], &[0, 3], 4).is_empty());
    }

    #[test]
    fn preamble_is_aligned_and_parseable() {
        for shape in [vec![], vec![5], vec![2, 3, 4]] {
            let n = shape.iter().product::<usize>();
            let t = Tensor::from_f64_as(DType::Bf16, shape.clone(), &vec![1.0; n]).unwrap();
            let pre = npy_preamble(&t);
            assert_eq!(pre.len() % 64, 0);
            let mut image = pre.clone();
            image.extend(t.bytes());
            let back = parse_npy_bytes(&image, Path::new("mem.npy")).unwrap();
            assert_eq!((back.dtype(), back.shape()), (DType::Bf16, &shape[..]));
        }
    }

    #[test]
    fn truncated_data_is_an_error_naming_the_file() {
        let t = Tensor::from_f32(vec![4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        let mut image = npy_preamble(&t);
        image.extend(&t.bytes()[..15]);
        let err = parse_npy_bytes(&image, Path::new("cut.npy"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cut.npy") && err.contains("16"), "{err}");
    }
}
