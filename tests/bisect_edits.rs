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
        let _ = writeln!(std::io::stderr(), "{subject} {}", row.line());
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
    let evidence = serde_json::to_value(evidence).unwrap();
    assert!(
        kind.evidence().iter().any(|e| evidence == *e),
        "{kind}: {evidence} ({})",
        row.said
    );
    assert_eq!(row.probes, probes, "{kind}: probes ({})", row.what);
}

#[test]
fn every_kind_the_basic_example_has_is_named_exactly() {
    // examples/basic has no slice that can shift, no pad and no top-level
    // compare: those three kinds are the next test's.
    let cases = [
        (FaultKind::WrongBinary, 0),
        (FaultKind::WrongUnary, 0),
        (FaultKind::SwappedOperands, 2),
        (FaultKind::WrongConstant, 0),
        (FaultKind::MissingOp, 0),
        (FaultKind::ExtraOp, 0),
        (FaultKind::WrongDims, 0),
        (FaultKind::NonFinite, 0),
        (FaultKind::Rounding, 0),
    ];
    let rows = run("basic", &cases);
    for row in &rows {
        // The untapped baseline, the region tapped in production and in the
        // f64 shadow, every op alone on the shadow's inputs, then one more:
        // the repair search's module, or for a rounding fault (inferred) the
        // confirmation probe (the region with the op's shadow value).
        let probes = 5;
        assert_named(row, probes);
    }
}

#[test]
fn an_extra_negate_before_an_odd_chain_is_ambiguous_between_equivalent_fixes() {
    // Seed 2 of extra-op: a negate after proj_bf16's convert. Bypassing it,
    // or negating later through the linear ops after it, computes the same
    // function, so bisect names no op, lists the right one, and shows the
    // repairs agree on perturbed inputs where the unedited region does not.
    let rows = run("basic", &[(FaultKind::ExtraOp, 2)]);
    let row = &rows[0];
    assert_eq!(
        row.outcome,
        Outcome::Ambiguous,
        "{} -> {}",
        row.what,
        row.said
    );
    assert!(row.named.is_none(), "{}", row.said);
    assert_eq!(row.equivalent, Some(true), "{}", row.said);
}

/// A hand-written stage with a pad, two slices and a comparison (what
/// examples/basic lacks): a difference over a window of 3,
/// `d[i] = x[i+1] - x[i-2]` (x zero-padded), then `d > 0 ? d : d/2 + 1`.
const WINDOW: &str = r#"
func.func @window(%x: tensor<16xf32>) -> tensor<14xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [2], high = [1], interior = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<19xf32>
  %a = stablehlo.slice %p [0:14] : (tensor<19xf32>) -> tensor<14xf32>
  %b = stablehlo.slice %p [3:17] : (tensor<19xf32>) -> tensor<14xf32>
  %d = stablehlo.subtract %b, %a : tensor<14xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<14xf32>
  %c = stablehlo.compare GT, %d, %zero : (tensor<14xf32>, tensor<14xf32>) -> tensor<14xi1>
  %half = stablehlo.constant dense<0.5> : tensor<14xf32>
  %one = stablehlo.constant dense<1.0> : tensor<14xf32>
  %dh = stablehlo.multiply %d, %half : tensor<14xf32>
  %h = stablehlo.add %dh, %one : tensor<14xf32>
  %s = stablehlo.select %c, %d, %h : tensor<14xi1>, tensor<14xf32>
  return %s : tensor<14xf32>
}
"#;

