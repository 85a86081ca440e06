//! The `tokens:` section: a token-level run of a language model (prefill, then
//! greedy or teacher-forced decode steps) and the per-step stage chains that
//! localise a divergent step. Parsed in `tokens_parse`; the executor is
//! `parity::tokens`. Documented in docs/stages-schema.md ("tokens").

use crate::bind::{bind_rules, BindError, BindOwner, BindRule, BindTarget};
use crate::stage_model::{Arg, Case, Location, Stage};
use crate::template::{render, TemplateError};
use parity_compare::Criterion;
use parity_tensor::DType;
use std::collections::BTreeMap;
use std::path::Path;

/// Variables every step case defines besides the token case's own: `pos`
/// (the step's first position) and `step` (two digits, `00`..).
pub const STEP_VARS: [&str; 2] = ["pos", "step"];

/// A validated `tokens:` section.
#[derive(Clone, Debug, PartialEq)]
pub struct TokensSpec {
    /// The default module (in `subject.modules`) of `prefill` and `decode`
    /// (`tokens.module`); a call naming its own `module:` overrides it.
    pub module: Option<String>,
    /// The token cases (their own list: prompts are not the stage cases).
    pub cases: Vec<Case>,
    /// Tokens generated per case: step 0 from prefill, steps 1.. from decode.
    pub max_new_tokens: usize,
    /// Template rendering to the prompt length P (decode step s >= 1 runs at position P + s - 1).
    pub prompt_length: String,
    /// Where `prompt_length` is written (errors about the prompt point here).
    pub prompt_length_location: Location,
    /// Positions the model holds (`context_length`), when the spec says:
    /// prompt_length + max_new_tokens - 1 must fit.
    pub context_length: Option<usize>,
    /// The prefill call (step 0).
    pub prefill: TokenCall,
    /// The decode call (steps >= 1).
    pub decode: TokenCall,
    /// Which output (of both calls) holds the logits, shape [1, vocab] or [vocab].
    pub logits: String,
    /// The logits tolerance (`logits: {output, tolerance, max_kl, max_abs_delta_p}`):
    /// every step's logits are gated by it, and its `max_abs` is the reference
    /// noise of the verdict. None when `logits:` is only the output's name.
    pub logits_tolerance: Option<LogitsTolerance>,
    /// Oracle tensor names (templates over the token case).
    pub oracle: TokenOracle,
    /// How a token mismatch is judged.
    pub verdict: TokenVerdictSpec,
    /// Stages run for a divergent step 0 (`{case}` = `<case>.s00`).
    pub prefill_stages: Vec<Stage>,
    /// Stages run for a divergent step >= 1 (`{case}` = `<case>.s<NN>`).
    pub decode_stages: Vec<Stage>,
    /// Where the section starts.
    pub location: Location,
}

/// One call (`prefill` or `decode`): module, function, arguments, named outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenCall {
    /// Module holding the function: the call's own `module:`, else `tokens.module`.
    pub module: String,
    /// Where the module is named (the call's `module:` or `tokens.module`).
    pub module_location: Location,
    /// Function in the module (template over the token case).
    pub function: String,
    /// Arguments in call order. Empty for a `bind:` call until the runner
    /// binds them by the function's argument names ([`TokenCall::bind_args`]).
    pub args: Vec<TokenArg>,
    /// `bind:` instead of `args:`: arguments bound by their MLIR names.
    pub bind: Option<TokenBind>,
    /// Names of the results in order.
    pub outputs: Vec<String>,
    /// Where the call's `function` is.
    pub location: Location,
    /// Where each argument is.
    pub arg_locations: Vec<Location>,
}

/// A token call's `bind:` list: the decode inputs bound explicitly, every
/// other argument by the rules a stage's `bind:` takes (weights by name).
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBind {
    /// `token:`, `position:` and `state:` rules, each naming its argument
    /// (`arg:` an MLIR name or an index; never a pattern).
    pub inputs: Vec<TokenBindInput>,
    /// The other rules (`oracle`, `weight`, `literal`; `arg:` or `match:`).
    pub rules: Vec<BindRule>,
    /// Where `bind:` is.
    pub location: Location,
}

/// One `token:`/`position:`/`state:` rule of a token call's `bind:`.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBindInput {
    /// The argument it binds (a name or an index).
    pub target: BindTarget,
    /// What it feeds: never [`TokenArg::Input`].
    pub arg: TokenArg,
    /// Where the rule is.
    pub location: Location,
}

