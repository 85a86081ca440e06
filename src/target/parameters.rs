//! The parameter preflight: before anything runs, every parameter an MLIR
//! module of the spec declares (`util.global ... = #flow.parameter.named<
//! "scope"::"key"> : TYPE`) is looked up in the files `subject.parameters`
//! gives for its scope, as IREE's own index reads them. A missing key, a
//! scope without files, or an entry whose size (and, in a .safetensors
//! file, dtype and shape) is not the global's is one input error naming the
//! parameter, the file, the module and the stages that call it. IREE itself
//! would refuse a missing key only when the module loads, and would read a
//! too-long entry's first bytes without a word.
//!
//! Prebuilt (`vmfb:`) modules carry no declarations parity can read: IREE
//! checks their parameters when they load.

use super::{Target, TargetError};
use parity_iree::{ParameterEntry as Entry, Parameters};
use parity_mlir::ParameterGlobal;
use parity_spec::{ModuleSource, Spec};
use parity_tensor::DType;
use std::path::Path;

/// The dtype IREE stores an MLIR element type as (i1 as one byte), when
/// parity has one.
fn element_dtype(element: &str) -> Option<DType> {
    Some(match element {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "f16" => DType::F16,
        "bf16" => DType::Bf16,
        "i1" => DType::Bool,
        "i8" | "si8" => DType::I8,
        "ui8" => DType::U8,
        "i16" | "si16" => DType::I16,
        "i32" | "si32" => DType::I32,
        "i64" | "si64" => DType::I64,
        _ => return None,
    })
}

/// The global's dtype, shape and byte length, when its type is a static
/// tensor of a dtype parity knows.
fn declared(p: &ParameterGlobal) -> Option<(DType, Vec<usize>, u64)> {
    let dtype = element_dtype(p.ty.element()?)?;
    let shape = p.ty.shape()?;
    let bytes = shape.iter().product::<usize>() as u64 * dtype.size() as u64;
    Some((dtype, shape, bytes))
}

impl Target {
    /// Checks the parameters of every MLIR module of `spec` against the
    /// files of `subject.parameters` (see the module docs); one
    /// [`TargetError::Parameters`] listing every problem.
    pub fn preflight_parameters(&self, spec: &Spec) -> Result<(), TargetError> {
        let mut problems = Vec::new();
        let mut declared_by = Vec::new();
        for (name, module) in &spec.subject.modules {
            let ModuleSource::Mlir(path) = &module.source else {
                continue;
            };
            let Ok(bytes) = parity_tensor::read_module_bytes(path) else {
                continue; // the run reports an unreadable module, naming it
            };
            let text = String::from_utf8_lossy(&bytes);
            match parity_mlir::parameter_globals(&text) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => declared_by.push((name, path, text.to_string(), found)),
                Err(e) => problems.push(format!(
                    "{}:{}: module `{name}`: a parameter declaration parity cannot read: {}",
                    path.display(),
                    e.line,
                    e.message
                )),
            }
        }
        if declared_by.is_empty() && spec.subject.parameters.is_empty() {
            return Ok(());
        }
        let scopes = self.parameter_scopes();
        let files = match Parameters::open(&scopes) {
            Ok(files) => files,
            Err(e) => {
                problems.push(format!("{}: {e}", self.spec_path.display()));
                return Err(self.parameters_error(problems));
            }
        };
        let entries = files.entries();
        for (module, path, text, params) in &declared_by {
            for p in params {
                let stages = stages_of(spec, module, text, p);
                let at = format!(
                    "{}:{}: module `{module}`{stages}: parameter `{}` ({}{})",
                    path.display(),
                    p.line,
                    p.name(),
                    p.global
                        .as_ref()
                        .map(|g| format!("@{g}, "))
                        .unwrap_or_default(),
                    p.ty
                );
                if let Some(problem) = check_one(&files, &entries, p) {
                    problems.push(format!("{at}: {problem}"));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(self.parameters_error(problems))
        }
    }

    /// `subject.parameters` as (scope, files) pairs, in spec order.
    pub fn parameter_scopes(&self) -> Vec<(String, Vec<std::path::PathBuf>)> {
        self.parameters.clone()
    }

    fn parameters_error(&self, problems: Vec<String>) -> TargetError {
        TargetError::Parameters {
            target: self.spec.name.clone(),
            problems,
        }
    }
}

/// ` (stages a, b)` for the stages whose function of `module` reads the
/// parameter's global (every stage of the module when the text does not
/// say which functions read it), or nothing.
fn stages_of(spec: &Spec, module: &str, text: &str, p: &ParameterGlobal) -> String {
    let readers = p
        .global
        .as_deref()
        .map(|g| parity_mlir::functions_reading(text, g))
        .unwrap_or_default();
    let of_module = || spec.stages.iter().filter(|s| s.module == module);
    let reads = |function: &str| {
        let local = function.rsplit('.').next().unwrap_or(function);
        readers.iter().any(|r| r == local)
    };
    let mut names: Vec<&str> = of_module()
        .filter(|s| reads(s.slice.as_ref().map_or(&s.function, |sl| &sl.function)))
        .map(|s| s.name.as_str())
        .collect();
    if names.is_empty() {
        names = of_module().map(|s| s.name.as_str()).collect();
    }
    match names.as_slice() {
        [] => String::new(),
        [one] => format!(" (stage `{one}`)"),
        many => format!(" (stages {})", many.join(", ")),
    }
}

/// What is wrong with one declared parameter, if anything.
fn check_one(files: &Parameters, entries: &[Entry], p: &ParameterGlobal) -> Option<String> {
    let scope_files = files.files(&p.scope);
    if scope_files.is_empty() {
        return Some(format!(
            "the spec gives no files for scope `{}`; add them under `subject.parameters`",
            p.scope
        ));
    }
    let list = scope_files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let Some(entry) = entries
        .iter()
        .find(|e| e.scope == p.scope && e.key == p.key)
    else {
        let mut keys: Vec<&str> = entries
            .iter()
            .filter(|e| e.scope == p.scope)
            .map(|e| e.key.as_str())
            .collect();
        keys.sort_unstable();
        let shown = keys.iter().take(20).copied().collect::<Vec<_>>().join(", ");
        let more = keys.len().saturating_sub(20);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Some(format!(
            "key `{}` is not in scope `{}`'s files ({list}; keys: {shown}{more})",
            p.key, p.scope
        ));
    };
    let file = entry
        .file
        .as_deref()
        .map_or_else(|| "a splat entry".to_string(), |f| f.display().to_string());
    let (dtype, shape, bytes) = declared(p)?;
    if let Some(path) = entry.file.as_deref().filter(|f| is_safetensors(f)) {
        if let Some(problem) = safetensors_mismatch(path, &p.key, dtype, &shape) {
            return Some(format!("{file}: {problem}"));
        }
    }
    (entry.length != bytes).then(|| {
        format!(
            "{file} holds {} bytes for it, the global needs {bytes} ({dtype}{shape:?})",
            entry.length
        )
    })
}

fn is_safetensors(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"))
}

/// A .safetensors entry stores its dtype and shape: both must be the global's.
fn safetensors_mismatch(path: &Path, key: &str, dtype: DType, shape: &[usize]) -> Option<String> {
    let file = parity_tensor::read_safetensors(path).ok()?;
    let tensor = file.get(key).ok()?;
    (tensor.dtype() != dtype || tensor.shape() != shape).then(|| {
        format!(
            "`{key}` is {}{:?} there, the global is {dtype}{shape:?}",
            tensor.dtype(),
            tensor.shape()
        )
    })
}
