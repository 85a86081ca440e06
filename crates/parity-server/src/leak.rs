//! The leaking variants (`--leak`), for parity's negative control: state a
//! slot keeps from its previous request and wrongly lets into the next one.
//! An honest slot keeps nothing.

use parity_tensor::Tensor;
use std::collections::HashMap;

/// Which state leaks across requests in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Leak {
    /// The slot's dense-PLE buffer is not reset on reuse: the previous
    /// request's rows stand where both requests have rows.
    Ple,
    /// The slot's KV region is not reset on reuse: a cache entry the previous
    /// request wrote (non-zero) is kept instead of the new request's.
    Kv,
}

/// What a slot remembers between requests (only a leaking slot reads it).
pub struct SlotMemory {
    leak: Option<Leak>,
    ple: Option<Tensor>,
    kv: Option<(Tensor, Tensor)>,
}

impl SlotMemory {
    /// An empty memory; `leak` None never reads it.
    pub fn new(leak: Option<Leak>) -> SlotMemory {
        SlotMemory {
            leak,
            ple: None,
            kv: None,
        }
    }

    /// The dense PLE the prefill gets: `fresh`, or with the leak, the
    /// previous request's rows over it.
    pub fn ple(&mut self, fresh: Tensor) -> Tensor {
        if self.leak != Some(Leak::Ple) {
            return fresh;
        }
        let out = match &self.ple {
            Some(old) if old.dtype() == fresh.dtype() && old.shape()[2..] == fresh.shape()[2..] => {
                let n = old.bytes().len().min(fresh.bytes().len());
                let mut bytes = fresh.bytes().to_vec();
                bytes[..n].copy_from_slice(&old.bytes()[..n]);
                Tensor::from_bytes(fresh.dtype(), fresh.shape().to_vec(), bytes).unwrap_or(fresh)
            }
            _ => fresh,
        };
        self.ple = Some(out.clone());
        out
    }

    /// With the KV leak, the prefill's caches in `state` keep the previous
    /// request's non-zero entries.
    pub fn kv(&mut self, state: &mut HashMap<String, Tensor>) {
        if self.leak != Some(Leak::Kv) {
            return;
        }
        let Some((old_k, old_v)) = &self.kv else {
            return;
        };
        for (name, old) in [("k_cache", old_k), ("v_cache", old_v)] {
            if let Some(new) = state.get(name) {
                if new.dtype() == old.dtype()
                    && new.shape() == old.shape()
                    && new.dtype().size() == 4
                {
                    let mut bytes = new.bytes().to_vec();
                    for (dst, src) in bytes.chunks_exact_mut(4).zip(old.bytes().chunks_exact(4)) {
                        if src != [0, 0, 0, 0] {
                            dst.copy_from_slice(src);
                        }
                    }
                    if let Ok(t) = Tensor::from_bytes(new.dtype(), new.shape().to_vec(), bytes) {
                        state.insert(name.to_string(), t);
                    }
                }
            }
        }
    }

    /// Remembers the finished request's caches (the KV leak reads them next time).
    pub fn keep(&mut self, state: &HashMap<String, Tensor>) {
        if self.leak != Some(Leak::Kv) {
            return;
        }
        if let (Some(k), Some(v)) = (state.get("k_cache"), state.get("v_cache")) {
            self.kv = Some((k.clone(), v.clone()));
        }
    }
}
