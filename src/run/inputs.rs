//! Where stage arguments and expected values come from: the oracle store and
//! the weights files, both memory-mapped and opened once per run.

use parity_spec::{Spec, WeightTransform};
use parity_tensor::{OracleStore, SafetensorsFile, Tensor, TensorError};
use std::collections::HashMap;
use std::path::PathBuf;

/// Why an input tensor or its source cannot be had; every message names the
/// file or the tensor (all are input errors, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The oracle store, a weights file or a tensor in them could not be read
    /// (the tensor layer's message names the file and tensor).
    #[error(transparent)]
    Tensor(Box<TensorError>),
    /// One weight name in two weights files.
    #[error("weight `{name}` is defined in both {} and {}", first.display(), second.display())]
    DuplicateWeight {
        /// The weight.
        name: String,
        /// The file listed first.
        first: PathBuf,
        /// The file that defines it again.
        second: PathBuf,
    },
    /// A `weight:` argument no weights file holds.
    #[error("weight `{0}` is not in any weights file")]
    MissingWeight(String),
    /// A `weight_transforms` entry cannot apply to the weight it matched.
    #[error("weight `{weight}` (read as `{source_name}`): the weight transform at {rule} cannot apply: {message}")]
    Transform {
        /// The weight asked for.
        weight: String,
        /// The name read from the files.
        source_name: String,
        /// `file:line:col` of the entry.
        rule: String,
        /// Why.
        message: String,
    },
}

/// The oracle store and the weights of one run.
pub struct InputSources {
    store: OracleStore,
    weights: Vec<SafetensorsFile>,
    weight_index: HashMap<String, usize>,
    transforms: Vec<WeightTransform>,
    spec_path: PathBuf,
}

impl From<TensorError> for InputError {
    fn from(e: TensorError) -> Self {
        InputError::Tensor(Box::new(e))
    }
}

impl InputSources {
    /// Opens the oracle store and every weights file named by the spec.
    /// A weight name defined in two files is an error naming both.
    pub fn open(spec: &Spec) -> Result<Self, InputError> {
        let store = OracleStore::open(&spec.oracle)?;
        let mut weights = Vec::new();
        let mut weight_index: HashMap<String, usize> = HashMap::new();
        for (i, path) in spec.weights.iter().enumerate() {
            let file = parity_tensor::read_safetensors(path)?;
            for name in file.names() {
                if let Some(&prev) = weight_index.get(name) {
                    return Err(InputError::DuplicateWeight {
                        name: name.to_string(),
                        first: spec.weights[prev].clone(),
                        second: path.clone(),
                    });
                }
                weight_index.insert(name.to_string(), i);
            }
            weights.push(file);
        }
        Ok(InputSources {
            store,
            weights,
            weight_index,
            transforms: spec.weight_transforms.clone(),
            spec_path: spec.path.clone(),
        })
    }

    /// The oracle manifest's `provenance` object (empty when it has none).
    pub fn oracle_provenance(&self) -> &serde_json::Value {
        self.store.provenance()
    }

    /// Whether the oracle store lists a tensor of this name.
    pub fn has_oracle(&self, name: &str) -> bool {
        self.store.contains(name)
    }

    /// An oracle tensor by name.
    pub fn oracle(&self, name: &str) -> Result<Tensor, InputError> {
        Ok(self.store.get(name)?)
    }

    /// A weight by name, with the spec's `weight_transforms` entry for it
    /// applied (rename, then transpose, then reshape, then cast).
    pub fn weight(&self, name: &str) -> Result<Tensor, InputError> {
        let applied = self
            .transforms
            .iter()
            .find_map(|t| t.source_for(name).map(|source| (t, source)));
        let Some((transform, source)) = applied else {
            return self.raw_weight(name);
        };
        let tensor = self.raw_weight(&source)?;
        let fail = |message: String| InputError::Transform {
            weight: name.to_string(),
            source_name: source.clone(),
            rule: format!(
                "{}:{}:{}",
                self.spec_path.display(),
                transform.location.line,
                transform.location.col
            ),
            message,
        };
        let tensor = match &transform.transpose {
            Some(perm) => super::transform::permute(&tensor, perm).map_err(fail)?,
            None => tensor,
        };
        let tensor = match &transform.reshape {
            Some(shape) => super::transform::reshape(&tensor, shape).map_err(fail)?,
            None => tensor,
        };
        Ok(match transform.cast {
            Some(dtype) => super::transform::cast(&tensor, dtype).map_err(fail)?,
            None => tensor,
        })
    }

    /// A weight as stored in the files.
    fn raw_weight(&self, name: &str) -> Result<Tensor, InputError> {
        let &i = self
            .weight_index
            .get(name)
            .ok_or_else(|| InputError::MissingWeight(name.to_string()))?;
        Ok(self.weights[i].get(name)?)
    }
}
