//! Calling the production entry point: the fixed arguments (weights) are
//! read once, the generated ones are validated by the guard, checked against
//! the compiled signature, and only then passed to IREE.

use super::case::{Batch, Inputs, MelSources};
use super::error::FuzzError;
use super::validate::validate;
use crate::run::inputs::InputSources;
use crate::run::ModuleSet;
use parity_spec::{Arg, FuzzArg, FuzzSpec, Spec};
use parity_tensor::Tensor;

/// One loaded session: the module, the fixed arguments, the mel sources.
pub struct Exec<'a> {
    /// The spec's `fuzz:` section.
    pub fuzz: &'a FuzzSpec,
    /// The loaded modules (one IREE runtime: every call of a run shares it).
    pub modules: &'a ModuleSet,
    /// Fixed arguments by position (None for generated ones).
    fixed: Vec<Option<Tensor>>,
    /// Real mel clips.
    pub sources: MelSources,
    /// Entry point calls made.
    pub calls: std::cell::Cell<usize>,
}

impl<'a> Exec<'a> {
    /// Reads the fixed arguments and the mel sources.
    pub fn new(
        spec: &'a Spec,
        fuzz: &'a FuzzSpec,
        inputs: &InputSources,
        modules: &'a ModuleSet,
    ) -> Result<Exec<'a>, FuzzError> {
        let at = format!(
            "{}:{}:{}",
            spec.path.display(),
            fuzz.location.line,
            fuzz.location.col
        );
        let mut fixed = Vec::with_capacity(fuzz.args.len());
        for (i, a) in fuzz.args.iter().enumerate() {
            let t: Option<Result<Tensor, String>> = match a {
                FuzzArg::Fixed(Arg::Weight(n)) => Some(inputs.weight(n).map_err(|e| e.to_string())),
                FuzzArg::Fixed(Arg::Oracle(n)) => Some(inputs.oracle(n).map_err(|e| e.to_string())),
                FuzzArg::Fixed(Arg::Literal {
                    dtype,
                    shape,
                    values,
                }) => Some(
                    Tensor::from_f64_as(*dtype, shape.clone(), values).map_err(|e| e.to_string()),
                ),
                FuzzArg::Fixed(Arg::Stage { .. }) => Some(Err("`stage:` is not allowed".into())),
                _ => None,
            };
            fixed.push(match t {
                Some(r) => {
                    Some(r.map_err(|e| FuzzError::Input(format!("{at}: fuzz argument {i}: {e}")))?)
                }
                None => None,
            });
        }
        let features = fuzz.mel.features;
        let mut clips = Vec::new();
        for name in &fuzz.mel.sources {
            let t = inputs
                .oracle(name)
                .map_err(|e| FuzzError::Input(format!("{at}: fuzz.mel.sources: {e}")))?;
            let &[b, frames, f] = t.shape() else {
                return Err(FuzzError::Input(format!(
                    "{at}: fuzz.mel.sources: `{name}` has shape {:?}, not [clips, frames, {features}]",
                    t.shape()
                )));
            };
            if f != features || !t.dtype().is_float() {
                return Err(FuzzError::Input(format!(
                    "{at}: fuzz.mel.sources: `{name}` is {} {:?}, not float [clips, frames, {features}]",
                    t.dtype(),
                    t.shape()
                )));
            }
            let all = t.to_f64_vec();
            for c in 0..b {
                let v = &all[c * frames * f..(c + 1) * frames * f];
                if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                    return Err(FuzzError::Input(format!(
                        "{at}: fuzz.mel.sources: `{name}` clip {c} frame {} is not finite",
                        i / f
                    )));
                }
                clips.push((
                    format!("{name}[{c}]"),
                    v.iter().map(|&x| x as f32).collect(),
                ));
            }
        }
        Ok(Exec {
            fuzz,
            modules,
            fixed,
            sources: MelSources { clips, features },
            calls: std::cell::Cell::new(0),
        })
    }

    /// Runs a generated batch.
    pub fn run(&self, batch: &Batch) -> Result<Vec<Tensor>, FuzzError> {
        let inputs = batch
            .inputs(self.fuzz, &self.sources)
            .map_err(FuzzError::Input)?;
        self.call(&inputs)
    }

    /// Validates `inputs` (the guard) and calls the entry point of their shape.
    pub fn call(&self, inputs: &Inputs) -> Result<Vec<Tensor>, FuzzError> {
        let (shape, _) = validate(
            self.fuzz,
            &inputs.mel,
            &inputs.mask,
            inputs.lengths.as_ref(),
        )
        .map_err(|m| FuzzError::Malformed(m.to_string()))?;
        let function = self.fuzz.function_for(shape);
        let mut args = Vec::with_capacity(self.fixed.len());
        for (a, f) in self.fuzz.args.iter().zip(&self.fixed) {
            args.push(match (a, f) {
                (FuzzArg::Mel, _) => inputs.mel.clone(),
                (FuzzArg::Mask, _) => inputs.mask.clone(),
                (FuzzArg::Lengths, _) => match &inputs.lengths {
                    Some(l) => l.clone(),
                    None => return Err(FuzzError::Malformed("lengths: missing".into())),
                },
                (_, Some(t)) => t.clone(),
                (_, None) => return Err(FuzzError::Input("fixed argument not loaded".into())),
            });
        }
        if let Some(sig) = self.modules.signature(&self.fuzz.module, &function) {
            for (i, (t, ty)) in args.iter().zip(&sig.args).enumerate() {
                if let Some(m) = ty.mismatch(t.dtype(), t.shape()) {
                    return Err(FuzzError::Input(format!("`{function}` argument {i}: {m}")));
                }
            }
        }
        self.calls.set(self.calls.get() + 1);
        let out = self
            .modules
            .invoke(&self.fuzz.module, &function, &args)
            .map_err(|(kind, m)| {
                let m = format!("`{}.{function}`: {m}", self.fuzz.module);
                match kind {
                    parity_record::ErrorKind::Input => FuzzError::Input(m),
                    parity_record::ErrorKind::Execution => FuzzError::Execution(m),
                }
            })?;
        if out.len() != self.fuzz.outputs.len() {
            return Err(FuzzError::Input(format!(
                "`{function}` returned {} results; `fuzz.outputs` names {}",
                out.len(),
                self.fuzz.outputs.len()
            )));
        }
        Ok(out)
    }
}