impl TokenCall {
    /// The decode inputs (`token`, `position`, `state`) with their spec
    /// positions, from `args:` or from `bind:`.
    pub fn decode_inputs(&self) -> Vec<(&TokenArg, Location)> {
        match &self.bind {
            Some(b) => b.inputs.iter().map(|i| (&i.arg, i.location)).collect(),
            None => self
                .args
                .iter()
                .zip(&self.arg_locations)
                .filter(|(a, _)| !matches!(a, TokenArg::Input(_)))
                .map(|(a, l)| (a, *l))
                .collect(),
        }
    }

    /// The call's arguments in `function`'s order with the spec position of
    /// each, given the function's MLIR argument names: the `args:` list as
    /// written, or the `bind:` rules bound to the names (the decode inputs by
    /// their explicit `arg:`, the rest as a stage's `bind:` binds them).
    /// Unbound, doubly bound or unknown names are errors naming the spec's
    /// `file:line:col` and `tokens.<which>`.
    pub fn bind_args(
        &self,
        spec_path: &Path,
        which: &str,
        function: &str,
        names: &[Option<String>],
    ) -> Result<(Vec<TokenArg>, Vec<Location>), Box<BindError>> {
        let Some(bind) = &self.bind else {
            return Ok((self.args.clone(), self.arg_locations.clone()));
        };
        let owner_name = format!("tokens.{which}");
        let owner = BindOwner {
            spec_path,
            name: &owner_name,
            function,
            location: bind.location,
        };
        let at = |loc: Location| format!("{}:{}:{}", spec_path.display(), loc.line, loc.col);
        let available = || {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| match n {
                    Some(n) => format!("{i}: `{n}`"),
                    None => format!("{i}: no MLIR name"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut preset: Vec<Option<Location>> = vec![None; names.len()];
        let mut inputs: Vec<Option<&TokenArg>> = vec![None; names.len()];
        for input in &bind.inputs {
            let index = match &input.target {
                BindTarget::Index(i) if *i < names.len() => Some(*i),
                BindTarget::Name(n) => names.iter().position(|m| m.as_deref() == Some(n)),
                _ => None,
            };
            let Some(index) = index else {
                let what = match &input.target {
                    BindTarget::Index(i) => format!("`arg: {i}` is past the last argument"),
                    BindTarget::Name(n) => format!("`arg: {n}` names no argument"),
                    BindTarget::Pattern(p) => format!("`match: {}` on a decode input", p.text),
                };
                return Err(Box::new(BindError::NoMatch {
                    at: at(input.location),
                    stage: owner_name.clone(),
                    function: function.to_string(),
                    what,
                    available: available(),
                }));
            };
            if let Some(first) = preset[index] {
                return Err(Box::new(BindError::DoublyBound {
                    at: at(input.location),
                    stage: owner_name.clone(),
                    function: function.to_string(),
                    index,
                    name: names[index]
                        .as_ref()
                        .map_or("no MLIR name".into(), |n| format!("`{n}`")),
                    first_line: first.line,
                }));
            }
            preset[index] = Some(input.location);
            inputs[index] = Some(&input.arg);
        }
        let bound = bind_rules(&owner, &bind.rules, names, None, &preset)?;
        let mut args = Vec::with_capacity(names.len());
        let mut locations = Vec::with_capacity(names.len());
        // bind_rules leaves exactly the preset (decode input) arguments empty.
        for (i, slot) in bound.into_iter().enumerate() {
            let (arg, loc) = match (slot, inputs[i], preset[i]) {
                (Some((arg, loc)), _, _) => (TokenArg::Input(arg), loc),
                (None, Some(arg), Some(loc)) => (arg.clone(), loc),
                (None, _, _) => continue,
            };
            args.push(arg);
            locations.push(loc);
        }
        Ok((args, locations))
    }
}

/// One argument of a token call.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenArg {
    /// An ordinary stage argument (`oracle`, `weight`, `literal`; never `stage`).
    Input(Arg),
    /// The previous step's token (decode only): `{token: {dtype, shape}}`.
    Token {
        /// Integer dtype (default i32).
        dtype: DType,
        /// Shape with one element (default [1, 1]).
        shape: Vec<usize>,
    },
    /// The step's position (decode only): `{position: {dtype, shape}}`.
    Position {
        /// Integer dtype (default i32).
        dtype: DType,
        /// Shape with one element (default [], a scalar).
        shape: Vec<usize>,
    },
    /// The previous step's output of this name (decode only), e.g. a KV cache.
    State(String),
}

/// Oracle tensors of a token case (templates; `{case}` is the token case).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenOracle {
    /// Integer tokens [N] (default `{case}/tokens`).
    pub tokens: String,
    /// Logits [N, vocab] (default `{case}/logits`); row s chose token s.
    pub logits: String,
    /// Optional f64 truth logits [N, vocab], teacher-forced on the oracle's tokens.
    pub truth_logits: Option<String>,
}

/// The tolerance of every step's logits against the oracle's row, set from
/// measurements on a known-good run as stage tolerances are.
#[derive(Clone, Debug, PartialEq)]
pub struct LogitsTolerance {
    /// Stage criteria on the logits row (max_abs, rms, allclose, vs_f64 with
    /// the truth logits, ...): all must hold at every step.
    pub criteria: Vec<Criterion>,
    /// Largest KL(oracle || production) of a step, in nats.
    pub max_kl: Option<f64>,
    /// Largest |Δp| of a step (the oracle token's probability).
    pub max_abs_delta_p: Option<f64>,
    /// Where the mapping is.
    pub location: Location,
}

impl LogitsTolerance {
    /// The tightest `max_abs` criterion: the reference noise it declares.
    pub fn max_abs(&self) -> Option<f64> {
        self.criteria
            .iter()
            .filter_map(|c| match c {
                Criterion::MaxAbs(v) => Some(*v),
                _ => None,
            })
            .reduce(f64::min)
    }
}

/// Verdict options.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenVerdictSpec {
    /// Any token mismatch fails, near ties included (default false).
    pub exact_tokens: bool,
    /// How many top logits to record at the divergent step (default 5).
    pub top_k: usize,
    /// The reference noise is raised to at least this (default 0).
    pub noise_floor: f64,
    /// ULPs (of each argument's own dtype) the perturbation moves every
    /// floating-point argument by, to measure production's sensitivity (default 4).
    pub perturbation_ulps: u32,
    /// Dtype the top-1/top-2 gaps are counted in ULPs of (default: the logits' dtype).
    pub ulp_dtype: Option<DType>,
}

