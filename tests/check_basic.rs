//! `parity check` end to end on the committed example subject (examples/basic):
//! real IREE compile and run, real MLX oracle dumps, every report format.

mod common;

use common::{basic_copy, check, stage};
use std::collections::BTreeSet;

#[test]
fn passing_spec_exits_zero_with_full_record_and_junit() {
    let dir = basic_copy();
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let record = record.expect("run.json written");
    assert_eq!(record["schema"], "parity.run-record/2");
    assert_eq!(record["status"], "pass");
    assert!(record["first_divergence"].is_null());
    let stages = record["stages"].as_array().expect("stages");
    // 6 stages x 2 modes.
    assert_eq!(stages.len(), 12);
    let modes: BTreeSet<_> = stages.iter().map(|s| s["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, BTreeSet::from(["chained", "isolated"]));
    // layer_norm is bit-identical to MLX under the generic CPU target.
    let ln = stage(&record, "layer_norm", "isolated");
    let m = &ln["outputs"][0]["metrics"];
    assert_eq!(m["max_abs"], 0.0);
    assert_eq!(m["max_ulp"], 0);
    // The mask excludes batch 1's padded frames 5..8 of 2x8 frames x 16 channels.
    assert_eq!(m["masked_out"], 3 * 16);
    assert_eq!(m["count"], 2 * 8 * 16 - 3 * 16);
    // probs: IREE's exp differs from MLX's by a few f32 ULP, and no more.
    let probs = &stage(&record, "masked_softmax", "isolated")["outputs"][0]["metrics"];
    let ulp = probs["max_ulp"].as_u64().unwrap();
    assert!((1..=16).contains(&ulp), "probs max_ulp {ulp}");
    // The integer output is compared exactly and ULPs do not apply.
    let argmax = &stage(&record, "masked_softmax", "isolated")["outputs"][1];
    assert_eq!(argmax["dtype"], "i32");
    assert!(argmax["metrics"]["max_ulp"].is_null());
    assert_eq!(argmax["criteria"][0]["criterion"]["tolerance"], "exact");

    // Reports are shared files (0644), not tempfile's private 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("out/run.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }
    let junit = std::fs::read_to_string(dir.path().join("out/junit.xml")).expect("junit");
    assert_eq!(junit.matches("<testcase ").count(), 14, "{junit}");
    assert!(junit.contains("failures=\"0\" errors=\"0\""), "{junit}");
    assert!(stdout.contains("PASS: 12 stage runs, 12 pass"), "{stdout}");
    assert!(stdout.contains("first divergence: none"), "{stdout}");
}

#[test]
fn faulty_module_is_named_as_first_divergence_and_propagates_when_chained() {
    let dir = basic_copy();
    let (code, stdout, _, record) = check(dir.path(), "stages-faulty.yaml", &[]);
    assert_eq!(code, 1, "{stdout}");
    let record = record.expect("run.json");
    assert_eq!(record["status"], "fail");
    let first = &record["first_divergence"];
    assert_eq!(first["stage"], "layer_norm");
    assert_eq!(first["output"], "normed");
    assert_eq!(first["mode"], "isolated");
    // Isolated: only the faulty stage fails, everything downstream is fed oracle inputs.
    for name in [
        "strided_conv",
        "scores",
        "masked_softmax",
        "attend",
        "proj_bf16",
    ] {
        assert_eq!(stage(&record, name, "isolated")["status"], "pass", "{name}");
    }
    // Chained: the error reaches every float stage downstream.
    for name in [
        "strided_conv",
        "scores",
        "masked_softmax",
        "attend",
        "proj_bf16",
    ] {
        assert_eq!(stage(&record, name, "chained")["status"], "fail", "{name}");
    }
    let iso = stage(&record, "strided_conv", "isolated")["outputs"][0]["metrics"]["max_abs"]
        .as_f64()
        .unwrap();
    let chained = stage(&record, "strided_conv", "chained")["outputs"][0]["metrics"]["max_abs"]
        .as_f64()
        .unwrap();
    assert!(chained > 1e-2 && iso < 1e-5, "iso {iso} chained {chained}");
    // The failed criterion reports the threshold that would have passed.
    let crit = &stage(&record, "layer_norm", "isolated")["outputs"][0]["criteria"][0];
    assert_eq!(crit["passed"], false);
    let observed = crit["observed"].as_f64().unwrap();
    assert!((0.08..0.1).contains(&observed), "{observed}");
    assert_eq!(crit["min_passing"].as_f64().unwrap(), observed);
    assert!(
        stdout.contains("first divergence: stage `layer_norm` output `normed`"),
        "{stdout}"
    );
}

#[test]
fn strict_spec_fails_every_criterion_kind_somewhere() {
    let dir = basic_copy();
    let (code, stdout, _, record) =
        check(dir.path(), "stages-strict.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}");
    let record = record.expect("run.json");
    let mut failed = BTreeSet::new();
    for s in record["stages"].as_array().unwrap() {
        for o in s["outputs"].as_array().unwrap() {
            for c in o["criteria"].as_array().unwrap() {
                if c["passed"] == false {
                    // `{"tolerance": <the spec's criterion>}` or `"padded_zero"`.
                    let kind = match (&c["criterion"], &c["criterion"]["tolerance"]) {
                        (serde_json::Value::String(s), _) => s.clone(),
                        (_, serde_json::Value::String(s)) => s.clone(),
                        (_, serde_json::Value::Object(m)) if m.len() == 1 => {
                            m.keys().next().unwrap().clone()
                        }
                        (other, _) => panic!("criterion {other}"),
                    };
                    failed.insert(kind);
                    let (obs, min) = (c["observed"].as_f64(), c["min_passing"].as_f64());
                    assert!(obs.is_some() && min.is_some(), "{c}");
                }
            }
        }
    }
    let all: BTreeSet<String> = [
        "max_abs",
        "rms",
        "rel_l2",
        "cosine_min",
        "allclose",
        "max_ulp",
        "ulp_quantile",
        "exact",
        "vs_f64",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(failed, all);
    // Only isolated mode was asked for.
    assert!(record["stages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["mode"] == "isolated"));
}

#[test]
fn second_run_reuses_the_artifact_cache() {
    let dir = basic_copy();
    let cache = dir.path().join("cache");
    let run = |out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_parity"))
            .args([
                "check",
                "stages.yaml",
                "--mode",
                "isolated",
                "--out-dir",
                out,
            ])
            .arg("--cache-dir")
            .arg(&cache)
            // One compile job: the module's functions go into one group
            // artifact (with more jobs, one per job; docs/performance.md).
            .env("PARITY_COMPILE_JOBS", "1")
            .current_dir(dir.path())
            .output()
            .expect("spawn")
    };
    assert_eq!(run("a").status.code(), Some(0));
    let entries = |ext: &str| {
        std::fs::read_dir(&cache)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == ext)
            })
            .count()
    };
    let vmfbs = entries("vmfb");
    assert_eq!(vmfbs, 1, "one module, one cached artifact");
    let stamp = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().modified().unwrap())
        .max();
    assert_eq!(run("b").status.code(), Some(0));
    let stamp2 = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().modified().unwrap())
        .max();
    assert_eq!(stamp, stamp2, "a cache hit writes nothing");
    let a = std::fs::read_to_string(dir.path().join("a/run.json")).unwrap();
    let b = std::fs::read_to_string(dir.path().join("b/run.json")).unwrap();
    let strip = |t: &str| {
        let mut v: serde_json::Value = serde_json::from_str(t).unwrap();
        v["started"] = serde_json::Value::Null;
        v["elapsed_s"] = serde_json::Value::Null;
        for s in v["stages"].as_array_mut().unwrap() {
            s["invoke_ms"] = serde_json::Value::Null;
        }
        v
    };
    assert_eq!(strip(&a), strip(&b), "same inputs, same record");
}

