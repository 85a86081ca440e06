//! One slot's model: the subject's production modules loaded into this
//! thread's IREE runtime, the admission checks a request passes before
//! anything runs, and the per-request path (audio_encode, audio_merge_ple,
//! prefill, greedy decode) the `parity tokens` run drives, token by token.

use crate::artifacts::{Artifacts, Call};
use crate::error::ServerError;
use crate::leak::{Leak, SlotMemory};
use parity::run::ModuleSet;
use parity::serve::adapters::wire::WireRequest;
use parity::tokens::math::argmax;
use parity_iree::ValueType;
use parity_spec::{Case, TokensSpec};
use parity_tensor::{DType, Tensor};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The audio soft-token placeholder id (tools/fixtures/config.py `audio_token_id`).
pub const AUDIO_TOKEN_ID: i64 = 73;
/// The first id of the audio vocabulary (`vocab_offset`): ids from here on are audio tokens.
pub const AUDIO_VOCAB_OFFSET: i64 = 72;

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// max_tokens were generated.
    Length,
    /// The client went away (or asked to stop) before the end.
    Cancelled,
}

impl Finish {
    /// The wire name (`length`, `cancelled`).
    pub fn reason(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Cancelled => "cancelled",
        }
    }
}

/// A request that passed admission: everything decided, nothing run.
#[derive(Clone, Debug)]
pub struct Plan {
    prompt: Vec<i64>,
    max_tokens: usize,
    /// mel [c, f, b], mask [c, f].
    audio: Option<(Tensor, Tensor)>,
    /// Template variables of the audio functions (clips, bucket) and the prefill (P).
    vars: BTreeMap<String, String>,
    /// The merge function's prompt length (>= the prompt's; text-only prompts are padded).
    merge_len: usize,
}

/// The modules of one slot, on this thread.
pub struct Model {
    art: Arc<Artifacts>,
    modules: ModuleSet,
    memory: SlotMemory,
}

/// A compiled function's name and static dims (None where not a static tensor).
struct FnDims {
    name: String,
    args: Vec<Option<Vec<usize>>>,
    results: Vec<Option<Vec<usize>>>,
}

impl FnDims {
    /// Axis `axis` of argument `i` (`-1`-style from the end when `from_end`).
    fn arg_dim(&self, i: usize, axis: usize, from_end: bool) -> Option<usize> {
        let d = self.args.get(i)?.as_ref()?;
        if from_end {
            d.len()
                .checked_sub(1 + axis)
                .and_then(|a| d.get(a).copied())
        } else {
            d.get(axis).copied()
        }
    }
}

fn refused(m: String) -> ServerError {
    ServerError::Refused(m)
}

fn dims(t: &ValueType) -> Option<Vec<usize>> {
    match t {
        ValueType::Tensor { dims, .. } => dims.iter().copied().collect(),
        ValueType::Other(_) => None,
    }
}

fn render(template: &str, vars: &BTreeMap<String, String>) -> Result<String, ServerError> {
    let case = Case {
        name: "request".to_string(),
        vars: vars.clone(),
    };
    TokensSpec::render(template, &case).map_err(ServerError::Setup)
}

impl Model {
    /// Loads the compiled modules into a new runtime on `driver`.
    pub fn load(
        art: Arc<Artifacts>,
        driver: &str,
        leak: Option<Leak>,
    ) -> Result<Model, ServerError> {
        let modules = ModuleSet::load(driver, &art.compiled);
        if let Some(e) = modules.load_errors().first() {
            return Err(ServerError::Setup(e.clone()));
        }
        Ok(Model {
            art,
            modules,
            memory: SlotMemory::new(leak),
        })
    }

    /// The argument/result dims of `call`'s function under `vars`, if compiled.
    fn signature(
        &self,
        call: &Call,
        vars: &BTreeMap<String, String>,
    ) -> Result<Option<FnDims>, ServerError> {
        let f = render(&call.function, vars)?;
        Ok(self.modules.signature(&call.module, &f).map(|s| FnDims {
            name: f,
            args: s.args.iter().map(dims).collect(),
            results: s.results.iter().map(dims).collect(),
        }))
    }

