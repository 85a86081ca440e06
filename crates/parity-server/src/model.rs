//! The server's model on its scheduler thread: the spec's audio module and
//! the serving module (slot entry points) loaded into one IREE runtime, the
//! admission checks a request passes before anything runs, and each
//! request's front end (the audio path, `audio_encode` then
//! `audio_merge_ple` as the spec's stages call them, or the serving module's
//! own `audio_merge_ple_p{P}_c{C}` where it has one for the prompt's length;
//! text-only prompts `embed_text_p{P}`), whose embeddings and dense PLE the
//! slot prefill takes.

use crate::artifacts::{weight, Artifacts, Call};
use crate::error::ServerError;
use parity::run::ModuleSet;
use parity::serve::adapters::wire::WireRequest;
use parity::serve::slots::{SlotCaches, SlotModule};
use parity::serve::ServeError;
use parity_iree::ValueType;
use parity_spec::{Case, TokensSpec};
use parity_tensor::{DType, Tensor};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The audio soft-token placeholder id (tools/fixtures/config.py `audio_token_id`).
pub const AUDIO_TOKEN_ID: i64 = 73;
/// The first id of the audio vocabulary (`vocab_offset`): ids from here on are audio tokens.
pub const AUDIO_VOCAB_OFFSET: i64 = 72;

/// A request that passed admission: everything decided, nothing run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The expanded prompt.
    pub prompt: Vec<i64>,
    /// Tokens to generate.
    pub max_tokens: usize,
    /// mel [c, f, b], mask [c, f].
    audio: Option<(Tensor, Tensor)>,
    /// Template variables of the audio functions (clips, bucket).
    vars: BTreeMap<String, String>,
    /// The serving module's own audio merge for this prompt length, when
    /// it has one (`audio_merge_ple_p{P}_c{C}`: the audio-only prompt);
    /// None: the spec's `audio_merge_ple`.
    merge: Option<String>,
}

/// The modules, on the scheduler thread.
pub struct Model {
    art: Arc<Artifacts>,
    modules: ModuleSet,
    /// The serving module's slot functions.
    pub slots: SlotModule,
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

/// A serving error as the server's: input problems are set-up errors (the
/// modules do not fit their manifest), the rest execution errors.
pub fn server_error(e: ServeError) -> ServerError {
    if e.is_input() {
        ServerError::Setup(e.to_string())
    } else {
        ServerError::Execution(e.to_string())
    }
}

impl Model {
    /// Loads the compiled modules into a new runtime on `driver` (a device
    /// of the spec's target).
    pub fn load(art: Arc<Artifacts>, driver: &str) -> Result<Model, ServerError> {
        let modules = art.target.with_device(driver).load(&art.compiled);
        if let Some(e) = modules.load_errors().first() {
            return Err(ServerError::Setup(e.to_string()));
        }
        let slots = SlotModule::new(parity::serve::engine::SERVING, art.functions.clone());
        Ok(Model {
            art,
            modules,
            slots,
        })
    }

    /// Empty slot caches of the serving module.
    pub fn empty_caches(&self) -> Result<SlotCaches, ServerError> {
        self.slots.empty_caches().map_err(server_error)
    }

