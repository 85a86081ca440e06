//! `parity bisect --target a,b`: the stages run on each target, and bisect
//! runs on the first target whose stage diverges (not on the first target).

mod common;

use common::{basic_copy, compile_vmfb, parity};
use serde_json::Value;
use std::path::Path;

const LEGACY: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";

/// `parity bisect SPEC ARGS` in `dir`: exit code, output, record.
fn bisect(dir: &Path, spec: &str, args: &[&str]) -> (i32, String, Value) {
    let json = dir.join("out/bisect.json");
    let mut all = vec![
        "bisect",
        spec,
        "--json",
        json.to_str().unwrap(),
        "--repro-dir",
        "out/repro",
    ];
    all.extend_from_slice(args);
    let o = parity(dir, &all);
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let record = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|e| panic!("no bisect.json ({e}): {out}"));
    (o.status.code().unwrap_or(-1), out, record)
}

/// The faulty model (variance divided by N-1) as the subject, and two
/// targets: `good`, which runs its own prebuilt build of the correct model,
/// and `port`, which compiles the faulty MLIR.
fn good_and_faulty() -> tempfile::TempDir {
    let dir = basic_copy();
    let mlir = std::fs::read(dir.path().join("model.mlir")).unwrap();
    let vmfb = compile_vmfb(
        "model.mlir",
        &mlir,
        "llvm-cpu",
        &[
            "--iree-input-type=stablehlo",
            "--iree-llvmcpu-target-cpu=generic",
        ],
    );
    std::fs::write(dir.path().join("good.vmfb"), vmfb).unwrap();
    let path = dir.path().join("stages-faulty.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(LEGACY),
        "examples/basic/stages-faulty.yaml changed"
    );
    let targets = "  targets:\n    good: {backend: llvm-cpu, device: local-task, modules: {basic: good.vmfb}}\n    port: {backend: llvm-cpu, device: local-sync}\n";
    std::fs::write(&path, text.replacen(LEGACY, targets, 1)).unwrap();
    dir
}

#[test]
fn bisect_runs_on_the_first_target_whose_stage_diverges() {
    let dir = good_and_faulty();
    let (code, out, r) = bisect(dir.path(), "stages-faulty.yaml", &["--target", "good,port"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(r["target"], "port", "{out}");
    assert_eq!(r["stage"], "layer_norm", "{out}");
    assert!(
        r["first_divergent_op"].is_object() || r["region"].is_object(),
        "{r:#}"
    );
    assert!(
        out.contains("bisect: stage `layer_norm` case `default` target `port`"),
        "{out}"
    );
}

#[test]
fn a_target_running_its_own_prebuilt_module_is_not_bisected_through_the_subjects_mlir() {
    // The subject is the correct model; the target `bad` runs its own
    // prebuilt build of the faulty one. layer_norm diverges there, and the
    // subject's MLIR is another program than the one that diverged: bisect
    // refuses (exit 2) instead of slicing the wrong program.
    let dir = basic_copy();
    let mlir = std::fs::read(dir.path().join("model_faulty.mlir")).unwrap();
    let vmfb = compile_vmfb(
        "model_faulty.mlir",
        &mlir,
        "llvm-cpu",
        &[
            "--iree-input-type=stablehlo",
            "--iree-llvmcpu-target-cpu=generic",
        ],
    );
    std::fs::write(dir.path().join("faulty.vmfb"), vmfb).unwrap();
    let path = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let targets = "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    bad: {backend: llvm-cpu, device: local-task, modules: {basic: faulty.vmfb}}\n";
    std::fs::write(&path, text.replacen(LEGACY, targets, 1)).unwrap();
    let (code, out, r) = bisect(dir.path(), "stages.yaml", &["--target", "cpu,bad"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(r["target"], "bad", "{r:#}");
    assert_eq!(r["stage"], "layer_norm", "{r:#}");
    assert!(r["first_divergent_op"].is_null(), "{r:#}");
    let message = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "stage `layer_norm` runs a prebuilt vmfb (./faulty.vmfb); bisect needs its MLIR"
        ),
        "{message}"
    );
}
