//! What a manifest entry needs (array names, dtypes, shapes) read from a dump
//! with ordinary `read()` calls, never through a memory map.
//!
//! `oracle index` runs over directories that other tools may still be
//! writing. A memory-mapped file truncated under the map faults with SIGBUS
//! on the next touch of a lost page, which kills the process with no message;
//! a `read()` past the new end just returns short, which becomes an error
//! naming the file. The checks are the readers' own (the npy header and data
//! size, every npz member's CRC-32 and sizes, the safetensors header's
//! tiling of the data region): the same parsers are called, only the bytes
//! arrive by reading.
//!
//! The race itself (a file truncated between the indexer's open and its
//! reads) cannot be reproduced deterministically from outside the process, so
//! the tests truncate a file under an already-open handle and read from that
//! handle: the state the race leaves behind.

use crate::dtype::DType;
use crate::error::TensorError;
use crate::fsio::open_regular;
use crate::npy::{check_data_len, header_error};
use crate::npy_header::{parse_header, parse_preamble};
use crate::npz::{member_header, member_read_error};
use crate::safetensors::{header_end, parse_layout};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use zip::{CompressionMethod, ZipArchive};

/// One array of a dump: its key (None for an `.npy`), dtype and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Probed {
    pub(crate) key: Option<String>,
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
}

/// The arrays of the dump at `path` (format from the extension, any case).
pub(crate) fn probe_path(path: &Path) -> Result<Vec<Probed>, TensorError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(ext.as_deref(), Some("npy" | "npz" | "safetensors")) {
        return Err(TensorError::UnknownFormat {
            path: path.to_path_buf(),
        });
    }
    let file = open_regular(path).map_err(|e| TensorError::io(path, "cannot open", e))?;
    probe_open(file, path)
}

/// [`probe_path`] on an opened file (`path` names it in errors).
pub(crate) fn probe_open(file: File, path: &Path) -> Result<Vec<Probed>, TensorError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => probe_npy(file, path).map(|p| vec![p]),
        Some("npz") => probe_npz(file, path),
        _ => probe_safetensors(file, path),
    }
}

/// The error for a read that stopped short of what the header promised.
fn truncated(path: &Path, what: &str, e: std::io::Error) -> TensorError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        TensorError::malformed(
            path,
            what,
            "file ends early (it is truncated, or changed while being read)",
        )
    } else {
        TensorError::io(path, "cannot read", e)
    }
}

fn file_len(file: &File, path: &Path) -> Result<usize, TensorError> {
    let len = file
        .metadata()
        .map_err(|e| TensorError::io(path, "cannot stat", e))?
        .len();
    usize::try_from(len).map_err(|_| TensorError::malformed(path, "file", "file too large"))
}

fn probe_npy(file: File, path: &Path) -> Result<Probed, TensorError> {
    let what = "npy";
    let len = file_len(&file, path)?;
    let mut reader = BufReader::new(file);
    let mut head = vec![0u8; 10];
    reader
        .read_exact(&mut head)
        .map_err(|e| truncated(path, what, e))?;
    if head.get(6).is_some_and(|&major| major >= 2) {
        let mut more = [0u8; 2];
        reader
            .read_exact(&mut more)
            .map_err(|e| truncated(path, what, e))?;
        head.extend(more);
    }
    let pre = parse_preamble(&head).map_err(|r| TensorError::malformed(path, what, r))?;
    let mut text = vec![0u8; pre.header_len];
    reader
        .read_exact(&mut text)
        .map_err(|e| truncated(path, what, e))?;
    let header = parse_header(&text, pre.major).map_err(|r| header_error(path, what, r))?;
    let data_len = len.saturating_sub(pre.data_start());
    check_data_len(&header, data_len, path, what)?;
    Ok(Probed {
        key: None,
        dtype: header.dtype,
        shape: header.shape,
    })
}

fn probe_npz(file: File, path: &Path) -> Result<Vec<Probed>, TensorError> {
    let zip_err = |member: String, source| TensorError::Zip {
        path: path.to_path_buf(),
        member,
        source,
    };
    let mut zip = ZipArchive::new(BufReader::new(file)).map_err(|e| zip_err(String::new(), e))?;
    let mut out = Vec::new();
    for index in 0..zip.len() {
        let raw = zip
            .by_index_raw(index)
            .map_err(|e| zip_err(format!(" in member #{index}"), e))?;
        let name = raw.name().to_string();
        if name.ends_with('/') {
            continue;
        }
        // Same naming rule as numpy's NpzFile (and `read_npz`): strip a trailing `.npy`.
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let what = format!("npz member `{key}`");
        let (method, csize, size) = (raw.compression(), raw.compressed_size(), raw.size());
        let encrypted = raw.encrypted();
        drop(raw);
        if encrypted {
            return Err(TensorError::malformed(path, what, "member is encrypted"));
        }
        match method {
            CompressionMethod::Stored if csize != size => {
                return Err(TensorError::malformed(
                    path,
                    what,
                    "stored member has inconsistent sizes",
                ))
            }
            CompressionMethod::Stored | CompressionMethod::Deflated => {}
            other => {
                return Err(TensorError::malformed(
                    path,
                    what,
                    format!("unsupported zip compression {other:?} (expected stored or deflated)"),
                ))
            }
        }
        let mut reader = zip
            .by_index(index)
            .map_err(|e| zip_err(format!(" in member `{key}`"), e))?;
        let (header, nbytes) = member_header(&mut reader, csize, size, path, &what)?;
        // Read the data through (into nothing) so the zip reader checks the CRC-32
        // at the member's end, as the store does when it decodes the member.
        let read = std::io::copy(
            &mut (&mut reader).take(nbytes as u64 + 1),
            &mut std::io::sink(),
        )
        .map_err(|e| member_read_error(path, &what, e))?;
        check_data_len(&header, read as usize, path, &what)?;
        out.push(Probed {
            key: Some(key),
            dtype: header.dtype,
            shape: header.shape,
        });
    }
    Ok(out)
}

