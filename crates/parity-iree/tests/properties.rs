//! Property tests against real IREE: every dtype survives the trip into a buffer
//! view, through a dispatch and back bit for bit; vmfb inspection never panics on
//! damaged modules.

mod common;

use parity_iree::{vmfb, CompileOptions, IreeRuntime, LoadedModule};
use parity_tensor::{DType, Tensor};
use proptest::prelude::*;
use std::sync::OnceLock;

/// (dtype, MLIR element type) for every dtype parity supports.
const TYPES: [(DType, &str); 10] = [
    (DType::Bool, "i1"),
    (DType::U8, "ui8"),
    (DType::I8, "i8"),
    (DType::I16, "i16"),
    (DType::I32, "i32"),
    (DType::I64, "i64"),
    (DType::F16, "f16"),
    (DType::Bf16, "bf16"),
    (DType::F32, "f32"),
    (DType::F64, "f64"),
];
const N: usize = 5;

/// One `rev_<dtype>` function per dtype: reverse a 5-vector (a real dispatch that
/// moves bits without arithmetic).
fn reverse_module() -> String {
    TYPES
        .iter()
        .map(|(d, ty)| {
            let t = format!("tensor<{N}x{ty}>");
            let body = if *ty == "ui8" {
                // IREE 3.13 fails to compile stablehlo.reverse on unsigned integers
                // (`tensor.extract` on ui8 inside linalg.generic); reverse the bits as i8.
                let s = format!("tensor<{N}xi8>");
                format!(
                    "%0 = \"stablehlo.bitcast_convert\"(%a) : ({t}) -> {s}\n  \
                     %1 = \"stablehlo.reverse\"(%0) {{dimensions = array<i64: 0>}} : ({s}) -> {s}\n  \
                     %2 = \"stablehlo.bitcast_convert\"(%1) : ({s}) -> {t}\n  return %2 : {t}"
                )
            } else {
                format!(
                    "%0 = \"stablehlo.reverse\"(%a) {{dimensions = array<i64: 0>}} : ({t}) -> {t}\n  \
                     return %0 : {t}"
                )
            };
            format!("func.func @rev_{d}(%a: {t}) -> {t} {{\n  {body}\n}}\n")
        })
        .collect()
}

fn vmfb_bytes() -> &'static [u8] {
    static VMFB: OnceLock<Vec<u8>> = OnceLock::new();
    VMFB.get_or_init(|| {
        // f64 stays f64 so its bits can be compared.
        let opts = CompileOptions::new(
            "llvm-cpu",
            vec!["--iree-input-demote-f64-to-f32=false".into()],
        );
        match common::compiler().compile("reverse.mlir", reverse_module().as_bytes(), &opts) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    })
}

thread_local! {
    // Runtimes are !Send; proptest runs cases on the test's own thread.
    static MODULE: LoadedModule = IreeRuntime::new("local-sync")
        .and_then(|rt| rt.load(vmfb_bytes(), "reverse"))
        .unwrap_or_else(|e| panic!("{e}"));
}

fn dtype_and_bytes() -> impl Strategy<Value = (DType, Vec<u8>)> {
    (0..TYPES.len()).prop_flat_map(|i| {
        let d = TYPES[i].0;
        let bytes = if d == DType::Bool {
            proptest::collection::vec(0u8..=1, N).boxed()
        } else {
            proptest::collection::vec(any::<u8>(), N * d.size()).boxed()
        };
        (Just(d), bytes)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_dtype_round_trips_bit_exactly((dtype, bytes) in dtype_and_bytes()) {
        let t = Tensor::from_bytes(dtype, vec![N], bytes.clone()).unwrap();
        let out = MODULE.with(|m| m.invoke(&format!("rev_{dtype}"), &[t])).unwrap();
        prop_assert_eq!(out.len(), 1);
        prop_assert_eq!(out[0].dtype(), dtype);
        prop_assert_eq!(out[0].shape(), &[N]);
        let want: Vec<u8> = bytes.chunks(dtype.size()).rev().flatten().copied().collect();
        prop_assert_eq!(out[0].bytes(), &want[..]);
    }

    #[test]
    fn inspect_never_panics_on_damaged_vmfb(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut v = vmfb_bytes().to_vec();
        for (at, byte) in flips {
            let i = at.index(v.len());
            v[i] = byte;
        }
        let keep = cut.index(v.len() + 1);
        let _ = vmfb::inspect(&v[..keep]);
    }
}

#[test]
fn inspect_reads_names_and_declarations_of_a_real_module() {
    let info = vmfb::inspect(vmfb_bytes()).expect("a fresh vmfb is readable");
    assert_eq!(info.name, "module");
    let names: Vec<&str> = info.exports.iter().map(|e| e.name.as_str()).collect();
    for (d, _) in TYPES {
        assert!(names.contains(&format!("rev_{d}").as_str()), "{names:?}");
    }
    let f16 = info.exports.iter().find(|e| e.name == "rev_f16").unwrap();
    assert_eq!(
        f16.declaration.as_deref(),
        Some("sync func @rev_f16(%input0: tensor<5xf16>) -> (%output0: tensor<5xf16>)")
    );
}
