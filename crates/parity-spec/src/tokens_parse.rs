//! Reading and validating the `tokens:` section (model in `tokens`).

use crate::arg_parse::{dtype, location, parse_arg, template_string};
use crate::bind::{BindRule, BindTarget};
use crate::case_parse::parse_cases;
use crate::error::{Scope, SpecError};
use crate::model::{Arg, Location, Spec, Stage};
use crate::reader::Cx;
use crate::stage::parse_stage;
use crate::tokens::{
    LogitsTolerance, TokenArg, TokenBind, TokenBindInput, TokenCall, TokenOracle, TokenVerdictSpec,
    TokensSpec, STEP_VARS,
};
use crate::yaml::Node;
use parity_tensor::DType;

const TOKENS_KEYS: &[&str] = &[
    "module",
    "cases",
    "max_new_tokens",
    "prompt_length",
    "context_length",
    "prefill",
    "decode",
    "logits",
    "oracle",
    "verdict",
    "step_stages",
];
const CALL_KEYS: &[&str] = &["module", "function", "args", "bind", "outputs"];
const ORACLE_KEYS: &[&str] = &["tokens", "logits", "truth_logits"];
const VERDICT_KEYS: &[&str] = &[
    "exact_tokens",
    "top_k",
    "noise_floor",
    "ulp_dtype",
    "perturbation_ulps",
];
const LOGITS_KEYS: &[&str] = &["output", "tolerance", "max_kl", "max_abs_delta_p"];
const STEP_KEYS: &[&str] = &["prefill", "decode"];
const SCALAR_KEYS: &[&str] = &["dtype", "shape"];

