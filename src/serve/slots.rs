//! The serving module's slot entry points on a loaded IREE module set, shared
//! by parity's in-process engine and the loopback fixture server
//! (crates/parity-server): `embed_text_p{P}`, `audio_merge_ple_p{P}_c{C}`
//! (where the serving module has one), `slot_prefill_p{P}_s{S}` into one
//! slot, and `slot_decode_s{S}` over every slot at once, with the slots' KV
//! caches and lengths ([`SlotCaches`]) carried from call to call.

use super::error::ServeError;
use super::functions::Functions;
use crate::run::ModuleSet;
use parity_tensor::{DType, Tensor};
use std::collections::HashMap;

/// Where a serving function's weights come from, by checkpoint name; the
/// error text names the file or the weight.
pub type WeightSource<'a> = &'a dyn Fn(&str) -> Result<Tensor, String>;

/// The slots' state between calls: `k_cache`, `v_cache`
/// f32[S, layers, heads, CTX, head_dim] and `lengths` i32[S].
#[derive(Clone, Debug)]
pub struct SlotCaches {
    /// Keys of every slot.
    pub k: Tensor,
    /// Values of every slot.
    pub v: Tensor,
    /// Each slot's KV length (the effective length).
    pub lengths: Tensor,
}

/// The serving module (loaded under `module` in a [`ModuleSet`]) and its
/// calling convention; weights are read once per function.
pub struct SlotModule {
    /// The module's name in the module set.
    pub module: String,
    /// The calling convention (`serving-functions.json`).
    pub functions: Functions,
    weights: HashMap<String, Vec<Tensor>>,
}

/// Calls `module.function` on `modules`, naming both in any error.
pub fn invoke(
    modules: &ModuleSet,
    module: &str,
    function: &str,
    args: &[Tensor],
) -> Result<Vec<Tensor>, ServeError> {
    modules
        .invoke(module, function, args)
        .map_err(|(kind, message)| ServeError::Call {
            module: module.to_string(),
            function: function.to_string(),
            kind,
            message,
        })
}

/// An i32 tensor of `values`.
pub fn int_tensor(shape: Vec<usize>, values: &[i64]) -> Result<Tensor, ServeError> {
    let v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    Ok(Tensor::from_f64_as(DType::I32, shape, &v)?)
}

fn f32_values(t: &Tensor) -> Vec<f32> {
    t.to_f64_vec().into_iter().map(|x| x as f32).collect()
}

impl SlotModule {
    /// The serving module loaded as `module`, called by `functions`.
    pub fn new(module: &str, functions: Functions) -> SlotModule {
        SlotModule {
            module: module.to_string(),
            functions,
            weights: HashMap::new(),
        }
    }

    /// Slots S of the module.
    pub fn slots(&self) -> u32 {
        self.functions.slots
    }

    /// Whether `function` is compiled into the loaded module (a leak variant
    /// holds only some of the manifest's functions).
    pub fn has(&self, modules: &ModuleSet, function: &str) -> bool {
        self.functions.functions.contains_key(function)
            && modules.signature(&self.module, function).is_some()
    }

    /// Empty slots: zero caches, every length 0.
    pub fn empty_caches(&self) -> Result<SlotCaches, ServeError> {
        let decode = format!("slot_decode_s{}", self.slots());
        let shape = self.functions.arg_shape(&decode, "k_cache")?;
        let zeros = vec![0f32; shape.iter().product()];
        let k = Tensor::from_f32(shape, &zeros)?;
        let s = self.slots() as usize;
        Ok(SlotCaches {
            v: k.clone(),
            k,
            lengths: int_tensor(vec![s], &vec![0; s])?,
        })
    }

    fn weights(
        &mut self,
        function: &str,
        source: WeightSource<'_>,
    ) -> Result<Vec<Tensor>, ServeError> {
        if let Some(w) = self.weights.get(function) {
            return Ok(w.clone());
        }
        let names = self.functions.get(function)?.weights.clone();
        let mut out = Vec::with_capacity(names.len());
        for n in &names {
            out.push(source(n).map_err(|message| ServeError::Weight {
                function: function.to_string(),
                weight: n.clone(),
                message,
            })?);
        }
        self.weights.insert(function.to_string(), out.clone());
        Ok(out)
    }