fn probe_safetensors(file: File, path: &Path) -> Result<Vec<Probed>, TensorError> {
    let what = "safetensors";
    let len = file_len(&file, path)?;
    let mut reader = BufReader::new(file);
    let mut first = [0u8; 8];
    let first = match reader.read_exact(&mut first) {
        Ok(()) => Some(first),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && len < 8 => None,
        Err(e) => return Err(truncated(path, what, e)),
    };
    let data_start = header_end(path, first, len)?;
    let mut header = vec![0u8; data_start - 8];
    reader
        .read_exact(&mut header)
        .map_err(|e| truncated(path, what, e))?;
    let layout = parse_layout(path, &header, len)?;
    // The data region's length was checked against the file's length above;
    // reading it would prove nothing more (safetensors has no checksum).
    layout
        .names
        .iter()
        .map(|name| {
            let (dtype, shape) = layout.dtype_shape(path, name)?;
            Ok(Probed {
                key: Some(name.clone()),
                dtype,
                shape,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_npy, write_npz, write_safetensors, Tensor};

    fn tensor() -> Tensor {
        Tensor::from_f32(vec![64, 16], &vec![0.5; 64 * 16]).unwrap()
    }

    /// Opens `path`, then truncates it to `keep` bytes under the open handle
    /// (what a writer rewriting the file in place does mid-index), then probes
    /// through that handle. With a memory map this order is the SIGBUS of
    /// issue 28; with reads it must be an error naming the file.
    fn truncated_under_open_handle(path: &Path, keep: u64) -> String {
        let file = open_regular(path).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(keep)
            .unwrap();
        probe_open(file, path).unwrap_err().to_string()
    }

    #[test]
    fn probes_every_format_like_the_readers() {
        let dir = tempfile::tempdir().unwrap();
        let t = tensor();
        let b = Tensor::from_f64(vec![], &[3.0]).unwrap();
        write_npy(dir.path().join("a.npy"), &t).unwrap();
        write_npz(dir.path().join("s.npz"), &[("x", &t), ("y", &b)], false).unwrap();
        write_npz(dir.path().join("d.npz"), &[("x", &t)], true).unwrap();
        write_safetensors(
            dir.path().join("w.safetensors"),
            &[("x", &t), ("y", &b)],
            None,
        )
        .unwrap();
        let p = |n: &str| probe_path(&dir.path().join(n)).unwrap();
        let x = |key: Option<&str>| Probed {
            key: key.map(str::to_string),
            dtype: DType::F32,
            shape: vec![64, 16],
        };
        let y = Probed {
            key: Some("y".into()),
            dtype: DType::F64,
            shape: vec![],
        };
        assert_eq!(p("a.npy"), vec![x(None)]);
        assert_eq!(p("s.npz"), vec![x(Some("x")), y.clone()]);
        assert_eq!(p("d.npz"), vec![x(Some("x"))]);
        assert_eq!(p("w.safetensors"), vec![x(Some("x")), y]);
    }

    #[test]
    fn a_file_truncated_under_the_open_handle_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = tensor();
        for (name, keep) in [
            ("s.npz", 2000),
            ("d.npz", 200),
            ("a.npy", 40),
            ("a.npy", 1000),
        ] {
            let path = dir.path().join(name);
            match name {
                "a.npy" => write_npy(&path, &t).unwrap(),
                "d.npz" => write_npz(&path, &[("x", &t)], true).unwrap(),
                _ => write_npz(&path, &[("x", &t)], false).unwrap(),
            }
            let err = truncated_under_open_handle(&path, keep);
            assert!(err.contains(name), "{name} at {keep}: {err}");
        }
        let path = dir.path().join("w.safetensors");
        write_safetensors(&path, &[("x", &t)], None).unwrap();
        let err = truncated_under_open_handle(&path, 30);
        assert!(err.contains("w.safetensors"), "{err}");
    }

    #[test]
    fn a_member_rewritten_in_place_fails_its_crc() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.npz");
        write_npz(&path, &[("x", &tensor())], false).unwrap();
        // Same length, data zeroed: only the CRC-32 can tell.
        let mut damaged = std::fs::read(&path).unwrap();
        damaged[200..2000].fill(0);
        std::fs::write(&path, &damaged).unwrap();
        let err = probe_path(&path).unwrap_err().to_string();
        assert!(err.contains("CRC-32") && err.contains("s.npz"), "{err}");
    }
}
