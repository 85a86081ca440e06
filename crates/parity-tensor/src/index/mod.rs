//! Building an oracle store's `manifest.json` (schema `parity.oracle-manifest/1`)
//! from a directory of `.npy` / `.npz` / `.safetensors` dumps, for `parity oracle index`.
//!
//! Every tensor file under the directory (recursively, hidden entries skipped)
//! is checked with the same parsers [`crate::OracleStore`] uses, so a file the
//! store could not read fails here, named; the bytes are read, never mapped
//! (see [`probe`]). Names follow [`naming`]; the output is sorted by tensor
//! name, so the same dumps always give the same manifest.
//!
//! Directory links: a link to a directory inside the tree (`.`, a sibling) or
//! to one of its ancestors is not followed, since that directory is indexed
//! under its own name already and following it would loop; a link to any
//! other directory is followed, once per directory. Skipped links are listed
//! in [`IndexedManifest::skipped_links`].

pub mod naming;
mod probe;

use crate::error::TensorError;
use crate::store::MANIFEST_SCHEMA;
use naming::{case_of, check_precision_dirs, file_stem, precision_dirs, tensor_name, CasePattern};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet};
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
    /// A `--oracle-dir` / `--truth-dir` that cannot be one folder's name, or both the same.
    #[error("{flag} `{name}`: {why}")]
    PrecisionDir {
        /// The flag.
        flag: &'static str,
        /// The name as given.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// A `--case` name that cannot be a case.
    #[error("case `{case}`: a case name must be non-empty and contain no `/`")]
    Case {
        /// The name as given.
        case: String,
    },
    /// A file or directory whose name is not UTF-8: a manifest names files in JSON strings.
    #[error("{}: the name is not valid UTF-8, which a manifest (JSON) cannot name; rename it", .path.display())]
    NonUtf8Name {
        /// The entry (shown lossily).
        path: PathBuf,
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
    /// A folder holding the oracle's dumps of one precision (`f32`): left
    /// out of the names, so they pair with the truth folder's.
    pub oracle_dir: Option<String>,
    /// A folder holding the f64 truth (`f64`): left out of the names, and
    /// every tensor under it is named `<name>@f64`.
    pub truth_dir: Option<String>,
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
    /// Directory links not followed (they lead back into the tree, or to a
    /// directory already walked), relative to the dump directory.
    #[serde(skip)]
    pub skipped_links: Vec<String>,
    /// Truth tensors from the `--truth-dir` folder with no tensor of their
    /// name without `@f64` to be the truth of (a folder left in the names?).
    #[serde(skip)]
    pub unpaired_truth: Vec<String>,
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
    check_precision_dirs(options.oracle_dir.as_deref(), options.truth_dir.as_deref())?;
    let mut walk = Walk::new(dir)?;
    walk.dir(&mut Vec::new())?;
    let Walk {
        files,
        skipped_links,
        ..
    } = walk;
    let manifest_dir = options.manifest_dir.as_deref().unwrap_or(dir);
    let mut tensors = BTreeMap::new();
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut skipped_cases = BTreeSet::new();
    let mut bad = Vec::new();
    let mut read = 0;
    let mut from_truth_dir = Vec::new();
    for components in files {
        let (named, in_truth_dir) = precision_dirs(
            &components,
            options.oracle_dir.as_deref(),
            options.truth_dir.as_deref(),
        );
        let Some((stem, file_f64)) = file_stem(&named) else {
            continue;
        };
        let file_f64 = file_f64 || in_truth_dir;
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
        let arrays = match probe::probe_path(&path) {
            Ok(a) => a,
            Err(e) => {
                bad.push(e);
                continue;
            }
        };
        read += 1;
        let file = relative_name(&path, manifest_dir)?;
        for probe::Probed { key, dtype, shape } in arrays {
            let name = tensor_name(&stem, key.as_deref(), file_f64);
            if in_truth_dir {
                from_truth_dir.push(name.clone());
            }
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
                    dtype: dtype.name().to_string(),
                    shape,
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
    let unpaired_truth = from_truth_dir
        .into_iter()
        .filter(|n| {
            n.strip_suffix("@f64")
                .is_some_and(|base| !tensors.contains_key(base))
        })
        .collect();
    Ok(IndexedManifest {
        schema: MANIFEST_SCHEMA,
        provenance: options.provenance.clone(),
        tensors,
        skipped_cases,
        files: read,
        skipped_links,
        unpaired_truth,
    })
}

/// The walk of a dump directory: tensor files found, links skipped.
struct Walk<'a> {
    root: &'a Path,
    /// The tree's real path: a directory link resolving under it is not followed.
    root_real: PathBuf,
    /// Real paths of the directories outside the tree already walked through links.
    outside: HashSet<PathBuf>,
    files: Vec<Vec<String>>,
    skipped_links: Vec<String>,
}

impl<'a> Walk<'a> {
    fn new(root: &'a Path) -> Result<Self, IndexError> {
        let root_real = root.canonicalize().map_err(|source| IndexError::List {
            path: root.to_path_buf(),
            source,
        })?;
        Ok(Walk {
            root,
            root_real,
            outside: HashSet::new(),
            files: Vec::new(),
            skipped_links: Vec::new(),
        })
    }

    /// Tensor files under `root/prefix`, as relative components, sorted; hidden entries skipped.
    fn dir(&mut self, prefix: &mut Vec<String>) -> Result<(), IndexError> {
        let here = prefix
            .iter()
            .fold(self.root.to_path_buf(), |p, c| p.join(c));
        let list_err = |source| IndexError::List {
            path: here.clone(),
            source,
        };
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&here).map_err(list_err)? {
            let entry = entry.map_err(list_err)?;
            let path = entry.path();
            // A lossy name would name a file that does not exist.
            let name = entry
                .file_name()
                .into_string()
                .map_err(|_| IndexError::NonUtf8Name { path: path.clone() })?;
            if !name.starts_with('.') {
                let link = entry.file_type().is_ok_and(|t| t.is_symlink());
                entries.push((name, path, link));
            }
        }
        entries.sort();
        for (name, path, link) in entries {
            prefix.push(name.clone());
            if path.is_dir() {
                if !link || self.follow(&path) {
                    self.dir(prefix)?;
                } else {
                    self.skipped_links.push(prefix.join("/"));
                }
            } else if is_tensor_file(&name) {
                self.files.push(prefix.clone());
            }
            prefix.pop();
        }
        Ok(())
    }

    /// Whether to walk through the directory link `path`: only to a directory
    /// outside the tree, not an ancestor of it (which holds the tree), and not
    /// walked yet; so no loop, and no directory twice through links.
    fn follow(&mut self, path: &Path) -> bool {
        match path.canonicalize() {
            Ok(real) => {
                !real.starts_with(&self.root_real)
                    && !self.root_real.starts_with(&real)
                    && self.outside.insert(real)
            }
            Err(_) => false,
        }
    }
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