    /// Calls a serving function with its activations, then its weights.
    pub fn call(
        &mut self,
        modules: &ModuleSet,
        source: WeightSource<'_>,
        function: &str,
        mut acts: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, ServeError> {
        acts.extend(self.weights(function, source)?);
        let out = invoke(modules, &self.module, function, &acts)?;
        let want = self.functions.get(function)?.outputs.len();
        if out.len() != want {
            return Err(ServeError::Convention(format!(
                "`{}.{function}` returned {} results, the manifest lists {want}",
                self.module,
                out.len()
            )));
        }
        Ok(out)
    }

    /// Text-only front end: `embed_text_p{P}(prompt [1, P])` -> (embeddings, dense PLE).
    pub fn embed_text(
        &mut self,
        modules: &ModuleSet,
        source: WeightSource<'_>,
        prompt: Tensor,
    ) -> Result<(Tensor, Tensor), ServeError> {
        let p = prompt.shape().get(1).copied().unwrap_or(0);
        let f = format!("embed_text_p{p}");
        let mut out = self.call(modules, source, &f, vec![prompt])?;
        let ple = out.pop();
        let emb = out.pop();
        emb.zip(ple)
            .ok_or_else(|| ServeError::Convention(format!("`{f}` returned no outputs")))
    }

    /// The serving module's own audio merge for a `p`-token prompt of
    /// `clips` clips, `audio_merge_ple_p{P}_c{C}`, if it exports one: an
    /// audio prompt whose length no merge of the audio module takes (the
    /// audio-only prompt) is merged there. None: the audio module's merge.
    pub fn audio_merge_function(
        &self,
        modules: &ModuleSet,
        p: usize,
        clips: usize,
    ) -> Option<String> {
        let f = format!("audio_merge_ple_p{p}_c{clips}");
        self.has(modules, &f).then_some(f)
    }

    /// Calls the audio merge `function` (from [`SlotModule::audio_merge_function`]):
    /// each activation by its name in the manifest (`tokens`, `audio_rows`,
    /// `projected_audio`, `hard_audio`) from `input` -> (embeddings, dense PLE).
    pub fn audio_merge(
        &mut self,
        modules: &ModuleSet,
        source: WeightSource<'_>,
        function: &str,
        input: &mut dyn FnMut(&str) -> Option<Tensor>,
    ) -> Result<(Tensor, Tensor), ServeError> {
        let mut acts = Vec::new();
        for a in &self.functions.get(function)?.args {
            acts.push(input(&a.name).ok_or_else(|| {
                ServeError::Convention(format!(
                    "`{}.{function}` takes `{}`, which the audio front end does not produce",
                    self.module, a.name
                ))
            })?);
        }
        let mut out = self.call(modules, source, function, acts)?;
        let ple = out.pop();
        let emb = out.pop();
        emb.zip(ple)
            .ok_or_else(|| ServeError::Convention(format!("`{function}` returned no outputs")))
    }

    /// Prefills a prompt's embeddings and dense PLE (`[1, P, ...]`) into
    /// `slot`: its first token's logits and the slot's KV length after it.
    pub fn prefill(
        &mut self,
        modules: &ModuleSet,
        source: WeightSource<'_>,
        caches: &mut SlotCaches,
        embeddings: Tensor,
        dense_ple: Tensor,
        slot: u32,
    ) -> Result<(Vec<f32>, Option<u64>), ServeError> {
        let p = embeddings.shape().get(1).copied().unwrap_or(0);
        let f = format!("slot_prefill_p{p}_s{}", self.slots());
        let acts = vec![
            embeddings,
            dense_ple,
            int_tensor(vec![], &[i64::from(slot)])?,
            caches.k.clone(),
            caches.v.clone(),
            caches.lengths.clone(),
        ];
        let mut out = self.call(modules, source, &f, acts)?;
        let logits = take_state(caches, &mut out, &f)?;
        let effective = caches
            .lengths
            .to_f64_vec()
            .get(slot as usize)
            .map(|&x| x as u64);
        Ok((f32_values(&logits), effective))
    }

    /// One decode step over every slot: `inputs[s]` is `Some((token,
    /// position))` for an active slot. One logits row per slot.
    pub fn decode(
        &mut self,
        modules: &ModuleSet,
        source: WeightSource<'_>,
        caches: &mut SlotCaches,
        inputs: &[Option<(u32, u64)>],
    ) -> Result<Vec<Vec<f32>>, ServeError> {
        let s = self.slots() as usize;
        if inputs.len() != s {
            return Err(ServeError::Convention(format!(
                "a decode over {} slots, the module has {s}",
                inputs.len()
            )));
        }
        let tok: Vec<i64> = inputs.iter().map(|i| i.map_or(0, |x| x.0 as i64)).collect();
        let pos: Vec<i64> = inputs.iter().map(|i| i.map_or(0, |x| x.1 as i64)).collect();
        let act: Vec<i64> = inputs.iter().map(|i| i64::from(i.is_some())).collect();
        let f = format!("slot_decode_s{s}");
        let acts = vec![
            int_tensor(vec![s], &tok)?,
            int_tensor(vec![s], &pos)?,
            int_tensor(vec![s], &act)?,
            caches.k.clone(),
            caches.v.clone(),
            caches.lengths.clone(),
        ];
        let mut out = self.call(modules, source, &f, acts)?;
        let logits = f32_values(&take_state(caches, &mut out, &f)?);
        let v = (logits.len() / s.max(1)).max(1);
        Ok(logits.chunks(v).map(<[f32]>::to_vec).collect())
    }
}

/// Takes (logits, k_cache, v_cache, lengths): the caches into `caches`, the logits out.
fn take_state(
    caches: &mut SlotCaches,
    out: &mut Vec<Tensor>,
    function: &str,
) -> Result<Tensor, ServeError> {
    if out.len() != 4 {
        return Err(ServeError::Convention(format!(
            "`{function}` returned {} results, expected 4 (logits, k_cache, v_cache, lengths)",
            out.len()
        )));
    }
    let mut it = std::mem::take(out).into_iter();
    let missing = || ServeError::Convention(format!("`{function}` returned too few results"));
    let logits = it.next().ok_or_else(missing)?;
    caches.k = it.next().ok_or_else(missing)?;
    caches.v = it.next().ok_or_else(missing)?;
    caches.lengths = it.next().ok_or_else(missing)?;
    Ok(logits)
}
