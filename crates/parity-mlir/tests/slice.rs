//! Cones and standalone slices cut from real functions.

mod common;

use common::{attention, gemma, multi, names, op_names, value};
use parity_mlir::{emit_slices, parse, SliceArg, SliceRequest};

fn req(name: &str, from: Vec<usize>, to: Vec<usize>) -> SliceRequest {
    SliceRequest {
        name: name.to_string(),
        from,
        to,
    }
}

#[test]
fn rel_shift_slice_between_named_points() {
    let m = gemma();
    let f = attention(&m);
    let pos = f.resolve_point("conformer_1/attention/pos_proj").unwrap();
    let q = f.resolve_point("conformer_1/attention/q_scaled").unwrap();
    let out = f.resolve_point("conformer_1/attention/rel_shift").unwrap();
    assert_eq!(names(f, &[pos, q, out]), ["%7840", "%7820", "%7864"]);

    let cone = f.cone(&[pos, q], &[out]);
    assert_eq!(
        op_names(f, &cone),
        [
            "%7762", "%7841", "%7842", "%7843", "%7858", "%7859", "%7860", "%7861", "%7862",
            "%7863", "%7864"
        ]
    );
    // Without cut points the cone reaches back to the arguments.
    assert!(f.cone(&[], &[out]).len() > cone.len());

    let (text, infos) = emit_slices(
        &m,
        f,
        "bisect",
        &[req("rel_shift", vec![pos, q, pos], vec![out])],
    )
    .unwrap();
    let info = &infos[0];
    assert_eq!(info.name, "rel_shift");
    assert_eq!(
        info.args,
        vec![(SliceArg::From(0), pos), (SliceArg::From(1), q)]
    );
    assert_eq!(info.results, vec![out]);
    assert_eq!(info.ops, cone);
    assert!(text.contains("module @bisect {"));
    assert!(text.contains(
        "func.func public @rel_shift(%7840: tensor<5x4x16xf32> loc(\"jit(conformer_1_attention_c1_b128)/conformer_1/attention/pos_proj/reshape\"), %7820: tensor<1x32x4x16xf32>"
    ));
    assert!(text.contains(") -> (tensor<1x4x8x4x8xf32>) {"));
    assert!(text.contains("\"func.return\"(%7864) : (tensor<1x4x8x4x8xf32>) -> ()"));
    // Ops are verbatim.
    for &op in &cone {
        assert!(
            text.contains(&f.ops[op].text),
            "op {} copied verbatim",
            f.ops[op].line
        );
    }

    // The slice parses back to the same graph shape.
    let back = parse(&text).unwrap();
    assert_eq!(back.name.as_deref(), Some("bisect"));
    let g = back.function("rel_shift").unwrap();
    assert_eq!(names(g, &g.args), ["%7840", "%7820"]);
    assert_eq!(g.ops.len(), cone.len());
    assert_eq!(names(g, &g.results), ["%7864"]);
    assert_eq!(g.values[g.results[0]].ty, f.values[out].ty);
}

#[test]
fn function_arguments_the_cone_needs_follow_the_cut_points() {
    let m = gemma();
    let f = attention(&m);
    let out = value(f, "%7850"); // gather(%7845, %7849): reads the value input and the mask
    let v = value(f, "%7800");
    let (_, infos) = emit_slices(&m, f, "m", &[req("g", vec![v, f.args[1]], vec![out])]).unwrap();
    let args: Vec<SliceArg> = infos[0].args.iter().map(|a| a.0).collect();
    // The mask arg is a From arg even though it is a function argument.
    assert_eq!(args[..2], [SliceArg::From(0), SliceArg::From(1)]);
    assert_eq!(infos[0].args[1].1, f.args[1]);
    let funcs: Vec<usize> = infos[0]
        .args
        .iter()
        .filter_map(|&(a, _)| match a {
            SliceArg::FuncArg(k) => Some(k),
            SliceArg::From(_) => None,
        })
        .collect();
    assert!(
        funcs.windows(2).all(|w| w[0] < w[1]),
        "ascending: {funcs:?}"
    );
    assert!(!funcs.contains(&1), "the mask is already a From arg");
    for &(a, val) in &infos[0].args {
        if let SliceArg::FuncArg(k) = a {
            assert_eq!(val, f.args[k]);
        }
    }
    // A `to` that is an argument needs that argument.
    let (_, infos) = emit_slices(&m, f, "m", &[req("id", vec![], vec![f.args[3]])]).unwrap();
    assert_eq!(infos[0].args, vec![(SliceArg::FuncArg(3), f.args[3])]);
    assert!(infos[0].ops.is_empty());
}

