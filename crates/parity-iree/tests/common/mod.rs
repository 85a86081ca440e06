//! Shared set-up for the integration tests: the real IREE compiler, found through
//! the environment exactly as parity finds it.

#![allow(dead_code)] // each test binary uses a different subset

use parity_iree::{CompileOptions, IreeCompiler, IreeRuntime, LoadedModule};
use parity_tensor::{DType, Tensor};

/// `add(a, b)` on two f32[4]: the smallest real module, shared by the tests.
pub const ADD_F32: &str = r#"
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"#;

/// Loads the compiler via `$PARITY_IREE_COMPILER_LIB` or `$EERIE_PYTHON`.
/// Fails (never skips) with the fix-it message when it cannot be found.
pub fn compiler() -> IreeCompiler {
    match IreeCompiler::load(None) {
        Ok(c) => c,
        Err(e) => panic!("these tests need the real IREE compiler: {e}"),
    }
}

/// Compiles `mlir` for llvm-cpu with extra `flags` and loads it on `driver`.
pub fn load_with(mlir: &str, flags: &[&str], driver: &str) -> LoadedModule {
    let options = CompileOptions::new("llvm-cpu", flags.iter().map(|s| s.to_string()).collect());
    let vmfb = match compiler().compile("test.mlir", mlir.as_bytes(), &options) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    };
    let rt = IreeRuntime::new(driver).unwrap();
    rt.load(&vmfb, "test").unwrap()
}

/// Compiles `mlir` with default options and loads it on local-task.
pub fn load(mlir: &str) -> LoadedModule {
    load_with(mlir, &[], "local-task")
}

/// A tensor of `dtype` from exactly representable values.
pub fn t(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    Tensor::from_f64_as(dtype, shape.to_vec(), values).unwrap()
}
