//! The `tokens:` section: a token-level run of a language model (prefill, then
//! greedy or teacher-forced decode steps) and the per-step stage chains that
//! localise a divergent step. Parsed in `tokens_parse`; the executor is
//! `parity::tokens`. Documented in docs/stages-schema.md ("tokens").

use crate::model::{Arg, Case, Location, Spec, Stage};
use crate::template::{render, TemplateError};
use parity_compare::Criterion;
use parity_tensor::DType;
use std::collections::BTreeMap;

/// Variables every step case defines besides the token case's own: `pos`
/// (the step's first position) and `step` (two digits, `00`..).
pub const STEP_VARS: [&str; 2] = ["pos", "step"];

/// A validated `tokens:` section.
#[derive(Clone, Debug, PartialEq)]
pub struct TokensSpec {
    /// Module (in `subject.modules`) holding `prefill` and `decode`.
    pub module: String,
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

/// One call (`prefill` or `decode`): function, arguments, named outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenCall {
    /// Function in the module (template over the token case).
    pub function: String,
    /// Arguments in call order.
    pub args: Vec<TokenArg>,
    /// Names of the results in order.
    pub outputs: Vec<String>,
    /// Where the call's `function` is.
    pub location: Location,
    /// Where each argument is.
    pub arg_locations: Vec<Location>,
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

impl Spec {
    /// A spec that runs the step-stage chain of `case` at `step` as ordinary
    /// stages: the same subject, weights and oracle, one case (the step case)
    /// and the prefill (step 0) or decode chain as its stages. `None` when the
    /// spec has no `tokens:` section, the case is not a token case, the chain
    /// is empty, or the prompt length does not render.
    pub fn step_spec(&self, case: &str, step: usize) -> Option<Spec> {
        let tokens = self.tokens.as_ref()?;
        let case = tokens.case(case)?;
        let p = tokens.prompt_len(case).ok()?;
        let stages = if step == 0 {
            &tokens.prefill_stages
        } else {
            &tokens.decode_stages
        };
        if stages.is_empty() {
            return None;
        }
        let mut spec = self.clone();
        spec.cases = vec![TokensSpec::step_case(
            case,
            step,
            TokensSpec::position(p, step),
        )];
        spec.stages = stages.clone();
        spec.tokens = None;
        // Only the modules the chain calls (all when a module name is templated),
        // so localising a step compiles nothing else.
        if !stages.iter().any(|s| s.module.contains('{')) {
            spec.subject
                .modules
                .retain(|name, _| stages.iter().any(|s| &s.module == name));
        }
        Some(spec)
    }
}
