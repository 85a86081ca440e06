//! A run over several targets (`parity check --target a,b`): the first
//! target's outputs are kept in memory, and every later target's output is
//! compared with them as it is produced (under the output's own criteria and
//! mask), so the record can say which side is off
//! ([`parity_record::triangulation`]).

use parity_record::{Mode, TargetRecord};
use parity_tensor::Tensor;
use std::collections::HashMap;
use std::sync::Mutex;

/// (case, mode, stage, output).
type Key = (String, Mode, String, String);

/// The first target's production outputs, by (case, mode, stage, output).
#[derive(Debug, Default)]
pub struct ReferenceOutputs {
    /// The first target's name.
    pub target: String,
    outputs: Mutex<HashMap<Key, Tensor>>,
}

impl ReferenceOutputs {
    /// An empty store for the outputs of `target`.
    pub fn new(target: &str) -> Self {
        ReferenceOutputs {
            target: target.to_string(),
            outputs: Mutex::new(HashMap::new()),
        }
    }

    fn key(case: &str, mode: Mode, stage: &str, output: &str) -> Key {
        (case.into(), mode, stage.into(), output.into())
    }

    /// Keeps one output of the first target.
    pub fn keep(&self, case: &str, mode: Mode, stage: &str, output: &str, tensor: &Tensor) {
        if let Ok(mut map) = self.outputs.lock() {
            map.insert(Self::key(case, mode, stage, output), tensor.clone());
        }
    }

    /// The first target's output, when it produced one.
    pub fn get(&self, case: &str, mode: Mode, stage: &str, output: &str) -> Option<Tensor> {
        self.outputs
            .lock()
            .ok()?
            .get(&Self::key(case, mode, stage, output))
            .cloned()
    }
}

/// What a stage run does with its outputs besides comparing them with the oracle.
#[derive(Clone, Copy, Debug, Default)]
pub enum CrossTargets<'a> {
    /// A single-target run: nothing.
    #[default]
    None,
    /// The first target of several: keep every output.
    Keep(&'a ReferenceOutputs),
    /// A later target: compare every output with the first target's.
    CompareWith(&'a ReferenceOutputs),
}

/// The record of one target (`RunRecord.targets`).
pub fn target_record(target: &crate::target::Target) -> TargetRecord {
    TargetRecord {
        name: target.name().to_string(),
        backend: target.backend().to_string(),
        device: target.device().to_string(),
        flags: target.spec().flags.clone(),
    }
}
