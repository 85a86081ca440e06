//! `.npz` archives (zip of `.npy` members), as written by `np.savez`,
//! `np.savez_compressed` and MLX's `mx.savez`.
//!
//! Stored members are parsed in place inside the memory-mapped archive, so
//! their tensors borrow the map (no copy). Their CRC-32 is verified when the
//! member is decoded (one pass over its bytes, as numpy does; crc32fast runs at
//! several GB/s, see `cargo bench -p parity-tensor`), so a flipped bit is an
//! error naming the file and member, never data. Deflated members are
//! CRC-checked by the zip reader as they inflate. Deflated members are decompressed into a buffer whose size is bounded
//! both by the npy header and by the most deflate can expand the compressed
//! bytes (about 1032:1), so a hostile header cannot trigger a huge allocation.

use crate::error::TensorError;
use crate::fsio::{map_file, write_atomic};
use crate::npy::{check_data_len, header_error, npy_in_map, owned_tensor, write_npy_to};
use crate::npy_header::{parse_header, parse_preamble};
use crate::tensor::{checked_nbytes, Tensor};
use std::collections::HashSet;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zip::{CompressionMethod, ZipArchive};

/// Deflate's maximum expansion ratio is 1032:1; anything beyond cannot be genuine.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// The archive bytes as a zip reader source, sharing the memory map.
#[derive(Clone, Debug)]
struct MapBytes(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// An opened `.npz` archive; members are decoded on demand by [`NpzArchive::get`].
#[derive(Clone, Debug)]
pub struct NpzArchive {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
    zip: ZipArchive<Cursor<MapBytes>>,
    keys: Vec<String>,
}

/// Maps and opens an `.npz` archive, reading its central directory.
pub fn read_npz(path: impl AsRef<Path>) -> Result<NpzArchive, TensorError> {
    let path = path.as_ref().to_path_buf();
    let map = map_file(&path)?;
    let zip =
        ZipArchive::new(Cursor::new(MapBytes(map.clone()))).map_err(|source| TensorError::Zip {
            path: path.clone(),
            member: String::new(),
            source,
        })?;
    // Same naming rule as numpy's NpzFile: strip a trailing `.npy`.
    let keys = zip
        .file_names()
        .filter(|n| !n.ends_with('/'))
        .map(|n| n.strip_suffix(".npy").unwrap_or(n).to_string())
        .collect();
    Ok(NpzArchive {
        path,
        map,
        zip,
        keys,
    })
}

impl NpzArchive {
    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Array names (member names without `.npy`), in archive order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// True when the archive has an array named `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// Decodes the array `key`: borrowed from the map if stored uncompressed and
    /// little-endian C order, otherwise owned.
    pub fn get(&self, key: &str) -> Result<Tensor, TensorError> {
        let mut zip = self.zip.clone();
        let member = format!("{key}.npy");
        let index = zip
            .index_for_name(&member)
            .or_else(|| zip.index_for_name(key))
            .ok_or_else(|| TensorError::MissingKey {
                path: self.path.clone(),
                key: key.to_string(),
                available: self.keys.join(", "),
            })?;
        let what = format!("npz member `{key}`");
        let zip_err = |source| TensorError::Zip {
            path: self.path.clone(),
            member: format!(" in member `{key}`"),
            source,
        };
        let raw = zip.by_index_raw(index).map_err(zip_err)?;
        if raw.encrypted() {
            return Err(TensorError::malformed(
                &self.path,
                what,
                "member is encrypted",
            ));
        }
        let (method, csize, size) = (raw.compression(), raw.compressed_size(), raw.size());
        let crc = raw.crc32();
        let start = raw.data_start();
        drop(raw);
        match method {
            CompressionMethod::Stored => {
                let (Some(start), true) = (start, csize == size) else {
                    return Err(TensorError::malformed(
                        &self.path,
                        what,
                        "stored member has inconsistent sizes",
                    ));
                };
                let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(size)) else {
                    return Err(TensorError::malformed(&self.path, what, "member too large"));
                };
                let bytes = start
                    .checked_add(len)
                    .and_then(|end| self.map.get(start..end))
                    .ok_or_else(|| {
                        TensorError::malformed(
                            &self.path,
                            &what,
                            "member runs past the archive end",
                        )
                    })?;
                let actual = crc32fast::hash(bytes);
                if actual != crc {
                    return Err(TensorError::malformed(
                        &self.path,
                        what,
                        format!(
                            "CRC-32 mismatch: the member's bytes hash to {actual:08x} but the \
                             archive records {crc:08x} (the file is damaged)"
                        ),
                    ));
                }
                npy_in_map(self.map.clone(), start, len, &self.path, &what)
            }
            CompressionMethod::Deflated => {
                let reader = zip.by_index(index).map_err(zip_err)?;
                self.inflate(reader, csize, size, &what)
            }
            other => Err(TensorError::malformed(
                &self.path,
                what,
                format!("unsupported zip compression {other:?} (expected stored or deflated)"),
            )),
        }
    }

    /// Decompresses a deflated member, reading the npy header first to bound the data size.
    fn inflate(
        &self,
        mut reader: impl Read,
        compressed: u64,
        declared: u64,
        what: &str,
    ) -> Result<Tensor, TensorError> {
        let path = &self.path;
        let (header, nbytes) = member_header(&mut reader, compressed, declared, path, what)?;
        // read_to_end grows with the bytes actually inflated; take() caps it.
        let mut data = Vec::new();
        reader
            .take(nbytes as u64 + 1)
            .read_to_end(&mut data)
            .map_err(|e| member_read_error(path, what, e))?;
        check_data_len(&header, data.len(), path, what)?;
        owned_tensor(&header, data, path, what)
    }
}

