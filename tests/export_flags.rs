//! One export convention for every command (issue 33): `--json`, `--junit`,
//! `--markdown` and `--html` each take a PATH, `-` is stdout (and then the
//! report replaces the text there); the old `--json` switch is refused with
//! the new spelling, and never writes over an input.

mod common;

use common::{parity, repo};
use serde_json::Value;
use std::path::Path;

fn oracle(name: &str) -> String {
    repo()
        .join("examples/basic/oracle")
        .join(name)
        .display()
        .to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn compare_takes_a_path_for_every_export_and_dash_for_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (oracle("normed.npy"), oracle("normed.npy"));
    // `-`: the JSON record and nothing else on stdout.
    let out = parity(dir.path(), &["compare", &a, &b, "--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON record");
    assert_eq!(v["schema"], "parity.compare/1");
    // Files: the text stays on stdout, each export is written where asked.
    let out = parity(
        dir.path(),
        &[
            "compare",
            &a,
            &b,
            "--json",
            "r/c.json",
            "--junit",
            "r/c.xml",
            "--markdown",
            "r/c.md",
            "--html",
            "r/c.html",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
    let read = |f: &str| std::fs::read_to_string(dir.path().join("r").join(f)).unwrap();
    let saved: Value = serde_json::from_str(&read("c.json")).unwrap();
    assert_eq!(saved, v, "the same record in the file as on stdout");
    assert!(read("c.xml").contains("<testsuites"), "{}", read("c.xml"));
    assert!(read("c.md").contains("PASS"), "{}", read("c.md"));
    assert!(read("c.html").starts_with("<!DOCTYPE html>"));
    // The saved record re-renders; `--markdown -` prints only the Markdown.
    let out = parity(dir.path(), &["report", "r/c.json", "--markdown", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), read("c.md"));
}

#[test]
fn the_old_switch_is_refused_with_the_new_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (oracle("normed.npy"), oracle("conv.npy"));
    for args in [
        vec!["compare", &a, &b, "--json"],
        vec!["compare", &a, &b, "--json", "--atol", "0"],
        vec!["tokens", "stages.yaml", "--json"],
    ] {
        let out = parity(dir.path(), &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("`--json -` prints the record on stdout"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // `parity tokens --json SPEC` once printed the record of SPEC: now SPEC
    // would be the path, and a spec is never an export's path.
    let spec = dir.path().join("my.yaml");
    std::fs::write(&spec, "version: 1\n").unwrap();
    let out = parity(dir.path(), &["tokens", "--json", "my.yaml"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`my.yaml` names an input file"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&spec).unwrap(), "version: 1\n");
}

#[test]
fn two_exports_on_stdout_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = oracle("normed.npy");
    let out = parity(
        dir.path(),
        &["compare", &a, &a, "--json", "-", "--junit", "-"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--json and --junit ask for stdout"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Every export of `tokens`, `fuzz` and `check` moves, or goes to stdout;
/// a spec that does not load still gets its error record everywhere asked.
#[test]
fn tokens_fuzz_and_check_move_every_export() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "version: 1\nnope: 1\n").unwrap();
    for (command, schema, stem) in [
        ("tokens", "parity.tokens/1", "tokens"),
        ("fuzz", "parity.fuzz/1", "fuzz"),
        ("check", "parity.run-record/2", "run"),
    ] {
        let out_dir = format!("out-{command}");
        let html = format!("{command}.html");
        let junit = format!("{command}.xml");
        let md = format!("{command}.md");
        let out = parity(
            dir.path(),
            &[
                command,
                "bad.yaml",
                "--out-dir",
                &out_dir,
                "--json",
                "-",
                "--html",
                &html,
                "--junit",
                &junit,
                "--markdown",
                &md,
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command}: {}",
            text(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{command}: {e}: {}", text(&out.stdout)));
        assert_eq!(v["schema"], schema, "{command}");
        assert_eq!(v["status"], "error", "{command}");
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(read(&junit).contains("nope"), "{command}: {}", read(&junit));
        assert!(read(&html).contains("nope"), "{command}");
        assert!(read(&md).contains("nope"), "{command}: {}", read(&md));
        // The JSON went to stdout, so no file of it; the other defaults moved.
        assert!(!Path::new(&dir.path().join(&out_dir).join(format!("{stem}.json"))).exists());
    }
}
