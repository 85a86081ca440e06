//! parity's in-process serving target: the scenario's serving module (slot
//! entry points) and the spec's audio module, compiled through the artifact
//! cache and driven on IREE by the scheduler. Audio requests run the audio
//! path (`audio_encode`, `audio_merge_ple`, as the spec's stages call them);
//! text-only ones the serving module's `embed_text_p{P}`.

use super::admission::{prepare, Prepared};
use super::error::ServeError;
use super::functions::Functions;
use super::scheduler::{self, Backend, Job, Logits};
use super::sha256_bytes;
use super::slots::{self, SlotCaches, SlotModule};
use super::target::{Observed, ServingTarget};
use crate::run::inputs::InputSources;
use crate::run::{self, ModuleSet, RunOptions};
use crate::target::PrebuiltFile;
use parity_record::RunRecord;
use parity_spec::{Module, ModuleSource, PrebuiltServing, Request, Scenario, ScenarioSource, Spec};
use parity_tensor::Tensor;
use std::collections::BTreeMap;

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
    /// The serving module's slot functions and calling convention.
    pub slot_module: SlotModule,
    /// The serving module this target runs: the scenario's `module:` (MLIR,
    /// compiled) or its `vmfb:` entry for the target.
    pub serving_path: std::path::PathBuf,
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
}

impl InProcess {
    /// Loads the scenario's spec and compiles (or takes from the cache) its
    /// serving module and the spec's audio module.
    pub fn open(scenario: &Scenario, options: &RunOptions) -> Result<InProcess, ServeError> {
        let ScenarioSource::Production {
            spec: spec_path,
            module,
            prebuilt,
        } = &scenario.source
        else {
            return Err(ServeError::Convention(format!(
                "{}: an oracle-only scenario has no serving module to run in-process",
                scenario.path.display()
            )));
        };
        let spec = Spec::load(spec_path)?;
        let target = crate::target::Target::ready(&spec, options.target.as_deref())
            .map_err(|e| ServeError::Convention(e.to_string()))?;
        let serving = serving_module(scenario, &spec, &target, module.as_deref(), prebuilt)?;
        let serving_path = match &serving.source {
            ModuleSource::Mlir(p) | ModuleSource::Vmfb(p) => p.clone(),
        };
        let functions = Functions::load(&serving_path)?;
        if functions.slots != scenario.slots {
            return Err(ServeError::Convention(format!(
                "{}: the scenario asks for {} slots but {} is exported for {} (slot_decode_s{})",
                scenario.path.display(),
                scenario.slots,
                serving_path.display(),
                functions.slots,
                functions.slots
            )));
        }
        let sources = InputSources::open(&spec)?;
        let mut only = spec.clone();
        only.subject.modules.retain(|name, _| name == AUDIO);
        only.subject.modules.insert(SERVING.to_string(), serving);
        let mut scratch = RunRecord::new("", "", String::new());
        // No compiler when every module is prebuilt (a GPU machine's run).
        let needed = only
            .subject
            .modules
            .iter()
            .any(|(name, m)| matches!(target.module(name, m).source, ModuleSource::Mlir(_)));
        let compiler = run::load_compiler(options, needed, &mut scratch);
        let compiled = run::compile_all(&only, &target, options, &compiler, &mut scratch);
        drop(compiler);
        if let Some(e) = scratch.errors.first() {
            return Err(ServeError::Module {
                kind: e.kind,
                message: e.message.clone(),
            });
        }
        let modules = target.load(&compiled);
        if let Some(e) = modules.load_errors().into_iter().next() {
            return Err(ServeError::Load(Box::new(e)));
        }
        Ok(InProcess {
            spec,
            sources,
            modules,
            slot_module: SlotModule::new(SERVING, functions),
            serving_path,
            slots: scenario.slots,
            context: scenario.context,
            max_steps: scenario.max_steps,
            last_logits: Vec::new(),
            compiler_revision: scratch.compiler_revision.take(),
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

    /// Calls `module.function` and names it in any error.
    pub fn invoke(
        &self,
        module: &str,
        function: &str,
        args: &[Tensor],
    ) -> Result<Vec<Tensor>, ServeError> {
        slots::invoke(&self.modules, module, function, args)
    }
}

/// One run's mutable state: the slots' KV caches and lengths.
struct Engine<'a> {
    target: &'a mut InProcess,
    prepared: &'a [Prepared],
    caches: SlotCaches,
    effective: Vec<Option<u64>>,
    ple_sha: Vec<Option<String>>,
}

impl<'a> Engine<'a> {
    fn new(target: &'a mut InProcess, prepared: &'a [Prepared]) -> Result<Engine<'a>, ServeError> {
        Ok(Engine {
            caches: target.slot_module.empty_caches()?,
            effective: vec![None; prepared.len()],
            ple_sha: vec![None; prepared.len()],
            target,
            prepared,
        })
    }
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
        let t = &mut *self.target;
        let sources = &t.sources;
        let weight = |n: &str| sources.weight(n).map_err(|e| e.to_string());
        let (row, effective) = t
            .slot_module
            .prefill(&t.modules, &weight, &mut self.caches, emb, ple, slot)
            .map_err(ctx)?;
        self.effective[job] = effective;
        Ok(row)
    }

