//! `IreeCompiler::normalize`: pretty StableHLO in, generic form with inline
//! locations out, calls inlined; malformed input names its line.

mod common;

use common::compiler;
use parity_iree::IreeError;

const PRETTY: &str = r#"module @m {
  func.func public @f(%arg0: tensor<4xf32> loc("x")) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<3.0> : tensor<f32> loc(#l1)
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32> loc(#l2)
    %1 = stablehlo.divide %arg0, %0 : tensor<4xf32> loc(#l2)
    %2 = call @g(%1) : (tensor<4xf32>) -> tensor<4xf32> loc(#l3)
    return %2 : tensor<4xf32>
  }
  func.func private @g(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32> loc(#l4)
    return %0 : tensor<4xf32>
  }
}
#l1 = loc("jit(f)/a/cst")
#l2 = loc("jit(f)/a/div")
#l3 = loc("jit(f)/a/jit(g)")
#l4 = loc("jit(g)/tanh")
"#;

#[test]
fn pretty_form_comes_back_generic_inlined_with_locations() {
    let text = compiler().normalize("m.mlir", PRETTY.as_bytes()).unwrap();
    assert!(text.starts_with("\"builtin.module\"()"), "{text}");
    assert!(text.contains("\"stablehlo.divide\"("), "{text}");
    assert!(text.contains("loc(\"jit(f)/a/div\")"), "{text}");
    // The call is inlined, the private function dropped, the callee's op keeps
    // a call-site location.
    assert!(!text.contains("func.call"), "{text}");
    assert!(!text.contains("sym_name = \"g\""), "{text}");
    assert!(
        text.contains("loc(callsite(\"jit(g)/tanh\" at \"jit(f)/a/jit(g)\"))"),
        "{text}"
    );
    // Unnamed locations point at the source file, not at `buffer`.
    assert!(text.contains("loc(\"m.mlir\":"), "{text}");
    assert!(!text.contains("\"buffer\""), "{text}");
    // Idempotent: normalising the normal form changes nothing.
    let again = compiler().normalize("m.mlir", text.as_bytes()).unwrap();
    assert_eq!(again, text);
}

#[test]
fn malformed_mlir_names_source_and_line() {
    let bad = "module {\n  func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n    %0 = stablehlo.frobnicate %a : tensor<4xf32>\n    return %0 : tensor<4xf32>\n  }\n}\n";
    let err = compiler()
        .normalize("bad.mlir", bad.as_bytes())
        .unwrap_err();
    match &err {
        IreeError::Normalize {
            source_name,
            diagnostics,
        } => {
            assert_eq!(source_name, "bad.mlir");
            assert!(diagnostics.contains("bad.mlir:3:"), "{diagnostics}");
        }
        other => panic!("wrong error: {other:?}"),
    }
    assert!(err.to_string().contains("bad.mlir"));
}
