//! Where stage arguments and expected values come from: the oracle store and
//! the weights files, both memory-mapped and opened once per run.

use parity_spec::Spec;
use parity_tensor::{OracleStore, SafetensorsFile, Tensor};
use std::collections::HashMap;

/// The oracle store and the weights of one run.
pub struct InputSources {
    store: OracleStore,
    weights: Vec<SafetensorsFile>,
    weight_index: HashMap<String, usize>,
}

impl InputSources {
    /// Opens the oracle store and every weights file named by the spec.
    /// A weight name defined in two files is an error naming both.
    pub fn open(spec: &Spec) -> Result<Self, String> {
        let store = OracleStore::open(&spec.oracle).map_err(|e| e.to_string())?;
        let mut weights = Vec::new();
        let mut weight_index: HashMap<String, usize> = HashMap::new();
        for (i, path) in spec.weights.iter().enumerate() {
            let file = parity_tensor::read_safetensors(path).map_err(|e| e.to_string())?;
            for name in file.names() {
                if let Some(&prev) = weight_index.get(name) {
                    return Err(format!(
                        "weight `{name}` is defined in both {} and {}",
                        spec.weights[prev].display(),
                        path.display()
                    ));
                }
                weight_index.insert(name.to_string(), i);
            }
            weights.push(file);
        }
        Ok(InputSources {
            store,
            weights,
            weight_index,
        })
    }

    /// The oracle manifest's `provenance` object (empty when it has none).
    pub fn oracle_provenance(&self) -> &serde_json::Value {
        self.store.provenance()
    }

    /// An oracle tensor by name.
    pub fn oracle(&self, name: &str) -> Result<Tensor, String> {
        self.store.get(name).map_err(|e| e.to_string())
    }

    /// A weight by name.
    pub fn weight(&self, name: &str) -> Result<Tensor, String> {
        let &i = self
            .weight_index
            .get(name)
            .ok_or_else(|| format!("weight `{name}` is not in any weights file"))?;
        self.weights[i].get(name).map_err(|e| e.to_string())
    }
}