/// Reads the `tokens:` mapping. Cross-checks that need the whole spec (the
/// module is declared, templates render for every case, the step chains
/// resolve) are in [`validate`].
pub(crate) fn parse_tokens(
    top: &Cx<'_>,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<TokensSpec, SpecError> {
    let cx = top.with(Scope::Tokens("tokens".into()));
    let m = cx.map(node, "tokens", "tokens", TOKENS_KEYS)?;
    let module = match m.opt("module") {
        Some(n) => Some((cx.name(n, "module")?, location(n))),
        None => None,
    };
    let cases_node = m.req(&cx, "cases")?;
    let cases = parse_cases(&cx, cases_node)?;
    for case in &cases {
        if let Some(v) = STEP_VARS.iter().find(|v| case.vars.contains_key(**v)) {
            return Err(cx.invalid(
                cases_node,
                format!(
                    "case `{}`: variable `{v}` is reserved in a token case (every step case defines `pos` and `step`)",
                    case.name
                ),
            ));
        }
    }
    let n_node = m.req(&cx, "max_new_tokens")?;
    let max_new_tokens = cx.usize(n_node, "max_new_tokens")?;
    if max_new_tokens == 0 {
        return Err(cx.invalid(n_node, "`max_new_tokens` must be at least 1".into()));
    }
    let p_node = m.req(&cx, "prompt_length")?;
    let prompt_length = template_string(&cx, "tokens", p_node, "prompt_length")?;
    let context_length = match m.opt("context_length") {
        Some(n) => {
            let c = cx.usize(n, "context_length")?;
            if c == 0 {
                return Err(cx.invalid(n, "`context_length` must be at least 1".into()));
            }
            Some(c)
        }
        None => None,
    };
    let prefill = parse_call(
        top,
        m.req(&cx, "prefill")?,
        "prefill",
        &module,
        literal_budget,
    )?;
    let decode = parse_call(
        top,
        m.req(&cx, "decode")?,
        "decode",
        &module,
        literal_budget,
    )?;
    let (logits, logits_tolerance) = match m.opt("logits") {
        Some(n) if matches!(n.value, crate::yaml::Value::Map(_)) => parse_logits(&cx, n)?,
        Some(n) => (cx.name(n, "logits")?, None),
        None => ("logits".to_string(), None),
    };
    for call in [("prefill", &prefill), ("decode", &decode)] {
        if !call.1.outputs.contains(&logits) {
            let at = m.opt("logits").unwrap_or(m.node);
            return Err(cx.invalid(
                at,
                format!(
                    "logits output `{logits}` is not an output of `{}` (its outputs: {})",
                    call.0,
                    call.1.outputs.join(", ")
                ),
            ));
        }
    }
    let oracle = match m.opt("oracle") {
        Some(o) => parse_oracle(&cx, o)?,
        None => TokenOracle {
            tokens: "{case}/tokens".into(),
            logits: "{case}/logits".into(),
            truth_logits: None,
        },
    };
    if let Some(t) = &logits_tolerance {
        if oracle.truth_logits.is_none()
            && t.criteria
                .iter()
                .any(|c| matches!(c, parity_compare::Criterion::VsF64 { .. }))
        {
            return Err(cx.invalid(
                m.opt("logits").unwrap_or(m.node),
                "`tokens.logits` has a `vs_f64` criterion but `tokens.oracle` names no `truth_logits`".into(),
            ));
        }
    }
    let verdict = match m.opt("verdict") {
        Some(v) => parse_verdict(&cx, v)?,
        None => TokenVerdictSpec {
            exact_tokens: false,
            top_k: 5,
            noise_floor: 0.0,
            ulp_dtype: None,
            perturbation_ulps: DEFAULT_PERTURBATION_ULPS,
        },
    };
    let (mut prefill_stages, mut decode_stages) = (Vec::new(), Vec::new());
    if let Some(s) = m.opt("step_stages") {
        let sm = cx.map(s, "step_stages", "tokens.step_stages", STEP_KEYS)?;
        for (key, out) in [
            ("prefill", &mut prefill_stages),
            ("decode", &mut decode_stages),
        ] {
            if let Some(list) = sm.opt(key) {
                *out = cx
                    .list(list, key)?
                    .iter()
                    .map(|n| parse_stage(top, n, literal_budget))
                    .collect::<Result<Vec<Stage>, _>>()?;
                crate::graph::resolve(top.file, out)?;
            }
        }
    }
    Ok(TokensSpec {
        module: module.map(|m| m.0),
        cases,
        max_new_tokens,
        prompt_length,
        prompt_length_location: location(p_node),
        context_length,
        prefill,
        decode,
        logits,
        logits_tolerance,
        oracle,
        verdict,
        prefill_stages,
        decode_stages,
        location: location(node),
    })
}

