//! Parsing real normalized IREE output: structure, values, locations.

mod common;

use common::{attention, gemma, multi, value};
use parity_mlir::Def;

#[test]
fn excerpt_functions_and_signatures() {
    let m = gemma();
    assert_eq!(m.name.as_deref(), Some("gemma3n_audio_f32"));
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mask_subsampled_c1_b128",
            "conformer_0_final_norm_c1_b128",
            "conformer_1_attention_c1_b128"
        ]
    );
    let f = attention(&m);
    assert!(f.public);
    assert_eq!(f.line, 54);
    assert_eq!(f.args.len(), 10);
    let arg0 = &f.values[f.args[0]];
    assert_eq!(arg0.name, "%arg1077");
    assert_eq!(arg0.ty.text, "tensor<1x32x64xf32>");
    assert_eq!(arg0.def, Def::Arg(0));
    let arg1 = &f.values[f.args[1]];
    assert_eq!(arg1.ty.element(), Some("i1"));
    assert_eq!(arg1.ty.shape(), Some(vec![1, 32]));
    assert_eq!(f.ops.len(), 168); // `grep -c "^    %"` over its lines
    assert_eq!(f.results.len(), 13);
    assert_eq!(f.values[f.results[12]].name, "%7925");
}

#[test]
fn an_op_with_its_operands_results_and_path() {
    let m = gemma();
    let f = attention(&m);
    let pad = f.op_of(value(f, "%7861")).expect("%7861 is an op result");
    let op = &f.ops[pad];
    assert_eq!(op.index, pad);
    assert_eq!(op.name, "stablehlo.pad");
    let operands: Vec<&str> = op
        .operands
        .iter()
        .map(|&v| f.values[v].name.as_str())
        .collect();
    assert_eq!(operands, ["%7859", "%7860"]);
    assert_eq!(op.results.len(), 1);
    let result = &f.values[op.results[0]];
    assert_eq!(result.name, "%7861");
    assert_eq!(result.ty.shape(), Some(vec![1, 4, 8, 4, 9]));
    assert_eq!(result.def, Def::Op { op: pad, result: 0 });
    assert_eq!(op.line, 163);
    assert!(op
        .text
        .starts_with("%7861 = \"stablehlo.pad\"(%7859, %7860) <{edge_padding_high"));
    assert!(op
        .text
        .ends_with("/conformer_1/attention/rel_shift/padded/jit(_pad)\"))"));
    assert!(!op.has_regions);
    assert!(op.captures.is_empty());
    assert_eq!(
        op.loc.path().as_deref(),
        Some("conformer_1/attention/rel_shift/padded/pad")
    );
    assert_eq!(result.loc, op.loc);
    // The padding value: a convert of the i32 zero constant, used by five converts.
    let zero = value(f, "%7762");
    assert!(f.is_constant(zero));
    assert!(f.is_constant(value(f, "%7860")));
    assert!(!f.is_constant(value(f, "%7861")));
    assert!(!f.is_constant(f.args[0]));
    let users: Vec<&str> = f
        .users(zero)
        .iter()
        .map(|&o| f.values[f.ops[o].results[0]].name.as_str())
        .collect();
    assert!(users.contains(&"%7860") && users.contains(&"%7841"));
    assert!(users.windows(2).all(|w| w[0] < w[1]), "{users:?}");
    assert_eq!(
        f.users(value(f, "%7861")),
        vec![f.op_of(value(f, "%7862")).unwrap()]
    );
}

#[test]
fn ops_with_regions_keep_their_values_inside() {
    let m = gemma();
    let f = m
        .function("conformer_0_final_norm_c1_b128")
        .expect("final norm");
    let reduce = f
        .ops
        .iter()
        .find(|o| o.name == "stablehlo.reduce")
        .expect("the norm has a reduce");
    assert!(reduce.has_regions);
    assert!(reduce.text.contains("\"stablehlo.return\""));
    assert!(reduce.captures.is_empty());
    // Region values (block arguments, the inner add) are not function values.
    let own = format!("{} = ", f.values[reduce.results[0]].name);
    let body = reduce
        .text
        .strip_prefix(own.as_str())
        .expect("text starts with the result");
    let defined: Vec<&str> = body
        .split(['(', ' ', ','])
        .filter(|t| t.starts_with('%') && (t.ends_with(':')))
        .map(|t| t.trim_end_matches(':'))
        .chain(
            body.lines()
                .skip(1)
                .filter_map(|l| l.trim().split_once(" = ").map(|(n, _)| n)),
        )
        .collect();
    assert_eq!(
        defined.len(),
        3,
        "two block arguments and the add: {defined:?}"
    );
    for name in defined {
        assert_eq!(f.value_by_name(name), None, "{name} is region-local");
    }
    let inner_ops = reduce.text.matches(" = \"stablehlo.").count();
    assert_eq!(inner_ops, 2, "the reduce itself and its body's add");
}

#[test]
fn multi_result_values_and_captures() {
    let m = multi();
    assert_eq!(m.name.as_deref(), Some("multi_result"));
    let f = m.function("argmax_scale").expect("argmax_scale");
    let r0 = value(f, "%13#0");
    let r1 = value(f, "%13#1");
    assert_eq!(r1, r0 + 1);
    let reduce = f.op_of(r1).expect("defined by the reduce");
    assert_eq!(
        f.values[r1].def,
        Def::Op {
            op: reduce,
            result: 1
        }
    );
    assert_eq!(f.ops[reduce].results, vec![r0, r1]);
    assert_eq!(f.values[r1].ty.text, "tensor<4xi32>");
    assert!(f.ops[reduce]
        .text
        .starts_with("%13:2 = \"stablehlo.reduce\""));
    assert_eq!(
        f.value_by_name("%13"),
        None,
        "a two-result op has no plain name"
    );
    assert_eq!(f.value_by_name("%13#2"), None);
    assert_eq!(f.value_by_name("%18#0"), f.value_by_name("%18"));
    assert_eq!(f.results, vec![value(f, "%18"), r1]);

    let g = m.function("loop_capture").expect("loop_capture");
    let w = f_op(g, "%3#1");
    let op = &g.ops[w];
    assert_eq!(op.name, "stablehlo.while");
    let names = |vs: &[usize]| {
        vs.iter()
            .map(|&v| g.values[v].name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&op.operands), ["%0", "%arg0"]);
    // First use first: the condition reads the limit, the body the step constants.
    assert_eq!(names(&op.captures), ["%arg1", "%1", "%2"]);
    assert_eq!(g.users(value(g, "%arg1")), vec![w]);
    assert!(g.users(value(g, "%arg0")).contains(&w));
    assert!(g.is_constant(value(g, "%1")));
    assert!(
        !g.is_constant(value(g, "%3#0")),
        "the loop captures an argument"
    );
    assert!(!g.is_constant(value(g, "%2")));
    assert_eq!(g.values.len(), 2 + 3 + 2 + 1);
}

fn f_op(f: &parity_mlir::Function, name: &str) -> usize {
    f.op_of(value(f, name)).expect("an op result")
}
