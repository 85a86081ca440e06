//! What the server shares between its threads: the spec's audio calls
//! (which functions, which weights in which order), the serving module's
//! calling convention (`serving-functions.json`), the compiled modules
//! (through parity's artifact cache, exactly as `parity check` and `parity
//! serve` compile them) and the weights files. IREE runtimes are per thread,
//! so only bytes and tensors live here.

use crate::error::ServerError;
use parity::run::RunOptions;
use parity::run::{compile_all, load_compiler, Compiled};
use parity::serve::engine::SERVING;
use parity::serve::functions::Functions;
use parity::target::Target;
use parity_record::RunRecord;
use parity_spec::{Arg, Module, ModuleSource, Spec};
use parity_tensor::{SafetensorsFile, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// One argument of a call the server makes.
#[derive(Clone, Debug)]
pub enum Slot {
    /// A request input or an earlier call's output, by role (`mel`, `tokens`, `k_cache`, ...).
    Input(String),
    /// A weight tensor.
    Weight(Tensor),
}

/// A function of a module and how to fill its arguments.
#[derive(Clone, Debug)]
pub struct Call {
    /// Module name in the spec.
    pub module: String,
    /// Function template (`audio_encode_c{clips}_b{bucket}`).
    pub function: String,
    /// Arguments in order.
    pub args: Vec<Slot>,
    /// Output roles in order.
    pub outputs: Vec<String>,
}

/// The shared, thread-safe part of a server.
pub struct Artifacts {
    /// The spec the server serves.
    pub spec: Spec,
    /// The spec's default target, which the modules were compiled for.
    pub target: Target,
    /// Every module's vmfb.
    pub compiled: Compiled,
    /// audio_encode: mel, mask, weights -> projected_audio, hard_audio, projected_lengths.
    pub encode: Call,
    /// audio_merge_ple: tokens, audio_rows, projected, hard, weights -> embeddings, dense_ple.
    pub merge: Call,
    /// The serving module's calling convention (slot prefill and decode),
    /// compiled under the module name [`SERVING`].
    pub functions: Functions,
    /// The weights files, in the spec's order.
    pub files: Vec<SafetensorsFile>,
    /// Compiler warnings (cache problems), already printed.
    pub warnings: Vec<String>,
}

/// Weight `name` from the spec's weights files.
pub fn weight(spec: &Spec, files: &[SafetensorsFile], name: &str) -> Result<Tensor, ServerError> {
    for (file, path) in files.iter().zip(&spec.weights) {
        if file.names().iter().any(|n| n == name) {
            return file.get(name).map_err(|e| {
                ServerError::Setup(format!("{}: weight `{name}`: {e}", path.display()))
            });
        }
    }
    Err(ServerError::Setup(format!(
        "{}: weight `{name}` is in none of the weight files",
        spec.path.display()
    )))
}

/// A stage of the spec's `stages:` as a call: `oracle:` arguments become
/// request inputs named by the last path component (`{case}/mel` -> `mel`),
/// `stage:` arguments the named output.
fn stage_call(
    spec: &Spec,
    files: &[parity_tensor::SafetensorsFile],
    name: &str,
) -> Result<Call, ServerError> {
    let stage = spec.stages.iter().find(|s| s.name == name).ok_or_else(|| {
        ServerError::Setup(format!(
            "{}: no stage `{name}` (the server runs audio_encode and audio_merge_ple)",
            spec.path.display()
        ))
    })?;
    let args = stage
        .args
        .iter()
        .map(|a| match a {
            Arg::Oracle(n) => Ok(Slot::Input(role(n))),
            Arg::Stage { output, .. } => Ok(Slot::Input(output.clone())),
            Arg::Weight(w) => weight(spec, files, w).map(Slot::Weight),
            Arg::Literal { .. } => Err(ServerError::Setup(format!(
                "{}: stage `{name}`: literal arguments are not supported by the server",
                spec.path.display()
            ))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Call {
        module: stage.module.clone(),
        function: stage.function.clone(),
        args,
        outputs: stage.outputs.iter().map(|o| o.name.clone()).collect(),
    })
}

/// The last `/`-component of an oracle name, without an `lm_` prefix.
fn role(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    last.strip_prefix("lm_").unwrap_or(last).to_string()
}

impl Artifacts {
    /// Reads the spec and the serving module's manifest, compiles the
    /// spec's audio module and `serving_module` through the artifact cache
    /// in `cache_dir` and opens the weights.
    pub fn prepare(
        spec_path: &Path,
        serving_module: &Path,
        cache_dir: &Path,
    ) -> Result<Artifacts, ServerError> {
        let spec = Spec::load(spec_path)
            .map_err(|e| ServerError::Setup(format!("{}: {e}", spec_path.display())))?;
        let functions =
            Functions::load(serving_module).map_err(|e| ServerError::Setup(e.to_string()))?;
        let files = spec
            .weights
            .iter()
            .map(|p| {
                parity_tensor::read_safetensors(p)
                    .map_err(|e| ServerError::Setup(format!("{}: {e}", p.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let encode = stage_call(&spec, &files, "audio_encode")?;
        let merge = stage_call(&spec, &files, "audio_merge_ple")?;
        let mut only = spec.clone();
        let used = [&encode.module, &merge.module];
        only.subject.modules.retain(|name, _| used.contains(&name));
        only.subject.modules.insert(
            SERVING.to_string(),
            Module {
                source: ModuleSource::Mlir(serving_module.to_path_buf()),
                flags: Vec::new(),
                location: parity_spec::Location::default(),
            },
        );
        let options = RunOptions {
            cache_dir: cache_dir.to_path_buf(),
            ..RunOptions::default()
        };
        let target = Target::select(&spec, None).map_err(|e| ServerError::Setup(e.to_string()))?;
        let mut scratch = RunRecord::new("", "", String::new());
        let compiler = load_compiler(&options, true, &mut scratch);
        let compiled = compile_all(&only, &target, &options, &compiler, &mut scratch);
        if let Some(e) = scratch.errors.first() {
            return Err(ServerError::Setup(e.message.clone()));
        }
        Ok(Artifacts {
            spec,
            target,
            compiled,
            encode,
            merge,
            functions,
            files,
            warnings: scratch.warnings,
        })
    }

    /// Fills `call`'s arguments from `inputs` (by role) and its weights.
    pub fn args(
        call: &Call,
        function: &str,
        inputs: &HashMap<String, Tensor>,
    ) -> Result<Vec<Tensor>, ServerError> {
        call.args
            .iter()
            .map(|a| match a {
                Slot::Weight(t) => Ok(t.clone()),
                Slot::Input(r) => inputs.get(r).cloned().ok_or_else(|| {
                    ServerError::Execution(format!(
                        "`{}.{function}`: no input `{r}` (the server's calls are out of step with the spec)",
                        call.module
                    ))
                }),
            })
            .collect()
    }
}