fn parse_call(
    top: &Cx<'_>,
    node: &Node,
    which: &str,
    default_module: &Option<(String, Location)>,
    literal_budget: &mut usize,
) -> Result<TokenCall, SpecError> {
    let cx = top.with(Scope::Tokens(which.into()));
    let m = cx.map(node, which, which, CALL_KEYS)?;
    let (module, module_location) = match (m.opt("module"), default_module) {
        (Some(n), _) => (cx.name(n, "module")?, location(n)),
        (None, Some((name, at))) => (name.clone(), *at),
        (None, None) => {
            return Err(cx.invalid(
                node,
                format!("`{which}` names no `module` and `tokens.module` (the default of both calls) is not given"),
            ))
        }
    };
    let f = m.req(&cx, "function")?;
    let function = template_string(&cx, which, f, "function")?;
    let mut args = Vec::new();
    let mut arg_locations = Vec::new();
    if let Some(list) = m.opt("args") {
        for (i, a) in cx.list(list, "args")?.iter().enumerate() {
            arg_locations.push(location(a));
            args.push(parse_token_arg(&cx, which, i, a, literal_budget)?);
        }
    }
    let bind = match (m.opt("bind"), m.opt("args")) {
        (Some(_), Some(a)) => {
            return Err(cx.invalid(
                a,
                format!(
                "`{which}` has `args` (in call order) or `bind` (by MLIR argument name), not both"
            ),
            ))
        }
        (Some(b), None) => Some(parse_token_bind(&cx, which, b, literal_budget)?),
        (None, _) => None,
    };
    let outputs_node = m.req(&cx, "outputs")?;
    let outputs = cx.strings(outputs_node, "outputs")?;
    if outputs.is_empty() {
        return Err(cx.invalid(outputs_node, format!("`{which}.outputs` is empty")));
    }
    for (i, o) in outputs.iter().enumerate() {
        if outputs[..i].contains(o) {
            return Err(cx.invalid(outputs_node, format!("output `{o}` is listed twice")));
        }
    }
    let call = TokenCall {
        module,
        module_location,
        function,
        args,
        bind,
        outputs,
        location: location(f),
        arg_locations,
    };
    let inputs = call.decode_inputs();
    let count = |f: fn(&TokenArg) -> bool| inputs.iter().filter(|a| f(a.0)).count();
    let tokens = count(|a| matches!(a, TokenArg::Token { .. }));
    let positions = count(|a| matches!(a, TokenArg::Position { .. }));
    let states = count(|a| matches!(a, TokenArg::State(_)));
    if which == "prefill" && tokens + positions + states > 0 {
        return Err(cx.invalid(
            node,
            "`prefill` takes no `token`, `position` or `state` argument (they are decode inputs)"
                .into(),
        ));
    }
    if which == "decode" && (tokens != 1 || positions > 1) {
        return Err(cx.invalid(
            node,
            format!("`decode` needs exactly one `token` argument and at most one `position` argument (has {tokens} and {positions})"),
        ));
    }
    Ok(call)
}

