//! One runtime shared by several threads (a run's mode threads on one
//! target): each thread loads its own module (a VM context) on the shared
//! device, and a weight named by the same key is uploaded once for all of
//! them, whichever thread asks first. Real IREE compiler and runtime.

mod common;

use common::{compiler, ADD_F32};
use parity_iree::{CompileOptions, IreeRuntime, LoadedModule};
use parity_tensor::Tensor;

/// The runtime is shared across threads; a loaded module moves but is not shared.
#[test]
fn the_runtime_is_send_and_sync_and_a_loaded_module_is_send() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<IreeRuntime>();
    send::<LoadedModule>();
}

#[test]
fn threads_on_one_runtime_upload_a_keyed_weight_once() {
    let options = CompileOptions::new("llvm-cpu", Vec::new());
    let vmfb = compiler()
        .compile("add.mlir", ADD_F32.as_bytes(), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let runtime = IreeRuntime::new("local-task").unwrap();
    let w = Tensor::from_f32(vec![4], &[0.5, -1.0, 2.0, 8.0]).unwrap();
    let calls_per_thread: u64 = 10;
    std::thread::scope(|scope| {
        for t in 0..2u64 {
            let (runtime, vmfb, w) = (runtime.clone(), &vmfb, &w);
            scope.spawn(move || {
                let module = runtime.load(vmfb, "add").unwrap();
                for i in 0..calls_per_thread {
                    let x = (t * 100 + i) as f32;
                    let a = Tensor::from_f32(vec![4], &[x; 4]).unwrap();
                    let keys = [None, Some("w".to_string())];
                    let out = module.invoke_keyed("add", &[a, w.clone()], &keys).unwrap();
                    let x = f64::from(x);
                    assert_eq!(
                        out[0].to_f64_vec(),
                        vec![x + 0.5, x - 1.0, x + 2.0, x + 8.0]
                    );
                }
            });
        }
    });
    let stats = runtime.upload_stats();
    assert_eq!(stats.resident_uploads, 1, "{stats:?}");
    assert_eq!(stats.resident_bytes, 16, "{stats:?}");
    assert_eq!(stats.resident_reuses, 2 * calls_per_thread - 1, "{stats:?}");
    assert_eq!(stats.other_uploads, 2 * calls_per_thread, "{stats:?}");
    assert_eq!(stats.other_bytes, 16 * 2 * calls_per_thread, "{stats:?}");
    assert_eq!(stats.parameter_loads, 0, "{stats:?}");
}
