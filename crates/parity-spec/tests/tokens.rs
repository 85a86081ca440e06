//! The `tokens:` section: a valid section parses into the model, and every
//! mistake is an error naming stages.yaml:line:col and the part of the section.

mod common;

use common::{assert_err, Fixture, HEADER};
use parity_spec::{Arg, DType, TokenArg, TokensSpec};

/// HEADER (5 lines) + `tokens:` at line 6; `decode_args` replaces decode's args.
fn tokens(decode_args: &str, extra: &str) -> String {
    format!(
        "{HEADER}tokens:
  module: audio
  max_new_tokens: 4
  prompt_length: \"{{P}}\"
  cases: [{{name: a, vars: {{P: 3}}}}]
  prefill: {{function: \"prefill_p{{P}}\", args: [{{oracle: \"{{case}}/emb\"}}], outputs: [logits, k]}}
  decode:
    function: decode
    args: {decode_args}
    outputs: [logits, k]
{extra}"
    )
}

const GOOD_ARGS: &str = "[{token: {}}, {position: {dtype: i64}}, {state: k}, {weight: w}]";

#[test]
fn a_token_only_spec_parses_with_defaults() {
    let fx = Fixture::new();
    let spec = fx
        .parse(&tokens(
            GOOD_ARGS,
            "  step_stages:
    decode:
      - {name: l0, module: audio, function: \"decode_layer_{pos}\", args: [{oracle: \"{case}/h\"}], outputs: [{name: h, oracle: \"{case}/out_{step}\"}]}
      - {name: l1, module: audio, function: f, args: [{stage: l0}], outputs: [{name: h, oracle: \"{case}/o1\"}]}
",
        ))
        .expect("valid");
    assert!(spec.stages.is_empty());
    let t = spec.tokens.as_ref().expect("tokens section");
    assert_eq!(t.max_new_tokens, 4);
    assert_eq!(t.logits, "logits");
    assert_eq!(t.oracle.tokens, "{case}/tokens");
    assert_eq!(t.oracle.logits, "{case}/logits");
    assert!(!t.verdict.exact_tokens);
    assert_eq!(t.verdict.top_k, 5);
    assert_eq!(
        t.decode.args,
        vec![
            TokenArg::Token {
                dtype: DType::I32,
                shape: vec![1, 1]
            },
            TokenArg::Position {
                dtype: DType::I64,
                shape: vec![]
            },
            TokenArg::State("k".into()),
            TokenArg::Input(Arg::Weight("w".into())),
        ]
    );
    assert_eq!(t.prompt_len(&t.cases[0]), Ok(3));
    assert_eq!(TokensSpec::position(3, 0), 0);
    assert_eq!(TokensSpec::position(3, 5), 7);
    // The decode chain for step 5 of case `a`: case `a.s05`, pos 7.
    let step = spec.step_spec("a", 5).expect("a decode chain");
    assert_eq!(step.cases[0].name, "a.s05");
    let stages = step.instantiate(&step.cases[0]).expect("instantiates");
    assert_eq!(stages[0].function, "decode_layer_7");
    assert_eq!(stages[0].outputs[0].oracle, "a.s05/out_05");
    assert!(spec.step_spec("a", 0).is_none(), "no prefill chain given");
    assert!(spec.step_spec("zz", 1).is_none());
}

#[test]
fn mistakes_name_line_column_and_part() {
    let fx = Fixture::new();
    // decode args are on line 14, column 11.
    let msg = fx.err(&tokens("[{token: {}}, {state: kk}]", ""));
    assert_err(
        &msg,
        14,
        25,
        &["tokens.decode", "state `kk`", "outputs: logits, k"],
    );
    let msg = fx.err(&tokens("[{state: k}]", ""));
    assert_err(&msg, 13, 5, &["tokens.decode", "exactly one `token`"]);
    let msg = fx.err(&tokens("[{token: {shape: [2]}}]", ""));
    assert_err(&msg, 14, 20, &["tokens.decode", "exactly one element"]);
    let msg = fx.err(&tokens("[{token: {}}, {stage: x}]", ""));
    assert_err(&msg, 14, 25, &["`stage:` arguments belong to stages"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  logits: lgt\n"));
    assert_err(&msg, 16, 11, &["tokens:", "logits output `lgt`"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  verdict: {top_k: 1}\n"));
    assert_err(&msg, 16, 20, &["`top_k` must be in 2..=100"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  verdict: {exact: true}\n"));
    assert_err(&msg, 16, 13, &["unknown key `exact`", "exact_tokens"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  colour: red\n"));
    assert_err(&msg, 16, 3, &["unknown key `colour`", "step_stages"]);
    // A step stage using a variable no step case defines.
    let msg = fx.err(&tokens(
        GOOD_ARGS,
        "  step_stages:\n    decode:\n      - {name: l0, module: audio, function: \"f_{Q}\", outputs: [{name: h, oracle: x}]}\n",
    ));
    assert_err(&msg, 18, 45, &["stage `l0`", "`Q`", "a.s01", "pos", "step"]);
    // `pos` is reserved in a token case.
    let text = tokens(GOOD_ARGS, "").replace("vars: {P: 3}", "vars: {P: 3, pos: 1}");
    assert_err(&fx.err(&text), 10, 10, &["`pos` is reserved"]);
    // A prompt length that is not a number.
    let text = tokens(GOOD_ARGS, "").replace("vars: {P: 3}", "vars: {P: x}");
    assert_err(
        &fx.err(&text),
        9,
        18,
        &["`prompt_length` of case `a` is `x`"],
    );
    // An undeclared module.
    let text = tokens(GOOD_ARGS, "").replace("module: audio", "module: lm");
    assert_err(
        &fx.err(&text),
        7,
        11,
        &["module `lm` is not declared", "the module of `prefill`"],
    );
    // Without tokens, stages stay required.
    let msg = fx.err(HEADER);
    assert!(msg.contains("`stages`"), "{msg}");
}

/// Issue 28: `prompt_length: "30"` on a 24-position model was accepted and
/// decoded garbage. With `context_length`, prompt_length + max_new_tokens - 1
/// must fit; the error names the spec position, the case and the limit.
#[test]
fn a_prompt_past_the_context_is_refused_at_the_spec() {
    let fx = Fixture::new();
    let with = |p: &str, context: &str| {
        tokens(GOOD_ARGS, &format!("  context_length: {context}\n"))
            .replace("vars: {P: 3}", &format!("vars: {{P: {p}}}"))
    };
    // The case: 30 prompt tokens, 24 positions.
    assert_err(
        &fx.err(&with("30", "24")),
        9,
        18,
        &[
            "case `a` is 30",
            "past context_length 24",
            "at most 21 prompt tokens fit",
        ],
    );
    // max_new_tokens 4 from P = 3: decode positions 3, 4, 5; 5 does not fit in 5 positions.
    assert_err(
        &fx.err(&with("3", "5")),
        9,
        18,
        &[
            "position 5, past context_length 5",
            "at most 2 prompt tokens",
        ],
    );
    assert!(fx.parse(&with("3", "6")).is_ok());
    assert_err(
        &fx.err(&with("0", "24")),
        9,
        18,
        &["case `a` is 0", "at least one prompt token"],
    );
    assert_err(
        &fx.err(&with("3", "0")),
        16,
        19,
        &["`context_length` must be at least 1"],
    );
    // Without context_length, a zero prompt is still refused.
    let text = tokens(GOOD_ARGS, "").replace("vars: {P: 3}", "vars: {P: 0}");
    assert_err(&fx.err(&text), 9, 18, &["at least one prompt token"]);
}

#[test]
fn a_logits_tolerance_parses_and_its_mistakes_are_named() {
    let fx = Fixture::new();
    let spec = fx
        .parse(&tokens(
            GOOD_ARGS,
            "  logits:\n    output: logits\n    tolerance: [{max_abs: 3.0e-4}, {rms: 1.0e-4}, {max_abs: 2.0e-4}]\n    max_kl: 1.0e-9\n    max_abs_delta_p: 1.0e-5\n  verdict: {perturbation_ulps: 2}\n",
        ))
        .expect("valid");
    let t = spec.tokens.as_ref().unwrap();
    assert_eq!(t.logits, "logits");
    let tol = t.logits_tolerance.as_ref().expect("a tolerance");
    assert_eq!(tol.criteria.len(), 3);
    assert_eq!(
        tol.max_abs(),
        Some(2.0e-4),
        "the tightest max_abs is the noise"
    );
    assert_eq!(
        (tol.max_kl, tol.max_abs_delta_p),
        (Some(1.0e-9), Some(1.0e-5))
    );
    assert_eq!(t.verdict.perturbation_ulps, 2);
    // The name alone still works, with no tolerance and the default perturbation.
    let spec = fx.parse(&tokens(GOOD_ARGS, "  logits: logits\n")).unwrap();
    let t = spec.tokens.as_ref().unwrap();
    assert!(t.logits_tolerance.is_none());
    assert_eq!(t.verdict.perturbation_ulps, 4);
    // Mistakes: an empty mapping, a bad criterion, a negative bound, vs_f64 without a truth.
    let msg = fx.err(&tokens(GOOD_ARGS, "  logits: {output: logits}\n"));
    assert_err(&msg, 16, 11, &["tokens.logits", "needs a `tolerance`"]);
    let msg = fx.err(&tokens(
        GOOD_ARGS,
        "  logits: {tolerance: [{max_abz: 1}]}\n",
    ));
    assert_err(&msg, 16, 24, &["invalid tolerance criterion", "max_abz"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  logits: {max_kl: -1}\n"));
    assert_err(&msg, 16, 20, &["`max_kl` must be finite and >= 0"]);
    let msg = fx.err(&tokens(
        GOOD_ARGS,
        "  logits: {tolerance: [{vs_f64: {factor: 2}}]}\n",
    ));
    assert_err(&msg, 16, 11, &["`vs_f64`", "no `truth_logits`"]);
    let msg = fx.err(&tokens(GOOD_ARGS, "  verdict: {perturbation_ulps: 0}\n"));
    assert_err(&msg, 16, 32, &["`perturbation_ulps` must be in 1..=1024"]);
}

/// HEADER with a second module, `lm`, and a `tokens:` section at line 7
/// whose calls are `prefill` and `decode` as given (each at 2-space indent).
fn two_modules(top: &str, prefill: &str, decode: &str) -> String {
    format!(
        "{}    lm: {{mlir: subject/audio.mlir}}
oracle: dumps
tokens:
{top}  max_new_tokens: 4
  prompt_length: \"3\"
  cases: [{{name: a}}]
  prefill: {prefill}
  decode:
{decode}",
        HEADER.trim_end_matches("oracle: dumps\n")
    )
}

const BOUND_DECODE: &str = "    module: lm
    function: decode
    bind:
      - {arg: token, token: {}}
      - {arg: 1, position: {dtype: i64}}
      - {arg: k_cache, state: k}
      - {match: \"params\\\\['(.*)'\\\\]\", weight: \"$1\"}
      - {arg: bias, literal: {dtype: f32, shape: [], values: [0]}}
    outputs: [logits, k]
";

/// Issue 27: prefill and decode each from its own module (JAX lowers each
/// function to its own), `tokens.module` only the default; `bind:` on the
/// calls with the decode inputs as explicit `arg:` rules.
#[test]
fn calls_name_their_modules_and_bind_by_name() {
    let fx = Fixture::new();
    let text = two_modules(
        "",
        "{module: audio, function: prefill, bind: [{match: \".*\", oracle: \"{case}/$0\"}], outputs: [logits, k]}",
        BOUND_DECODE,
    );
    let spec = fx.parse(&text).expect("valid");
    let t = spec.tokens.as_ref().unwrap();
    assert_eq!(t.module, None);
    assert_eq!(
        (t.prefill.module.as_str(), t.decode.module.as_str()),
        ("audio", "lm")
    );
    assert_eq!(t.decode.module_location.line, 13);
    assert!(t.decode.args.is_empty(), "bound at run time");
    let bind = t.decode.bind.as_ref().expect("bind");
    assert_eq!(bind.rules.len(), 2);
    let inputs: Vec<_> = t
        .decode
        .decode_inputs()
        .into_iter()
        .map(|(a, l)| (a.clone(), l.line))
        .collect();
    assert_eq!(
        inputs,
        vec![
            (
                TokenArg::Token {
                    dtype: DType::I32,
                    shape: vec![1, 1]
                },
                16
            ),
            (
                TokenArg::Position {
                    dtype: DType::I64,
                    shape: vec![]
                },
                17
            ),
            (TokenArg::State("k".into()), 18),
        ]
    );
    // Bound against decode's MLIR argument names: the order is the function's.
    let names: Vec<Option<String>> = [
        "params['w1']",
        "pos",
        "bias",
        "k_cache",
        "token",
        "params['w0']",
    ]
    .iter()
    .map(|n| Some(n.to_string()))
    .collect();
    let (args, locs) = t
        .decode
        .bind_args(&spec.path, "decode", "decode", &names)
        .expect("binds");
    assert_eq!(
        args,
        vec![
            TokenArg::Input(Arg::Weight("w1".into())),
            TokenArg::Position {
                dtype: DType::I64,
                shape: vec![]
            },
            TokenArg::Input(Arg::Literal {
                dtype: DType::F32,
                shape: vec![],
                values: vec![0.0]
            }),
            TokenArg::State("k".into()),
            TokenArg::Token {
                dtype: DType::I32,
                shape: vec![1, 1]
            },
            TokenArg::Input(Arg::Weight("w0".into())),
        ]
    );
    assert_eq!(
        locs.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![19, 17, 20, 18, 16, 19]
    );
    // A name the function lacks names the rule that wrote it.
    let swapped: Vec<Option<String>> = ["token", "pos", "bias", "params['w']"]
        .iter()
        .map(|n| Some(n.to_string()))
        .collect();
    let e = t
        .decode
        .bind_args(&spec.path, "decode", "decode", &swapped)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("stages.yaml:18:9")
            && e.contains("`arg: k_cache` names no argument")
            && e.contains("tokens.decode"),
        "{e}"
    );
    // tokens.module is the default of a call that names none.
    let text = two_modules(
        "  module: lm\n",
        "{function: prefill, args: [], outputs: [logits, k]}",
        BOUND_DECODE,
    );
    let spec = fx.parse(&text).expect("valid");
    let t = spec.tokens.as_ref().unwrap();
    assert_eq!(
        (t.module.as_deref(), t.prefill.module.as_str()),
        (Some("lm"), "lm")
    );
    assert_eq!(t.prefill.module_location.line, 8);
}

#[test]
fn call_module_and_bind_mistakes_are_named() {
    let fx = Fixture::new();
    let prefill = "{function: prefill, args: [], outputs: [logits, k]}";
    // No module anywhere.
    let msg = fx.err(&two_modules("", prefill, BOUND_DECODE));
    assert_err(
        &msg,
        11,
        12,
        &["tokens.prefill", "names no `module`", "tokens.module"],
    );
    // An undeclared module on one call.
    let msg = fx.err(&two_modules(
        "",
        "{module: dec, function: p, outputs: [logits, k]}",
        BOUND_DECODE,
    ));
    assert_err(
        &msg,
        11,
        21,
        &[
            "module `dec` is not declared",
            "the module of `prefill`",
            "audio, lm",
        ],
    );
    let with = |decode: &str| two_modules("  module: lm\n", prefill, decode);
    // args and bind together.
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("    bind:", "    args: [{token: {}}]\n    bind:"),
    ));
    assert_err(&msg, 16, 11, &["`args` (in call order) or `bind`"]);
    // A decode input by pattern, or without `arg:`.
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("{arg: token, token: {}}", "{match: tok, token: {}}"),
    ));
    assert_err(&msg, 17, 10, &["unknown key `match`", "arg, token"]);
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("{arg: token, token: {}}", "{token: {}}"),
    ));
    assert_err(
        &msg,
        17,
        9,
        &["bind rule 0", "names its argument with `arg:`"],
    );
    // Two tokens, the same argument twice, a state prefill does not output, a stage source.
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("{arg: 1, position: {dtype: i64}}", "{arg: 1, token: {}}"),
    ));
    assert_err(&msg, 14, 5, &["exactly one `token`", "has 2 and 0"]);
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("{arg: 1, position", "{arg: token, position"),
    ));
    assert_err(
        &msg,
        18,
        9,
        &["bind rule 1 names the same argument as the rule at line 17"],
    );
    let msg = fx.err(&with(&BOUND_DECODE.replace("state: k}", "state: v}")));
    assert_err(
        &msg,
        19,
        9,
        &["tokens.decode", "state `v` is not an output of `prefill`"],
    );
    let msg = fx.err(&with(
        &BOUND_DECODE.replace("literal: {dtype: f32, shape: [], values: [0]}", "stage: x"),
    ));
    assert_err(&msg, 21, 9, &["`stage:` arguments belong to stages"]);
    // prefill binds no decode input.
    let msg = fx.err(&two_modules(
        "  module: lm\n",
        "{function: p, bind: [{arg: 0, token: {}}], outputs: [logits, k]}",
        BOUND_DECODE,
    ));
    assert_err(&msg, 12, 12, &["`prefill` takes no `token`"]);
}