    fn decode(
        &mut self,
        inputs: &[Option<(u32, u64)>],
        step: u64,
    ) -> Result<Vec<Vec<f32>>, ServeError> {
        let t = &mut *self.target;
        let sources = &t.sources;
        let weight = |n: &str| sources.weight(n).map_err(|e| e.to_string());
        t.slot_module
            .decode(&t.modules, &weight, &mut self.caches, inputs)
            .map_err(|e| e.context(&format!("step {step}: decode")))
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
            ServeError::Run(format!(
                "request `{}`: the solo run observed nothing",
                request.id
            ))
        })
    }
}

/// The serving module the target runs: the scenario's prebuilt vmfb for it
/// (`vmfb: {TARGET: FILE}`, checked against the target's device here, before
/// anything runs), else its `module:` to compile. `vmfb:` names spec targets
/// only, and a target with neither is refused: both input errors, naming the
/// scenario and the target.
fn serving_module(
    scenario: &Scenario,
    spec: &Spec,
    target: &crate::target::Target,
    module: Option<&std::path::Path>,
    prebuilt: &BTreeMap<String, PrebuiltServing>,
) -> Result<Module, ServeError> {
    let names: Vec<&str> = spec
        .subject
        .targets
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    if let Some((unknown, p)) = prebuilt.iter().find(|(n, _)| !names.contains(&n.as_str())) {
        return Err(ServeError::Convention(format!(
            "{}:{}:{}: `vmfb.{unknown}`: the spec {} has no target `{unknown}` (targets: {})",
            scenario.path.display(),
            p.location.line,
            p.location.col,
            spec.path.display(),
            names.join(", ")
        )));
    }
    if let Some(p) = prebuilt.get(target.name()) {
        let file = PrebuiltFile {
            name: SERVING,
            path: &p.path,
            at: format!(
                "{}:{}:{}: serving module `vmfb.{}` ({})",
                scenario.path.display(),
                p.location.line,
                p.location.col,
                target.name(),
                p.path.display()
            ),
        };
        target
            .preflight_files(&[file])
            .map_err(|e| ServeError::Convention(e.to_string()))?;
        return Ok(Module {
            source: ModuleSource::Vmfb(p.path.clone()),
            flags: Vec::new(),
            location: p.location,
        });
    }
    match module {
        Some(m) => Ok(Module {
            source: ModuleSource::Mlir(m.to_path_buf()),
            flags: Vec::new(),
            location: scenario.location,
        }),
        None => {
            Err(ServeError::Convention(format!(
            "{}: target `{}` has no serving module: `vmfb:` names {} and there is no `module:` \
             to compile for it",
            scenario.path.display(),
            target.name(),
            prebuilt.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        )))
        }
    }
}
