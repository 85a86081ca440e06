//! Executable substitution in process: a hand-edited `hal.executable` (as
//! `--iree-hal-dump-executable-sources-to` writes it) replaces the compiled
//! one, on llvm-cpu and on Vulkan (lavapipe), traced or not; the untouched
//! executables and an unedited compile are unchanged.

mod common;

use common::compiler;
use parity_iree::{CompileOptions, IreeRuntime};
use parity_tensor::Tensor;

/// One elementwise dispatch: exp(a + b).
const ADD_EXP: &str = r#"
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.exponential %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"#;

const A: [f32; 4] = [0.5, -1.0, 0.25, 2.0];
const B: [f32; 4] = [0.25, 0.5, -0.75, -1.5];

fn run(backend: &str, device: &str, flags: Vec<String>, traced: bool) -> Vec<f64> {
    let options = CompileOptions::new(backend, flags);
    let inputs = vec![
        Tensor::from_f32(vec![4], &A).unwrap(),
        Tensor::from_f32(vec![4], &B).unwrap(),
    ];
    let rt = IreeRuntime::new(device).unwrap();
    let out = if traced {
        let artifact = compiler()
            .compile_traced("add_exp.mlir", ADD_EXP.as_bytes(), &options)
            .unwrap();
        let module = rt
            .load_traced(&artifact.vmfb, "add_exp", Box::new(|_, _| Ok(())))
            .unwrap();
        module.invoke("main", &inputs).unwrap().remove(0)
    } else {
        let vmfb = compiler()
            .compile("add_exp.mlir", ADD_EXP.as_bytes(), &options)
            .unwrap();
        let module = rt.load(&vmfb, "add_exp").unwrap();
        module.invoke("main", &inputs).unwrap().remove(0)
    };
    out.to_f64_vec()
}

/// Dumps the executable sources for `backend` and returns the edited
/// `main_dispatch_0` (its add made a subtract) as a file in `dir`.
fn edited_dispatch(backend: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let dump = dir.join("dump");
    let flag = format!("--iree-hal-dump-executable-sources-to={}", dump.display());
    compiler()
        .compile(
            "add_exp.mlir",
            ADD_EXP.as_bytes(),
            &CompileOptions::new(backend, vec![flag]),
        )
        .unwrap();
    let source = std::fs::read_to_string(dump.join("module_main_dispatch_0.mlir")).unwrap();
    assert_eq!(source.matches("arith.addf").count(), 1, "{source}");
    let edited = dir.join("main_dispatch_0.mlir");
    std::fs::write(&edited, source.replace("arith.addf", "arith.subf")).unwrap();
    edited
}

fn check(backend: &str, device: &str) {
    let dir = tempfile::tempdir().unwrap();
    let edited = edited_dispatch(backend, dir.path());
    let sub = vec![format!(
        "--iree-hal-substitute-executable-source=main_dispatch_0={}",
        edited.display()
    )];
    let expect = |f: fn(f64, f64) -> f64| -> Vec<f64> {
        A.iter()
            .zip(B)
            .map(|(a, b)| f(*a as f64, b as f64).exp())
            .collect()
    };
    let close = |got: &[f64], want: &[f64]| {
        got.iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs().max(1.0))
    };
    let plain = run(backend, device, vec![], false);
    assert!(close(&plain, &expect(|a, b| a + b)), "{backend}: {plain:?}");
    for traced in [false, true] {
        let got = run(backend, device, sub.clone(), traced);
        assert!(
            close(&got, &expect(|a, b| a - b)),
            "{backend} traced={traced}: substituted run gave {got:?}"
        );
    }
}

#[test]
fn a_substituted_executable_runs_on_llvm_cpu() {
    check("llvm-cpu", "local-task");
}

#[test]
fn a_substituted_executable_runs_on_vulkan() {
    check("vulkan-spirv", "vulkan");
}

#[test]
fn an_object_substitution_is_refused_with_the_alternative() {
    let options = CompileOptions::new(
        "llvm-cpu",
        vec!["--iree-hal-substitute-executable-object=main_dispatch_0=x.o".into()],
    );
    let err = compiler()
        .compile("add_exp.mlir", ADD_EXP.as_bytes(), &options)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--iree-hal-substitute-executable-source=NAME=FILE.mlir"),
        "{err}"
    );
}
