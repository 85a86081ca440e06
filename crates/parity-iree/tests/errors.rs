//! Errors from the real compiler and runtime carry what a user needs to act on them.

mod common;

use common::{compiler, load, t, ADD_F32};
use parity_iree::{CompileOptions, IreeCompiler, IreeError, IreeRuntime};
use parity_tensor::{DType, Tensor};
use std::path::Path;

#[test]
fn malformed_mlir_error_has_source_name_and_diagnostics() {
    let bad = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.frobnicate %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
    let err = compiler()
        .compile(
            "models/broken.mlir",
            bad.as_bytes(),
            &CompileOptions::default(),
        )
        .unwrap_err();
    let IreeError::Compile {
        source_name,
        diagnostics,
    } = &err
    else {
        panic!("expected a compile error, got {err:?}");
    };
    assert_eq!(source_name, "models/broken.mlir");
    assert!(diagnostics.contains("frobnicate"), "{diagnostics}");
    // The location names the real file and line, not eerie's `buffer`.
    assert!(
        diagnostics.contains("models/broken.mlir:2:"),
        "{diagnostics}"
    );
    let shown = err.to_string();
    assert!(
        shown.contains("models/broken.mlir") && shown.contains("frobnicate"),
        "{shown}"
    );
}

#[test]
fn unknown_flag_is_a_compile_error_naming_the_flag() {
    let opts = CompileOptions::new("llvm-cpu", vec!["--iree-no-such-flag=1".into()]);
    let err = compiler()
        .compile("a.mlir", ADD_F32.as_bytes(), &opts)
        .unwrap_err();
    let s = err.to_string();
    assert!(matches!(err, IreeError::Compile { .. }), "{s}");
    assert!(
        s.contains("a.mlir") && s.contains("iree-no-such-flag"),
        "{s}"
    );
}

#[test]
fn unknown_function_lists_available_ones() {
    let m = load(ADD_F32);
    let a = Tensor::from_f32(vec![4], &[1.0; 4]).unwrap();
    let err = m.invoke("sub", &[a.clone(), a]).unwrap_err();
    match &err {
        IreeError::UnknownFunction {
            function,
            available,
            ..
        } => {
            assert_eq!(function, "sub");
            assert_eq!(available, &vec!["add".to_string()]);
        }
        other => panic!("expected UnknownFunction, got {other:?}"),
    }
    assert!(err.to_string().contains("(available: add)"), "{err}");
}

#[test]
fn wrong_dtype_names_the_argument_and_both_types() {
    let m = load(ADD_F32);
    let a = Tensor::from_f32(vec![4], &[1.0; 4]).unwrap();
    let b = t(DType::I32, &[4], &[1.0; 4]);
    let err = m.invoke("add", &[a, b]).unwrap_err();
    let s = err.to_string();
    assert!(matches!(err, IreeError::Invoke { .. }), "{s}");
    assert!(s.contains("input1") || s.contains("input 1"), "{s}");
    assert!(s.contains("f32") && s.contains("i32"), "{s}");
}

#[test]
fn wrong_shape_and_count_are_reported() {
    let m = load(ADD_F32);
    let a = Tensor::from_f32(vec![4], &[1.0; 4]).unwrap();
    let short = Tensor::from_f32(vec![3], &[1.0; 3]).unwrap();
    let s = m
        .invoke("add", &[a.clone(), short])
        .unwrap_err()
        .to_string();
    assert!(s.contains("f32[3]") && s.contains("tensor<4xf32>"), "{s}");
    let s = m.invoke("add", &[a]).unwrap_err().to_string();
    assert!(s.contains("module.add") || s.contains("add"), "{s}");
    assert!(s.contains("expected signature"), "{s}");
}

#[test]
fn bool_bytes_other_than_0_or_1_are_rejected() {
    let m = load(ADD_F32);
    let bad = Tensor::from_bytes(DType::Bool, vec![2], vec![1, 7]).unwrap();
    let err = m.invoke("add", &[bad]).unwrap_err();
    match &err {
        IreeError::Argument { index, message, .. } => {
            assert_eq!(*index, 0);
            assert!(message.contains("byte value 7"), "{message}");
        }
        other => panic!("expected Argument error, got {other:?}"),
    }
}

#[test]
fn unknown_driver_and_bad_vmfb_are_clear() {
    let err = IreeRuntime::new("no-such-driver")
        .err()
        .expect("driver must not exist");
    assert!(err.to_string().contains("no-such-driver"), "{err}");
    let rt = IreeRuntime::new("local-task").unwrap();
    let err = rt
        .load(b"not a vmfb at all, just bytes", "junk")
        .err()
        .unwrap();
    assert!(matches!(err, IreeError::Load { .. }), "{err}");
    assert!(err.to_string().contains("junk"), "{err}");
}

#[test]
fn explicit_library_path_is_honoured_and_bad_paths_explain_the_fix() {
    let lib = compiler().library_path().to_path_buf();
    // A directory holding libIREECompiler.so is accepted as well as the file.
    let dir = lib.parent().expect("library has a parent directory");
    let again = IreeCompiler::load(Some(dir)).unwrap();
    assert_eq!(again.library_path(), lib.as_path());
    let err = IreeCompiler::load(Some(Path::new("/nonexistent/libIREECompiler.so"))).unwrap_err();
    let s = err.to_string();
    assert!(matches!(err, IreeError::CompilerNotFound { .. }), "{s}");
    assert!(
        s.contains("/nonexistent/libIREECompiler.so") && s.contains("ci/setup.sh"),
        "{s}"
    );
}
