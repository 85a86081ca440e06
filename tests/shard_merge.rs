//! `parity check --shard i/n` and `parity report --merge` end to end on the
//! committed example subject (examples/basic, the faulty module): real IREE
//! compile and run; the merged shards equal the unsharded run.

mod common;

use common::{basic_copy, check_to, parity};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The record without what differs between two runs of the same work: times.
fn untimed(mut record: Value) -> Value {
    record["started"] = Value::Null;
    record["elapsed_s"] = Value::Null;
    // Uploads depend on how the run was split (each shard uploads its own
    // weights), like its times; the merge adds them up (checked below).
    record["provenance"]["uploads"] = Value::Null;
    for stage in record["stages"].as_array_mut().expect("stages") {
        stage["invoke_ms"] = Value::Null;
    }
    record
}

fn stage_keys(record: &Value) -> BTreeSet<(String, String, String)> {
    record["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            let f = |k: &str| s[k].as_str().expect(k).to_string();
            (f("name"), f("case"), f("mode"))
        })
        .collect()
}

/// Every number literal of a JSON text as written, with the key it belongs
/// to, leaving out the times (`elapsed_s`, `invoke_ms`): compared as text, so
/// no JSON parser can round two different numbers to the same value.
fn untimed_numbers(text: &str) -> Vec<(String, String)> {
    let mut numbers = Vec::new();
    let (mut key, mut last_string) = (String::new(), String::new());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                last_string.clear();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => last_string.extend(chars.next()),
                        '"' => break,
                        c => last_string.push(c),
                    }
                }
            }
            ':' => key = last_string.clone(),
            '-' | '0'..='9' => {
                let mut literal = c.to_string();
                while let Some(&d) = chars.peek() {
                    if !matches!(d, '0'..='9' | '.' | 'e' | 'E' | '+' | '-') {
                        break;
                    }
                    literal.push(d);
                    chars.next();
                }
                if !matches!(
                    key.as_str(),
                    "elapsed_s"
                        | "invoke_ms"
                        | "runtimes"
                        | "weight_uploads"
                        | "weight_bytes"
                        | "weight_reuses"
                        | "weight_bytes_saved"
                        | "other_uploads"
                        | "other_bytes"
                        | "parameter_loads"
                ) {
                    numbers.push((key.clone(), literal));
                }
            }
            _ => {}
        }
    }
    numbers
}

/// Runs shard `i` of `n` of `spec` into `<dir>/shard<i>`; returns its record.
fn shard(dir: &Path, spec: &str, i: usize, n: usize) -> Value {
    let out = dir.join(format!("shard{i}"));
    let arg = format!("{i}/{n}");
    let (code, stdout, stderr, record) = check_to(dir, spec, &out, &["--shard", &arg]);
    assert!(
        code == 0 || code == 1,
        "shard {arg}: {code}\n{stdout}\n{stderr}"
    );
    record.expect("shard run.json")
}