fn window_subject(dir: &std::path::Path) -> parity::bench::bisect::Subject {
    std::fs::write(dir.join("model.mlir"), WINDOW).unwrap();
    std::fs::write(
        dir.join("stages.yaml"),
        r#"version: 1
subject:
  modules:
    m: {mlir: model.mlir}
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
oracle: oracle
stages:
  - name: window
    module: m
    function: window
    args:
      - {oracle: x}
    outputs:
      - name: out
        oracle: out
        tolerance: [{max_ulp: 2}]
"#,
    )
    .unwrap();
    // Small integers with repeats, so some differences are exactly zero and
    // a comparison's direction matters at equality too.
    let x: Vec<f32> = (0..16).map(|i| ((i * 7 % 5) as f32) - 2.0).collect();
    let at = |i: i64| {
        if (0..16).contains(&i) {
            x[i as usize]
        } else {
            0.0
        }
    };
    let out: Vec<f32> = (0..14i64)
        .map(|i| {
            let d = at(i + 1) - at(i - 2);
            if d > 0.0 {
                d
            } else {
                d * 0.5 + 1.0
            }
        })
        .collect();
    common::write_f32_store(&dir.join("oracle"), &[("x", &x), ("out", &out)]);
    parity::bench::bisect::Subject {
        name: "window".into(),
        spec: parity_spec::Spec::load(dir.join("stages.yaml")).unwrap(),
        case: "default".into(),
        stages: vec!["window".into()],
        exclude: vec![],
    }
}

#[test]
fn pads_slices_and_comparisons_are_named_exactly() {
    // A fixed directory: the module's locations name it, so the same path
    // keeps the artifact cache warm from one run to the next.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bisect_edits_window");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prepared = prepare(window_subject(&dir), None).unwrap();
    let cache = common::cache_dir();
    let mut rows = Vec::new();
    for (kind, seed) in [
        (FaultKind::PadMoved, 0),
        (FaultKind::SliceOffByOne, 0),
        (FaultKind::FlippedComparison, 0),
    ] {
        let work = dir.join(format!("{}-{seed}", kind.name()));
        let row = prepared.run_one(kind, seed, &work, &cache, None);
        let _ = writeln!(
            std::io::stderr(),
            "window {kind} seed {seed}: {} in {} probes: {} | {}",
            row.outcome.name(),
            row.probes,
            row.what,
            row.said
        );
        rows.push(row);
    }
    let _ = writeln!(std::io::stderr(), "{}", table(&rows));
    for row in &rows {
        assert_named(row, 5);
    }
}

#[test]
fn a_moved_pad_in_gemma3ns_first_convolution_is_named_exactly() {
    // One fault in the bundled subject's smallest stage (CI time): the pad
    // before sscp_conv_0's convolution moved between its ends, with the
    // oracle's tensors of the scope above it removed, so bisect goes
    // through the shadow and the repair search on a region of the real
    // model. The full matrix is the ignored test below.
    let root = common::repo();
    let mut subject = bundled_subject(&root, "gemma3n").unwrap();
    subject.stages = vec!["sscp_conv_0".into()];
    let prepared = prepare(subject, None).unwrap();
    let work = tempfile::tempdir().unwrap();
    let row = prepared.run_one(
        FaultKind::PadMoved,
        0,
        work.path(),
        &common::cache_dir(),
        None,
    );
    let _ = writeln!(
        std::io::stderr(),
        "gemma3n pad-moved seed 0: {} in {} probes, {:.1}s: {} | {}",
        row.outcome.name(),
        row.probes,
        row.wall.as_secs_f64(),
        row.what,
        row.said
    );
    assert_eq!(row.stage, "sscp_conv_0");
    assert!(row.what.contains("stablehlo.pad"), "{}", row.what);
    assert_named(&row, 5);
}

/// Every kind x 3 seeds x both subjects (about 15 minutes warm on 2 busy
/// cores; `parity bench --bisect` prints the same table). Run with
/// `cargo test --test bisect_edits -- --ignored --nocapture`. Fails on a
/// wrong answer or a crash; the exact rate is printed, not asserted.
#[test]
#[ignore]
fn the_full_fault_matrix() {
    let mut all = Vec::new();
    for subject in ["basic", "gemma3n"] {
        let cases: Vec<(FaultKind, u64)> = FaultKind::ALL
            .iter()
            .flat_map(|&k| (0..3).map(move |s| (k, s)))
            .collect();
        all.extend(run(subject, &cases));
    }
    let _ = writeln!(std::io::stderr(), "{}", table(&all));
    let bad: Vec<String> = all
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Wrong | Outcome::Crash))
        .map(|r| {
            format!(
                "{} {} seed {}: {} -> {}",
                r.subject, r.kind, r.seed, r.what, r.said
            )
        })
        .collect();
    assert!(bad.is_empty(), "wrong or crashed:\n{}", bad.join("\n"));
}
