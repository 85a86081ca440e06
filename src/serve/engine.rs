//! parity's in-process serving target: the scenario's serving module (slot
//! entry points) and the spec's audio module, compiled through the artifact
//! cache and driven on IREE by the scheduler. Audio requests run the audio
//! path (`audio_encode`, `audio_merge_ple`, as the spec's stages call them);
//! text-only ones the serving module's `embed_text_p{P}`.

use super::admission::{prepare, Prepared};
use super::error::ServeError;
use super::functions::Functions;
use super::scheduler::{self, Backend, Job, Logits};
use super::target::{Observed, ServingTarget};
use super::{sha256_bytes, sha256_f32};
use crate::run::inputs::InputSources;
use crate::run::{self, ModuleSet, RunOptions};
use parity_record::{ErrorKind, RunRecord};
use parity_spec::{Arg, Module, ModuleSource, Request, Scenario, Spec};
use parity_tensor::{DType, Tensor};
use std::collections::HashMap;

/// The module name the serving module is loaded under.
pub const SERVING: &str = "serving";
/// The spec's audio module (the audio path's front end).
pub const AUDIO: &str = "audio";

/// The in-process target.
pub struct InProcess {
    /// The spec the scenario names (weights, oracle, audio stages, token verdict rules).
    pub spec: Spec,
    /// Its oracle store and weights.
    pub sources: InputSources,
    /// The loaded serving and audio modules.
    pub modules: ModuleSet,
    /// The serving module's calling convention.
    pub functions: Functions,
    /// Slots S.
    pub slots: u32,
    /// Context per slot.
    pub context: u64,
    /// Step bound.
    pub max_steps: u64,
    /// The logits of the last `run` / `run_solo`, per request (index as returned).
    pub last_logits: Logits,
    /// IREE compiler revision, when one compiled.
    pub compiler_revision: Option<String>,
    weights: HashMap<String, Vec<Tensor>>,
}

impl InProcess {
    /// Loads the scenario's spec and compiles (or takes from the cache) its
    /// serving module and the spec's audio module.
    pub fn open(scenario: &Scenario, options: &RunOptions) -> Result<InProcess, ServeError> {
        let spec = Spec::load(&scenario.spec).map_err(|e| ServeError::Input(e.to_string()))?;
        let functions = Functions::load(&scenario.module)?;
        if functions.slots != scenario.slots {
            return Err(ServeError::Input(format!(
                "{}: the scenario asks for {} slots but {} is exported for {} (slot_decode_s{})",
                scenario.path.display(),
                scenario.slots,
                scenario.module.display(),
                functions.slots,
                functions.slots
            )));
        }
        let sources = InputSources::open(&spec).map_err(|e| ServeError::Input(e.to_string()))?;
        let mut only = spec.clone();
        only.subject.modules.retain(|name, _| name == AUDIO);
        only.subject.modules.insert(
            SERVING.to_string(),
            Module {
                source: ModuleSource::Mlir(scenario.module.clone()),
                flags: Vec::new(),
                location: scenario.location,
            },
        );
        let mut scratch = RunRecord::new("", "", String::new());
        let compiler = run::load_compiler(options, true, &mut scratch);
        let compiled = run::compile_all(&only, options, &compiler, &mut scratch);
        drop(compiler);
        if let Some(e) = scratch.errors.first() {
            let m = e.message.clone();
            return Err(match e.kind {
                ErrorKind::Input => ServeError::Input(m),
                ErrorKind::Execution => ServeError::Execution(m),
            });
        }
        let modules = ModuleSet::load(&spec.subject.driver, &compiled);
        if let Some(m) = modules.load_errors().first() {
            return Err(ServeError::Execution(m.clone()));
        }
        Ok(InProcess {
            spec,
            sources,
            modules,
            functions,
            slots: scenario.slots,
            context: scenario.context,
            max_steps: scenario.max_steps,
            last_logits: Vec::new(),
            compiler_revision: scratch.compiler_revision.take(),
            weights: HashMap::new(),
        })
    }

    fn schedule(&mut self, requests: &[Request]) -> Result<Vec<Observed>, ServeError> {
        let mut prepared = Vec::with_capacity(requests.len());
        for r in requests {
            prepared.push(prepare(self, r)?);
        }
        let jobs: Vec<Job> = requests
            .iter()
            .zip(&prepared)
            .map(|(r, p)| Job {
                id: r.id.clone(),
                arrive: r.arrive,
                max_new_tokens: r.max_new_tokens,
                cancel: r.cancel,
                prompt_len: p.prompt_len,
                refusal: p.refusal.clone(),
            })
            .collect();
        let (slots, max_steps) = (self.slots, self.max_steps);
        let mut backend = Engine::new(self, &prepared)?;
        let (mut obs, logits) = scheduler::run(&jobs, slots, max_steps, &mut backend);
        for (j, o) in obs.iter_mut().enumerate() {
            o.effective_length = backend.effective[j];
            o.dense_ple_sha256 = backend.ple_sha[j].clone();
        }
        self.last_logits = logits;
        Ok(obs)
    }

