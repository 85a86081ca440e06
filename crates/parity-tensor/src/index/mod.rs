//! Building an oracle store's `manifest.json` (schema `parity.oracle-manifest/1`)
//! from a directory of `.npy` / `.npz` / `.safetensors` dumps, for `parity oracle index`.
//!
//! Every tensor file under the directory (recursively, hidden entries skipped)
//! is opened with the same readers [`crate::OracleStore`] uses, so a file the
//! store could not read fails here, named. Names follow [`naming`]; the output
//! is sorted by tensor name, so the same dumps always give the same manifest.

pub mod naming;

use crate::error::TensorError;
use crate::load::{open_tensor_file, TensorFile};
use crate::store::MANIFEST_SCHEMA;
use naming::{case_of, file_stem, tensor_name, CasePattern};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Why a directory cannot be indexed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The directory (or one under it) cannot be listed.
    #[error("{path}: cannot list directory: {source}")]
    List {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Tensor files that cannot be read; every one is listed.
    #[error("{} unreadable tensor file(s):\n  {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    BadFiles(Vec<TensorError>),
    /// Two arrays map to one tensor name.
    #[error("tensor `{name}` comes from both {first} and {second}; rename one of them")]
    Duplicate {
        /// The tensor name.
        name: String,
        /// The first source (`file` or `file[key]`).
        first: String,
        /// The second source.
        second: String,
    },
    /// Nothing to index.
    #[error("{dir}: no tensor files (.npy, .npz, .safetensors) of a selected case{pattern}")]
    Empty {
        /// The directory.
        dir: PathBuf,
        /// ` (pattern ...)` when a case pattern was given.
        pattern: String,
    },
    /// A `--provenance` item is malformed.
    #[error("provenance `{item}`: {reason}")]
    Provenance {
        /// The item as given.
        item: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A `--case` name that cannot be a case.
    #[error("case `{case}`: a case name must be non-empty and contain no `/`")]
    Case {
        /// The name as given.
        case: String,
    },
    /// A dump file cannot be named relative to the manifest's directory.
    #[error("{file}: cannot be named relative to the manifest directory {manifest_dir}")]
    Relative {
        /// The dump file.
        file: PathBuf,
        /// The manifest's directory.
        manifest_dir: PathBuf,
    },
}

/// What to index and how.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// Index only tensors of cases this pattern selects (all when None).
    pub cases: Option<CasePattern>,
    /// The manifest's `provenance` object.
    pub provenance: serde_json::Map<String, serde_json::Value>,
    /// Directory the manifest will live in (file paths are relative to it); None = the dump directory.
    pub manifest_dir: Option<PathBuf>,
    /// Put every tensor under this case (`<case>/<name>`), for a directory holding one case's dumps.
    pub case: Option<String>,
}

/// One manifest entry as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexedEntry {
    /// Dump file, relative to the manifest's directory, `/`-separated.
    pub file: String,
    /// Array name inside an `.npz` / `.safetensors`; absent for `.npy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Element type (parity's dtype names).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
}

/// A built manifest, ready to write.
#[derive(Debug, Clone, Serialize)]
pub struct IndexedManifest {
    /// Always [`MANIFEST_SCHEMA`].
    pub schema: &'static str,
    /// Provenance fields as given.
    pub provenance: serde_json::Map<String, serde_json::Value>,
    /// Tensor name -> entry, sorted by name.
    pub tensors: BTreeMap<String, IndexedEntry>,
    /// Cases left out by the case pattern (not written).
    #[serde(skip)]
    pub skipped_cases: BTreeSet<String>,
    /// Tensor files read.
    #[serde(skip)]
    pub files: usize,
}

impl IndexedManifest {
    /// The manifest as JSON text: keys sorted, one-space indent, trailing newline.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b" ");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
        // Serialising strings, numbers and maps into a Vec cannot fail.
        let _ = self.serialize(&mut ser);
        let mut text = String::from_utf8_lossy(&out).into_owned();
        text.push('\n');
        text
    }

    /// Writes [`IndexedManifest::to_json`] to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), TensorError> {
        crate::fsio::write_file_atomic(path, self.to_json().as_bytes())
    }
}

