//! `slice: {function, from, to}` stages: what they parse into, how they are
//! instantiated, and every error with its position.

mod common;

use common::{assert_err, Fixture, HEADER};
use parity_spec::{Location, SliceSpec, SpecErrorKind};

/// HEADER + `stages:` + the given stage lines (the first stage starts on line 7).
fn with_stages(stages: &str) -> String {
    format!("{HEADER}stages:\n{stages}")
}

const TWO_CASES: &str = "cases:
  - {name: full128, vars: {bucket: 128, layer: 0}}
  - {name: short8, vars: {bucket: 8, layer: 1}}
";

#[test]
fn a_slice_stage_parses_and_instantiates_per_case() {
    let fx = Fixture::new();
    let text = format!(
        "{HEADER}{TWO_CASES}stages:
  - name: attention
    module: audio
    slice:
      function: \"audio_encode_b{{bucket}}\"
      from: [\"conformer_{{layer}}/feed_forward_start\", \"%arg1\"]
      to: [\"conformer_{{layer}}/attention\", conformer_0_attention_rel_shift]
    args: [{{oracle: x}}, {{oracle: m}}, {{weight: w}}]
    outputs: [{{name: o, oracle: \"{{case}}/o\"}}, {{name: r, oracle: r}}]
  - {{name: plain, module: audio, function: f, args: [{{stage: attention.o}}], outputs: [{{name: p, oracle: p}}]}}
"
    );
    let spec = fx.parse(&text).unwrap();
    let stage = spec.stage("attention").unwrap();
    assert_eq!(
        stage.slice,
        Some(SliceSpec {
            function: "audio_encode_b{bucket}".into(),
            from: vec![
                "conformer_{layer}/feed_forward_start".into(),
                "%arg1".into()
            ],
            to: vec![
                "conformer_{layer}/attention".into(),
                "conformer_0_attention_rel_shift".into()
            ],
        })
    );
    assert_eq!(stage.locations.function, Location { line: 13, col: 17 });
    assert_eq!(
        stage.locations.slice_from,
        vec![
            Location { line: 14, col: 14 },
            Location { line: 14, col: 54 }
        ]
    );
    assert_eq!(stage.locations.slice_to.len(), 2);
    assert_eq!(spec.stage("plain").unwrap().slice, None);
    assert_eq!(spec.topo_order(), vec![0, 1]);

    let short = spec.instantiate(spec.case("short8").unwrap()).unwrap();
    let slice = short[0].slice.as_ref().unwrap();
    assert_eq!(slice.function, "audio_encode_b8");
    assert_eq!(
        slice.from,
        vec!["conformer_1/feed_forward_start".to_string(), "%arg1".into()]
    );
    assert_eq!(slice.to[0], "conformer_1/attention");
    assert_eq!(short[0].module, "audio");
    assert_eq!(short[0].function, "attention__audio_encode_b8");
    assert_eq!(short[1].function, "f");
}

#[test]
fn from_may_be_empty_or_absent() {
    let fx = Fixture::new();
    for from in ["from: [], ", ""] {
        let text = with_stages(&format!(
            "  - {{name: a, module: audio, slice: {{function: f, {from}to: [\"%3\"]}}, args: [{{oracle: x}}], outputs: [{{name: o, oracle: x}}]}}\n"
        ));
        let spec = fx.parse(&text).unwrap();
        let slice = spec.stages[0].slice.as_ref().unwrap();
        assert!(slice.from.is_empty());
        assert_eq!(slice.to, vec!["%3".to_string()]);
    }
}

#[test]
fn entry_names_are_sanitised() {
    assert_eq!(SliceSpec::entry_name("attn", "enc_b128"), "attn__enc_b128");
    assert_eq!(
        SliceSpec::entry_name("conv-0", "main.enc$1"),
        "conv_0__main_enc_1"
    );
    assert_eq!(SliceSpec::entry_name("é", "f"), "___f");
}

#[test]
fn function_and_slice_are_exclusive() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, slice: {function: g, to: [\"%1\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        50,
        &[
            "stage `a`",
            "exactly one of `function`",
            "`slice`",
            "not both",
        ],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        5,
        &["stage `a`", "missing required key `function`", "`slice`"],
    );
}

#[test]
fn slice_keys_are_closed_and_typed() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - name: a\n    module: audio\n    slice:\n      function: f\n      form: [\"%1\"]\n      to: [\"%2\"]\n    outputs: [{name: o, oracle: x}]\n",
    ));
    assert_err(
        &msg,
        11,
        7,
        &["stage `a`", "unknown key `form`", "in slice", "from, to"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {to: [\"%2\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        37,
        &["stage `a`", "missing required key `function` in slice"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        37,
        &["stage `a`", "missing required key `to` in slice"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, from: \"%1\", to: [\"%2\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 57, &["stage `a`", "`from` must be a list"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: f, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 37, &["stage `a`", "`slice` must be a mapping"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, to: [\"\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 56, &["stage `a`", "`to` must not be empty"]);
}

#[test]
fn empty_to_and_arity_mismatches() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, to: []}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 55, &["stage `a`", "slice `to` is empty"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, to: [\"%1\", \"%2\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        79,
        &["stage `a`", "1 outputs", "returns 2 `to` points"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, from: [\"%1\", \"%2\"], to: [\"%3\"]}, args: [{oracle: x}], outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        90,
        &["stage `a`", "has 1 arguments", "2 `from` points"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, from: [\"%1\"], to: [\"%3\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 5, &["stage `a`", "has 0 arguments"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, from: [\"%1\", \"%1\"], to: [\"%3\"]}, args: [{oracle: x}, {oracle: y}], outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        64,
        &["stage `a`", "`from` point `%1` is listed twice"],
    );
}

#[test]
fn points_are_templates() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, slice: {function: f, to: [\"conformer_{0/attention\"]}, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(&msg, 7, 56, &["stage `a`", "bad template", "not closed"]);

    let text = format!(
        "{HEADER}{TWO_CASES}stages:\n  - {{name: a, module: audio, slice: {{function: f, from: [x, \"conformer_{{layr}}/ffw\"], to: [\"%2\"]}}, args: [{{oracle: x}}, {{oracle: y}}], outputs: [{{name: o, oracle: x}}]}}\n"
    );
    let err = fx.parse(&text).unwrap_err();
    assert!(
        matches!(err.kind(), SpecErrorKind::UnknownVariable { var, .. } if var == "layr"),
        "{err}"
    );
    assert_err(
        &err.to_string(),
        10,
        61,
        &["stage `a`", "unknown variable `layr`", "case `full128`"],
    );

    let text = format!(
        "{HEADER}{TWO_CASES}stages:\n  - {{name: a, module: audio, slice: {{function: \"f_{{bukcet}}\", to: [\"%2\"]}}, outputs: [{{name: o, oracle: x}}]}}\n"
    );
    assert_err(&fx.err(&text), 10, 48, &["unknown variable `bukcet`"]);
}
