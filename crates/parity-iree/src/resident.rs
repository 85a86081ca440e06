//! Arguments that stay on the device: a weight is uploaded once per runtime
//! (which every thread of a run on one target shares) and every later call
//! that names it (by key) reuses that upload, from any thread, so a run of
//! many stages, cases and modes moves each weight over to the device once,
//! not once per call. Every upload is counted, weights and other inputs apart.

use crate::convert::tensor_to_value;
use eerie::runtime::{Runtime, Value};
use parity_tensor::{DType, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;

/// What a runtime uploaded: resident (keyed) arguments and the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadStats {
    /// Resident arguments uploaded (each key once, unless its shape changed).
    pub resident_uploads: u64,
    /// Their bytes.
    pub resident_bytes: u64,
    /// Calls that reused a resident upload instead of uploading again.
    pub resident_reuses: u64,
    /// The bytes those reuses did not move.
    pub resident_bytes_saved: u64,
    /// Other arguments uploaded (every call).
    pub other_uploads: u64,
    /// Their bytes.
    pub other_bytes: u64,
    /// Module loads whose globals IREE read from parameter files (each
    /// load reads its parameters once).
    #[serde(default)]
    pub parameter_loads: u64,
}

impl UploadStats {
    /// The sum of two runtimes' counts.
    pub fn sum(self, o: UploadStats) -> UploadStats {
        UploadStats {
            resident_uploads: self.resident_uploads + o.resident_uploads,
            resident_bytes: self.resident_bytes + o.resident_bytes,
            resident_reuses: self.resident_reuses + o.resident_reuses,
            resident_bytes_saved: self.resident_bytes_saved + o.resident_bytes_saved,
            other_uploads: self.other_uploads + o.other_uploads,
            other_bytes: self.other_bytes + o.other_bytes,
            parameter_loads: self.parameter_loads + o.parameter_loads,
        }
    }
}

/// A resident upload: the dtype and shape it was made with, and the device value.
type Upload = (DType, Vec<usize>, Value);

/// The resident values of one runtime, by key, with the dtype and shape
/// each was uploaded with. Used from several threads (the runtime's owner
/// makes that sound, see `runtime::Shared`): the map's lock is held while a
/// new key uploads, so two threads asking for one weight upload it once.
#[derive(Default)]
pub struct Resident {
    values: Mutex<HashMap<String, Upload>>,
    stats: Mutex<UploadStats>,
}

impl Resident {
    /// The device value of `tensor`: the resident one for `key` when it has
    /// the same dtype and shape, else a fresh upload (kept under `key` when
    /// the key is new).
    pub(crate) fn value(
        &self,
        rt: &Runtime,
        key: Option<&str>,
        tensor: &Tensor,
    ) -> Result<Value, String> {
        let bytes = tensor.bytes().len() as u64;
        let count = |f: &dyn Fn(&mut UploadStats)| {
            f(&mut self.stats.lock().unwrap_or_else(|p| p.into_inner()));
        };
        match key {
            None => {
                count(&|s| {
                    s.other_uploads += 1;
                    s.other_bytes += bytes;
                });
                tensor_to_value(rt, tensor)
            }
            Some(key) => {
                let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
                match values.get(key) {
                    Some((dtype, shape, v))
                        if *dtype == tensor.dtype() && shape.as_slice() == tensor.shape() =>
                    {
                        count(&|s| {
                            s.resident_reuses += 1;
                            s.resident_bytes_saved += bytes;
                        });
                        Ok(v.clone())
                    }
                    found => {
                        let fresh = found.is_none();
                        let v = tensor_to_value(rt, tensor)?;
                        count(&|s| {
                            s.resident_uploads += 1;
                            s.resident_bytes += bytes;
                        });
                        if fresh {
                            values.insert(
                                key.to_string(),
                                (tensor.dtype(), tensor.shape().to_vec(), v.clone()),
                            );
                        }
                        Ok(v)
                    }
                }
            }
        }
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> UploadStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }
}
