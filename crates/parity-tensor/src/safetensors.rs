//! `.safetensors` files, parsed here (not via the `safetensors` crate) so that
//! tensors borrow a shared memory map and every violation gets a parity error.
//!
//! Layout: an 8-byte little-endian header length N, N bytes of JSON, then the
//! data region. Checks follow the format's rules: N at most 100 MB and inside
//! the file; no duplicate names; each tensor's byte range matches its dtype and
//! shape; the ranges tile the data region exactly (no gaps, no overlap, nothing left over);
//! shapes have at most 64 dimensions. The header is parsed straight into typed
//! entries (see `safetensors_header`), so its memory is ~4x its size.

use crate::dtype::DType;
use crate::error::TensorError;
use crate::fsio::{map_file, write_all, write_atomic};
use crate::safetensors_header::{Header, RawEntry, METADATA_KEY};
use crate::tensor::Tensor;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest header accepted, as in the reference implementation.
const MAX_HEADER_LEN: u64 = 100_000_000;

/// A validated tensor entry.
#[derive(Debug, Clone)]
struct Entry {
    /// Ok(dtype), or Err(name) for a dtype the format has but parity does not.
    dtype: Result<DType, String>,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// An opened, fully validated `.safetensors` file; tensors borrow its memory map.
#[derive(Clone, Debug)]
pub struct SafetensorsFile {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
    data_start: usize,
    names: Vec<String>,
    entries: HashMap<String, Entry>,
    metadata: BTreeMap<String, String>,
}

/// Maps and validates a `.safetensors` file.
pub fn read_safetensors(path: impl AsRef<Path>) -> Result<SafetensorsFile, TensorError> {
    let path = path.as_ref().to_path_buf();
    let map = map_file(&path)?;
    let first = map.get(..8).and_then(|b| b.try_into().ok());
    let data_start = header_end(&path, first, map.len())?;
    let layout = parse_layout(&path, &map[8..data_start], map.len())?;
    Ok(SafetensorsFile {
        path,
        map,
        data_start,
        names: layout.names,
        entries: layout.entries,
        metadata: layout.metadata,
    })
}

/// A validated header: what [`read_safetensors`] checks, without the data.
pub(crate) struct Layout {
    /// Tensor names in data-region order.
    pub(crate) names: Vec<String>,
    entries: HashMap<String, Entry>,
    metadata: BTreeMap<String, String>,
}

impl Layout {
    /// Dtype and shape of the tensor `name` (an error for a dtype parity does not support).
    pub(crate) fn dtype_shape(
        &self,
        path: &Path,
        name: &str,
    ) -> Result<(DType, Vec<usize>), TensorError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| TensorError::MissingKey {
                path: path.to_path_buf(),
                key: name.to_string(),
                available: self.names.join(", "),
            })?;
        let dtype = entry
            .dtype
            .clone()
            .map_err(|dtype| TensorError::UnsupportedDType {
                path: path.to_path_buf(),
                what: format!("safetensors tensor `{name}`"),
                dtype,
            })?;
        Ok((dtype, entry.shape.clone()))
    }
}

/// Where the header ends (8 + N), from the file's first 8 bytes (None when the
/// file is shorter) and its length `file_len`.
pub(crate) fn header_end(
    path: &Path,
    first: Option<[u8; 8]>,
    file_len: usize,
) -> Result<usize, TensorError> {
    let bad = |reason: String| TensorError::malformed(path, "safetensors", reason);
    let len_bytes = first.ok_or_else(|| {
        bad(format!(
            "file is {file_len} bytes, shorter than the 8-byte header length"
        ))
    })?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > MAX_HEADER_LEN {
        return Err(bad(format!(
            "header length {header_len} exceeds the 100 MB limit"
        )));
    }
    let data_start = 8 + header_len as usize;
    if data_start > file_len {
        return Err(bad(format!(
            "header length {header_len} runs past the end of the {file_len}-byte file"
        )));
    }
    Ok(data_start)
}

/// Parses and checks the JSON `header` of a file of `file_len` bytes whose
/// data region starts right after it.
pub(crate) fn parse_layout(
    path: &Path,
    header: &[u8],
    file_len: usize,
) -> Result<Layout, TensorError> {
    let bad = |reason: String| TensorError::malformed(path, "safetensors", reason);
    let data_start = 8 + header.len();
    if header.first() != Some(&b'{') {
        return Err(bad("header does not start with '{'".into()));
    }
    let raw: Header =
        serde_json::from_slice(header).map_err(|e| bad(format!("header JSON: {e}")))?;
    let metadata = raw.metadata;
    let mut entries: Vec<(String, Entry)> = Vec::with_capacity(raw.entries.len());
    for (name, entry) in raw.entries {
        let entry = validate_entry(path, &name, entry)?;
        entries.push((name, entry));
    }
    // The ranges must tile [0, data_len) exactly: sort, then walk.
    entries.sort_by_key(|(_, e)| (e.start, e.end));
    let data_len = file_len - data_start;
    let mut cursor = 0usize;
    for (name, e) in &entries {
        if e.start != cursor {
            let problem = if e.start < cursor {
                "overlaps the previous tensor"
            } else {
                "leaves a gap before it"
            };
            return Err(bad(format!(
                "tensor `{name}` data_offsets [{}, {}] {problem} (expected start {cursor})",
                e.start, e.end
            )));
        }
        cursor = e.end;
    }
    if cursor != data_len {
        return Err(bad(format!(
            "tensors cover {cursor} data bytes but the data region holds {data_len}"
        )));
    }
    let names = entries.iter().map(|(n, _)| n.clone()).collect();
    let mut by_name = HashMap::with_capacity(entries.len());
    for (name, entry) in entries {
        if by_name.contains_key(&name) {
            return Err(bad(format!("header JSON: duplicate key `{name}`")));
        }
        by_name.insert(name, entry);
    }
    Ok(Layout {
        names,
        entries: by_name,
        metadata,
    })
}

