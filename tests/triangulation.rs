//! A run over several targets (`parity check --target cpu,vulkan`) on the
//! real IREE runtime: Vulkan runs on Mesa's lavapipe (a Vulkan 1.3 driver on
//! the CPU). Every output is compared with the oracle on each target and
//! with the first target's output, and each failing output is labelled with
//! which side is off.

#[path = "common/browser.rs"]
mod browser;
mod common;

use common::{basic_copy, check, check_to, repo};
use serde_json::Value;
use std::path::Path;

const LEGACY: &str = "  target_backend: llvm-cpu\n  driver: local-task\n";
const CPU_VULKAN: &str = "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    vulkan: {backend: vulkan-spirv, device: vulkan}\n";

/// Copies the basic example's `spec` (a file of examples/basic) to `stages.yaml`
/// in `dir` with the targets cpu and vulkan.
fn on_cpu_and_vulkan(dir: &Path, spec: &str) {
    let text = std::fs::read_to_string(dir.join(spec)).unwrap();
    assert!(text.contains(LEGACY), "examples/basic/{spec} changed");
    std::fs::write(
        dir.join("stages.yaml"),
        text.replacen(LEGACY, CPU_VULKAN, 1),
    )
    .unwrap();
}

/// `parity check --target cpu,vulkan ARGS` on a copy of the basic example's
/// `spec`, expected to fail (exit 1); its stdout and record.
fn failing_on_cpu_and_vulkan(spec: &str, args: &[&str]) -> (String, Value) {
    let dir = basic_copy();
    on_cpu_and_vulkan(dir.path(), spec);
    let mut all = vec!["--target", "cpu,vulkan"];
    all.extend_from_slice(args);
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &all);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    (stdout, record.unwrap())
}

