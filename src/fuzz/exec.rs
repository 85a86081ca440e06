//! Calling the production entry point: the fixed arguments (weights) are
//! read once, the generated ones are validated by the guard, checked against
//! the compiled signature, and only then passed to IREE.

use super::case::{Batch, Inputs, MelSources};
use super::error::FuzzError;
use super::validate::{validate, Malformed};
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
    /// Each case's reference outputs, kept for a several-target run to
    /// compare between targets (None: not kept).
    pub kept: std::cell::RefCell<Option<Vec<super::targets::Kept>>>,
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
        for (index, a) in fuzz.args.iter().enumerate() {
            let from_input = |source| FuzzError::FixedArg {
                at: at.clone(),
                index,
                source: Box::new(source),
            };
            fixed.push(match a {
                FuzzArg::Fixed(Arg::Weight(n)) => Some(inputs.weight(n).map_err(from_input)?),
                FuzzArg::Fixed(Arg::Oracle(n)) => Some(inputs.oracle(n).map_err(from_input)?),
                FuzzArg::Fixed(Arg::Literal {
                    dtype,
                    shape,
                    values,
                }) => Some(Tensor::from_f64_as(*dtype, shape.clone(), values).map_err(
                    |source| FuzzError::Literal {
                        at: at.clone(),
                        index,
                        source,
                    },
                )?),
                FuzzArg::Fixed(Arg::Stage { .. }) => {
                    return Err(FuzzError::StageArg {
                        at: at.clone(),
                        index,
                    })
                }
                _ => None,
            });
        }
        let features = fuzz.mel.features;
        let mut clips = Vec::new();
        for name in &fuzz.mel.sources {
            let t = inputs.oracle(name).map_err(|source| FuzzError::MelSource {
                at: at.clone(),
                source: Box::new(source),
            })?;
            let bad = |problem: String| FuzzError::MelSourceShape {
                at: at.clone(),
                tensor: name.clone(),
                problem,
            };
            let &[b, frames, f] = t.shape() else {
                return Err(bad(format!(
                    "has shape {:?}, not [clips, frames, {features}]",
                    t.shape()
                )));
            };
            if f != features || !t.dtype().is_float() {
                return Err(bad(format!(
                    "is {} {:?}, not float [clips, frames, {features}]",
                    t.dtype(),
                    t.shape()
                )));
            }
            let all = t.to_f64_vec();
            for c in 0..b {
                let v = &all[c * frames * f..(c + 1) * frames * f];
                if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                    return Err(bad(format!("clip {c} frame {} is not finite", i / f)));
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
            kept: std::cell::RefCell::new(None),
        })
    }

    /// Runs a generated batch.
    pub fn run(&self, batch: &Batch) -> Result<Vec<Tensor>, FuzzError> {
        let inputs = batch.inputs(self.fuzz, &self.sources)?;
        self.call(&inputs)
    }

    /// Validates `inputs` (the guard) and calls the entry point of their shape.
    pub fn call(&self, inputs: &Inputs) -> Result<Vec<Tensor>, FuzzError> {
        let (shape, _) = validate(
            self.fuzz,
            &inputs.mel,
            &inputs.mask,
            inputs.lengths.as_ref(),
        )?;
        let function = self.fuzz.function_for(shape);
        let mut args = Vec::with_capacity(self.fixed.len());
        for (a, f) in self.fuzz.args.iter().zip(&self.fixed) {
            args.push(match (a, f) {
                (FuzzArg::Mel, _) => inputs.mel.clone(),
                (FuzzArg::Mask, _) => inputs.mask.clone(),
                (FuzzArg::Lengths, _) => match &inputs.lengths {
                    Some(l) => l.clone(),
                    None => {
                        return Err(FuzzError::Malformed(Malformed::Layout {
                            input: "lengths",
                            message: "missing".into(),
                        }))
                    }
                },
                (_, Some(t)) => t.clone(),
                // Exec::new loads every fixed argument or fails.
                (_, None) => {
                    return Err(FuzzError::Unsupported {
                        invariant: "call",
                        problem: "a fixed argument was not loaded",
                    })
                }
            });
        }
        if let Some(sig) = self.modules.signature(&self.fuzz.module, &function) {
            for (i, (t, ty)) in args.iter().zip(&sig.args).enumerate() {
                if let Some(m) = ty.mismatch(t.dtype(), t.shape()) {
                    return Err(FuzzError::Signature {
                        function: function.clone(),
                        index: i,
                        problem: m,
                    });
                }
            }
        }
        self.calls.set(self.calls.get() + 1);
        let out = self
            .modules
            .invoke(&self.fuzz.module, &function, &args)
            .map_err(|source| FuzzError::Invoke {
                module: self.fuzz.module.clone(),
                function: function.clone(),
                source: Box::new(source),
            })?;
        if out.len() != self.fuzz.outputs.len() {
            return Err(FuzzError::Outputs {
                function,
                got: out.len(),
                want: self.fuzz.outputs.len(),
            });
        }
        Ok(out)
    }
}