    /// Checks a request against the compiled functions and the context,
    /// before anything runs: refusals name the problem.
    pub fn admit(&self, req: &WireRequest) -> Result<Plan, ServerError> {
        let p = req.prompt.len();
        if p == 0 {
            return Err(refused("the prompt is empty".into()));
        }
        if req.max_tokens == 0 {
            return Err(refused("max_tokens is 0".into()));
        }
        let decode = self
            .signature(&self.art.decode, &BTreeMap::new())?
            .ok_or_else(|| {
                ServerError::Setup("the decode function has no readable signature".into())
            })?;
        let vocab = decode
            .results
            .first()
            .cloned()
            .flatten()
            .and_then(|d| d.last().copied())
            .unwrap_or(0);
        if let Some((i, t)) = req
            .prompt
            .iter()
            .enumerate()
            .find(|(_, &t)| t < 0 || t as usize >= vocab)
        {
            return Err(refused(format!(
                "prompt token {i} is {t}, outside the vocabulary 0..{vocab}"
            )));
        }
        let placeholders = req.prompt.iter().filter(|&&t| t == AUDIO_TOKEN_ID).count();
        let mut vars = BTreeMap::new();
        let (audio, merge_len) = match (&req.audio, placeholders) {
            (None, 0) => {
                if let Some(i) = req.prompt.iter().position(|&t| t >= AUDIO_VOCAB_OFFSET) {
                    return Err(refused(format!("prompt token {i} ({}) is an audio token but the request has no audio", req.prompt[i])));
                }
                // Text only: the merge with no audio rows, padded to a compiled length.
                let mut best: Option<(usize, BTreeMap<String, String>)> = None;
                for case in &self.art.spec.cases {
                    if case.vars.get("clips").map(String::as_str) != Some("1") {
                        continue;
                    }
                    if let Some(m) = self.signature(&self.art.merge, &case.vars)? {
                        let len = m.arg_dim(0, 0, true).unwrap_or(0);
                        if len >= p && best.as_ref().is_none_or(|b| len < b.0) {
                            best = Some((len, case.vars.clone()));
                        }
                    }
                }
                let (len, v) = best.ok_or_else(|| refused(format!("no compiled merge function takes a prompt of {p} tokens")))?;
                vars = v;
                (None, len)
            }
            (None, n) => return Err(refused(format!("the prompt has {n} audio placeholders (id {AUDIO_TOKEN_ID}) but the request has no audio"))),
            (Some(_), 0) => return Err(refused(format!("the request has audio but the prompt has no audio placeholder (id {AUDIO_TOKEN_ID})"))),
            (Some(a), n) => {
                let mel = a.mel.to_f32("audio.mel").map_err(|e| refused(e.to_string()))?;
                let mask = a.mel_mask.to_bool("audio.mel_mask").map_err(|e| refused(e.to_string()))?;
                let (c, f) = match (a.mel.shape.as_slice(), a.mel_mask.shape.as_slice()) {
                    ([c, f, _], [mc, mf]) if c == mc && f == mf && *c > 0 && *f > 0 => (*c, *f),
                    (m, k) => return Err(refused(format!("audio.mel has shape {m:?} and audio.mel_mask {k:?}: expected [clips, frames, bins] and [clips, frames]"))),
                };
                if let Some(k) = (0..c).find(|k| mask[k * f..(k + 1) * f].iter().all(|&m| m)) {
                    return Err(refused(format!("audio clip {k} is all padding (mel_mask all 1): it has no frames to encode")));
                }
                vars.insert("clips".to_string(), c.to_string());
                vars.insert("bucket".to_string(), f.to_string());
                let e = self.signature(&self.art.encode, &vars)?.ok_or_else(|| {
                    refused(format!("no compiled audio_encode for {c} clip(s) of {f} frames"))
                })?;
                if e.args.first().cloned().flatten().as_deref() != Some(a.mel.shape.as_slice()) {
                    return Err(refused(format!("audio.mel has shape {:?} but `{}` takes {:?}", a.mel.shape, e.name, e.args.first())));
                }
                let soft = e.results.first().cloned().flatten().and_then(|d| d.get(1).copied()).unwrap_or(0);
                if n != c * soft {
                    return Err(refused(format!("the prompt has {n} audio placeholders but {c} clip(s) expand to {} ({soft} per clip)", c * soft)));
                }
                let m = self.signature(&self.art.merge, &vars)?.ok_or_else(|| refused(format!("no compiled audio_merge_ple for {c} clip(s) of {f} frames")))?;
                let len = m.arg_dim(0, 0, true).unwrap_or(0);
                if len != p {
                    return Err(refused(format!("`{}` takes a prompt of {len} tokens, the request has {p}", m.name)));
                }
                let mel = Tensor::from_f32(a.mel.shape.clone(), &mel).map_err(|e| refused(e.to_string()))?;
                let bytes = mask.iter().map(|&m| u8::from(m)).collect();
                let mask = Tensor::from_bytes(DType::Bool, a.mel_mask.shape.clone(), bytes).map_err(|e| refused(e.to_string()))?;
                (Some((mel, mask)), len)
            }
        };
        vars.insert("P".to_string(), p.to_string());
        if self.signature(&self.art.prefill, &vars)?.is_none() {
            return Err(refused(format!(
                "no compiled prefill for a prompt of {p} tokens"
            )));
        }
        let context =
            self.art
                .decode
                .args
                .iter()
                .zip(&decode.args)
                .find_map(|(slot, d)| match slot {
                    crate::artifacts::Slot::Input(r) if r == "k_cache" => {
                        d.as_ref().and_then(|d| d.get(2).copied())
                    }
                    _ => None,
                });
        if let Some(context) = context {
            // Conservative, as parity's own admission: prompt plus every
            // generated token must fit (the last token's K/V included).
            if p + req.max_tokens > context {
                return Err(refused(format!(
                    "the expanded prompt ({p} tokens, {placeholders} of them audio) plus max_tokens {} is {} positions; the context has {context}",
                    req.max_tokens,
                    p + req.max_tokens
                )));
            }
        }
        Ok(Plan {
            prompt: req.prompt.clone(),
            max_tokens: req.max_tokens,
            audio,
            vars,
            merge_len,
        })
    }

