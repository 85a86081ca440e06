//! Traced modules: every dispatch's inputs and outputs reach the debug sink,
//! in order, on llvm-cpu and on Vulkan (lavapipe), and tracing changes no
//! result bit.

mod common;

use common::compiler;
use parity_iree::{CompileOptions, IreeRuntime};
use parity_tensor::Tensor;
use std::cell::RefCell;
use std::rc::Rc;

/// A matmul (with its exp fused in) then a reduction: two dispatches.
const TWO_DISPATCHES: &str = r#"
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4xf32> {
  %0 = stablehlo.dot %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.exponential %0 : tensor<4x16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
"#;

fn inputs() -> Vec<Tensor> {
    let a: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin() * 0.2).collect();
    let b: Vec<f32> = (0..128).map(|i| (i as f32 * 0.11).cos() * 0.3).collect();
    vec![
        Tensor::from_f32(vec![4, 8], &a).unwrap(),
        Tensor::from_f32(vec![8, 16], &b).unwrap(),
    ]
}

type Events = Rc<RefCell<Vec<(String, Vec<Tensor>)>>>;

/// Runs the traced module on `device`: the trace events and the result.
fn traced_run(backend: &str, device: &str) -> (Vec<(String, Vec<Tensor>)>, Tensor, String) {
    let options = CompileOptions::new(backend, vec![]);
    let traced = compiler()
        .compile_traced("two.mlir", TWO_DISPATCHES.as_bytes(), &options)
        .unwrap();
    let events: Events = Rc::default();
    let sink = Rc::clone(&events);
    let rt = IreeRuntime::new(device).unwrap();
    let module = rt
        .load_traced(
            &traced.vmfb,
            "two",
            Box::new(move |key, tensors| {
                sink.borrow_mut().push((key.to_string(), tensors));
                Ok(())
            }),
        )
        .unwrap();
    let out = module.invoke("main", &inputs()).unwrap().remove(0);
    let events = events.borrow().clone();
    (events, out, traced.flow_ir)
}

fn untraced_run(backend: &str, device: &str) -> Tensor {
    let options = CompileOptions::new(backend, vec![]);
    let vmfb = compiler()
        .compile("two.mlir", TWO_DISPATCHES.as_bytes(), &options)
        .unwrap();
    let rt = IreeRuntime::new(device).unwrap();
    rt.load(&vmfb, "two")
        .unwrap()
        .invoke("main", &inputs())
        .unwrap()
        .remove(0)
}

fn check(backend: &str, device: &str) -> Vec<String> {
    let (events, out, flow_ir) = traced_run(backend, device);
    let keys: Vec<String> = events.iter().map(|(k, _)| k.clone()).collect();
    // Two dispatches, each traced as inputs then outputs.
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert!(
        keys[0].ends_with(" inputs") && keys[1].ends_with(" outputs"),
        "{keys:?}"
    );
    assert_eq!(
        keys[0].trim_end_matches(" inputs"),
        keys[1].trim_end_matches(" outputs")
    );
    assert!(keys[0].contains("matmul"), "{keys:?}");
    // The first dispatch reads the function's arguments as given.
    assert_eq!(events[0].1.len(), 2);
    assert_eq!(events[0].1[0].bytes(), inputs()[0].bytes());
    // The last dispatch's output is the function's result, bit for bit.
    assert_eq!(events[3].1[0].bytes(), out.bytes());
    // Tracing changes nothing: the untraced module gives the same bits.
    assert_eq!(out.bytes(), untraced_run(backend, device).bytes());
    // The flow IR names the executables the keys name.
    let exe = keys[0].split("::").next().unwrap();
    assert!(flow_ir.contains(exe), "{exe} not in the flow IR");
    keys
}

#[test]
fn llvm_cpu_traces_every_dispatch_in_order() {
    check("llvm-cpu", "local-task");
}

#[test]
fn vulkan_traces_the_same_dispatches_as_llvm_cpu() {
    let cpu = check("llvm-cpu", "local-task");
    let vulkan = check("vulkan-spirv", "vulkan");
    assert_eq!(cpu, vulkan);
}

#[test]
fn a_traced_compile_is_cached_on_disk_apart_from_the_untraced_one() {
    use parity_iree::{ArtifactCache, CacheOutcome};
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path());
    let options = CompileOptions::new("llvm-cpu", vec![]);
    let mlir = TWO_DISPATCHES.as_bytes();
    let (first, outcome) = cache
        .get_or_compile_traced(&compiler(), "two.mlir", mlir, &options)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    let (again, outcome) = cache
        .get_or_compile_traced(&compiler(), "two.mlir", mlir, &options)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(again.vmfb, first.vmfb);
    assert_eq!(again.flow_ir, first.flow_ir);
    // The untraced compile of the same source is another entry: a miss
    // first, and a module without the traces.
    let untraced = cache
        .get_or_compile(&compiler(), "two.mlir", mlir, &options)
        .unwrap();
    assert_eq!(untraced.outcome, CacheOutcome::Miss);
    assert_ne!(untraced.vmfb, first.vmfb);
    // A side file that is damaged is a miss, recompiled, never a module
    // without its flow IR.
    let side = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".traced.json"))
        .unwrap();
    std::fs::write(&side, b"{").unwrap();
    let (rebuilt, outcome) = cache
        .get_or_compile_traced(&compiler(), "two.mlir", mlir, &options)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    assert_eq!(rebuilt.flow_ir, first.flow_ir);
}