fn rows(record: &Value) -> &Vec<Value> {
    record["triangulation"].as_array().expect("a triangulation")
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

#[test]
fn a_port_fault_fails_on_both_targets_alike_and_is_labelled_port() {
    // model_faulty.mlir divides the variance by N-1: a fault of the program,
    // so every backend that compiles it is off the oracle the same way.
    let (stdout, record) = failing_on_cpu_and_vulkan(
        "stages-faulty.yaml",
        &["--stage", "layer_norm", "--stage", "strided_conv"],
    );
    let targets: Vec<&str> = record["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["cpu", "vulkan"]);
    assert_eq!(record["targets"][1]["backend"], "vulkan-spirv");
    // Every stage run names its target: 2 stages x 2 modes on each.
    let stages = record["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 8);
    for t in ["cpu", "vulkan"] {
        assert_eq!(stages.iter().filter(|s| s["target"] == t).count(), 4);
    }
    let rows = rows(&record);
    let isolated: Vec<&Value> = rows.iter().filter(|r| r["mode"] == "isolated").collect();
    assert_eq!(isolated.len(), 1, "{rows:#?}");
    let r = isolated[0];
    assert_eq!(
        (&r["stage"], &r["output"]),
        (&"layer_norm".into(), &"normed".into())
    );
    assert_eq!(r["label"], "port", "{r}");
    assert_eq!(names(&r["off"]), ["cpu", "vulkan"]);
    // The two targets agree with each other under the stage's own criteria.
    assert_eq!(r["targets"][1]["vs_first"], "pass", "{r}");
    // Both off by the same amount (the fault's 0.0898), not by noise.
    let off = |i: usize| r["targets"][i]["max_abs"].as_f64().unwrap();
    assert!(off(0) > 0.05 && (off(0) - off(1)).abs() < 1e-5, "{r}");
    // In chained mode the fault propagates into strided_conv on both alike.
    assert!(rows
        .iter()
        .filter(|r| r["mode"] == "chained")
        .all(|r| r["label"] == "port"));
    assert_eq!(record["first_divergence"]["target"], "cpu");
    assert!(
        stdout.contains(
            "triangulation over cpu, vulkan: 3 failing outputs (0 backend-specific, 3 port"
        ) && stdout.contains("port: `layer_norm` output `normed` (default, isolated)")
            && stdout.contains("layer_norm @vulkan"),
        "{stdout}"
    );
}

#[test]
fn a_vulkan_only_divergence_is_backend_specific_and_the_first_divergence_is_on_vulkan() {
    // Measured (docs/gpu.md): the bundled subject's lm_layer_0 in case
    // two_clips is off the oracle on vulkan-spirv over lavapipe by 10 to
    // 24,227 (it varies from run to run), while llvm-cpu is within 5.1e-5 of
    // it. Same MLIR, same inputs (isolated mode): the backend, not the port.
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr, record) = check_to(
        &repo(),
        "stages.yaml",
        out.path(),
        &[
            "--target",
            "cpu,vulkan",
            "--stage",
            "lm_layer_0",
            "--case",
            "two_clips",
            "--mode",
            "isolated",
            "--markdown",
            out.path().join("summary.md").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let rows = rows(&record);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let r = &rows[0];
    assert_eq!(r["label"], "backend-specific", "{r}");
    assert_eq!(names(&r["off"]), ["vulkan"]);
    assert_eq!(r["targets"][0]["status"], "pass");
    assert_eq!(r["targets"][1]["status"], "fail");
    assert_eq!(r["targets"][1]["vs_first"], "fail");
    assert!(r["targets"][1]["max_abs"].as_f64().unwrap() > 1.0, "{r}");
    // The first divergence, and so `--bisect`, is on the target that fails.
    assert_eq!(record["first_divergence"]["target"], "vulkan");
    assert_eq!(record["first_divergence"]["stage"], "lm_layer_0");
    assert!(
        stdout.contains("on target `vulkan`")
            && stdout.contains("vulkan off, cpu matches the oracle: the backend, not the port"),
        "{stdout}"
    );
    // Every renderer says it: Markdown, JUnit (a suite per target) and HTML.
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(
        md.contains("triangulation over cpu, vulkan: 1 failing output (1 backend-specific")
            && md.contains("lm\\_layer\\_0 @vulkan"),
        "{md}"
    );
    let junit = std::fs::read_to_string(out.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("classname=\"parity.vulkan.two_clips.isolated\"")
            && junit.contains("classname=\"parity.cpu.two_clips.isolated\""),
        "{junit}"
    );
    // The HTML page, in a real headless Chromium: the triangulation table
    // (one row, backend-specific, vulkan's cell failing) and the verdict.
    let mut b = browser::Browser::launch();
    let page = b.open(&out.path().join("report.html"));
    let eval = |b: &mut browser::Browser, js: &str| b.eval(&page, js);
    assert_eq!(
        eval(
            &mut b,
            "document.querySelectorAll('table.triangulation tbody tr').length"
        ),
        serde_json::json!(1)
    );
    assert_eq!(
        eval(
            &mut b,
            "document.querySelector('table.triangulation tbody tr').dataset.label"
        ),
        serde_json::json!("backend-specific")
    );
    assert_eq!(
        eval(
            &mut b,
            "document.querySelector('table.triangulation td[data-target=vulkan]').className"
        ),
        serde_json::json!("fail")
    );
    let verdict = eval(
        &mut b,
        "document.querySelector('.first-divergence').textContent",
    );
    assert!(
        verdict.as_str().unwrap().contains("on target `vulkan`"),
        "{verdict}"
    );
    // The overview grid: a row per stage and target, the marker on vulkan's cell.
    let grid = eval(
        &mut b,
        "Array.from(document.querySelectorAll('table.overview tbody tr')).map(tr => \
         [tr.dataset.stage, Array.from(tr.querySelectorAll('td')).map(td => \
         [td.dataset.case, td.dataset.status, td.hasAttribute('data-first-divergence')])])",
    );
    assert_eq!(
        grid,
        serde_json::json!([
            ["lm_layer_0 @cpu", [["two_clips", "pass", false]]],
            ["lm_layer_0 @vulkan", [["two_clips", "fail", true]]]
        ])
    );
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("triangulation");
    b.screenshot(&page, &shots.join("backend-specific.png"));
    assert!(
        b.errors(&page).is_empty(),
        "console errors: {:?}",
        b.errors(&page)
    );
}

#[test]
fn one_target_has_no_triangulation_and_the_same_rows_as_before() {
    let dir = basic_copy();
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    assert!(record.get("triangulation").is_none(), "{record}");
    assert_eq!(record["targets"][0]["name"], "default");
    assert!(
        !stdout.contains("triangulation") && !stdout.contains(" @default"),
        "{stdout}"
    );
}

#[test]
fn an_unknown_second_target_is_exit_2_before_anything_runs() {
    let dir = basic_copy();
    on_cpu_and_vulkan(dir.path(), "stages.yaml");
    let (code, stdout, stderr, record) =
        check(dir.path(), "stages.yaml", &["--target", "cpu,gb10"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.unwrap();
    assert!(record["stages"].as_array().unwrap().is_empty());
    let message = record["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("no target named `gb10`"), "{message}");
}

#[test]
fn when_the_f64_truth_sides_with_production_on_every_target_the_label_is_oracle() {
    // stages-strict.yaml: proj_bf16 fails on purpose (MLX rounds to bf16
    // twice, IREE once), and its f64 truth is nearer to production.
    let (_, record) = failing_on_cpu_and_vulkan(
        "stages-strict.yaml",
        &["--stage", "proj_bf16", "--mode", "isolated"],
    );
    let rows = rows(&record);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["label"], "oracle", "{:#}", rows[0]);
    for t in rows[0]["targets"].as_array().unwrap() {
        let [production, oracle] = [&t["vs_f64"][0], &t["vs_f64"][1]].map(|v| v.as_f64().unwrap());
        assert!(production < oracle, "{t}");
    }
}

#[test]
fn fuzz_takes_a_list_and_a_problem_common_to_every_target_is_said_once() {
    // `parity fuzz --target a,b` runs on each target (tests/fuzz_targets.rs);
    // a spec with no `fuzz:` section fails the same way on both: one error.
    let dir = tempfile::tempdir().unwrap();
    let out = common::parity(
        &repo(),
        &[
            "fuzz",
            "stages.yaml",
            "--target",
            "cpu,vulkan",
            "--json",
            "-",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the record on stdout");
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{r:#}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("target `cpu`: ")
            && message.contains("the spec has no `fuzz:` section"),
        "{message}"
    );
    assert!(!stderr.contains("runs on one target"), "{stderr}");
}