/// A read error inside a member, as the error to report: the zip reader checks
/// the CRC-32 at the member's end and says only "Invalid checksum".
pub(crate) fn member_read_error(path: &Path, what: &str, e: std::io::Error) -> TensorError {
    let reason = if e.to_string().contains("checksum") {
        "CRC-32 mismatch: the inflated bytes do not match the archive's CRC \
         (the file is damaged)"
            .to_string()
    } else if e.kind() == std::io::ErrorKind::UnexpectedEof {
        "the member ends early (the file is truncated, or changed while being read)".to_string()
    } else {
        format!("cannot decompress member: {e}")
    };
    TensorError::malformed(path, what, reason)
}

/// Reads a member's npy preamble and header from `reader` (positioned at the
/// member's first byte) and checks the data size it implies against the
/// member's declared size and the most `compressed` bytes can inflate to.
/// Returns the header and its data size in bytes.
pub(crate) fn member_header(
    reader: &mut impl Read,
    compressed: u64,
    declared: u64,
    path: &Path,
    what: &str,
) -> Result<(crate::npy_header::NpyHeader, usize), TensorError> {
    let short = |e| member_read_error(path, what, e);
    let mut head = vec![0u8; 10];
    reader.read_exact(&mut head).map_err(short)?;
    if head.get(6).is_some_and(|&major| major >= 2) {
        let mut more = [0u8; 2];
        reader.read_exact(&mut more).map_err(short)?;
        head.extend(more);
    }
    let pre = parse_preamble(&head).map_err(|r| TensorError::malformed(path, what, r))?;
    let mut text = vec![0u8; pre.header_len];
    reader.read_exact(&mut text).map_err(short)?;
    let header = parse_header(&text, pre.major).map_err(|r| header_error(path, what, r))?;
    let nbytes = checked_nbytes(&header.shape, header.dtype).ok_or_else(|| {
        TensorError::malformed(path, what, format!("shape {:?} too large", header.shape))
    })?;
    let bound = compressed
        .saturating_mul(MAX_DEFLATE_RATIO)
        .saturating_add(1024);
    let total = (pre.data_start() as u64).saturating_add(nbytes as u64);
    if total > bound || total != declared {
        return Err(TensorError::malformed(
            path,
            what,
            format!(
                "npy header needs {total} bytes but the member holds {declared} \
                 ({compressed} compressed)"
            ),
        ));
    }
    Ok((header, nbytes))
}

