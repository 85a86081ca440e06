//! Promotion of sliced modules to f64.

mod common;

use common::{attention, gemma, multi, value};
use parity_mlir::{emit_slices, parse, promote_to_f64, SliceRequest};

fn f64_hex(values: &[f64]) -> String {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// A module in the shape emit_slices writes, around `body` lines.
fn module(args: &str, results: &str, body: &str, ret: &str) -> String {
    format!(
        "module @m {{\n  func.func public @f({args}) -> ({results}) {{\n{body}\n    \"func.return\"({ret}) : ({results}) -> ()\n  }}\n}}\n"
    )
}

#[test]
fn hex_splat_full_scalar_and_decimal_constants() {
    let body = [
        r#"    %0 = "stablehlo.constant"() <{value = dense<"0x0000003F"> : tensor<4xf32>}> : () -> tensor<4xf32> loc("jit(f)/half")"#,
        r#"    %1 = "stablehlo.constant"() <{value = dense<"0x0000803F000000400000404000008040"> : tensor<4xf32>}> : () -> tensor<4xf32> loc("jit(f)/w")"#,
        r#"    %2 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32> loc("jit(f)/tensor<f32>/ninf")"#,
        r#"    %3 = "stablehlo.constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32> loc(unknown)"#,
        r#"    %4 = "stablehlo.constant"() <{value = dense<[[1.500000e+00, 0x7FC00000], [2.0, -0.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32> loc(unknown)"#,
        r#"    %5 = "stablehlo.constant"() <{value = dense<"0x0000000001000000"> : tensor<2xi32>}> : () -> tensor<2xi32> loc(unknown)"#,
        r#"    %6 = "stablehlo.add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(unknown)"#,
        r#"    %7 = "stablehlo.convert"(%arg1) : (tensor<4xi1>) -> tensor<4xf32> loc(unknown)"#,
    ]
    .join("\n");
    let text = module(
        "%arg0: tensor<4xf32> loc(\"x\"), %arg1: tensor<4xi1> loc(\"mask\")",
        "tensor<4xf32>, tensor<f32>",
        &body,
        "%6, %2",
    );
    let out = promote_to_f64(&text).unwrap();
    assert!(
        out.contains(&format!("dense<\"0x{}\"> : tensor<4xf64>", f64_hex(&[0.5]))),
        "{out}"
    );
    assert!(out.contains(&format!(
        "dense<\"0x{}\"> : tensor<4xf64>",
        f64_hex(&[1.0, 2.0, 3.0, 4.0])
    )));
    assert!(
        out.contains("dense<0xFFF0000000000000> : tensor<f64>"),
        "{out}"
    );
    assert!(out.contains("dense<-3.40282347E+38> : tensor<f64>"));
    assert!(
        out.contains("dense<[[1.500000e+00, 0x7FF8000000000000], [2.0, -0.0]]> : tensor<2x2xf64>"),
        "{out}"
    );
    // Integers and booleans are untouched, and so is text inside locations.
    assert!(out.contains("dense<\"0x0000000001000000\"> : tensor<2xi32>"));
    assert!(out.contains("%arg1: tensor<4xi1> loc(\"mask\")"));
    assert!(out.contains("loc(\"jit(f)/tensor<f32>/ninf\")"));
    assert!(out.contains("func.func public @f(%arg0: tensor<4xf64> loc(\"x\")"));
    assert!(out.contains(") -> (tensor<4xf64>, tensor<f64>) {"));
    assert!(out.contains("(tensor<4xi1>) -> tensor<4xf64>"));
    assert_eq!(
        out.matches("f32").count(),
        1,
        "only the f32 in a location is left:\n{out}"
    );

    let m = parse(&out).unwrap();
    let f = m.function("f").unwrap();
    assert_eq!(f.values[value(f, "%6")].ty.text, "tensor<4xf64>");
    assert_eq!(f.values[value(f, "%5")].ty.text, "tensor<2xi32>");
}

#[test]
fn bf16_and_f16_constants_and_types() {
    let body = [
        r#"    %0 = "stablehlo.constant"() <{value = dense<"0x803F20C0"> : tensor<2xbf16>}> : () -> tensor<2xbf16> loc(unknown)"#,
        r#"    %1 = "stablehlo.constant"() <{value = dense<0xFF80> : tensor<bf16>}> : () -> tensor<bf16> loc(unknown)"#,
        r#"    %2 = "stablehlo.constant"() <{value = dense<"0x003C"> : tensor<2xf16>}> : () -> tensor<2xf16> loc(unknown)"#,
        r#"    %3 = "stablehlo.constant"() <{value = dense<1.250000e-01> : tensor<2xbf16>}> : () -> tensor<2xbf16> loc(unknown)"#,
        r#"    %4 = "stablehlo.convert"(%2) : (tensor<2xf16>) -> tensor<2xbf16> loc(unknown)"#,
        r#"    %5 = "stablehlo.add"(%0, %4) : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16> loc(unknown)"#,
    ]
    .join("\n");
    let text = module(
        "%arg0: tensor<2xbf16>",
        "tensor<2xbf16>, tensor<bf16>",
        &body,
        "%5, %1",
    );
    let out = promote_to_f64(&text).unwrap();
    assert!(
        out.contains(&format!(
            "dense<\"0x{}\"> : tensor<2xf64>",
            f64_hex(&[1.0, -2.5])
        )),
        "{out}"
    );
    assert!(
        out.contains("dense<0xFFF0000000000000> : tensor<f64>"),
        "{out}"
    );
    assert!(out.contains(&format!("dense<\"0x{}\"> : tensor<2xf64>", f64_hex(&[1.0]))));
    assert!(out.contains("dense<1.250000e-01> : tensor<2xf64>"));
    assert!(out.contains("(tensor<2xf64>) -> tensor<2xf64>"));
    assert!(!out.contains("bf16") && !out.contains("f16>"), "{out}");
    let m = parse(&out).unwrap();
    assert!(m.functions[0]
        .values
        .iter()
        .all(|v| v.ty.element() == Some("f64")));
}

#[test]
fn refused_ops_and_bad_constants_name_their_line() {
    let body = [
        r#"    %0 = "stablehlo.negate"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("stablehlo.bitcast_convert")"#,
        r#"    %1 = "stablehlo.bitcast_convert"(%0) : (tensor<4xf32>) -> tensor<4xi32> loc(unknown)"#,
    ]
    .join("\n");
    let text = module("%arg0: tensor<4xf32>", "tensor<4xi32>", &body, "%1");
    let err = promote_to_f64(&text).unwrap_err();
    assert_eq!((err.line, err.col), (4, 10), "{err}");
    assert!(err.message.contains("stablehlo.bitcast_convert"), "{err}");

    let custom = r#"    %0 = "stablehlo.custom_call"(%arg0) <{call_target_name = "foo"}> : (tensor<4xf32>) -> tensor<4xf32> loc(unknown)"#;
    let err = promote_to_f64(&module(
        "%arg0: tensor<4xf32>",
        "tensor<4xf32>",
        custom,
        "%0",
    ))
    .unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.message.contains("stablehlo.custom_call"));

    let resource = r#"    %0 = "stablehlo.constant"() <{value = dense_resource<blob> : tensor<4xf32>}> : () -> tensor<4xf32> loc(unknown)"#;
    let err = promote_to_f64(&module("", "tensor<4xf32>", resource, "%0")).unwrap_err();
    assert!(err.message.contains("dense_resource"), "{err}");

    let ragged = r#"    %0 = "stablehlo.constant"() <{value = dense<"0x0000803F0000"> : tensor<2xf32>}> : () -> tensor<2xf32> loc(unknown)"#;
    let err = promote_to_f64(&module("", "tensor<2xf32>", ragged, "%0")).unwrap_err();
    assert!(err.message.contains("not a whole number"), "{err}");
    assert_eq!(err.line, 3);

    let wide = r#"    %0 = "stablehlo.constant"() <{value = dense<0x0000803F00> : tensor<f32>}> : () -> tensor<f32> loc(unknown)"#;
    assert!(promote_to_f64(&module("", "tensor<f32>", wide, "%0")).is_err());
    let unbalanced = r#"    %0 = "stablehlo.constant"() <{value = dense<[1.0, 2.0 : tensor<2xf32>}> : () -> tensor<2xf32>"#;
    assert!(promote_to_f64(&module("", "tensor<2xf32>", unbalanced, "%0")).is_err());
}

