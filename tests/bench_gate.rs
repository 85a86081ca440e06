//! `parity bench --spec S --target a,b`: the gate's table over several
//! targets, each target's warm gate alone, and the one-run-vs-apart line
//! (a table, not a timed test: the rows and their runs are asserted, never
//! a time).

mod common;

use common::{basic_copy, parity};

#[test]
fn the_gate_bench_over_two_targets_prints_each_target_alone_and_the_ratio() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let legacy = "  target_backend: llvm-cpu\n  driver: local-task\n";
    assert!(text.contains(legacy), "examples/basic/stages.yaml changed");
    let two = "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n    cpu2: {backend: llvm-cpu, device: local-task}\n";
    std::fs::write(&spec, text.replacen(legacy, two, 1)).unwrap();
    let work = dir.path().join("work");
    let out = parity(
        dir.path(),
        &[
            "bench",
            "--elems",
            "0",
            "--spec",
            "stages.yaml",
            "--target",
            "cpu,cpu2",
            "--work-dir",
            work.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("run "))
        .skip(1)
        .take(5)
        .collect();
    let names: Vec<&str> = rows.iter().map(|l| l.split("  ").next().unwrap()).collect();
    assert_eq!(
        names,
        [
            "cold",
            "warm",
            "one function edited",
            "warm, cpu only",
            "warm, cpu2 only"
        ],
        "{stdout}"
    );
    // Both targets share compile options: the cold run compiles each
    // artifact once, and nothing after it but the edited function.
    let compiled = |row: &str| -> usize {
        row.split_whitespace()
            .rev()
            .nth(3)
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(compiled(rows[0]) > 0, "{stdout}");
    assert_eq!(compiled(rows[1]), 0, "{stdout}");
    assert_eq!(compiled(rows[3]), 0, "{stdout}");
    assert_eq!(compiled(rows[4]), 0, "{stdout}");
    assert!(rows.iter().all(|r| r.ends_with("Pass")), "{stdout}");
    assert!(
        stdout.contains("targets cpu,cpu2 in one run, warm: "),
        "{stdout}"
    );
}
