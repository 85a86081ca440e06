//! `parity serve` with a serving module prebuilt per target (`vmfb:` in
//! the scenario): what a GPU machine with no compiler runs. The bundled
//! serving module is compiled here with the real IREE compiler, as a user's
//! pipeline would, then served from that vmfb alone; one built for the CPU
//! and given to the Vulkan target (Mesa's lavapipe) is refused before
//! anything runs. Real IREE, real dumps.

mod common;

use common::{compile_vmfb, parity, repo, root_spec_in};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SERVING: &str = "subject/gemma3n/serving";

/// The root spec with absolute paths, the bundled serving module compiled
/// for llvm-cpu with the spec's flags into `dir/serving.cpu.vmfb`, and its
/// calling convention (`serving-functions.json`) beside it.
fn prebuilt(dir: &Path) -> PathBuf {
    let root = repo();
    root_spec_in(dir);
    let mlir =
        parity_tensor::read_module_bytes(&root.join(SERVING).join("gemma3n_serving_f32.mlir.gz"))
            .unwrap();
    let vmfb = compile_vmfb(
        "gemma3n_serving_f32.mlir",
        &mlir,
        "llvm-cpu",
        &[
            "--iree-input-type=stablehlo",
            "--iree-llvmcpu-target-cpu=generic",
        ],
    );
    std::fs::write(dir.join("serving.cpu.vmfb"), vmfb).unwrap();
    std::fs::copy(
        root.join(SERVING).join("serving-functions.json"),
        dir.join("serving-functions.json"),
    )
    .unwrap();
    dir.join("serving.cpu.vmfb")
}

/// A one-clip scenario in `dir` whose serving module is `top` (its
/// `module:` / `vmfb:` lines).
fn scenario(dir: &Path, name: &str, top: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "version: 1\nspec: stages.yaml\n{top}slots: 2\nrequests:\n  - {{id: one_clip, case: full128, max_new_tokens: 8, arrive: 0}}\n"
        ),
    )
    .unwrap();
    path
}

/// `parity serve SCENARIO --target T --out-dir DIR`: (exit code, stdout).
fn serve(dir: &Path, scenario: &Path, target: &str) -> (i32, String) {
    let o = parity(
        &repo(),
        &[
            "serve",
            scenario.to_str().unwrap(),
            "--target",
            target,
            "--out-dir",
            dir.to_str().unwrap(),
        ],
    );
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn a_prebuilt_serving_module_serves_and_wrong_ones_are_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vmfb = prebuilt(d);

    // The vmfb alone (no `module:`): served on the CPU, the oracle's 8 tokens.
    let s = scenario(d, "cpu-scenario.yaml", "vmfb: {cpu: serving.cpu.vmfb}\n");
    let (code, out) = serve(d, &s, "cpu");
    assert_eq!(code, 0, "{out}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("serving.json")).unwrap()).unwrap();
    assert_eq!(r["module"], vmfb.display().to_string(), "{r}");
    let request = &r["requests"][0];
    assert_eq!(request["status"], "pass", "{r}");
    assert_eq!(request["tokens"].as_array().unwrap().len(), 8, "{r}");

    // The CPU build given to the Vulkan target: refused by the preflight,
    // naming the scenario entry, the target and the device.
    let s = scenario(
        d,
        "wrong-scenario.yaml",
        "vmfb:\n  vulkan: serving.cpu.vmfb\n",
    );
    let (code, out) = serve(d, &s, "vulkan");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("wrong-scenario.yaml:4:3: serving module `vmfb.vulkan`")
            && out.contains("is built for device \"local\" (llvm-cpu")
            && out.contains("target `vulkan` (device `vulkan`)"),
        "{out}"
    );

    // A target the scenario gives no serving module for, and no MLIR.
    let s = scenario(d, "none-scenario.yaml", "vmfb: {cpu: serving.cpu.vmfb}\n");
    let (code, out) = serve(d, &s, "vulkan");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("target `vulkan` has no serving module: `vmfb:` names `cpu`"),
        "{out}"
    );

    // A target the spec does not declare.
    let s = scenario(d, "gb10-scenario.yaml", "vmfb: {gb10: serving.cpu.vmfb}\n");
    let (code, out) = serve(d, &s, "cpu");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("gb10-scenario.yaml:3:8: `vmfb.gb10`: the spec")
            && out.contains("has no target `gb10` (targets: cpu, vulkan)"),
        "{out}"
    );
}
