//! Calling the spec's `prefill` and `decode` on the IREE runtime: arguments
//! gathered from the oracle store, weights, literals, the step's token and
//! position and the previous step's state, checked against the compiled
//! function's signature before IREE sees them.

use super::error::{LogitsProblem, TokensError};
use crate::run::inputs::InputSources;
use crate::run::ModuleSet;
use parity_spec::{Arg, Case, Location, Spec, TokenArg, TokenCall, TokensSpec};
use parity_tensor::Tensor;
use std::collections::HashMap;

/// The outputs of one call, by name.
pub type Outputs = HashMap<String, Tensor>;

/// What a call needs besides its own arguments.
pub struct Session<'a> {
    /// The spec (positions in messages).
    pub spec: &'a Spec,
    /// The `tokens:` section.
    pub tokens: &'a TokensSpec,
    /// Oracle store and weights.
    pub sources: &'a InputSources,
    /// The loaded modules.
    pub modules: &'a ModuleSet,
    /// The arguments of every `bind:` call, bound by name.
    pub bound: &'a super::bind::BoundCalls,
}

/// The step-dependent inputs of a decode call.
pub struct StepInputs<'a> {
    /// The token fed to this step.
    pub token: i64,
    /// The step's position.
    pub position: usize,
    /// The previous step's outputs (the state).
    pub state: &'a Outputs,
}

