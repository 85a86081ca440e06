//! What every slot shares: the spec's calls (which functions, which weights
//! in which order), the compiled modules (through parity's artifact cache,
//! exactly as `parity check` and `parity tokens` compile them) and the
//! weights. IREE runtimes are per thread, so only bytes and tensors live here.

use crate::error::ServerError;
use parity::run::RunOptions;
use parity::run::{compile_all, load_compiler, Compiled};
use parity_record::RunRecord;
use parity_spec::{Arg, Spec, TokenArg, TokenCall};
use parity_tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;

/// One argument of a call the server makes.
#[derive(Clone, Debug)]
pub enum Slot {
    /// A request input or an earlier call's output, by role (`mel`, `tokens`, `k_cache`, ...).
    Input(String),
    /// A weight tensor.
    Weight(Tensor),
    /// A scalar the decode loop supplies (`token` or `position`), of this dtype and shape.
    Scalar {
        /// `token` or `position`.
        role: &'static str,
        /// Element type.
        dtype: parity_tensor::DType,
        /// Shape (one element).
        shape: Vec<usize>,
    },
}

/// A function of a module and how to fill its arguments.
#[derive(Clone, Debug)]
pub struct Call {
    /// Module name in the spec.
    pub module: String,
    /// Function template (`audio_encode_c{clips}_b{bucket}`, `prefill_p{P}`).
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
    /// Every module's vmfb.
    pub compiled: Compiled,
    /// audio_encode: mel, mask, weights -> projected_audio, hard_audio, projected_lengths.
    pub encode: Call,
    /// audio_merge_ple: tokens, audio_rows, projected, hard, weights -> embeddings, dense_ple.
    pub merge: Call,
    /// prefill: embeddings, dense_ple, weights -> logits, caches.
    pub prefill: Call,
    /// decode: token, position, caches, weights -> logits, caches.
    pub decode: Call,
    /// Name of the logits output.
    pub logits: String,
    /// Compiler warnings (cache problems), already printed.
    pub warnings: Vec<String>,
}

fn weight(
    spec: &Spec,
    files: &[parity_tensor::SafetensorsFile],
    name: &str,
) -> Result<Tensor, ServerError> {
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

/// A `tokens:` call: `token`, `position` and `state:` become inputs of those roles.
fn token_call(
    spec: &Spec,
    module: &str,
    files: &[parity_tensor::SafetensorsFile],
    call: &TokenCall,
) -> Result<Call, ServerError> {
    let args = call
        .args
        .iter()
        .map(|a| match a {
            TokenArg::Input(Arg::Oracle(n)) => Ok(Slot::Input(role(n))),
            TokenArg::Input(Arg::Weight(w)) => weight(spec, files, w).map(Slot::Weight),
            TokenArg::Token { dtype, shape } => Ok(Slot::Scalar {
                role: "token",
                dtype: *dtype,
                shape: shape.clone(),
            }),
            TokenArg::Position { dtype, shape } => Ok(Slot::Scalar {
                role: "position",
                dtype: *dtype,
                shape: shape.clone(),
            }),
            TokenArg::State(s) => Ok(Slot::Input(s.clone())),
            TokenArg::Input(_) => Err(ServerError::Setup(format!(
                "{}: tokens.{}: only oracle, weight, token, position and state arguments are supported by the server",
                spec.path.display(),
                call.function
            ))),
        })
        .collect::<Result<_, _>>()?;
    Ok(Call {
        module: module.to_string(),
        function: call.function.clone(),
        args,
        outputs: call.outputs.clone(),
    })
}

impl Artifacts {
    /// Reads the spec, compiles its audio and token modules through the
    /// artifact cache in `cache_dir` and opens the weights.
    pub fn prepare(spec_path: &Path, cache_dir: &Path) -> Result<Artifacts, ServerError> {
        let spec = Spec::load(spec_path)
            .map_err(|e| ServerError::Setup(format!("{}: {e}", spec_path.display())))?;
        let tokens = spec.tokens.clone().ok_or_else(|| {
            ServerError::Setup(format!(
                "{}: the spec has no `tokens:` section (prefill and decode)",
                spec.path.display()
            ))
        })?;
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
        let prefill = token_call(&spec, &tokens.module, &files, &tokens.prefill)?;
        let decode = token_call(&spec, &tokens.module, &files, &tokens.decode)?;
        let mut only = spec.clone();
        let used = [&encode.module, &merge.module, &tokens.module];
        only.subject.modules.retain(|name, _| used.contains(&name));
        let options = RunOptions {
            cache_dir: cache_dir.to_path_buf(),
            ..RunOptions::default()
        };
        let mut scratch = RunRecord::new("", "", String::new());
        let compiler = load_compiler(&options, true, &mut scratch);
        let compiled = compile_all(&only, &options, &compiler, &mut scratch);
        if let Some(e) = scratch.errors.first() {
            return Err(ServerError::Setup(e.message.clone()));
        }
        Ok(Artifacts {
            spec,
            compiled,
            encode,
            merge,
            prefill,
            decode,
            logits: tokens.logits.clone(),
            warnings: scratch.warnings,
        })
    }

    /// Fills `call`'s arguments from `inputs` (by role), `scalars` and its weights.
    pub fn args(
        call: &Call,
        function: &str,
        inputs: &HashMap<String, Tensor>,
        scalars: &[(&str, f64)],
    ) -> Result<Vec<Tensor>, ServerError> {
        call.args
            .iter()
            .map(|a| match a {
                Slot::Weight(t) => Ok(t.clone()),
                Slot::Scalar { role, dtype, shape } => {
                    let v = scalars
                        .iter()
                        .find(|(r, _)| r == role)
                        .map(|(_, v)| *v)
                        .ok_or_else(|| {
                            ServerError::Execution(format!(
                                "`{}.{function}`: no `{role}` for this call",
                                call.module
                            ))
                        })?;
                    Tensor::from_f64_as(*dtype, shape.clone(), &[v])
                        .map_err(|e| ServerError::Execution(format!("`{function}`: {role}: {e}")))
                }
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