/// Writes `tensors` to an `.npz` at `path` (members `<name>.npy`), deflated if
/// `compressed`, atomically. Names must be unique and non-empty.
pub fn write_npz(
    path: impl AsRef<Path>,
    tensors: &[(&str, &Tensor)],
    compressed: bool,
) -> Result<(), TensorError> {
    let path = path.as_ref();
    let mut seen = HashSet::new();
    for (name, _) in tensors {
        if name.is_empty() || name.ends_with('/') || !seen.insert(*name) {
            return Err(TensorError::InvalidWrite {
                path: path.to_path_buf(),
                name: name.to_string(),
                reason: "npz member names must be unique, non-empty and not end in '/'".into(),
            });
        }
    }
    let method = if compressed {
        CompressionMethod::Deflated
    } else {
        CompressionMethod::Stored
    };
    let zip_err = |member: &str, source| TensorError::Zip {
        path: path.to_path_buf(),
        member: if member.is_empty() {
            String::new()
        } else {
            format!(" in member `{member}`")
        },
        source,
    };
    write_atomic(path, |out| {
        let mut zip = zip::ZipWriter::new(out);
        for (name, tensor) in tensors {
            // zip64 only where needed, like numpy, so small archives stay plain zip.
            let large = tensor.bytes().len() as u64 >= u64::from(u32::MAX) - (1 << 20);
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(method)
                .large_file(large);
            zip.start_file(format!("{name}.npy"), options)
                .map_err(|e| zip_err(name, e))?;
            write_npy_to(&mut zip, tensor, path)?;
        }
        zip.finish().map_err(|e| zip_err("", e))?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    fn sample(dtype: DType) -> Tensor {
        let vals: Vec<f64> = (0..6).map(|i| i as f64 - 2.0).collect();
        Tensor::from_f64_as(dtype, vec![2, 3], &vals).unwrap()
    }

    #[test]
    fn round_trips_every_dtype_stored_and_deflated() {
        let dir = tempfile::tempdir().unwrap();
        for compressed in [false, true] {
            let path = dir.path().join(format!("a{compressed}.npz"));
            let tensors: Vec<(String, Tensor)> = DType::ALL
                .iter()
                .map(|&d| (d.name().to_string(), sample(d)))
                .collect();
            let refs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
            write_npz(&path, &refs, compressed).unwrap();
            let npz = read_npz(&path).unwrap();
            assert_eq!(npz.keys().len(), DType::ALL.len());
            for (name, t) in &tensors {
                let back = npz.get(name).unwrap();
                assert_eq!(back.dtype(), t.dtype());
                assert_eq!(back.shape(), t.shape());
                assert_eq!(back.bytes(), t.bytes());
                assert_eq!(back.is_mapped(), !compressed, "{name}");
            }
            let err = npz.get("nope").unwrap_err().to_string();
            assert!(err.contains("nope") && err.contains(".npz"), "{err}");
        }
    }

    #[test]
    fn duplicate_names_are_rejected_and_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.npz");
        let t = sample(DType::F32);
        assert!(write_npz(&path, &[("x", &t), ("x", &t)], false).is_err());
        assert!(!path.exists());
    }

    /// Replaces the first occurrence of `from` in `bytes` by `to`; returns whether it was found.
    fn patch(bytes: &mut [u8], from: &[u8], to: &[u8]) -> bool {
        match bytes.windows(from.len()).position(|w| w == from) {
            Some(at) => {
                bytes[at..at + to.len()].copy_from_slice(to);
                true
            }
            None => false,
        }
    }

    #[test]
    fn a_flipped_bit_in_a_stored_member_is_a_crc_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.npz");
        let vals: Vec<f32> = (0..64).map(|i| 1000.0 + i as f32).collect();
        let t = Tensor::from_f32(vec![64], &vals).unwrap();
        write_npz(&path, &[("ok", &t), ("hit", &t)], false).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        // Flip one bit of the *second* member's data (the last copy of the values).
        let needle = 1033.0f32.to_le_bytes();
        let at = bytes.windows(4).rposition(|w| w == needle).unwrap();
        bytes[at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let npz = read_npz(&path).unwrap();
        assert_eq!(npz.get("ok").unwrap().to_f64_vec()[33], 1033.0);
        let err = npz.get("hit").unwrap_err().to_string();
        assert!(
            err.contains("s.npz") && err.contains("`hit`") && err.contains("CRC-32 mismatch"),
            "{err}"
        );
    }

    #[test]
    fn a_wrong_recorded_crc_is_an_error_for_stored_and_deflated_members() {
        let dir = tempfile::tempdir().unwrap();
        let t = sample(DType::F32);
        let mut npy = Vec::new();
        write_npy_to(&mut npy, &t, Path::new("x")).unwrap();
        let crc = crc32fast::hash(&npy).to_le_bytes();
        let wrong = (crc32fast::hash(&npy) ^ 0x8000_0000).to_le_bytes();
        for compressed in [false, true] {
            let path = dir.path().join(format!("c{compressed}.npz"));
            write_npz(&path, &[("x", &t)], compressed).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            // Local header and central directory both record the CRC.
            assert!(patch(&mut bytes, &crc, &wrong));
            assert!(patch(&mut bytes, &crc, &wrong));
            std::fs::write(&path, &bytes).unwrap();
            let err = read_npz(&path).unwrap().get("x").unwrap_err().to_string();
            assert!(
                err.contains(&format!("c{compressed}.npz")) && err.contains("`x`"),
                "{err}"
            );
            assert!(err.contains("CRC-32 mismatch"), "{compressed}: {err}");
        }
    }
}