    fn invoke(
        &self,
        call: &Call,
        vars: &BTreeMap<String, String>,
        inputs: &mut HashMap<String, Tensor>,
        scalars: &[(&str, f64)],
    ) -> Result<(), ServerError> {
        let f = render(&call.function, vars)?;
        let args = Artifacts::args(call, &f, inputs, scalars)?;
        let out = self
            .modules
            .invoke(&call.module, &f, &args)
            .map_err(|(_, m)| ServerError::Execution(format!("`{}.{f}`: {m}", call.module)))?;
        if out.len() != call.outputs.len() {
            return Err(ServerError::Execution(format!(
                "`{f}` returned {} results, the spec lists {}",
                out.len(),
                call.outputs.len()
            )));
        }
        inputs.extend(call.outputs.iter().cloned().zip(out));
        Ok(())
    }

    /// Runs an admitted request, calling `emit(token, logprob)` per token;
    /// `emit` returning false cancels (the slot is free again on return).
    pub fn run(
        &mut self,
        plan: &Plan,
        emit: &mut dyn FnMut(u32, f32) -> bool,
    ) -> Result<Finish, ServerError> {
        let exec = |m: String| ServerError::Execution(m);
        let mut inputs: HashMap<String, Tensor> = HashMap::new();
        let p = plan.prompt.len();
        let n = plan.merge_len;
        let mut tokens: Vec<f64> = plan.prompt.iter().map(|&t| t as f64).collect();
        tokens.resize(n, 0.0);
        let mut rows = vec![-1.0; n];
        let mut k = 0.0;
        for (r, &t) in rows.iter_mut().zip(&plan.prompt) {
            if t == AUDIO_TOKEN_ID {
                *r = k;
                k += 1.0;
            }
        }
        inputs.insert(
            "tokens".into(),
            Tensor::from_f64_as(DType::I32, vec![1, n], &tokens)
                .map_err(|e| exec(e.to_string()))?,
        );
        inputs.insert(
            "audio_rows".into(),
            Tensor::from_f64_as(DType::I32, vec![n], &rows).map_err(|e| exec(e.to_string()))?,
        );
        match &plan.audio {
            Some((mel, mask)) => {
                inputs.insert("mel".into(), mel.clone());
                inputs.insert("mel_mask".into(), mask.clone());
                self.invoke(&self.art.encode, &plan.vars, &mut inputs, &[])?;
            }
            None => {
                // No audio rows are read; zeros of the merge's shapes stand in (as the production's text path does).
                let m = self
                    .signature(&self.art.merge, &plan.vars)?
                    .ok_or_else(|| exec("the merge function vanished".into()))?;
                for (slot, d) in self.art.merge.args.iter().zip(m.args) {
                    if let (crate::artifacts::Slot::Input(r), Some(d)) = (slot, d) {
                        if r == "projected_audio" || r == "hard_audio" {
                            let zeros = vec![0.0f32; d.iter().product()];
                            inputs.insert(
                                r.clone(),
                                Tensor::from_f32(d, &zeros).map_err(|e| exec(e.to_string()))?,
                            );
                        }
                    }
                }
            }
        }
        self.invoke(&self.art.merge, &plan.vars, &mut inputs, &[])?;
        for name in ["embeddings", "dense_ple"] {
            let t = inputs
                .get(name)
                .ok_or_else(|| exec(format!("the merge gave no `{name}`")))?;
            let t = first_rows(t, p)
                .ok_or_else(|| exec(format!("`{name}` {:?} has fewer than {p} rows", t.shape())))?;
            let t = if name == "dense_ple" {
                self.memory.ple(t)
            } else {
                t
            };
            inputs.insert(name.into(), t);
        }
        self.invoke(&self.art.prefill, &plan.vars, &mut inputs, &[])?;
        self.memory.kv(&mut inputs);
        let mut last = 0u32;
        for step in 0..plan.max_tokens {
            if step > 0 {
                let pos = TokensSpec::position(p, step) as f64;
                let token = f64::from(last);
                self.invoke(
                    &self.art.decode,
                    &BTreeMap::new(),
                    &mut inputs,
                    &[("token", token), ("position", pos)],
                )?;
            }
            let logits = inputs
                .get(&self.art.logits)
                .ok_or_else(|| exec(format!("no `{}` output", self.art.logits)))?
                .to_f64_vec();
            let best = argmax(&logits)
                .ok_or_else(|| exec(format!("step {step}: the logits are empty or hold NaN")))?;
            let lse = logsumexp(&logits);
            last = best as u32;
            if !emit(best as u32, (logits[best] - lse) as f32) {
                self.memory.keep(&inputs);
                return Ok(Finish::Cancelled);
            }
        }
        self.memory.keep(&inputs);
        Ok(Finish::Length)
    }
}

/// The first `p` rows (axis 1) of a [1, n, ...] tensor.
fn first_rows(t: &Tensor, p: usize) -> Option<Tensor> {
    let shape = t.shape();
    if shape.len() < 2 || shape[1] < p {
        return None;
    }
    let row = t.bytes().len() / shape[1].max(1);
    let mut s = shape.to_vec();
    s[1] = p;
    Tensor::from_bytes(t.dtype(), s, t.bytes()[..row * p].to_vec()).ok()
}

/// log(sum(exp(x))), stable.
fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}
