//! Format-agnostic loading: pick the reader from the file extension and pick
//! an array out of multi-array files by key.

use crate::error::TensorError;
use crate::npy::read_npy;
use crate::npz::{read_npz, NpzArchive};
use crate::safetensors::{read_safetensors, SafetensorsFile};
use crate::tensor::Tensor;
use std::path::Path;

/// An opened tensor file of any supported format.
#[derive(Clone, Debug)]
pub enum TensorFile {
    /// A single `.npy` array.
    Npy(Tensor),
    /// An `.npz` archive.
    Npz(NpzArchive),
    /// A `.safetensors` file.
    Safetensors(SafetensorsFile),
}

/// Opens `path` with the reader its extension (`.npy`, `.npz`, `.safetensors`, any case) names.
pub fn open_tensor_file(path: impl AsRef<Path>) -> Result<TensorFile, TensorError> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("npy") => read_npy(path).map(TensorFile::Npy),
        Some("npz") => read_npz(path).map(TensorFile::Npz),
        Some("safetensors") => read_safetensors(path).map(TensorFile::Safetensors),
        _ => Err(TensorError::UnknownFormat {
            path: path.to_path_buf(),
        }),
    }
}

impl TensorFile {
    /// The array names the file holds (empty for `.npy`, which holds one unnamed array).
    pub fn keys(&self) -> Vec<String> {
        match self {
            TensorFile::Npy(_) => Vec::new(),
            TensorFile::Npz(npz) => npz.keys().to_vec(),
            TensorFile::Safetensors(st) => st.names().to_vec(),
        }
    }

    /// The file's path, for error messages (None for `.npy`, whose tensor does not keep it).
    fn path(&self) -> Option<&Path> {
        match self {
            TensorFile::Npy(_) => None,
            TensorFile::Npz(npz) => Some(npz.path()),
            TensorFile::Safetensors(st) => Some(st.path()),
        }
    }

    /// The array `key`. A `.npy` takes no key; a multi-array file may omit the
    /// key only when it holds exactly one array. `path` names the file in errors.
    pub fn get(&self, key: Option<&str>, path: &Path) -> Result<Tensor, TensorError> {
        let path = self.path().unwrap_or(path);
        match (self, key) {
            (TensorFile::Npy(t), None) => Ok(t.clone()),
            (TensorFile::Npy(_), Some(k)) => Err(TensorError::KeyUsage {
                path: path.to_path_buf(),
                reason: format!("an .npy file holds a single unnamed array; got key `{k}`"),
            }),
            (TensorFile::Npz(npz), Some(k)) => npz.get(k),
            (TensorFile::Safetensors(st), Some(k)) => st.get(k),
            (_, None) => match self.keys().as_slice() {
                [only] => self.get(Some(only), path),
                keys => Err(TensorError::KeyUsage {
                    path: path.to_path_buf(),
                    reason: format!(
                        "holds {} arrays, so a key is required (available: {})",
                        keys.len(),
                        keys.join(", ")
                    ),
                }),
            },
        }
    }
}

/// Loads one tensor from an `.npy`, `.npz` or `.safetensors` file (format from
/// the extension). `key` selects the array in multi-array files; see [`TensorFile::get`].
pub fn load_tensor(path: impl AsRef<Path>, key: Option<&str>) -> Result<Tensor, TensorError> {
    let path = path.as_ref();
    open_tensor_file(path)?.get(key, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_npy, write_npz, write_safetensors};

    #[test]
    fn dispatches_by_extension_and_applies_key_rules() {
        let dir = tempfile::tempdir().unwrap();
        let a = Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap();
        let b = Tensor::from_f64(vec![], &[3.0]).unwrap();
        let npy = dir.path().join("a.NPY");
        write_npy(&npy, &a).unwrap();
        let one = dir.path().join("one.npz");
        write_npz(&one, &[("a", &a)], true).unwrap();
        let two = dir.path().join("two.safetensors");
        write_safetensors(&two, &[("a", &a), ("b", &b)], None).unwrap();

        assert_eq!(
            load_tensor(&npy, None).unwrap().to_f64_vec(),
            vec![1.0, 2.0]
        );
        assert_eq!(
            load_tensor(&one, None).unwrap().to_f64_vec(),
            vec![1.0, 2.0]
        );
        assert_eq!(
            load_tensor(&two, Some("b")).unwrap().to_f64_vec(),
            vec![3.0]
        );
        let err = load_tensor(&two, None).unwrap_err().to_string();
        assert!(
            err.contains("two.safetensors") && err.contains("a, b"),
            "{err}"
        );
        let err = load_tensor(&npy, Some("x")).unwrap_err().to_string();
        assert!(err.contains("a.NPY") && err.contains("`x`"), "{err}");
        let err = load_tensor(dir.path().join("x.bin"), None).unwrap_err();
        assert!(matches!(err, TensorError::UnknownFormat { .. }));
    }
}