impl Session<'_> {
    fn at(&self, loc: Location) -> String {
        format!("{}:{}:{}", self.spec.path.display(), loc.line, loc.col)
    }

    /// The arguments of `call` for `case` as written (`args:`) or as bound
    /// (`bind:`); None when a `bind:` call's function did not render or bind.
    pub fn spec_args<'c>(
        &'c self,
        which: &str,
        call: &'c TokenCall,
        case: &Case,
    ) -> Option<&'c [TokenArg]> {
        if call.bind.is_none() {
            return Some(&call.args);
        }
        let function = TokensSpec::render(&call.function, case).ok()?;
        self.bound
            .get(&(which.to_string(), function))
            .map(|(a, _)| a.as_slice())
    }

    /// Calls `call` for `case`, one step of it; `step` is None for prefill.
    pub fn call(
        &self,
        which: &str,
        call: &TokenCall,
        case: &Case,
        step: Option<&StepInputs<'_>>,
    ) -> Result<Outputs, TokensError> {
        self.call_perturbed(which, call, case, step, None)
    }

    /// [`Session::call`] with every floating-point argument (oracle inputs,
    /// weights, literals, the state) moved by `perturb.0` ULPs of its dtype,
    /// up or down as a generator seeded with `perturb.1` draws
    /// ([`super::noise::perturb`]); None calls with the arguments as they are.
    pub fn call_perturbed(
        &self,
        which: &str,
        call: &TokenCall,
        case: &Case,
        step: Option<&StepInputs<'_>>,
        perturb: Option<(u32, u64)>,
    ) -> Result<Outputs, TokensError> {
        let (function, args) = self.arguments(which, call, case, step)?;
        let mut rng = perturb.map_or(1, |p| p.1);
        let tensors: Vec<Tensor> = args
            .into_iter()
            .map(|t| match perturb {
                Some((ulps, _)) => super::noise::perturb(&t, ulps, &mut rng),
                None => t,
            })
            .collect();
        self.invoke(which, call, &function, &tensors)
    }

    /// [`Session::call`] that also returns the arguments it passed, in call
    /// order (the step chain's trust check feeds them to the chain).
    pub fn call_keeping_args(
        &self,
        which: &str,
        call: &TokenCall,
        case: &Case,
        step: Option<&StepInputs<'_>>,
    ) -> Result<(Vec<Tensor>, Outputs), TokensError> {
        let (function, args) = self.arguments(which, call, case, step)?;
        let outputs = self.invoke(which, call, &function, &args)?;
        Ok((args, outputs))
    }

    /// The rendered function name and its arguments for one call, gathered
    /// and checked against the compiled signature.
    fn arguments(
        &self,
        which: &str,
        call: &TokenCall,
        case: &Case,
        step: Option<&StepInputs<'_>>,
    ) -> Result<(String, Vec<Tensor>), TokensError> {
        let function =
            TokensSpec::render(&call.function, case).map_err(|problem| TokensError::Call {
                at: self.at(call.location),
                which: which.to_string(),
                arg: None,
                problem,
            })?;
        let (spec_args, spec_locations) = match &call.bind {
            Some(_) => self
                .bound
                .get(&(which.to_string(), function.clone()))
                .map(|(a, l)| (a.as_slice(), l.as_slice()))
                .ok_or_else(|| TokensError::Call {
                    at: self.at(call.location),
                    which: which.to_string(),
                    arg: None,
                    problem: format!("the arguments of `{function}` were not bound"),
                })?,
            None => (call.args.as_slice(), call.arg_locations.as_slice()),
        };
        let mut args = Vec::with_capacity(spec_args.len());
        for (i, arg) in spec_args.iter().enumerate() {
            let loc = spec_locations.get(i).copied().unwrap_or(call.location);
            let fail = |problem: String| TokensError::Call {
                at: self.at(loc),
                which: which.to_string(),
                arg: Some(i),
                problem,
            };
            let scalar = |dtype, shape: &Vec<usize>, v: f64| {
                Tensor::from_f64_as(dtype, shape.clone(), &[v]).map_err(|e| fail(e.to_string()))
            };
            let tensor = match (arg, step) {
                (TokenArg::Input(Arg::Oracle(name)), _) => {
                    let name = TokensSpec::render(name, case).map_err(fail)?;
                    self.sources
                        .oracle(&name)
                        .map_err(|e| fail(e.to_string()))?
                }
                (TokenArg::Input(Arg::Weight(name)), _) => {
                    let name = TokensSpec::render(name, case).map_err(fail)?;
                    self.sources
                        .weight(&name)
                        .map_err(|e| fail(e.to_string()))?
                }
                (
                    TokenArg::Input(Arg::Literal {
                        dtype,
                        shape,
                        values,
                    }),
                    _,
                ) => Tensor::from_f64_as(*dtype, shape.clone(), values)
                    .map_err(|e| fail(e.to_string()))?,
                (TokenArg::Input(Arg::Stage { .. }), _) => {
                    return Err(fail("`stage:` arguments are not allowed here".into()))
                }
                (TokenArg::Token { dtype, shape }, Some(s)) => {
                    scalar(*dtype, shape, s.token as f64)?
                }
                (TokenArg::Position { dtype, shape }, Some(s)) => {
                    scalar(*dtype, shape, s.position as f64)?
                }
                (TokenArg::State(name), Some(s)) => s
                    .state
                    .get(name)
                    .cloned()
                    .ok_or_else(|| fail(format!("the previous step has no output `{name}`")))?,
                (_, None) => return Err(fail("decode inputs in a prefill call".into())),
            };
            args.push((tensor, loc));
        }
        self.check_signature(which, call, &function, &args)?;
        Ok((function, args.into_iter().map(|(t, _)| t).collect()))
    }

    /// Invokes the compiled function and names its results by the spec's outputs.
    fn invoke(
        &self,
        which: &str,
        call: &TokenCall,
        function: &str,
        tensors: &[Tensor],
    ) -> Result<Outputs, TokensError> {
        let results = self
            .modules
            .invoke(&call.module, function, tensors)
            .map_err(|source| TokensError::Invoke {
                at: self.at(call.location),
                which: which.to_string(),
                module: call.module.clone(),
                function: function.to_string(),
                source: Box::new(source),
            })?;
        if results.len() != call.outputs.len() {
            return Err(TokensError::Call {
                at: self.at(call.location),
                which: which.to_string(),
                arg: None,
                problem: format!(
                    "`{function}` returned {} results but the spec lists {} outputs",
                    results.len(),
                    call.outputs.len()
                ),
            });
        }
        Ok(call.outputs.iter().cloned().zip(results).collect())
    }

    /// Checks arguments and result count against the compiled signature.
    fn check_signature(
        &self,
        which: &str,
        call: &TokenCall,
        function: &str,
        args: &[(Tensor, Location)],
    ) -> Result<(), TokensError> {
        let Some(sig) = self.modules.signature(&call.module, function) else {
            return Ok(());
        };
        let name = format!("{}.{function}", call.module);
        if sig.args.len() != args.len() || sig.results.len() != call.outputs.len() {
            return Err(TokensError::Call {
                at: self.at(call.location),
                which: which.to_string(),
                arg: None,
                problem: format!(
                    "`{name}` takes {} arguments and returns {} results, but the spec passes {} and lists {} outputs",
                    sig.args.len(),
                    sig.results.len(),
                    args.len(),
                    call.outputs.len()
                ),
            });
        }
        for (i, (ty, (arg, loc))) in sig.args.iter().zip(args).enumerate() {
            if let Some(why) = ty.mismatch(arg.dtype(), arg.shape()) {
                return Err(TokensError::Call {
                    at: self.at(*loc),
                    which: which.to_string(),
                    arg: None,
                    problem: format!("argument {i} of `{name}`: {why}"),
                });
            }
        }
        Ok(())
    }

    /// The logits output of `outputs` as f64, checked: one row of `vocab`
    /// finite values (`[V]` or `[1, V]`).
    pub fn logits(
        &self,
        outputs: &Outputs,
        what: &str,
        vocab: usize,
    ) -> Result<Vec<f64>, TokensError> {
        let name = &self.tokens.logits;
        let t = outputs.get(name).ok_or_else(|| TokensError::Logits {
            what: what.to_string(),
            problem: LogitsProblem::Missing {
                output: name.clone(),
            },
        })?;
        let v = t.to_f64_vec();
        if v.len() != vocab || !t.dtype().is_float() {
            return Err(TokensError::Logits {
                what: what.to_string(),
                problem: LogitsProblem::Shape {
                    output: name.clone(),
                    dtype: t.dtype(),
                    shape: t.shape().to_vec(),
                    vocab,
                },
            });
        }
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(TokensError::Logits {
                what: what.to_string(),
                problem: LogitsProblem::NonFinite {
                    output: name.clone(),
                    value: v[i],
                    token: i,
                },
            });
        }
        Ok(v)
    }
}
