//! Real IREE (compiler library + runtime) round trips for every dtype parity supports.

mod common;

use common::{load, load_with, t, ADD_F32};
use parity_tensor::{DType, Tensor};

#[test]
fn f32_add_is_exact() {
    let m = load(ADD_F32);
    let a = Tensor::from_f32(vec![4], &[1.0, 2.5, -3.0, 1e30]).unwrap();
    let b = Tensor::from_f32(vec![4], &[0.5, 0.25, 3.0, 1e30]).unwrap();
    let out = m.invoke("add", &[a, b]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dtype(), DType::F32);
    assert_eq!(out[0].shape(), &[4]);
    assert_eq!(out[0].to_f64_vec(), vec![1.5, 2.75, 0.0, 2e30f32 as f64]);
}

#[test]
fn local_sync_driver_runs_and_qualified_names_resolve() {
    let m = load_with(ADD_F32, &[], "local-sync");
    let a = Tensor::from_f32(vec![4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let out = m.invoke("module.add", &[a.clone(), a]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![2.0, 4.0, 6.0, 8.0]);
    assert_eq!(m.vm_module_name(), Some("module"));
    assert_eq!(m.function_names(), vec!["add".to_string()]);
    assert_eq!(
        m.declaration("add"),
        Some("sync func @add(%input0: tensor<4xf32>, %input1: tensor<4xf32>) -> (%output0: tensor<4xf32>)")
    );
}

#[test]
fn unaligned_input_bytes_are_copied_not_cast() {
    // A tensor whose bytes start at an odd offset of a memory map, as an npy inside
    // an npz may; decoding must not assume alignment.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.bin");
    let mut raw = vec![0xAAu8];
    for v in [1.0f32, 2.0, 3.0, 4.0] {
        raw.extend(v.to_le_bytes());
    }
    std::fs::write(&path, &raw).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // SAFETY: the file is private to this test and not modified while mapped.
    let map = std::sync::Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap());
    let a = Tensor::from_mmap(DType::F32, vec![4], map, 1, 16).unwrap();
    let m = load(ADD_F32);
    let out = m.invoke("add", &[a.clone(), a]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![2.0, 4.0, 6.0, 8.0]);
}

const BF16: &str = r#"
func.func @bf16_dot(%a: tensor<2x3xbf16>, %b: tensor<3x2xbf16>) -> tensor<2x2xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<2x3xbf16>, tensor<3x2xbf16>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
func.func @bf16_mul(%a: tensor<3xbf16>, %b: tensor<3xbf16>) -> tensor<3xbf16> {
  %0 = "stablehlo.multiply"(%a, %b) : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
  return %0 : tensor<3xbf16>
}
"#;

#[test]
fn bf16_inputs_accumulate_in_f32() {
    let m = load(BF16);
    // 256 + 1 + 1 = 258 is not representable in bf16 (8 significant bits): a bf16
    // accumulator would give 256 or 260, an f32 accumulator gives exactly 258.
    let a = t(DType::Bf16, &[2, 3], &[256.0, 1.0, 1.0, 1.0, 2.0, 3.0]);
    let b = t(DType::Bf16, &[3, 2], &[1.0, 2.0, 1.0, 0.5, 1.0, -1.0]);
    let out = m.invoke("bf16_dot", &[a, b]).unwrap();
    assert_eq!(out[0].dtype(), DType::F32);
    assert_eq!(out[0].shape(), &[2, 2]);
    assert_eq!(out[0].to_f64_vec(), vec![258.0, 511.5, 6.0, 0.0]);
}

#[test]
fn bf16_multiply_returns_bf16() {
    let m = load(BF16);
    let a = t(DType::Bf16, &[3], &[1.5, -2.0, 3.0]);
    let b = t(DType::Bf16, &[3], &[2.5, 0.125, 256.0]);
    let out = m.invoke("bf16_mul", &[a, b]).unwrap();
    assert_eq!(out[0].dtype(), DType::Bf16);
    assert_eq!(out[0].to_f64_vec(), vec![3.75, -0.25, 768.0]);
}

#[test]
fn f16_add_returns_f16() {
    let m = load(
        r#"
func.func @f16_add(%a: tensor<2x2xf16>, %b: tensor<2x2xf16>) -> tensor<2x2xf16> {
  %0 = "stablehlo.add"(%a, %b) : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  return %0 : tensor<2x2xf16>
}
"#,
    );
    let a = t(DType::F16, &[2, 2], &[1.0, 0.5, 65504.0, -2.0]);
    let b = t(DType::F16, &[2, 2], &[0.25, 0.5, -65504.0, 1024.0]);
    let out = m.invoke("f16_add", &[a, b]).unwrap();
    assert_eq!(out[0].dtype(), DType::F16);
    assert_eq!(out[0].shape(), &[2, 2]);
    assert_eq!(out[0].to_f64_vec(), vec![1.25, 1.0, 0.0, 1022.0]);
}

const INTS: &str = r#"
func.func @ints(%p: tensor<4xi1>, %a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<2xi64>) -> (tensor<4xi32>, tensor<4xi1>, tensor<2xi64>, tensor<4xi32>) {
  %0 = "stablehlo.select"(%p, %a, %b) : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "stablehlo.not"(%p) : (tensor<4xi1>) -> tensor<4xi1>
  %2 = "stablehlo.add"(%c, %c) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %0, %1, %2, %a : tensor<4xi32>, tensor<4xi1>, tensor<2xi64>, tensor<4xi32>
}
func.func @small_ints(%a: tensor<3xi8>, %b: tensor<3xi16>, %c: tensor<3xui8>) -> (tensor<3xi8>, tensor<3xi16>, tensor<3xui8>) {
  %0 = "stablehlo.negate"(%a) : (tensor<3xi8>) -> tensor<3xi8>
  %1 = "stablehlo.add"(%b, %b) : (tensor<3xi16>, tensor<3xi16>) -> tensor<3xi16>
  %2 = "stablehlo.add"(%c, %c) : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  return %0, %1, %2 : tensor<3xi8>, tensor<3xi16>, tensor<3xui8>
}
"#;

#[test]
fn i1_select_i32_passthrough_and_i64_multiple_results() {
    let m = load(INTS);
    let p = t(DType::Bool, &[4], &[1.0, 0.0, 1.0, 0.0]);
    let a = t(DType::I32, &[4], &[1.0, -2.0, 3.0, i32::MAX as f64]);
    let b = t(DType::I32, &[4], &[5.0, 6.0, 7.0, i32::MIN as f64]);
    // 5e9 does not fit in 32 bits: a silently narrowed i64 would show here.
    let c = Tensor::from_bytes(
        DType::I64,
        vec![2],
        [5_000_000_000i64, -3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    )
    .unwrap();
    let out = m.invoke("ints", &[p, a, b, c]).unwrap();
    assert_eq!(out.len(), 4);
    assert_eq!(out[0].dtype(), DType::I32);
    assert_eq!(out[0].to_f64_vec(), vec![1.0, 6.0, 3.0, i32::MIN as f64]);
    assert_eq!(out[1].dtype(), DType::Bool);
    assert_eq!(out[1].bytes(), &[0, 1, 0, 1]);
    assert_eq!(out[2].dtype(), DType::I64);
    let got: Vec<i64> = out[2]
        .bytes()
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, vec![10_000_000_000, -6]);
    assert_eq!(out[3].to_f64_vec(), vec![1.0, -2.0, 3.0, i32::MAX as f64]);
}

#[test]
fn i8_i16_u8_round_trip_with_wraparound() {
    let m = load(INTS);
    let a = t(DType::I8, &[3], &[1.0, -128.0, 127.0]);
    let b = t(DType::I16, &[3], &[100.0, -200.0, 20000.0]);
    let c = t(DType::U8, &[3], &[1.0, 100.0, 200.0]);
    let out = m.invoke("small_ints", &[a, b, c]).unwrap();
    assert_eq!(out[0].dtype(), DType::I8);
    // -(-128) wraps to -128 in two's complement i8.
    assert_eq!(out[0].to_f64_vec(), vec![-1.0, -128.0, -127.0]);
    assert_eq!(out[1].dtype(), DType::I16);
    assert_eq!(out[1].to_f64_vec(), vec![200.0, -400.0, -25536.0]);
    assert_eq!(out[2].dtype(), DType::U8);
    assert_eq!(out[2].to_f64_vec(), vec![2.0, 200.0, 144.0]);
}

#[test]
fn scalars_and_empty_tensors() {
    let m = load(
        r#"
func.func @scale(%x: tensor<f32>, %e: tensor<0x3xf32>) -> (tensor<f32>, tensor<0x3xf32>) {
  %0 = "stablehlo.multiply"(%x, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0, %e : tensor<f32>, tensor<0x3xf32>
}
"#,
    );
    let x = Tensor::from_f32(vec![], &[3.0]).unwrap();
    let e = Tensor::from_f32(vec![0, 3], &[]).unwrap();
    let out = m.invoke("scale", &[x, e]).unwrap();
    assert_eq!(out[0].shape(), &[] as &[usize]);
    assert_eq!(out[0].to_f64_vec(), vec![9.0]);
    assert_eq!(out[1].shape(), &[0, 3]);
    assert_eq!(out[1].numel(), 0);
}

#[test]
fn compiler_is_shared_across_threads_with_one_runtime_per_thread() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<parity_iree::IreeCompiler>();
    send_sync::<parity_iree::ArtifactCache>();
    let compiler = common::compiler();
    let vmfb = compiler
        .compile("add.mlir", ADD_F32.as_bytes(), &Default::default())
        .unwrap();
    let results: Vec<Vec<f64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|k| {
                let vmfb = &vmfb;
                s.spawn(move || {
                    let rt = parity_iree::IreeRuntime::new("local-task").unwrap();
                    let m = rt.load(vmfb, "add").unwrap();
                    let a = Tensor::from_f32(vec![4], &[k as f32; 4]).unwrap();
                    m.invoke("add", &[a.clone(), a]).unwrap()[0].to_f64_vec()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, vec![vec![0.0; 4], vec![2.0; 4], vec![4.0; 4]]);
}