#[test]
fn promoted_real_slices_parse_back_as_f64() {
    let m = gemma();
    let f = attention(&m);
    let from = f.resolve_point("conformer_1/attention/pos_proj").unwrap();
    let to = f.resolve_point("conformer_1/attention").unwrap();
    let reqs = [SliceRequest {
        name: "tail".into(),
        from: vec![from],
        to: vec![to],
    }];
    let (text, infos) = emit_slices(&m, f, "truth", &reqs).unwrap();
    let promoted = promote_to_f64(&text).unwrap();
    let back = parse(&promoted).unwrap();
    let g = back.function("tail").unwrap();
    assert_eq!(g.ops.len(), infos[0].ops.len());
    for (v, original) in g.values.iter().zip(
        infos[0].args.iter().map(|a| a.1).chain(
            infos[0]
                .ops
                .iter()
                .flat_map(|&o| f.ops[o].results.iter().copied()),
        ),
    ) {
        let old = &f.values[original].ty;
        assert_eq!(v.name, f.values[original].name);
        assert_eq!(v.ty.shape(), old.shape());
        let want = if old.is_float() {
            "f64"
        } else {
            old.element().unwrap()
        };
        assert_eq!(
            v.ty.element(),
            Some(want),
            "{}: {} -> {}",
            v.name,
            old,
            v.ty
        );
    }
    // The -inf mask constant of the excerpt is re-encoded.
    assert!(text.contains("dense<0xFF800000> : tensor<f32>"));
    assert!(promoted.contains("dense<0xFFF0000000000000> : tensor<f64>"));

    let mm = multi();
    let a = mm.function("argmax_scale").unwrap();
    let reqs = [SliceRequest {
        name: "argmax".into(),
        from: vec![],
        to: a.results.clone(),
    }];
    let (text, _) = emit_slices(&mm, a, "truth", &reqs).unwrap();
    let back = parse(&promote_to_f64(&text).unwrap()).unwrap();
    let g = &back.functions[0];
    assert_eq!(g.values[g.results[0]].ty.text, "tensor<4xf64>");
    assert_eq!(g.values[g.results[1]].ty.text, "tensor<4xi32>");
    assert_eq!(
        g.values[g.value_by_name("%13#0").unwrap()].ty.text,
        "tensor<4xf64>"
    );
}
