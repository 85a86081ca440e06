//! `bind:` stages: arguments bound by MLIR argument names with explicit rules
//! and patterns; what they parse into, how they bind, and every error with
//! its position.

mod common;

use common::{assert_err, Fixture, HEADER};
use parity_spec::{bind_args, Arg, Location, Spec};

/// HEADER + `stages:` + the given stage lines (the first stage starts on line 7).
fn with_stages(stages: &str) -> String {
    format!("{HEADER}stages:\n{stages}")
}

const TWO_CASES: &str = "cases:
  - {name: full128, vars: {bucket: 128}}
  - {name: short8, vars: {bucket: 8}}
";

/// A JAX-like function's argument names: weights under `params['...']`, then mel and mask.
fn names() -> Vec<Option<String>> {
    vec![
        Some("params['model.audio_tower.conv.weight']".into()),
        Some("audio_tower__subsample__norm__weight".into()),
        Some("mel".into()),
        None,
    ]
}

const BIND_STAGE: &str = "  - name: enc
    module: audio
    function: \"main_b{bucket}\"
    bind:
      - {match: \"params\\\\['(.*)'\\\\]\", weight: \"$1\"}
      - {match: \"audio_tower__(.*)\", weight: \"model.audio_tower.$1\", replace: {\"__\": \".\"}}
      - {arg: mel, oracle: \"{case}/mel\"}
      - {arg: 3, literal: {dtype: i32, value: 7}}
    outputs: [{name: o, oracle: \"{case}/o\", mask: {arg: 3, axes: [0]}}]
";

fn spec(fx: &Fixture) -> Spec {
    fx.parse(&format!("{HEADER}{TWO_CASES}stages:\n{BIND_STAGE}"))
        .unwrap()
}

#[test]
fn a_bind_stage_binds_every_argument_in_function_order() {
    let fx = Fixture::new();
    let spec = spec(&fx);
    let short = spec.instantiate(spec.case("short8").unwrap()).unwrap();
    let (args, locations) = bind_args(&spec.path, &short[0], "main_b8", &names()).unwrap();
    assert_eq!(
        args,
        vec![
            Arg::Weight("model.audio_tower.conv.weight".into()),
            Arg::Weight("model.audio_tower.subsample.norm.weight".into()),
            Arg::Oracle("short8/mel".into()),
            Arg::Literal {
                dtype: parity_spec::DType::I32,
                shape: vec![],
                values: vec![7.0]
            },
        ]
    );
    // Each argument is positioned at the rule that bound it (line 14 = first rule).
    assert_eq!(
        locations.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![14, 15, 16, 17]
    );
    assert_eq!(locations[0], Location { line: 14, col: 9 });
}

#[test]
fn an_explicit_rule_overrides_a_pattern() {
    let fx = Fixture::new();
    let text = with_stages(
        "  - name: enc
    module: audio
    function: main
    bind:
      - {match: \"(.*)\", oracle: \"$1\"}
      - {arg: mel, oracle: other_mel}
    outputs: [{name: o, oracle: o}]
",
    );
    let spec = fx.parse(&text).unwrap();
    let names = vec![Some("a".to_string()), Some("mel".to_string())];
    let (args, _) = bind_args(&spec.path, &spec.stages[0], "main", &names).unwrap();
    assert_eq!(
        args,
        vec![Arg::Oracle("a".into()), Arg::Oracle("other_mel".into())]
    );
}

#[test]
fn unbound_and_doubly_bound_arguments_name_the_stage_argument_and_position() {
    let fx = Fixture::new();
    let text = with_stages(
        "  - name: enc
    module: audio
    function: main
    bind:
      - {match: \"audio_tower__(.*)\", weight: \"$1\"}
      - {match: \"(.*)__weight\", weight: \"$1\"}
      - {arg: mel, oracle: mel}
    outputs: [{name: o, oracle: o}]
",
    );
    let spec = fx.parse(&text).unwrap();
    let stage = &spec.stages[0];
    let doubly = bind_args(&spec.path, stage, "main", &names()[1..3])
        .unwrap_err()
        .to_string();
    assert_err(
        &doubly,
        12,
        9,
        &[
            "stage `enc`",
            "argument 0 (`audio_tower__subsample__norm__weight`)",
            "bound twice",
            "line 11",
        ],
    );
    let two = vec![Some("mel".to_string()), None];
    let unbound = bind_args(&spec.path, stage, "main", &two)
        .unwrap_err()
        .to_string();
    // The patterns match nothing here: the first one reports first.
    assert_err(
        &unbound,
        11,
        9,
        &["`match: audio_tower__(.*)` matches no argument"],
    );
    let three = vec![
        Some("audio_tower__x".to_string()),
        Some("mel".to_string()),
        Some("q__weight".to_string()),
        Some("lengths".to_string()),
    ];
    let unbound = bind_args(&spec.path, stage, "main", &three)
        .unwrap_err()
        .to_string();
    assert_err(
        &unbound,
        11,
        7,
        &[
            "stage `enc`",
            "argument 3 (`lengths`) of `main` is bound by no `bind` rule",
            "{arg: \"lengths\"",
        ],
    );
    let missing = vec![Some("audio_tower__x".to_string()), Some("q__weight".into())];
    let err = bind_args(&spec.path, stage, "main", &missing)
        .unwrap_err()
        .to_string();
    assert_err(
        &err,
        13,
        9,
        &["`arg: mel` names no argument", "0: `audio_tower__x`"],
    );
}

#[test]
fn bind_errors_at_load_time_have_positions() {
    let fx = Fixture::new();
    let stage = |bind: &str| {
        with_stages(&format!(
            "  - name: enc\n    module: audio\n    function: main\n    bind:\n{bind}    outputs: [{{name: o, oracle: o}}]\n"
        ))
    };
    let cases: &[(&str, usize, usize, &str)] = &[
        (
            "      - {match: \"(\", weight: w}\n",
            11,
            17,
            "not a valid regular expression",
        ),
        (
            "      - {match: \"a(.*)\", weight: \"$2\"}\n",
            11,
            34,
            "`$2` but the pattern has 1 capture groups",
        ),
        (
            "      - {arg: x, weight: a}\n      - {arg: x, weight: b}\n",
            12,
            9,
            "names the same argument",
        ),
        (
            "      - {arg: x, weight: a, replace: {a: b}}\n",
            11,
            38,
            "`replace` applies to a `match` rule",
        ),
        (
            "      - {match: x, stage: s}\n",
            11,
            9,
            "binds `oracle:` or `weight:` names",
        ),
        (
            "      - {arg: x}\n",
            11,
            9,
            "exactly one of: oracle, weight, stage, literal",
        ),
        ("      - {weight: x}\n", 11, 9, "exactly one of `arg`"),
    ];
    for (bind, line, col, needle) in cases {
        let msg = fx.err(&stage(bind));
        assert_err(&msg, *line, *col, &["stage `enc`", needle]);
    }
    let both = with_stages(
        "  - name: enc\n    module: audio\n    function: main\n    args: [{oracle: x}]\n    bind: [{arg: 0, oracle: x}]\n    outputs: [{name: o, oracle: o}]\n",
    );
    assert_err(
        &fx.err(&both),
        10,
        11,
        &["`args` (in call order) or `bind`"],
    );
}

#[test]
fn a_bind_rule_may_read_an_upstream_stage_and_orders_the_graph() {
    let fx = Fixture::new();
    let text = with_stages(
        "  - name: second
    module: audio
    function: g
    bind: [{arg: x, stage: first}]
    outputs: [{name: y, oracle: y}]
  - {name: first, module: audio, function: f, outputs: [{name: x, oracle: x}]}
",
    );
    let spec = fx.parse(&text).unwrap();
    assert_eq!(spec.topo_order(), vec![1, 0]);
    let bind = spec.stages[0].bind.as_ref().unwrap();
    assert_eq!(
        bind.rules[0].source,
        Arg::Stage {
            stage: "first".into(),
            output: "x".into()
        }
    );
    let dangling = text.replace("stage: first}", "stage: nope}");
    assert_err(&fx.err(&dangling), 10, 12, &["unknown stage `nope`"]);
}

#[test]
fn weight_transforms_parse_apply_first_match_and_report_errors_with_positions() {
    let fx = Fixture::new();
    let stage =
        "stages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: o}]}\n";
    let text = format!(
        "{HEADER}weight_transforms:
  - {{match: \"hf\\\\.(.*)\\\\.q\", rename: \"model.$1.q_proj\", transpose: [1, 0], reshape: [16, 4, 4]}}
  - {{match: \".*\", cast: bf16}}
{stage}"
    );
    let spec = fx.parse(&text).unwrap();
    let (t, source) = spec.weight_transform("hf.layer0.q").unwrap();
    assert_eq!(source, "model.layer0.q_proj");
    assert_eq!(t.transpose, Some(vec![1, 0]));
    assert_eq!(t.reshape, Some(vec![16, 4, 4]));
    assert_eq!(t.location, Location { line: 7, col: 5 });
    let (t, source) = spec.weight_transform("other").unwrap();
    assert_eq!(
        (source.as_str(), t.cast),
        ("other", Some(parity_spec::DType::Bf16))
    );
    let bad: &[(&str, usize, usize, &str)] = &[
        (
            "  - {match: \"(\", cast: f32}\n",
            7,
            13,
            "not a valid regular expression",
        ),
        (
            "  - {match: a, transpose: [0, 0]}\n",
            7,
            27,
            "is not a permutation of 0..2",
        ),
        (
            "  - {match: a, rename: \"$1\"}\n",
            7,
            24,
            "`$1` but the pattern has 0 capture groups",
        ),
        ("  - {match: a}\n", 7, 5, "does nothing"),
        ("  - {match: a, cast: f33}\n", 7, 22, "f33"),
        ("  - {match: a, reshape: [4, -1]}\n", 7, 29, "reshape"),
        ("  - {match: a, flip: true}\n", 7, 16, "flip"),
    ];
    for (entry, line, col, needle) in bad {
        let msg = fx.err(&format!("{HEADER}weight_transforms:\n{entry}{stage}"));
        assert_err(&msg, *line, *col, &[needle]);
    }
}

#[test]
fn checkpoints_map_oracle_tensors_to_points_once_each() {
    let fx = Fixture::new();
    let stage =
        "stages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: o}]}\n";
    let text = format!(
        "{HEADER}checkpoints:\n  - {{oracle: \"{{case}}/l1\", point: dense_1}}\n  - {{oracle: \"{{case}}/act\", point: \"%12\"}}\n{stage}"
    );
    let spec = fx.parse(&text).unwrap();
    assert_eq!(spec.checkpoints.len(), 2);
    assert_eq!(spec.checkpoints[0].oracle, "{case}/l1");
    assert_eq!(spec.checkpoints[1].point, "%12");
    assert_eq!(spec.checkpoints[1].location, Location { line: 8, col: 5 });
    let twice = format!(
        "{HEADER}checkpoints:\n  - {{oracle: a, point: x}}\n  - {{oracle: a, point: y}}\n{stage}"
    );
    assert_err(&fx.err(&twice), 8, 14, &["`a` is mapped twice"]);
    let bad = format!("{HEADER}checkpoints:\n  - {{oracle: a}}\n{stage}");
    assert_err(&fx.err(&bad), 7, 5, &["point"]);
}

/// On a slice (`bind_args_in` with a [`parity_spec::SliceScope`]), rules for
/// what only the whole function or another slice takes are ignored; a rule
/// naming nothing in the function still errors. Without the scope (a
/// `function:` stage) the same rules are errors.
#[test]
fn a_slice_ignores_rules_for_what_it_does_not_take() {
    let fx = Fixture::new();
    let spec = spec(&fx);
    let short = spec.instantiate(spec.case("short8").unwrap()).unwrap();
    // The slice takes only the function's argument 3 (no MLIR name) and `mel`:
    // not the weights (patterns), nor `mel`'s neighbours.
    let slice_names = vec![Some("mel".to_string()), None];
    let function_args = names();
    let is_point = |n: &str| n == "encoder/norm";
    let scope = parity_spec::SliceScope {
        function_args: &function_args,
        is_point: &is_point,
    };
    // `arg: 3` indexes the slice's list, which has 2 arguments: still an error.
    let err =
        parity_spec::bind_args_in(&spec.path, &short[0], "main_b8", &slice_names, Some(&scope))
            .unwrap_err()
            .to_string();
    assert!(err.contains("`arg: 3` is past the last argument"), "{err}");
    // With `arg: 1` for the unnamed one, both weight patterns (matching only
    // function arguments) are ignored.
    let text = format!("{HEADER}{TWO_CASES}stages:\n{BIND_STAGE}")
        .replace("{arg: 3, literal", "{arg: 1, literal");
    let spec = fx.parse(&text).unwrap();
    let short = spec.instantiate(spec.case("short8").unwrap()).unwrap();
    let (args, _) =
        parity_spec::bind_args_in(&spec.path, &short[0], "main_b8", &slice_names, Some(&scope))
            .unwrap();
    assert_eq!(args.len(), 2);
    assert_eq!(args[0], Arg::Oracle("short8/mel".into()));
    // As a function stage, the patterns that match nothing are errors.
    let err = bind_args(&spec.path, &short[0], "main_b8", &slice_names)
        .unwrap_err()
        .to_string();
    assert!(err.contains("matches no argument"), "{err}");
    // A point of the function, or a typo.
    let with = |rule: &str| {
        let text = text.replace(
            "      - {arg: mel,",
            &format!("      - {rule}\n      - {{arg: mel,"),
        );
        let spec = fx.parse(&text).unwrap();
        let stages = spec.instantiate(spec.case("short8").unwrap()).unwrap();
        parity_spec::bind_args_in(
            &spec.path,
            &stages[0],
            "main_b8",
            &slice_names,
            Some(&scope),
        )
        .map(|(a, _)| a.len())
        .map_err(|e| e.to_string())
    };
    assert_eq!(with("{arg: encoder/norm, oracle: \"{case}/n\"}"), Ok(2));
    let typo = with("{arg: encoder/nrom, oracle: \"{case}/n\"}").unwrap_err();
    assert!(
        typo.contains("`arg: encoder/nrom` names no argument"),
        "{typo}"
    );
}