/// Indexes every tensor file under `dir`; see the module docs for the naming rule.
pub fn index_dir(dir: &Path, options: &IndexOptions) -> Result<IndexedManifest, IndexError> {
    if let Some(case) = &options.case {
        if case.is_empty() || case.contains('/') {
            return Err(IndexError::Case { case: case.clone() });
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut Vec::new(), &mut files)?;
    let manifest_dir = options.manifest_dir.as_deref().unwrap_or(dir);
    let mut tensors = BTreeMap::new();
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut skipped_cases = BTreeSet::new();
    let mut bad = Vec::new();
    let mut read = 0;
    for components in files {
        let Some((stem, file_f64)) = file_stem(&components) else {
            continue;
        };
        let stem = match &options.case {
            Some(case) => format!("{case}/{stem}"),
            None => stem,
        };
        let case = case_of(&stem).to_string();
        if let Some(p) = &options.cases {
            if !p.matches(&case) {
                skipped_cases.insert(case);
                continue;
            }
        }
        let path = components.iter().fold(dir.to_path_buf(), |p, c| p.join(c));
        let opened = match open_tensor_file(&path) {
            Ok(f) => f,
            Err(e) => {
                bad.push(e);
                continue;
            }
        };
        read += 1;
        let file = relative_name(&path, manifest_dir)?;
        let keys: Vec<Option<String>> = match &opened {
            TensorFile::Npy(_) => vec![None],
            _ => opened.keys().into_iter().map(Some).collect(),
        };
        for key in keys {
            let tensor = match opened.get(key.as_deref(), &path) {
                Ok(t) => t,
                Err(e) => {
                    bad.push(e);
                    continue;
                }
            };
            let name = tensor_name(&stem, key.as_deref(), file_f64);
            let source = match &key {
                Some(k) => format!("{}[{k}]", path.display()),
                None => path.display().to_string(),
            };
            if let Some(first) = sources.insert(name.clone(), source.clone()) {
                return Err(IndexError::Duplicate {
                    name,
                    first,
                    second: source,
                });
            }
            tensors.insert(
                name,
                IndexedEntry {
                    file: file.clone(),
                    key,
                    dtype: tensor.dtype().name().to_string(),
                    shape: tensor.shape().to_vec(),
                },
            );
        }
    }
    if !bad.is_empty() {
        return Err(IndexError::BadFiles(bad));
    }
    if tensors.is_empty() {
        return Err(IndexError::Empty {
            dir: dir.to_path_buf(),
            pattern: options
                .cases
                .as_ref()
                .map_or(String::new(), |p| format!(" (pattern `{}`)", p.as_str())),
        });
    }
    Ok(IndexedManifest {
        schema: MANIFEST_SCHEMA,
        provenance: options.provenance.clone(),
        tensors,
        skipped_cases,
        files: read,
    })
}

/// Tensor files under `dir/prefix`, as relative components, sorted; hidden entries skipped.
fn walk(
    dir: &Path,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> Result<(), IndexError> {
    let here = prefix.iter().fold(dir.to_path_buf(), |p, c| p.join(c));
    let list_err = |source| IndexError::List {
        path: here.clone(),
        source,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&here).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            entries.push((name, entry.path()));
        }
    }
    entries.sort();
    for (name, path) in entries {
        prefix.push(name.clone());
        if path.is_dir() {
            walk(dir, prefix, out)?;
        } else if is_tensor_file(&name) {
            out.push(prefix.clone());
        }
        prefix.pop();
    }
    Ok(())
}

fn is_tensor_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".npy", ".npz", ".safetensors"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// `path` relative to `base` (both made absolute), `/`-separated, with `..` where needed.
fn relative_name(path: &Path, base: &Path) -> Result<String, IndexError> {
    let fail = || IndexError::Relative {
        file: path.to_path_buf(),
        manifest_dir: base.to_path_buf(),
    };
    let (abs_path, abs_base) = match (path.canonicalize(), base.canonicalize()) {
        (Ok(p), Ok(b)) => (p, b),
        _ => return Err(fail()),
    };
    let p: Vec<Component<'_>> = abs_path.components().collect();
    let b: Vec<Component<'_>> = abs_base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); b.len() - common];
    for c in &p[common..] {
        parts.push(c.as_os_str().to_str().ok_or_else(fail)?.to_string());
    }
    Ok(parts.join("/"))
}

/// Parses `KEY=VALUE` provenance items: VALUE is JSON when it parses as JSON,
/// else a string; a dotted KEY (`versions.mlx`) nests. Later items win.
pub fn parse_provenance(
    items: &[String],
) -> Result<serde_json::Map<String, serde_json::Value>, IndexError> {
    use serde_json::Value;
    let mut root = serde_json::Map::new();
    for item in items {
        let bad = |reason: &str| IndexError::Provenance {
            item: item.clone(),
            reason: reason.to_string(),
        };
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE"))?;
        let path: Vec<&str> = key.split('.').collect();
        if path.iter().any(|p| p.trim().is_empty()) {
            return Err(bad("empty key"));
        }
        let value = serde_json::from_str::<Value>(value).unwrap_or(Value::String(value.into()));
        let (last, parents) = path.split_last().ok_or_else(|| bad("empty key"))?;
        let mut map = &mut root;
        for p in parents {
            let slot = map
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Default::default()));
            map = match slot {
                Value::Object(m) => m,
                _ => return Err(bad(&format!("`{p}` is already set to a non-object value"))),
            };
        }
        map.insert(last.to_string(), value);
    }
    Ok(root)
}
