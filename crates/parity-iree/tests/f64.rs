//! f64 end to end: with demotion off and the system libm linked, IREE computes
//! exp and tanh in double precision (this is what the f64 shadow run relies on).

mod common;

use common::load_with;
use parity_tensor::{DType, Tensor};

const F64_MATH: &str = r#"
func.func @f64_math(%x: tensor<6xf64>) -> (tensor<6xf64>, tensor<6xf64>) {
  %0 = "stablehlo.exponential"(%x) : (tensor<6xf64>) -> tensor<6xf64>
  %1 = "stablehlo.tanh"(%x) : (tensor<6xf64>) -> tensor<6xf64>
  return %0, %1 : tensor<6xf64>, tensor<6xf64>
}
"#;

const F64_FLAGS: &[&str] = &[
    "--iree-input-demote-f64-to-f32=false",
    "--iree-llvmcpu-link-embedded=false",
];

fn check(driver: &str) {
    let m = load_with(F64_MATH, F64_FLAGS, driver);
    // 0.1 and 1/3 are not representable: an f32 detour would lose ~1e-8 relative.
    let xs = [0.1, -1.0 / 3.0, 1e-9, 2.5, -7.25, 0.7];
    let x = Tensor::from_f64(vec![6], &xs).unwrap();
    let out = m.invoke("f64_math", &[x]).unwrap();
    assert_eq!(out.len(), 2);
    for (o, f, name) in [
        (&out[0], f64::exp as fn(f64) -> f64, "exp"),
        (&out[1], f64::tanh, "tanh"),
    ] {
        assert_eq!(o.dtype(), DType::F64, "{name}");
        for (got, &xi) in o.to_f64_vec().iter().zip(&xs) {
            let want = f(xi);
            let rel = ((got - want) / want).abs();
            assert!(
                rel <= 1e-15,
                "{name}({xi}) on {driver}: got {got:e}, want {want:e}, rel {rel:e}"
            );
        }
    }
}

#[test]
fn f64_exp_tanh_match_libm_on_local_task() {
    check("local-task");
}

#[test]
fn f64_exp_tanh_match_libm_on_local_sync() {
    check("local-sync");
}