/// Checks one entry's dtype, shape and offsets against each other.
fn validate_entry(path: &Path, name: &str, raw: RawEntry) -> Result<Entry, TensorError> {
    let (dtype, size) = match safetensors_dtype(&raw.dtype) {
        Some(found) => found,
        None => {
            return Err(TensorError::UnsupportedDType {
                path: path.to_path_buf(),
                what: format!("safetensors tensor `{name}`"),
                dtype: raw.dtype,
            })
        }
    };
    let bad = |reason: String| {
        TensorError::malformed(path, format!("safetensors tensor `{name}`"), reason)
    };
    let [start, end] = raw.data_offsets;
    if end < start {
        return Err(bad(format!(
            "data_offsets [{start}, {end}] end before they start"
        )));
    }
    let needed = raw
        .shape
        .0
        .iter()
        .try_fold(size, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad(format!("shape {:?} is too large to address", raw.shape.0)))?;
    if needed != end - start {
        return Err(bad(format!(
            "{} of shape {:?} needs {needed} bytes but data_offsets [{start}, {end}] span {}",
            raw.dtype,
            raw.shape.0,
            end - start
        )));
    }
    Ok(Entry {
        dtype,
        shape: raw.shape.0,
        start,
        end,
    })
}

/// The dtype and element size for a safetensors dtype name. Names the format
/// defines but parity does not support map to Err so the file still opens.
fn safetensors_dtype(name: &str) -> Option<(Result<DType, String>, usize)> {
    let known = match name {
        "BOOL" => DType::Bool,
        "U8" => DType::U8,
        "I8" => DType::I8,
        "I16" => DType::I16,
        "I32" => DType::I32,
        "I64" => DType::I64,
        "F16" => DType::F16,
        "BF16" => DType::Bf16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => return Some((Err(name.into()), 1)),
        "U16" => return Some((Err(name.into()), 2)),
        "U32" => return Some((Err(name.into()), 4)),
        "U64" | "C64" => return Some((Err(name.into()), 8)),
        _ => return None,
    };
    Some((Ok(known), known.size()))
}

/// The safetensors spelling of a dtype.
fn safetensors_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "BOOL",
        DType::U8 => "U8",
        DType::I8 => "I8",
        DType::I16 => "I16",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::F16 => "F16",
        DType::Bf16 => "BF16",
        DType::F32 => "F32",
        DType::F64 => "F64",
    }
}

impl SafetensorsFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Tensor names in data-region order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when the file has a tensor named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// The `__metadata__` string map (empty when absent).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The tensor `name`, borrowing the file's memory map.
    pub fn get(&self, name: &str) -> Result<Tensor, TensorError> {
        let entry = self
            .entries
            .get(name)
            .ok_or_else(|| TensorError::MissingKey {
                path: self.path.clone(),
                key: name.to_string(),
                available: self.names.join(", "),
            })?;
        let what = format!("safetensors tensor `{name}`");
        let dtype = entry
            .dtype
            .clone()
            .map_err(|dtype| TensorError::UnsupportedDType {
                path: self.path.clone(),
                what: what.clone(),
                dtype,
            })?;
        Tensor::from_mmap(
            dtype,
            entry.shape.clone(),
            self.map.clone(),
            self.data_start + entry.start,
            entry.end - entry.start,
        )
        .map_err(|source| TensorError::ByteLength {
            path: self.path.clone(),
            what,
            source,
        })
    }
}

/// Writes `tensors` (laid out in the given order) and optional string metadata
/// to a `.safetensors` file at `path`, atomically.
pub fn write_safetensors(
    path: impl AsRef<Path>,
    tensors: &[(&str, &Tensor)],
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(), TensorError> {
    let path = path.as_ref();
    let mut header = serde_json::Map::new();
    if let Some(meta) = metadata.filter(|m| !m.is_empty()) {
        header.insert(METADATA_KEY.into(), serde_json::json!(meta));
    }
    let mut seen = HashSet::new();
    let mut offset = 0usize;
    for (name, tensor) in tensors {
        if name.is_empty() || *name == METADATA_KEY || !seen.insert(*name) {
            return Err(TensorError::InvalidWrite {
                path: path.to_path_buf(),
                name: name.to_string(),
                reason: format!("names must be unique, non-empty and not `{METADATA_KEY}`"),
            });
        }
        let end = offset + tensor.bytes().len();
        header.insert(
            name.to_string(),
            serde_json::json!({
                "dtype": safetensors_name(tensor.dtype()),
                "shape": tensor.shape(),
                "data_offsets": [offset, end],
            }),
        );
        offset = end;
    }
    let mut json = serde_json::Value::Object(header).to_string().into_bytes();
    // Pad with spaces so the data region starts 8-byte aligned, as the reference writer does.
    json.resize(json.len().div_ceil(8) * 8, b' ');
    write_atomic(path, |out| {
        write_all(out, path, &(json.len() as u64).to_le_bytes())?;
        write_all(out, path, &json)?;
        for (_, tensor) in tensors {
            write_all(out, path, tensor.bytes())?;
        }
        Ok(())
    })
}

#[cfg(test)]
#[path = "safetensors_tests.rs"]
mod tests;