impl TokensSpec {
    /// The token case with this name.
    pub fn case(&self, name: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// The step case of `case` at `step`: named `<case>.s<NN>`, with the
    /// case's variables plus `pos` and `step`.
    pub fn step_case(case: &Case, step: usize, pos: usize) -> Case {
        let mut vars: BTreeMap<String, String> = case.vars.clone();
        vars.insert("pos".into(), pos.to_string());
        vars.insert("step".into(), format!("{step:02}"));
        Case {
            name: format!("{}.s{step:02}", case.name),
            vars,
        }
    }

    /// Renders a template of the token case; an unknown variable or a brace
    /// error is described in the `Err`.
    pub fn render(text: &str, case: &Case) -> Result<String, String> {
        render(text, case).map_err(|e| match e {
            TemplateError::UnknownVariable(v) => {
                let mut defined: Vec<&str> = vec!["case"];
                defined.extend(case.vars.keys().map(String::as_str));
                format!(
                    "`{text}` uses `{{{v}}}`, which case `{}` does not define (defined: {})",
                    case.name,
                    defined.join(", ")
                )
            }
            TemplateError::Syntax(m) => format!("`{text}`: {m}"),
        })
    }

    /// The prompt length of `case` (`prompt_length` rendered and parsed).
    pub fn prompt_len(&self, case: &Case) -> Result<usize, String> {
        let text = Self::render(&self.prompt_length, case)?;
        text.trim().parse::<usize>().map_err(|_| {
            format!(
                "`prompt_length` of case `{}` is `{text}`, not a non-negative integer",
                case.name
            )
        })
    }

    /// The first position of `step` for a prompt of `p` tokens: 0 for step 0
    /// (prefill covers positions 0..P), P + step - 1 for decode steps.
    pub fn position(p: usize, step: usize) -> usize {
        if step == 0 {
            0
        } else {
            p + step - 1
        }
    }
}