#[test]
fn report_rerenders_a_saved_record_with_its_exit_code() {
    let dir = basic_copy();
    let (code, stdout, _, _) = check(dir.path(), "stages-faulty.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1);
    let junit2 = dir.path().join("again.xml");
    let out = common::parity(
        dir.path(),
        &[
            "report",
            "out/run.json",
            "--junit",
            junit2.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    // The re-rendered table carries the same closing lines as the live one.
    let closing = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("first divergence"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(closing(&text), closing(&stdout));
    let original = std::fs::read_to_string(dir.path().join("out/junit.xml")).unwrap();
    assert_eq!(std::fs::read_to_string(junit2).unwrap(), original);
}

#[test]
fn stage_and_case_selection() {
    let dir = basic_copy();
    // Isolated: a selected stage runs on oracle inputs alone.
    let (code, _, _, record) = check(
        dir.path(),
        "stages.yaml",
        &["--stage", "scores", "--mode", "isolated"],
    );
    assert_eq!(code, 0);
    let record = record.unwrap();
    let stages = record["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1);
    assert_eq!(stages[0]["name"], "scores");
    assert_eq!(stages[0]["status"], "pass");
    // Chained without its upstream selected, the stage has nothing to chain
    // from: it is skipped and says why, and that alone is not an error.
    let (code, _, _, record) = check(
        dir.path(),
        "stages.yaml",
        &["--stage", "scores", "--mode", "chained"],
    );
    assert_eq!(code, 0);
    let record = record.unwrap();
    let s = &record["stages"][0];
    assert_eq!(s["status"], "skipped");
    assert!(
        s["skipped_because"]
            .as_str()
            .unwrap()
            .contains("strided_conv"),
        "{s}"
    );
    assert_eq!(record["status"], "pass");
    // A selection naming nothing is an input error, not an empty success.
    for (flag, name) in [("--case", "nope"), ("--stage", "layer_nrom")] {
        let (code, stdout, _, record) = check(dir.path(), "stages.yaml", &[flag, name]);
        assert_eq!(code, 2, "{stdout}");
        let record = record.unwrap();
        assert_eq!(record["stages"].as_array().unwrap().len(), 0);
        let msg = record["errors"][0]["message"].as_str().unwrap();
        assert!(msg.contains(name) && msg.contains("stages.yaml"), "{msg}");
    }
}

#[test]
fn a_gzip_compressed_module_runs_like_the_plain_one_and_a_damaged_one_is_exit_2() {
    use std::io::Write;
    let dir = basic_copy();
    let (code, stdout, _, plain) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}");
    let text = std::fs::read(dir.path().join("model.mlir")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    std::fs::write(dir.path().join("model.mlir.gz"), &gz).unwrap();
    let spec = std::fs::read_to_string(dir.path().join("stages.yaml"))
        .unwrap()
        .replace("{mlir: model.mlir}", "{mlir: model.mlir.gz}");
    std::fs::write(dir.path().join("stages-gz.yaml"), spec).unwrap();
    let (code, stdout, _, gzipped) = check(dir.path(), "stages-gz.yaml", &[]);
    assert_eq!(code, 0, "{stdout}");
    // Same text, same cache key, same numbers.
    let (plain, gzipped) = (plain.unwrap(), gzipped.unwrap());
    for (a, b) in plain["stages"]
        .as_array()
        .unwrap()
        .iter()
        .zip(gzipped["stages"].as_array().unwrap())
    {
        assert_eq!(a["outputs"], b["outputs"]);
    }
    assert_eq!(
        plain["provenance"]["modules"][0]["cache_key"],
        gzipped["provenance"]["modules"][0]["cache_key"]
    );
    // A truncated stream names the file and is an input error.
    std::fs::write(dir.path().join("model.mlir.gz"), &gz[..gz.len() / 2]).unwrap();
    let (code, stdout, stderr, _) = check(dir.path(), "stages-gz.yaml", &[]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("model.mlir.gz"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn the_terminal_shows_one_line_per_stage_unless_verbose() {
    let dir = basic_copy();
    let rows = |t: &str| t.lines().filter(|l| l.contains("┆ default ┆")).count();
    let (code, stdout, _, _) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}");
    // A pass: one line per stage (6), no row of the full table.
    assert_eq!(rows(&stdout), 0, "{stdout}");
    let stage_lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("┆ PASS ") && l.contains("┆ 2/2 pass "))
        .collect();
    assert_eq!(stage_lines.len(), 6, "{stdout}");
    let softmax = stage_lines
        .iter()
        .find(|l| l.starts_with("│ masked_softmax "))
        .unwrap();
    assert!(softmax.contains("probs (default, "), "{softmax}");
    // -v: every output in every mode (probs and argmax for masked_softmax).
    let (_, verbose, _, _) = check(dir.path(), "stages.yaml", &["-v"]);
    assert_eq!(rows(&verbose), 14, "{verbose}");
    // `parity report -v` re-renders the same rows.
    let again = common::parity(dir.path(), &["report", "out/run.json", "-v"]);
    assert_eq!(rows(&String::from_utf8_lossy(&again.stdout)), 14);
    // A failing run keeps its failing rows in full, and only those.
    let (code, faulty, _, _) = check(dir.path(), "stages-faulty.yaml", &[]);
    assert_eq!(code, 1, "{faulty}");
    assert_eq!(rows(&faulty), 7, "the 7 failing rows: {faulty}");
    assert!(faulty.contains("7 failing or erroring rows:"), "{faulty}");
    assert!(
        faulty.contains("max_abs 0.0898 > 2.000e-6 (passes at 0.0898)"),
        "{faulty}"
    );
}
