//! The fault injector and the repair search on real subjects: one seeded
//! fault of every kind injected into examples/basic (and a few into the
//! bundled gemma3n audio stages), each bisected with the real IREE compiler
//! and runtime; bisect must name the injected op (or the injector's
//! documented right answer) with the kind's evidence, in a known number of
//! probes. The full matrix (every kind x several seeds x both subjects) is
//! the ignored test at the end, or `parity bench --bisect`.

mod common;

use parity::bench::bisect::{bundled_subject, prepare, table, Outcome, Row};
use parity::bisect::inject::FaultKind;
use std::io::Write as _;

fn run(subject: &str, cases: &[(FaultKind, u64)]) -> Vec<Row> {
    let root = common::repo();
    let prepared = prepare(bundled_subject(&root, subject).unwrap(), None).unwrap();
    let work = tempfile::tempdir().unwrap();
    let cache = common::cache_dir();
    let mut rows = Vec::new();
    for &(kind, seed) in cases {
        let dir = work.path().join(format!("{}-{seed}", kind.name()));
        let row = prepared.run_one(kind, seed, &dir, &cache, None);
        let _ = writeln!(
            std::io::stderr(),
            "{subject} {} seed {seed}: {} in {} probes, {:.1}s: {} | {} | {}",
            kind.name(),
            row.outcome.name(),
            row.probes,
            row.wall.as_secs_f64(),
            row.stage,
            row.what,
            row.said
        );
        rows.push(row);
    }
    let _ = writeln!(std::io::stderr(), "{}", table(&rows));
    rows
}

fn assert_named(row: &Row, probes: usize) {
    let kind = row.kind;
    assert_eq!(
        row.outcome,
        Outcome::Exact,
        "{kind}: {} -> {}",
        row.what,
        row.said
    );
    let (op, evidence) = row.named.expect("an op is named");
    assert!(
        row.answers.contains(&op),
        "{kind}: #{op} not in {:?}",
        row.answers
    );
    assert_eq!(
        serde_json::to_value(evidence).unwrap(),
        kind.evidence(),
        "{kind}: {}",
        row.said
    );
    assert_eq!(row.probes, probes, "{kind}: probes ({})", row.what);
}
