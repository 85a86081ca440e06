//! Arguments that stay on the device: a weight is uploaded once per runtime
//! and every later call that names it (by key) reuses that upload, so a run
//! of many stages and cases moves each weight over to the device once, not
//! once per call. Every upload is counted, weights and other inputs apart.

use crate::convert::tensor_to_value;
use eerie::runtime::{Runtime, Value};
use parity_tensor::{DType, Tensor};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

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
        }
    }
}

/// A resident upload: the dtype and shape it was made with, and the device value.
type Upload = (DType, Vec<usize>, Value);

/// The resident values of one runtime, by key, with the dtype and shape
/// each was uploaded with.
#[derive(Default)]
pub struct Resident {
    values: RefCell<HashMap<String, Upload>>,
    stats: Cell<UploadStats>,
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
        let mut stats = self.stats.get();
        let bytes = tensor.bytes().len() as u64;
        let result = match key {
            None => {
                stats.other_uploads += 1;
                stats.other_bytes += bytes;
                tensor_to_value(rt, tensor)
            }
            Some(key) => {
                let mut values = self.values.borrow_mut();
                match values.get(key) {
                    Some((dtype, shape, v))
                        if *dtype == tensor.dtype() && shape.as_slice() == tensor.shape() =>
                    {
                        stats.resident_reuses += 1;
                        stats.resident_bytes_saved += bytes;
                        Ok(v.clone())
                    }
                    found => {
                        let fresh = found.is_none();
                        let v = tensor_to_value(rt, tensor)?;
                        stats.resident_uploads += 1;
                        stats.resident_bytes += bytes;
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
        };
        self.stats.set(stats);
        result
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> UploadStats {
        self.stats.get()
    }
}