/// A token call's `bind:` list: `{arg: NAME|INDEX, token|position|state: ...}`
/// rules for the decode inputs, and a stage's `bind:` rules for the rest.
fn parse_token_bind(
    cx: &Cx<'_>,
    which: &str,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<TokenBind, SpecError> {
    let mut inputs: Vec<TokenBindInput> = Vec::new();
    let mut rules: Vec<BindRule> = Vec::new();
    let mut explicit: Vec<(BindTarget, usize)> = Vec::new();
    for (i, item) in cx.list(node, "bind")?.iter().enumerate() {
        let (target, at) = if let Some(key) = INPUT_KEYS.into_iter().find(|k| has_key(item, k)) {
            let m = cx.map(item, "bind rule", "bind rule", &["arg", key])?;
            let Some(a) = m.opt("arg") else {
                return Err(cx.invalid(
                    item,
                    format!("bind rule {i}: a `{key}` rule names its argument with `arg:` (an MLIR name or an index); a decode input is never bound by a pattern"),
                ));
            };
            let target = match a.as_i128() {
                Some(_) => BindTarget::Index(cx.usize(a, "arg")?),
                None => BindTarget::Name(cx.name(a, "arg")?),
            };
            let arg = input_arg(cx, key, m.req(cx, key)?)?;
            inputs.push(TokenBindInput {
                target: target.clone(),
                arg,
                location: location(item),
            });
            (target, item)
        } else {
            let rule = crate::bind_parse::parse_rule(cx, which, i, item, literal_budget)?;
            if matches!(rule.source, Arg::Stage { .. }) {
                return Err(cx.invalid(
                    item,
                    format!("bind rule {i}: `stage:` arguments belong to stages; a token call binds `oracle`, `weight`, `literal`, `token`, `position` or `state`"),
                ));
            }
            let target = rule.target.clone();
            rules.push(rule);
            (target, item)
        };
        if !matches!(target, BindTarget::Pattern(_)) {
            if let Some((_, line)) = explicit.iter().find(|(t, _)| *t == target) {
                return Err(cx.invalid(
                    at,
                    format!("bind rule {i} names the same argument as the rule at line {line}"),
                ));
            }
            explicit.push((target, at.mark.line));
        }
    }
    if inputs.is_empty() && rules.is_empty() {
        return Err(cx.invalid(node, "`bind` is empty; list at least one rule".into()));
    }
    Ok(TokenBind {
        inputs,
        rules,
        location: location(node),
    })
}

/// The keys of a decode input, in an `args:` item or a `bind:` rule.
const INPUT_KEYS: [&str; 3] = ["token", "position", "state"];

fn parse_token_arg(
    cx: &Cx<'_>,
    which: &str,
    index: usize,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<TokenArg, SpecError> {
    let key = INPUT_KEYS.into_iter().find(|k| has_key(node, k));
    let Some(key) = key else {
        return match parse_arg(cx, which, index, node, literal_budget)? {
            Arg::Stage { .. } => Err(cx.invalid(
                node,
                format!("argument {index}: `stage:` arguments belong to stages; a token call takes `oracle`, `weight`, `literal`, `token`, `position` or `state`"),
            )),
            arg => Ok(TokenArg::Input(arg)),
        };
    };
    let m = cx.map(
        node,
        "argument",
        "token argument",
        &["token", "position", "state"],
    )?;
    if m.entries().count() != 1 {
        return Err(cx.invalid(node, format!("argument {index} must have exactly one key")));
    }
    input_arg(cx, key, m.req(cx, key)?)
}

/// The value of a `token:`, `position:` or `state:` key.
fn input_arg(cx: &Cx<'_>, key: &str, value: &Node) -> Result<TokenArg, SpecError> {
    if key == "state" {
        return Ok(TokenArg::State(cx.name(value, "state")?));
    }
    let sm = cx.map(value, key, key, SCALAR_KEYS)?;
    let dt = match sm.opt("dtype") {
        Some(d) => dtype(cx, d, "dtype")?,
        None => DType::I32,
    };
    if !matches!(dt, DType::I32 | DType::I64) {
        return Err(cx.invalid(value, format!("`{key}` dtype must be i32 or i64, not {dt}")));
    }
    let shape: Vec<usize> = match sm.opt("shape") {
        Some(s) => cx
            .list(s, "shape")?
            .iter()
            .map(|d| cx.usize(d, "shape"))
            .collect::<Result<_, _>>()?,
        None if key == "token" => vec![1, 1],
        None => Vec::new(),
    };
    if shape.iter().product::<usize>() != 1 {
        return Err(cx.invalid(
            value,
            format!("`{key}` shape {shape:?} must hold exactly one element"),
        ));
    }
    Ok(if key == "token" {
        TokenArg::Token { dtype: dt, shape }
    } else {
        TokenArg::Position { dtype: dt, shape }
    })
}

/// Whether mapping `node` has `key` (with any value, `{}` included).
fn has_key(node: &Node, key: &str) -> bool {
    match &node.value {
        crate::yaml::Value::Map(pairs) => pairs.iter().any(|(k, _)| k.scalar() == Some(key)),
        _ => false,
    }
}

fn parse_oracle(cx: &Cx<'_>, node: &Node) -> Result<TokenOracle, SpecError> {
    let m = cx.map(node, "oracle", "tokens.oracle", ORACLE_KEYS)?;
    let get = |key: &str, default: &str| -> Result<String, SpecError> {
        match m.opt(key) {
            Some(n) => template_string(cx, "tokens", n, key),
            None => Ok(default.to_string()),
        }
    };
    Ok(TokenOracle {
        tokens: get("tokens", "{case}/tokens")?,
        logits: get("logits", "{case}/logits")?,
        truth_logits: match m.opt("truth_logits") {
            Some(n) => Some(template_string(cx, "tokens", n, "truth_logits")?),
            None => None,
        },
    })
}

/// The perturbation's default size: a few ULPs.
const DEFAULT_PERTURBATION_ULPS: u32 = 4;

/// `logits: {output, tolerance, max_kl, max_abs_delta_p}`: the output's name
/// (default `logits`) and the tolerance every step's logits are gated by.
fn parse_logits(cx: &Cx<'_>, node: &Node) -> Result<(String, Option<LogitsTolerance>), SpecError> {
    let m = cx.map(node, "logits", "tokens.logits", LOGITS_KEYS)?;
    let output = match m.opt("output") {
        Some(n) => cx.name(n, "output")?,
        None => "logits".to_string(),
    };
    let criteria = match m.opt("tolerance") {
        Some(n) => crate::tolerance::tolerance(cx, n, "tolerance")?,
        None => Vec::new(),
    };
    let bound = |key: &str| -> Result<Option<f64>, SpecError> {
        match m.opt(key) {
            None => Ok(None),
            Some(n) => {
                let x = cx.f64(n, key)?;
                if !x.is_finite() || x < 0.0 {
                    return Err(cx.invalid(n, format!("`{key}` must be finite and >= 0, not {x}")));
                }
                Ok(Some(x))
            }
        }
    };
    let max_kl = bound("max_kl")?;
    let max_abs_delta_p = bound("max_abs_delta_p")?;
    if criteria.is_empty() && max_kl.is_none() && max_abs_delta_p.is_none() {
        return Err(cx.invalid(
            node,
            "`tokens.logits` as a mapping needs a `tolerance`, `max_kl` or `max_abs_delta_p` (or write the output's name alone: `logits: NAME`)".into(),
        ));
    }
    Ok((
        output,
        Some(LogitsTolerance {
            criteria,
            max_kl,
            max_abs_delta_p,
            location: location(node),
        }),
    ))
}

fn parse_verdict(cx: &Cx<'_>, node: &Node) -> Result<TokenVerdictSpec, SpecError> {
    let m = cx.map(node, "verdict", "tokens.verdict", VERDICT_KEYS)?;
    let top_k = match m.opt("top_k") {
        Some(n) => {
            let k = cx.usize(n, "top_k")?;
            if !(2..=100).contains(&k) {
                return Err(cx.invalid(n, format!("`top_k` must be in 2..=100, not {k}")));
            }
            k
        }
        None => 5,
    };
    let noise_floor = match m.opt("noise_floor") {
        Some(n) => {
            let x = cx.f64(n, "noise_floor")?;
            if !x.is_finite() || x < 0.0 {
                return Err(
                    cx.invalid(n, format!("`noise_floor` must be finite and >= 0, not {x}"))
                );
            }
            x
        }
        None => 0.0,
    };
    let ulp_dtype = match m.opt("ulp_dtype") {
        Some(n) => {
            let d = dtype(cx, n, "ulp_dtype")?;
            if !d.is_float() {
                return Err(cx.invalid(n, format!("`ulp_dtype` must be a float dtype, not {d}")));
            }
            Some(d)
        }
        None => None,
    };
    let perturbation_ulps = match m.opt("perturbation_ulps") {
        Some(n) => {
            let k = cx.usize(n, "perturbation_ulps")?;
            if !(1..=1024).contains(&k) {
                return Err(cx.invalid(
                    n,
                    format!("`perturbation_ulps` must be in 1..=1024, not {k}"),
                ));
            }
            k as u32
        }
        None => DEFAULT_PERTURBATION_ULPS,
    };
    Ok(TokenVerdictSpec {
        perturbation_ulps,
        exact_tokens: match m.opt("exact_tokens") {
            Some(n) => cx.bool(n, "exact_tokens")?,
            None => false,
        },
        top_k,
        noise_floor,
        ulp_dtype,
    })
}

/// Whole-spec checks of the `tokens:` section: the module is declared, the
/// decode's `state` arguments name outputs of both calls, every template
/// renders for every token case, and each step chain instantiates for its
/// step cases (so unknown variables fail at load time).
pub(crate) fn validate(spec: &Spec) -> Result<(), SpecError> {
    let Some(t) = &spec.tokens else {
        return Ok(());
    };
    let err = |loc: crate::model::Location, scope: &str, message: String| -> SpecError {
        crate::error::SpecErrorKind::Invalid {
            at: crate::Position {
                file: spec.path.clone(),
                line: loc.line,
                col: loc.col,
                alias: None,
            },
            scope: Scope::Tokens(scope.into()),
            message,
        }
        .into()
    };
    for (which, call) in [("prefill", &t.prefill), ("decode", &t.decode)] {
        if !spec.subject.modules.contains_key(&call.module) {
            let declared: Vec<&str> = spec.subject.modules.keys().map(String::as_str).collect();
            return Err(err(
                call.module_location,
                which,
                format!(
                    "module `{}` is not declared in `subject.modules` (the module of `{which}`; declared: {})",
                    call.module,
                    declared.join(", ")
                ),
            ));
        }
    }
    for (i, (arg, loc)) in t.decode.decode_inputs().into_iter().enumerate() {
        if let TokenArg::State(name) = arg {
            for (which, call) in [("prefill", &t.prefill), ("decode", &t.decode)] {
                if !call.outputs.contains(name) {
                    return Err(err(
                        loc,
                        "decode",
                        format!(
                            "decode input {i}: state `{name}` is not an output of `{which}` (its outputs: {})",
                            call.outputs.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    for case in &t.cases {
        let at = t.prompt_length_location;
        let p = t.prompt_len(case).map_err(|m| err(at, "tokens", m))?;
        if p == 0 {
            return Err(err(
                at,
                "tokens",
                format!(
                    "`prompt_length` of case `{}` is 0: prefill needs at least one prompt token",
                    case.name
                ),
            ));
        }
        // Decode step s >= 1 runs at position P + s - 1, so the last of
        // max_new_tokens steps needs position P + max_new_tokens - 2.
        if let Some(context) = t.context_length {
            let last = p + t.max_new_tokens - 2;
            if last >= context {
                return Err(err(
                    at,
                    "tokens",
                    format!(
                        "`prompt_length` of case `{}` is {p}: with max_new_tokens {} the last \
                         decode step runs at position {last}, past context_length {context} \
                         (positions 0..{}); at most {} prompt tokens fit",
                        case.name,
                        t.max_new_tokens,
                        context - 1,
                        (context + 1).saturating_sub(t.max_new_tokens),
                    ),
                ));
            }
        }
        for (which, call) in [("prefill", &t.prefill), ("decode", &t.decode)] {
            TokensSpec::render(&call.function, case).map_err(|m| err(call.location, which, m))?;
            for (i, arg) in call.args.iter().enumerate() {
                if let TokenArg::Input(Arg::Oracle(n) | Arg::Weight(n)) = arg {
                    TokensSpec::render(n, case).map_err(|m| {
                        err(call.arg_locations[i], which, format!("argument {i}: {m}"))
                    })?;
                }
            }
            for (i, rule) in call.bind.iter().flat_map(|b| b.rules.iter()).enumerate() {
                if let Arg::Oracle(n) | Arg::Weight(n) = &rule.source {
                    TokensSpec::render(n, case)
                        .map_err(|m| err(rule.location, which, format!("bind rule {i}: {m}")))?;
                }
            }
        }
        for text in [&t.oracle.tokens, &t.oracle.logits]
            .into_iter()
            .chain(t.oracle.truth_logits.as_ref())
        {
            TokensSpec::render(text, case).map_err(|m| err(t.location, "oracle", m))?;
        }
        for step in [0, 1] {
            if let Some(step_spec) = spec.step_spec(&case.name, step) {
                step_spec.instantiate(&TokensSpec::step_case(
                    case,
                    step,
                    TokensSpec::position(p, step),
                ))?;
            }
        }
    }
    Ok(())
}