    /// Weights of serving function `function`, loaded once.
    fn weights(&mut self, function: &str) -> Result<Vec<Tensor>, ServeError> {
        if let Some(w) = self.weights.get(function) {
            return Ok(w.clone());
        }
        let names = self.functions.get(function)?.weights.clone();
        let mut out = Vec::with_capacity(names.len());
        for n in &names {
            out.push(self.sources.weight(n).map_err(|e| {
                ServeError::Input(format!("serving function `{function}`: weight `{n}`: {e}"))
            })?);
        }
        self.weights.insert(function.to_string(), out.clone());
        Ok(out)
    }

    /// Calls `module.function` and names it in any error.
    pub fn invoke(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
    ) -> Result<Vec<Tensor>, ServeError> {
        self.modules
            .invoke(module, function, args)
            .map_err(|(kind, m)| {
                let m = format!("`{module}.{function}`: {m}");
                match kind {
                    ErrorKind::Input => ServeError::Input(m),
                    ErrorKind::Execution => ServeError::Execution(m),
                }
            })
    }

    /// Calls a serving function with its activations, then its weights.
    fn serve_call(
        &mut self,
        function: &str,
        mut acts: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, ServeError> {
        acts.extend(self.weights(function)?);
        let out = self.invoke(SERVING, function, &acts)?;
        let want = self.functions.get(function)?.outputs.len();
        if out.len() != want {
            return Err(ServeError::Input(format!(
                "`{SERVING}.{function}` returned {} results, the manifest lists {want}",
                out.len()
            )));
        }
        Ok(out)
    }

    /// The merged embeddings and dense PLE of a prepared request.
    fn front_end(&mut self, p: &Prepared) -> Result<(Tensor, Tensor), ServeError> {
        match &p.audio_case {
            None => {
                let f = format!("embed_text_p{}", p.prompt_len);
                let mut out = self.serve_call(&f, vec![p.prompt.clone()])?;
                let ple = out.pop();
                let emb = out.pop();
                emb.zip(ple)
                    .ok_or_else(|| ServeError::Input(format!("`{f}` returned no outputs")))
            }
            Some(case) => self.audio_front_end(case),
        }
    }

    /// Runs the spec's `audio_encode` then `audio_merge_ple` stages for `case`.
    fn audio_front_end(&self, case: &str) -> Result<(Tensor, Tensor), ServeError> {
        let c = self.spec.case(case).ok_or_else(|| {
            ServeError::Input(format!(
                "{}: no stage case `{case}` for the audio path",
                self.spec.path.display()
            ))
        })?;
        let stages = self
            .spec
            .instantiate(c)
            .map_err(|e| ServeError::Input(e.to_string()))?;
        let mut outputs: HashMap<(String, String), Tensor> = HashMap::new();
        for name in ["audio_encode", "audio_merge_ple"] {
            let stage = stages.iter().find(|s| s.name == name).ok_or_else(|| {
                ServeError::Input(format!(
                    "{}: no stage `{name}` (the audio path's front end)",
                    self.spec.path.display()
                ))
            })?;
            let mut args = Vec::with_capacity(stage.args.len());
            for a in &stage.args {
                let fail =
                    |m: String| ServeError::Input(format!("stage `{name}` of case `{case}`: {m}"));
                args.push(match a {
                    Arg::Oracle(n) => self.sources.oracle(n).map_err(|e| fail(e.to_string()))?,
                    Arg::Weight(n) => self.sources.weight(n).map_err(|e| fail(e.to_string()))?,
                    Arg::Literal {
                        dtype,
                        shape,
                        values,
                    } => Tensor::from_f64_as(*dtype, shape.clone(), values)
                        .map_err(|e| fail(e.to_string()))?,
                    Arg::Stage { stage, output } => outputs
                        .get(&(stage.clone(), output.clone()))
                        .cloned()
                        .ok_or_else(|| {
                            fail(format!(
                                "`{stage}.{output}` is not an audio front-end output"
                            ))
                        })?,
                });
            }
            let res = self.invoke(&stage.module, &stage.function, &args)?;
            for (o, t) in stage.outputs.iter().zip(res) {
                outputs.insert((name.to_string(), o.name.clone()), t);
            }
        }
        let mut get = |o: &str| {
            outputs
                .remove(&("audio_merge_ple".to_string(), o.to_string()))
                .ok_or_else(|| {
                    ServeError::Input(format!(
                        "stage `audio_merge_ple` of case `{case}` has no output `{o}`"
                    ))
                })
        };
        let emb = get("embeddings")?;
        let ple = get("dense_ple")?;
        Ok((emb, ple))
    }
}

/// One run's mutable state: the slots' KV caches and lengths.
struct Engine<'a> {
    target: &'a mut InProcess,
    prepared: &'a [Prepared],
    k: Tensor,
    v: Tensor,
    lengths: Tensor,
    effective: Vec<Option<u64>>,
    ple_sha: Vec<Option<String>>,
}