    /// Argument and result dims of `call`'s function under `vars`, if compiled.
    #[allow(clippy::type_complexity)]
    fn signature(
        &self,
        call: &Call,
        vars: &BTreeMap<String, String>,
    ) -> Result<Option<(String, Vec<Option<Vec<usize>>>, Vec<Option<Vec<usize>>>)>, ServerError>
    {
        let f = render(&call.function, vars)?;
        Ok(self.modules.signature(&call.module, &f).map(|s| {
            (
                f,
                s.args.iter().map(dims).collect(),
                s.results.iter().map(dims).collect(),
            )
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
        let s = self.slots.slots();
        let decode = format!("slot_decode_s{s}");
        let vocab = self
            .modules
            .signature(&self.slots.module, &decode)
            .and_then(|sig| sig.results.first().and_then(dims))
            .and_then(|d| d.last().copied())
            .ok_or_else(|| {
                ServerError::Setup(format!("`{decode}` has no readable logits result"))
            })?;
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
        let mut merge = None;
        let audio = match (&req.audio, placeholders) {
            (None, 0) => {
                if let Some(i) = req.prompt.iter().position(|&t| t >= AUDIO_VOCAB_OFFSET) {
                    return Err(refused(format!("prompt token {i} ({}) is an audio token but the request has no audio", req.prompt[i])));
                }
                let embed = format!("embed_text_p{p}");
                if !self.slots.has(&self.modules, &embed) {
                    return Err(refused(format!("a text-only prompt of {p} tokens has no bucket (no `{embed}`)")));
                }
                None
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
                let (name, args, results) = self.signature(&self.art.encode, &vars)?.ok_or_else(|| {
                    refused(format!("no compiled audio_encode for {c} clip(s) of {f} frames"))
                })?;
                if args.first().cloned().flatten().as_deref() != Some(a.mel.shape.as_slice()) {
                    return Err(refused(format!("audio.mel has shape {:?} but `{name}` takes {:?}", a.mel.shape, args.first())));
                }
                let soft = results.first().cloned().flatten().and_then(|d| d.get(1).copied()).unwrap_or(0);
                if n != c * soft {
                    return Err(refused(format!("the prompt has {n} audio placeholders but {c} clip(s) expand to {} ({soft} per clip)", c * soft)));
                }
                merge = self.slots.audio_merge_function(&self.modules, p, c);
                if merge.is_none() {
                    let (name, args, _) = self.signature(&self.art.merge, &vars)?.ok_or_else(|| refused(format!("no compiled audio_merge_ple for {c} clip(s) of {f} frames")))?;
                    let len = args.first().cloned().flatten().and_then(|d| d.last().copied()).unwrap_or(0);
                    if len != p {
                        return Err(refused(format!("`{name}` takes a prompt of {len} tokens, the request has {p}, and the serving module has no `audio_merge_ple_p{p}_c{c}`")));
                    }
                }
                let mel = Tensor::from_f32(a.mel.shape.clone(), &mel).map_err(|e| refused(e.to_string()))?;
                let bytes = mask.iter().map(|&m| u8::from(m)).collect();
                let mask = Tensor::from_bytes(DType::Bool, a.mel_mask.shape.clone(), bytes).map_err(|e| refused(e.to_string()))?;
                Some((mel, mask))
            }
        };
        let prefill = format!("slot_prefill_p{p}_s{s}");
        if !self.slots.has(&self.modules, &prefill) {
            return Err(refused(format!(
                "a prompt of {p} tokens has no bucket (no `{prefill}`)"
            )));
        }
        // Conservative, as parity's own admission: prompt plus every
        // generated token must fit (the last token's K/V included).
        let context = self.slots.functions.context as usize;
        if p + req.max_tokens > context {
            return Err(refused(format!(
                "the expanded prompt ({p} tokens, {placeholders} of them audio) plus max_tokens {} is {} positions; the context has {context}",
                req.max_tokens,
                p + req.max_tokens
            )));
        }
        Ok(Plan {
            prompt: req.prompt.clone(),
            max_tokens: req.max_tokens,
            audio,
            vars,
            merge,
        })
    }

    fn invoke(
        &self,
        call: &Call,
        vars: &BTreeMap<String, String>,
        inputs: &mut HashMap<String, Tensor>,
    ) -> Result<(), ServerError> {
        let f = render(&call.function, vars)?;
        let args = Artifacts::args(call, &f, inputs)?;
        let out = self
            .modules
            .invoke(&call.module, &f, &args)
            .map_err(|e| ServerError::Execution(format!("`{}.{f}`: {e}", call.module)))?;
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

    /// The embeddings and dense PLE [1, P, ...] of an admitted request.
    pub fn front_end(&mut self, plan: &Plan) -> Result<(Tensor, Tensor), ServerError> {
        let exec = |m: String| ServerError::Execution(m);
        let p = plan.prompt.len();
        let tokens: Vec<f64> = plan.prompt.iter().map(|&t| t as f64).collect();
        let prompt = Tensor::from_f64_as(DType::I32, vec![1, p], &tokens)
            .map_err(|e| exec(e.to_string()))?;
        let Some((mel, mask)) = &plan.audio else {
            let art = Arc::clone(&self.art);
            let source = |n: &str| weight_of(&art, n);
            return self
                .slots
                .embed_text(&self.modules, &source, prompt)
                .map_err(server_error);
        };
        let mut rows = vec![-1.0; p];
        let mut k = 0.0;
        for (r, &t) in rows.iter_mut().zip(&plan.prompt) {
            if t == AUDIO_TOKEN_ID {
                *r = k;
                k += 1.0;
            }
        }
        let mut inputs: HashMap<String, Tensor> = HashMap::new();
        inputs.insert("tokens".into(), prompt);
        inputs.insert(
            "audio_rows".into(),
            Tensor::from_f64_as(DType::I32, vec![p], &rows).map_err(|e| exec(e.to_string()))?,
        );
        inputs.insert("mel".into(), mel.clone());
        inputs.insert("mel_mask".into(), mask.clone());
        self.invoke(&self.art.encode, &plan.vars, &mut inputs)?;
        if let Some(f) = &plan.merge {
            let art = Arc::clone(&self.art);
            let source = |n: &str| weight_of(&art, n);
            return self
                .slots
                .audio_merge(&self.modules, &source, f, &mut |n| inputs.get(n).cloned())
                .map_err(server_error);
        }
        self.invoke(&self.art.merge, &plan.vars, &mut inputs)?;
        let mut get = |name: &str| {
            inputs
                .remove(name)
                .ok_or_else(|| exec(format!("the merge gave no `{name}`")))
        };
        Ok((get("embeddings")?, get("dense_ple")?))
    }

    /// Prefills `plan` into `slot`: its first token's logits.
    pub fn prefill(
        &mut self,
        caches: &mut SlotCaches,
        plan: &Plan,
        slot: u32,
    ) -> Result<Vec<f32>, ServerError> {
        let (emb, ple) = self.front_end(plan)?;
        let art = Arc::clone(&self.art);
        let source = |n: &str| weight_of(&art, n);
        self.slots
            .prefill(&self.modules, &source, caches, emb, ple, slot)
            .map(|(row, _)| row)
            .map_err(server_error)
    }

    /// One decode over every slot (`inputs[s]`: token and position of an active slot).
    pub fn decode(
        &mut self,
        caches: &mut SlotCaches,
        inputs: &[Option<(u32, u64)>],
    ) -> Result<Vec<Vec<f32>>, ServerError> {
        let art = Arc::clone(&self.art);
        let source = |n: &str| weight_of(&art, n);
        self.slots
            .decode(&self.modules, &source, caches, inputs)
            .map_err(server_error)
    }
}

/// Weight `name` from the spec's weights files.
fn weight_of(art: &Artifacts, name: &str) -> Result<Tensor, String> {
    weight(&art.spec, &art.files, name).map_err(|e| e.to_string())
}

/// log(sum(exp(x))), stable.
pub fn logsumexp(x: &[f32]) -> f64 {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    m + x.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln()
}
