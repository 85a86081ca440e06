//! Malformed input: errors at the right line, never a panic.

mod common;

use common::{GEMMA, MULTI};
use parity_mlir::{emit_slices, parse, promote_to_f64, MlirError, SliceRequest};
use proptest::prelude::*;

const SMALL: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "f"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x")):
    %0 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32> loc("jit(f)/one")
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(f)/add")
    %2 = "stablehlo.reduce"(%1, %0) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg1: tensor<f32> loc(unknown), %arg2: tensor<f32> loc(unknown)):
      %3 = "stablehlo.add"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(unknown)
      "stablehlo.return"(%3) : (tensor<f32>) -> () loc(unknown)
    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(f)/sum")
    "func.return"(%2) : (tensor<4xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

/// SMALL with 1-based line `line` replaced.
fn with_line(line: usize, text: &str) -> String {
    let mut lines: Vec<&str> = SMALL.lines().collect();
    lines[line - 1] = text;
    lines.join("\n") + "\n"
}

fn err(text: &str) -> MlirError {
    parse(text).expect_err("malformed input is an error")
}

#[test]
fn the_small_module_is_well_formed() {
    let m = parse(SMALL).unwrap();
    assert_eq!(m.functions[0].ops.len(), 3);
    assert_eq!(m.functions[0].ops[2].captures, Vec::<usize>::new());
}

#[test]
fn non_generic_op_is_an_error_at_its_line() {
    let e = err(&with_line(
        5,
        "    %1 = stablehlo.add %arg0, %0 : tensor<4xf32> loc(\"jit(f)/add\")",
    ));
    assert_eq!((e.line, e.col), (5, 10), "{e}");
    assert!(e.message.contains("expected a generic operation"), "{e}");
    assert!(e.message.contains("--mlir-print-op-generic"), "{e}");
    assert_eq!(e.to_string().split(": ").next(), Some("line 5:10"));
}

#[test]
fn unbalanced_brackets_are_errors() {
    // A region that never closes: the module's closing lines are eaten as its ops.
    let e = err(&with_line(9, "      \"stablehlo.return\"(%3) : (tensor<f32>) -> () loc(unknown)\n    ) : (tensor<4xf32>) -> tensor<4xf32>"));
    assert_eq!(e.line, 10, "{e}");
    // An unclosed property dictionary.
    let e = err(&with_line(
        4,
        "    %0 = \"stablehlo.constant\"() <{value = dense<1.000000e+00> : tensor<4xf32>> : () -> tensor<4xf32> loc(unknown)",
    ));
    assert_eq!(e.line, 4, "{e}");
    // A stray closer in a location.
    let e = err(&with_line(5, "    %1 = \"stablehlo.add\"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(\"a\"]"));
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn truncated_input_is_an_error() {
    let cut = &SMALL[..SMALL.find("%2 = ").unwrap()];
    let e = err(cut);
    assert!(e.message.contains("end of input"), "{e}");
    assert_eq!(e.line, 6);
    let cut = &SMALL[..SMALL.find("loc(\"jit(f)/add\")").unwrap() + 8];
    let e = err(cut);
    assert_eq!(e.line, 5, "{e}");
    // Nothing at all (or only comments) is an empty module, not an error.
    assert!(parse("").is_ok_and(|m| m.functions.is_empty()));
    assert!(parse("// nothing\n").is_ok_and(|m| m.functions.is_empty()));
}

#[test]
fn unterminated_string_points_at_its_start() {
    let e = err(&with_line(
        5,
        "    %1 = \"stablehlo.add(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>",
    ));
    assert_eq!((e.line, e.col), (5, 10), "{e}");
    assert!(e.message.contains("unterminated string"), "{e}");
}

#[test]
fn ssa_errors_name_the_value() {
    let e = err(&with_line(5, "    %1 = \"stablehlo.add\"(%arg0, %7) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(unknown)"));
    assert_eq!((e.line, e.col), (5, 33), "{e}");
    assert!(e.message.contains("use of undefined value %7"), "{e}");
    let e = err(&with_line(5, "    %0 = \"stablehlo.add\"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(unknown)"));
    assert_eq!(e.line, 5);
    assert!(e.message.contains("redefinition of %0"), "{e}");
    let e = err(&with_line(
        5,
        "    %1 = \"stablehlo.add\"(%arg0, %0) : (tensor<4xf32>) -> tensor<4xf32> loc(unknown)",
    ));
    assert!(
        e.message.contains("has 2 operands but its type lists 1"),
        "{e}"
    );
    let e = err(&with_line(5, "    %1:2 = \"stablehlo.add\"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc(unknown)"));
    assert!(
        e.message.contains("defines 2 results but its type lists 1"),
        "{e}"
    );
    // A region using an undefined value.
    let e = err(&with_line(8, "      %3 = \"stablehlo.add\"(%arg1, %9) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(unknown)"));
    assert_eq!(e.line, 8);
    // A multi-result value used without `#k`.
    let text = MULTI.replace("\"stablehlo.convert\"(%13#1)", "\"stablehlo.convert\"(%13)");
    let e = err(&text);
    assert!(e.message.contains("%13 has 2 results"), "{e}");
    let line = MULTI
        .lines()
        .position(|l| l.contains("\"stablehlo.convert\"(%13#1)"))
        .unwrap()
        + 1;
    assert_eq!(e.line, line);
}

#[test]
fn structure_errors() {
    let e = err(&format!("{SMALL}\n%9 = "));
    assert_eq!(e.line, 15, "{e}");
    let e = err(&format!("{SMALL}trailing"));
    assert!(e.message.contains("expected a generic operation"), "{e}");
    let two_blocks = SMALL.replace(
        "    \"func.return\"(%2)",
        "  ^bb1:\n    \"func.return\"(%2)",
    );
    let e = err(&two_blocks);
    assert!(e.message.contains("2 blocks"), "{e}");
    assert_eq!(e.line, 2);
    let no_return = SMALL.replace(
        "    \"func.return\"(%2) : (tensor<4xf32>) -> () loc(unknown)\n",
        "",
    );
    let e = err(&no_return);
    assert!(e.message.contains("not `func.return`"), "{e}");
    // Pretty wrapper problems.
    assert!(parse("module @m {\n  func.func @f(%a: tensor<f32>) {\n").is_err());
    assert!(parse("module @m {\n  func.func @f(%a tensor<f32>) {\n  }\n}").is_err());
    let e = err("module @m {\n  func.func @f() {\n    return\n    return\n  }\n}");
    assert_eq!(e.line, 4, "{e}");
}

/// The gemma excerpt's first two functions (short) in their module.
fn short_gemma() -> String {
    let lines: Vec<&str> = GEMMA.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.contains("sym_name = \"conformer_1_attention_c1_b128\""))
        .unwrap();
    let mut text = lines[..end].join("\n");
    text.push('\n');
    text.push_str(lines[lines.len() - 1]);
    text.push('\n');
    text
}

/// Everything downstream of a successful parse must not panic either.
fn exercise(text: &str) {
    let Ok(m) = parse(text) else { return };
    for f in &m.functions {
        let _ = f.scope_outputs();
        let last = f.values.len().saturating_sub(1);
        let _ = f.resolve_point("conformer_0/final_norm");
        let _ = f.is_constant(last);
        let reqs = [SliceRequest {
            name: "all".into(),
            from: f.args.iter().copied().take(1).collect(),
            to: f.results.clone(),
        }];
        let (sliced, _) = emit_slices(&m, f, "fuzz", &reqs).expect("valid ids slice");
        let back = parse(&sliced).unwrap_or_else(|e| panic!("a slice re-parses: {e}\n{sliced}"));
        assert_eq!(back.functions.len(), 1);
        if let Ok(promoted) = promote_to_f64(&sliced) {
            let _ = parse(&promoted);
        }
    }
}

const SIGNIFICANT: &[u8] = b"\"(){}<>[],:%#=^\\ \nx0-/@!";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn truncations_never_panic(frac in 0.0f64..1.0, which in 0usize..3) {
        let text = match which { 0 => short_gemma(), 1 => MULTI.to_string(), _ => SMALL.to_string() };
        let cut = ((text.len() as f64) * frac) as usize;
        let prefix = &text[..cut];
        let result = parse(prefix);
        let first_op = text.find("\"builtin.module\"").unwrap();
        // The module's own trailing location is optional: a cut inside it can be valid.
        let last_needed = text.rfind(") loc(").unwrap() + 1;
        if first_op < cut && cut < last_needed {
            prop_assert!(result.is_err(), "a truncated module parsed: cut at {cut}");
        }
        let _ = promote_to_f64(prefix);
    }

    #[test]
    fn byte_flips_never_panic(
        flips in prop::collection::vec((0.0f64..1.0, 0usize..SIGNIFICANT.len()), 1..4),
        which in 0usize..3,
        wide in prop::option::of((0.0f64..1.0, prop::sample::select(vec!["\u{e9}", "\u{2192}", "\u{1F600}"]))),
    ) {
        let text = match which { 0 => short_gemma(), 1 => MULTI.to_string(), _ => SMALL.to_string() };
        let mut bytes = text.into_bytes();
        for (at, with) in flips {
            let at = ((bytes.len() as f64) * at) as usize;
            bytes[at] = SIGNIFICANT[with];
        }
        let mut text = String::from_utf8(bytes).expect("ASCII in, ASCII out");
        // A multi-byte character somewhere: offsets and columns must stay on char boundaries.
        if let Some((at, ch)) = wide {
            text.insert_str(((text.len() as f64) * at) as usize, ch);
        }
        exercise(&text);
        let _ = promote_to_f64(&text);
    }
}