#[test]
fn multi_result_cut_point_becomes_a_plain_argument() {
    let m = multi();
    let f = m.function("argmax_scale").unwrap();
    let idx = value(f, "%13#1");
    let scale = value(f, "%arg7");
    let out = value(f, "%18");
    let max = value(f, "%13#0");
    let (text, infos) = emit_slices(
        &m,
        f,
        "cut",
        &[
            req("both", vec![idx, scale], vec![out, max]),
            req("index_only", vec![idx], vec![value(f, "%17")]),
        ],
    )
    .unwrap();
    let both = &infos[0];
    assert_eq!(
        both.args,
        vec![
            (SliceArg::From(0), idx),
            (SliceArg::From(1), scale),
            (SliceArg::FuncArg(0), value(f, "%arg6"))
        ]
    );
    // %13#0 is still needed, so the reduce stays (and still defines %13:2).
    assert_eq!(both.ops, (0..f.ops.len()).collect::<Vec<_>>());
    assert_eq!(infos[1].ops, vec![f.op_of(value(f, "%17")).unwrap()]);
    assert_eq!(infos[1].args, vec![(SliceArg::From(0), idx)]);
    assert!(text.contains("func.func public @both(%v13_1: tensor<4xi32>"));
    assert!(text.contains("\"stablehlo.convert\"(%v13_1)"));
    assert!(text.contains("\"stablehlo.multiply\"(%13#0, %arg7)"));
    assert!(text.contains("\"func.return\"(%18, %13#0) : (tensor<4xf32>, tensor<4xf32>) -> ()"));
    assert!(text.contains("func.func public @index_only(%v13_1: tensor<4xi32>"));

    let back = parse(&text).unwrap();
    let g = back.function("both").unwrap();
    assert_eq!(names(g, &g.args), ["%v13_1", "%arg7", "%arg6"]);
    let convert = g
        .ops
        .iter()
        .find(|o| o.name == "stablehlo.convert")
        .unwrap();
    assert_eq!(convert.operands, vec![g.args[0]]);
    assert_eq!(names(g, &g.results), ["%18", "%13#0"]);
}

#[test]
fn captured_values_are_cut_and_renamed_inside_regions() {
    let m = multi();
    let g = m.function("loop_capture").unwrap();
    let out = value(g, "%4");
    let step = value(g, "%2");
    let (_, infos) = emit_slices(&m, g, "m", &[req("loop", vec![step], vec![out])]).unwrap();
    assert_eq!(op_names(g, &infos[0].ops), ["%0", "%1", "%3#0", "%4"]);
    // %arg1 is only read inside the loop's condition region.
    assert_eq!(
        infos[0].args,
        vec![
            (SliceArg::From(0), step),
            (SliceArg::FuncArg(0), g.args[0]),
            (SliceArg::FuncArg(1), g.args[1])
        ]
    );

    // A multi-result value captured in a region is renamed there too.
    let src = r#""builtin.module"() ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "f"}> ({
  ^bb0(%arg0: tensor<f32> loc("x")):
    %0:2 = "test.pair"(%arg0) : (tensor<f32>) -> (tensor<f32>, tensor<f32>) loc("jit(f)/pair")
    %1 = "stablehlo.reduce"(%0#0, %arg0) <{dimensions = array<i64>}> ({
    ^bb0(%arg1: tensor<f32> loc(unknown), %arg2: tensor<f32> loc(unknown)):
      %2 = "stablehlo.add"(%arg1, %0#1) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(unknown)
      "stablehlo.return"(%2) : (tensor<f32>) -> () loc(unknown)
    }) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("jit(f)/sum")
    "func.return"(%1) : (tensor<f32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;
    let m = parse(src).unwrap();
    let f = m.function("f").unwrap();
    let r = f.op_of(value(f, "%1")).unwrap();
    assert_eq!(names(f, &f.ops[r].captures), ["%0#1"]);
    let (text, infos) = emit_slices(
        &m,
        f,
        "m",
        &[req(
            "s",
            vec![value(f, "%0#0"), value(f, "%0#1")],
            vec![value(f, "%1")],
        )],
    )
    .unwrap();
    assert_eq!(infos[0].ops, vec![r]);
    assert!(
        text.contains("\"stablehlo.reduce\"(%v0_0, %arg0)"),
        "{text}"
    );
    assert!(text.contains("\"stablehlo.add\"(%arg1, %v0_1)"), "{text}");
    let back = parse(&text).unwrap();
    assert_eq!(back.functions[0].ops[0].captures, vec![1]);
}

#[test]
fn bad_requests_are_errors() {
    let m = multi();
    let f = m.function("argmax_scale").unwrap();
    let err = emit_slices(&m, f, "m", &[req("x", vec![], vec![999])]).unwrap_err();
    assert!(err.message.contains("unknown value id 999"), "{err}");
    assert_eq!(err.line, f.line);
    let err = emit_slices(&m, f, "m", &[req("x", vec![1000], vec![0])]).unwrap_err();
    assert!(err.message.contains("unknown value id 1000"), "{err}");
    let ok = req("x", vec![], vec![0]);
    let err = emit_slices(&m, f, "m", &[ok.clone(), ok]).unwrap_err();
    assert!(
        err.message.contains("two slice requests are named `x`"),
        "{err}"
    );
    assert!(emit_slices(&m, f, "m", &[req("", vec![], vec![0])]).is_err());
    // Odd names are quoted, not rejected.
    let (text, _) = emit_slices(&m, f, "my module", &[req("a/b", vec![], vec![0])]).unwrap();
    assert!(text.contains("module @\"my module\" {"), "{text}");
    assert!(text.contains("func.func public @\"a/b\"("), "{text}");
    assert_eq!(parse(&text).unwrap().functions[0].name, "a/b");
}
