//! The serving module's calling convention, read from the
//! `serving-functions.json` written beside it by
//! tools/fixtures/production/serve_export.py: per function its activation
//! arguments, then its weights by name, and its outputs.

use super::error::ServeError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The manifest's file name, next to the serving module.
pub const MANIFEST: &str = "serving-functions.json";

/// The whole manifest.
#[derive(Clone, Debug, Deserialize)]
pub struct Functions {
    /// Slots S the module is exported for.
    pub slots: u32,
    /// Prompt lengths with a `slot_prefill_p{P}_s{S}` (in the main module).
    pub buckets: Vec<u64>,
    /// KV positions per slot.
    pub context: u64,
    /// Function name -> convention.
    pub functions: BTreeMap<String, Function>,
    /// Where it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

/// One function.
#[derive(Clone, Debug, Deserialize)]
pub struct Function {
    /// Activation arguments in call order (the weights follow them).
    pub args: Vec<ArgSpec>,
    /// Weight names, in call order after the activations.
    pub weights: Vec<String>,
    /// Output names in return order.
    pub outputs: Vec<String>,
}

/// One activation argument.
#[derive(Clone, Debug, Deserialize)]
pub struct ArgSpec {
    /// Name (`k_cache`, `tokens`, ...).
    pub name: String,
    /// Static shape.
    pub shape: Vec<usize>,
    /// numpy dtype name (`float32`, `int32`).
    pub dtype: String,
}

impl Functions {
    /// Reads the manifest next to `module`.
    pub fn load(module: &Path) -> Result<Functions, ServeError> {
        let path = module
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            ServeError::Input(format!(
                "{}: cannot read the serving functions manifest of {}: {e}",
                path.display(),
                module.display()
            ))
        })?;
        let mut f: Functions = serde_json::from_str(&text)
            .map_err(|e| ServeError::Input(format!("{}: {e}", path.display())))?;
        f.path = path;
        Ok(f)
    }

    /// The function of this name, or an input error naming the manifest.
    pub fn get(&self, name: &str) -> Result<&Function, ServeError> {
        self.functions.get(name).ok_or_else(|| {
            ServeError::Input(format!(
                "{}: the serving module has no function `{name}`",
                self.path.display()
            ))
        })
    }

    /// The shape of activation `arg` of `function`.
    pub fn arg_shape(&self, function: &str, arg: &str) -> Result<Vec<usize>, ServeError> {
        self.get(function)?
            .args
            .iter()
            .find(|a| a.name == arg)
            .map(|a| a.shape.clone())
            .ok_or_else(|| {
                ServeError::Input(format!(
                    "{}: `{function}` has no argument `{arg}`",
                    self.path.display()
                ))
            })
    }
}