#[test]
fn three_shards_of_the_faulty_spec_merge_into_the_unsharded_record() {
    let dir = basic_copy();
    let (code, stdout, _, whole) = check_to(
        dir.path(),
        "stages-faulty.yaml",
        &dir.path().join("whole"),
        &[],
    );
    assert_eq!(code, 1, "{stdout}");
    let whole = whole.expect("run.json");
    assert!(
        whole.get("shard").is_none(),
        "an unsharded record has no shard"
    );

    let shards: Vec<Value> = (1..=3)
        .map(|i| shard(dir.path(), "stages-faulty.yaml", i, 3))
        .collect();
    // Each shard says which it is, holds the documented part, and they partition the run.
    let mut union = BTreeSet::new();
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["shard"]["index"], i + 1);
        assert_eq!(s["shard"]["count"], 3);
        assert_eq!(s["shard"]["spec_sha256"], shards[0]["shard"]["spec_sha256"]);
        let keys = stage_keys(s);
        assert!(keys.is_disjoint(&union), "shard {} overlaps", i + 1);
        union.extend(keys);
    }
    assert_eq!(union, stage_keys(&whole));
    // Isolated runs round-robin in dependency order, chained runs by case from the last shard.
    let isolated = |s: &Value| -> Vec<String> {
        s["stages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["mode"] == "isolated")
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(isolated(&shards[0]), ["layer_norm", "masked_softmax"]);
    assert_eq!(isolated(&shards[1]), ["strided_conv", "attend"]);
    assert_eq!(isolated(&shards[2]), ["scores", "proj_bf16"]);
    assert_eq!(
        shards[2]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["mode"] == "chained")
            .count(),
        6
    );
    // Shard 2 alone passes: its verdict is its own, not the run's.
    assert_eq!(shards[1]["status"], "pass");
    assert!(shards[1]["first_divergence"].is_null());

    // Merge in a scrambled order: the result does not depend on it.
    let files: Vec<String> = [3, 1, 2]
        .iter()
        .map(|i| {
            dir.path()
                .join(format!("shard{i}/run.json"))
                .display()
                .to_string()
        })
        .collect();
    let merged_path = dir.path().join("merged.json");
    let mut args = vec!["report", "--merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", merged_path.to_str().unwrap()]);
    let out = parity(dir.path(), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("FAIL: 12 stage runs"), "{stdout}");
    assert!(
        stdout.contains("first divergence: stage `layer_norm` output `normed`"),
        "{stdout}"
    );
    let merged_text = std::fs::read_to_string(&merged_path).unwrap();
    let merged: Value = serde_json::from_str(&merged_text).unwrap();
    assert_eq!(merged["first_divergence"]["stage"], "layer_norm");
    // The shards' uploads add up: every stage run's non-weight inputs once.
    let up = |r: &Value, k: &str| r["provenance"]["uploads"][0][k].as_u64().unwrap();
    assert_eq!(up(&merged, "other_uploads"), up(&whole, "other_uploads"));
    assert_eq!(up(&merged, "other_bytes"), up(&whole, "other_bytes"));
    assert_eq!(
        up(&merged, "weight_uploads") + up(&merged, "weight_reuses"),
        up(&whole, "weight_uploads") + up(&whole, "weight_reuses")
    );
    assert_eq!(untimed(merged), untimed(whole));
    // Equal in every number as written, to the last digit (a parser that
    // rounds would make the two equal as values while the texts differ).
    let whole_file = dir.path().join("whole/run.json");
    let whole_text = std::fs::read_to_string(&whole_file).unwrap();
    let numbers = untimed_numbers(&whole_text);
    assert!(numbers.len() > 100, "{}", numbers.len());
    assert_eq!(untimed_numbers(&merged_text), numbers);
    // A re-render writes back exactly what it read: the run's record and the merged one.
    for (from, text) in [(&whole_file, &whole_text), (&merged_path, &merged_text)] {
        let again = dir.path().join("again.json");
        let out = parity(
            dir.path(),
            &[
                "report",
                from.to_str().unwrap(),
                "--json",
                again.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{}", from.display());
        assert_eq!(
            &std::fs::read_to_string(&again).unwrap(),
            text,
            "{}",
            from.display()
        );
    }

    // The merged shards compare with a baseline like any run: against the
    // unsharded run nothing changed, and the run's own failure still decides the exit.
    let mut args = vec!["report", "--merge"];
    args.extend(files.iter().map(String::as_str));
    let whole_file = whole_file.display().to_string();
    args.extend(["--baseline", whole_file.as_str()]);
    let out = parity(dir.path(), &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("BASELINE PASS: 14 outputs"), "{stdout}");
    assert!(stdout.contains(" 0 regressed"), "{stdout}");
}

#[test]
fn merge_refuses_overlapping_missing_and_mismatched_shards() {
    let dir = basic_copy();
    let a = shard(dir.path(), "stages-faulty.yaml", 1, 2);
    let b = shard(dir.path(), "stages-faulty.yaml", 2, 2);
    assert_eq!(a["status"], "fail");
    assert_eq!(b["status"], "fail");
    // A shard of another spec (the passing one), in its own directory.
    let other_dir = dir.path().join("other");
    let (_, _, _, other) = check_to(dir.path(), "stages.yaml", &other_dir, &["--shard", "2/2"]);
    assert!(other.is_some());
    let file = |p: &str| dir.path().join(p).display().to_string();
    let (s1, s2, o2) = (
        file("shard1/run.json"),
        file("shard2/run.json"),
        file("other/run.json"),
    );
    let merge = |files: &[&str]| {
        let mut args = vec!["report", "--merge"];
        args.extend_from_slice(files);
        let out = parity(dir.path(), &args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = merge(&[&s1, &s1]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("overlapping shards (both are shard 1/2)") && err.contains(&s1),
        "{err}"
    );
    let (code, err) = merge(&[&s2]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("shards 1 of 2 missing") && err.contains(&s2),
        "{err}"
    );
    let (code, err) = merge(&[&s1, &o2]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("spec sha256 differs") && err.contains(&s1) && err.contains(&o2),
        "{err}"
    );
    // An unsharded record is not a shard.
    let (_, _, _, whole) = check_to(
        dir.path(),
        "stages.yaml",
        &dir.path().join("whole"),
        &["--mode", "isolated", "--stage", "layer_norm"],
    );
    assert!(whole.is_some());
    let w = file("whole/run.json");
    let (code, err) = merge(&[&s1, &w]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("{w}: not a shard record")), "{err}");
    // The two real halves merge: exit 1, the faulty stage first.
    let (code, err) = merge(&[&s2, &s1]);
    assert_eq!(code, Some(1), "{err}");

    // The failing stage runs deleted from both records: what is left would
    // pass, but each shard lacks what the plan assigned to it.
    let mut cut = Vec::new();
    for (i, mut record) in [a, b].into_iter().enumerate() {
        let stages = record["stages"].as_array_mut().unwrap();
        let before = stages.len();
        stages.retain(|s| s["status"] == "pass");
        assert!(
            stages.len() < before,
            "shard {} has failing stage runs",
            i + 1
        );
        record["status"] = "pass".into();
        record["first_divergence"] = Value::Null;
        record["chained_divergence"] = Value::Array(Vec::new());
        let path = file(&format!("cut{}.json", i + 1));
        std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
        cut.push(path);
    }
    let (code, err) = merge(&[&cut[0], &cut[1]]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: shard 1/2 does not hold what the plan assigns to it: ",
            cut[0]
        )) && err.contains("missing: `layer_norm` of case `"),
        "{err}"
    );
}

#[test]
fn shard_with_bisect_is_refused() {
    let dir = basic_copy();
    let (code, _, stderr, record) = check_to(
        dir.path(),
        "stages-faulty.yaml",
        &dir.path().join("out"),
        &["--shard", "1/2", "--bisect"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--bisect cannot be combined with --shard"),
        "{stderr}"
    );
    assert!(record.is_none());
    let (code, _, stderr, _) = check_to(
        dir.path(),
        "stages-faulty.yaml",
        &dir.path().join("out"),
        &["--shard", "3/2"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("invalid shard `3/2`"), "{stderr}");
}
