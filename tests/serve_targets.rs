//! `parity serve --target a,b`: the bundled scenario served by the
//! in-process engine on two spec targets one after the other, merged into
//! one record (every request names its target), and a server under test
//! refused with a target list. Real IREE, real dumps.

mod common;

use common::{parity, repo, root_spec_in};
use serde_json::Value;
use std::path::Path;

/// The root spec with absolute paths and a second CPU target, `cpu2`, of
/// the same compile options (its artifacts are `cpu`'s: nothing recompiles),
/// and the one-clip scenario serving it, in `dir`.
fn scenario_on_two_cpus(dir: &Path) -> std::path::PathBuf {
    let root = repo();
    let spec = std::fs::read_to_string(root_spec_in(dir)).unwrap();
    let two = "    vulkan: {backend: vulkan-spirv, device: vulkan}\n";
    assert!(spec.contains(two), "stages.yaml's targets changed");
    let spec = spec.replacen(
        two,
        "    cpu2: {backend: llvm-cpu, device: local-task}\n",
        1,
    );
    std::fs::write(dir.join("stages.yaml"), spec).unwrap();
    let scenario = dir.join("one-clip-scenario.yaml");
    std::fs::write(
        &scenario,
        format!(
            "version: 1\nspec: stages.yaml\nmodule: {}/subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz\nslots: 2\nrequests:\n  - {{id: one_clip, case: full128, max_new_tokens: 8, arrive: 0}}\n",
            root.display()
        ),
    )
    .unwrap();
    scenario
}

/// `parity serve SCENARIO --target cpu,cpu2 --out-dir DIR EXTRA` from the
/// repository root: (exit code, stdout).
fn serve(dir: &Path, scenario: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "serve",
        scenario.to_str().unwrap(),
        "--target",
        "cpu,cpu2",
        "--out-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = parity(&repo(), &args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn a_scenario_served_on_two_targets_names_each_requests_target() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_on_two_cpus(dir.path());
    let (code, out) = serve(dir.path(), &scenario, &[]);
    assert_eq!(code, 0, "{out}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("serving.json")).unwrap())
            .unwrap();
    assert_eq!(r["targets"], serde_json::json!(["cpu", "cpu2"]));
    let requests = r["requests"].as_array().unwrap();
    let on: Vec<&str> = requests
        .iter()
        .map(|q| q["target"].as_str().unwrap())
        .collect();
    assert_eq!(on, ["cpu", "cpu2"]);
    // Same compile options, same tokens: both pass, nothing to label.
    assert_eq!(requests[0]["tokens"], requests[1]["tokens"]);
    assert_eq!(requests[0]["tokens"].as_array().unwrap().len(), 8);
    assert!(requests.iter().all(|q| q["status"] == "pass"), "{r}");
    assert!(r.get("triangulation").is_none(), "{r}");
    assert!(out.contains("one_clip @cpu2"), "{out}");
    assert!(
        out.contains("triangulation over cpu, cpu2: 0 failing requests"),
        "{out}"
    );
    let page = std::fs::read_to_string(dir.path().join("serving.html")).unwrap();
    assert!(
        page.contains("targets cpu, cpu2"),
        "the HTML names both targets"
    );
}

#[test]
fn a_server_under_test_takes_no_target_list() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_on_two_cpus(dir.path());
    let (code, out) = serve(dir.path(), &scenario, &["--server", "http://127.0.0.1:9"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("several targets are served by parity's in-process engine"),
        "{out}"
    );
}