impl<'a> Engine<'a> {
    fn new(target: &'a mut InProcess, prepared: &'a [Prepared]) -> Result<Engine<'a>, ServeError> {
        let decode = format!("slot_decode_s{}", target.slots);
        let shape = target.functions.arg_shape(&decode, "k_cache")?;
        let zeros = vec![0f32; shape.iter().product()];
        let k = Tensor::from_f32(shape.clone(), &zeros)
            .map_err(|e| ServeError::Input(e.to_string()))?;
        let lengths = int_tensor(vec![target.slots as usize], &vec![0; target.slots as usize])?;
        Ok(Engine {
            v: k.clone(),
            k,
            lengths,
            effective: vec![None; prepared.len()],
            ple_sha: vec![None; prepared.len()],
            target,
            prepared,
        })
    }

    fn take_state(&mut self, out: &mut Vec<Tensor>) -> Result<(), ServeError> {
        // Outputs: logits, k_cache, v_cache, lengths.
        if out.len() != 4 {
            return Err(ServeError::Input(format!(
                "a slot function returned {} results, expected 4",
                out.len()
            )));
        }
        self.lengths = out.pop().unwrap_or_else(|| self.lengths.clone());
        self.v = out.pop().unwrap_or_else(|| self.v.clone());
        self.k = out.pop().unwrap_or_else(|| self.k.clone());
        Ok(())
    }
}

fn int_tensor(shape: Vec<usize>, values: &[i64]) -> Result<Tensor, ServeError> {
    let v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    Tensor::from_f64_as(DType::I32, shape, &v).map_err(|e| ServeError::Input(e.to_string()))
}

fn f32_rows(t: &Tensor) -> Vec<f32> {
    t.to_f64_vec().into_iter().map(|x| x as f32).collect()
}

impl Backend for Engine<'_> {
    fn prefill(&mut self, job: usize, slot: u32, step: u64) -> Result<Vec<f32>, ServeError> {
        let p = &self.prepared[job];
        let ctx = |e: ServeError| {
            e.context(&format!(
                "request `{}`: slot {slot}: step {step}: prefill",
                p.id
            ))
        };
        let (emb, ple) = self.target.front_end(p).map_err(ctx)?;
        self.ple_sha[job] = Some(sha256_bytes(ple.bytes()));
        let f = format!("slot_prefill_p{}_s{}", p.prompt_len, self.target.slots);
        let slot_t = int_tensor(vec![], &[slot as i64])?;
        let acts = vec![
            emb,
            ple,
            slot_t,
            self.k.clone(),
            self.v.clone(),
            self.lengths.clone(),
        ];
        let mut out = self.target.serve_call(&f, acts).map_err(ctx)?;
        self.take_state(&mut out).map_err(ctx)?;
        self.effective[job] = self
            .lengths
            .to_f64_vec()
            .get(slot as usize)
            .map(|&x| x as u64);
        let logits = out
            .pop()
            .ok_or_else(|| ctx(ServeError::Input(format!("`{f}` returned no logits"))))?;
        Ok(f32_rows(&logits))
    }

    fn decode(
        &mut self,
        inputs: &[Option<(u32, u64)>],
        step: u64,
    ) -> Result<Vec<Vec<f32>>, ServeError> {
        let s = self.target.slots as usize;
        let tok: Vec<i64> = inputs.iter().map(|i| i.map_or(0, |x| x.0 as i64)).collect();
        let pos: Vec<i64> = inputs.iter().map(|i| i.map_or(0, |x| x.1 as i64)).collect();
        let act: Vec<i64> = inputs.iter().map(|i| i64::from(i.is_some())).collect();
        let f = format!("slot_decode_s{s}");
        let acts = vec![
            int_tensor(vec![s], &tok)?,
            int_tensor(vec![s], &pos)?,
            int_tensor(vec![s], &act)?,
            self.k.clone(),
            self.v.clone(),
            self.lengths.clone(),
        ];
        let ctx = |e: ServeError| e.context(&format!("step {step}: decode"));
        let mut out = self.target.serve_call(&f, acts).map_err(ctx)?;
        self.take_state(&mut out).map_err(ctx)?;
        let logits = out
            .pop()
            .ok_or_else(|| ctx(ServeError::Input(format!("`{f}` returned no logits"))))?;
        let all = f32_rows(&logits);
        let v = all.len() / s.max(1);
        Ok(all.chunks(v.max(1)).map(<[f32]>::to_vec).collect())
    }
}

impl ServingTarget for InProcess {
    fn name(&self) -> &str {
        "in-process"
    }

    fn run(&mut self, scenario: &Scenario) -> Result<Vec<Observed>, ServeError> {
        self.schedule(&scenario.requests)
    }

    fn run_solo(&mut self, request: &Request) -> Result<Observed, ServeError> {
        let mut solo = request.clone();
        solo.arrive = 0;
        solo.cancel = None;
        let mut obs = self.schedule(std::slice::from_ref(&solo))?;
        obs.pop().ok_or_else(|| {
            ServeError::Execution(format!(
                "request `{}`: the solo run observed nothing",
                request.id
            ))
        })
    }
}

/// SHA-256 of a logits row's f32 bits (little-endian).
pub fn row_sha(row: &[f32]) -> String {
    sha256_f32(row)
}
