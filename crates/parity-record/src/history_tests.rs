use super::*;
use crate::history_dir::{read_dir, HistoryError};
use crate::samples::passing_run;
use proptest::prelude::*;

/// A passing run started at `started`, with `norm`'s errors (metrics and
/// criteria) scaled by `scale`.
fn run(file: &str, started: &str, scale: f64) -> SavedRun {
    let mut record = passing_run();
    record.started = started.to_string();
    for s in record.stages.iter_mut().filter(|s| s.name == "norm") {
        for o in &mut s.outputs {
            if let Some(m) = &mut o.metrics {
                m.max_abs *= scale;
                m.rms *= scale;
                m.rel_l2 *= scale;
            }
            for c in &mut o.criteria {
                c.observed *= scale;
            }
        }
    }
    SavedRun {
        file: file.to_string(),
        label: file.trim_end_matches(".json").to_string(),
        record,
    }
}

fn build(saved: Vec<SavedRun>) -> HistoryRecord {
    HistoryRecord::build("h", saved, Band::default(), &Metric::DEFAULT).expect("runs")
}

#[test]
fn a_growth_past_the_band_is_flagged_where_it_happened() {
    let h = build(vec![
        run("c.json", "2026-12-03T09:00:00Z", 3.0),
        run("a.json", "2026-12-01T09:00:00Z", 1.0),
        run("b.json", "2026-12-02T09:00:00Z", 1.05),
    ]);
    let labels: Vec<_> = h.runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["a", "b", "c"], "ordered by start time");
    assert_eq!(h.order, HistoryOrder::Started);
    let names: Vec<_> = h.stages.iter().map(StageHistory::name).collect();
    assert_eq!(names, ["embed", "norm"]);
    let norm = &h.stages[1];
    // 5% is inside the 10% band; x3 is not.
    assert_eq!(norm.growth.len(), 1, "{:?}", norm.growth);
    let g = &norm.growth[0];
    assert_eq!((g.run, g.since, g.metric), (2, 1, Metric::MaxAbs));
    assert_eq!((g.output.as_str(), g.mode), ("normed", Mode::Isolated));
    assert!((g.current / g.previous - 3.0 / 1.05).abs() < 1e-9);
    // max_abs, rms and rel_l2 of normed, isolated and chained.
    assert_eq!(g.regressed, 6);
    assert!(h.stages[0].growth.is_empty(), "embed did not move");
    assert_eq!(h.status, Status::Fail, "the newest run grew");
    assert_eq!(h.exit_code(), ExitCode::Fail);
    // Headroom per run: 2e-7 / 1e-5, scaled.
    let ratios: Vec<f64> = norm
        .points
        .iter()
        .map(|p| p.as_ref().unwrap().ratio)
        .collect();
    for (r, want) in ratios.iter().zip([0.02, 0.021, 0.06]) {
        assert!((r - want).abs() < 1e-9, "{ratios:?}");
    }
    // A fourth run back at the old level: the growth stays flagged at c, the history passes.
    let mut saved = vec![
        run("a.json", "2026-12-01T09:00:00Z", 1.0),
        run("b.json", "2026-12-02T09:00:00Z", 1.05),
        run("c.json", "2026-12-03T09:00:00Z", 3.0),
    ];
    saved.push(run("d.json", "2026-12-04T09:00:00Z", 1.0));
    let h = build(saved);
    assert_eq!(h.stages[1].growth.len(), 1);
    assert_eq!(h.stages[1].growth[0].run, 2);
    assert_eq!(h.status, Status::Pass);
}

#[test]
fn runs_without_a_readable_start_time_are_ordered_by_file_name() {
    let h = build(vec![
        run("run-10.json", "2026-12-01T09:00:00Z", 1.0),
        run("run-9.json", "yesterday", 1.0),
        run("run-1.json", "2026-12-09T09:00:00Z", 1.0),
    ]);
    assert_eq!(h.order, HistoryOrder::FileName);
    let files: Vec<_> = h.runs.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(files, ["run-1.json", "run-9.json", "run-10.json"]);
    // The same start time: by file name.
    let h = build(vec![
        run("b.json", "2026-12-01T09:00:00Z", 1.0),
        run("a.json", "2026-12-01T09:00:00+00:00", 1.0),
    ]);
    assert_eq!(h.order, HistoryOrder::Started);
    assert_eq!(h.runs[0].file, "a.json");
}

#[test]
fn runs_of_another_spec_are_skipped_with_the_reason() {
    let mut other = run("old.json", "2026-11-01T09:00:00Z", 1.0);
    other.record.spec = "other.yaml".into();
    let h = build(vec![other, run("new.json", "2026-12-01T09:00:00Z", 1.0)]);
    assert_eq!(h.runs.len(), 1);
    assert_eq!(h.skipped.len(), 1);
    assert_eq!(h.skipped[0].file, "old.json");
    assert_eq!(
        h.skipped[0].reason,
        "a run of other.yaml, not of examples/basic/stages.yaml (the newest run's spec)"
    );
    assert!(HistoryRecord::build("h", Vec::new(), Band::default(), &Metric::DEFAULT).is_none());
}

#[test]
fn a_history_round_trips_through_json_and_checks_its_status() {
    let h = build(vec![
        run("a.json", "2026-12-01T09:00:00Z", 1.0),
        run("b.json", "2026-12-02T09:00:00Z", 3.0),
    ]);
    let text = crate::AnyRecord::History(Box::new(h.clone())).to_json();
    let back = crate::AnyRecord::parse(&text, Path::new("h.json")).expect("reads back");
    assert_eq!(back, crate::AnyRecord::History(Box::new(h.clone())));
    // A hand-edited verdict is refused.
    let edited = text.replacen("\"status\": \"fail\"", "\"status\": \"pass\"", 1);
    let e = crate::AnyRecord::parse(&edited, Path::new("h.json")).unwrap_err();
    assert!(
        e.to_string().contains("contradicts itself at `status`"),
        "{e}"
    );
}

use std::path::Path;

fn write(path: &Path, record: &RunRecord) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, crate::AnyRecord::Run(record.clone()).to_json()).unwrap();
}

#[test]
fn a_directory_holds_json_files_and_folders_with_a_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_dir(dir.path()).unwrap_err();
    assert!(matches!(e, HistoryError::Empty { .. }), "{e}");
    assert!(
        e.to_string().contains("no run records in the directory"),
        "{e}"
    );
    write(&dir.path().join("101.json"), &passing_run());
    write(&dir.path().join("abc123/run.json"), &passing_run());
    std::fs::write(dir.path().join("report.html"), "<html>").unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let mut labels: Vec<_> = read_dir(dir.path())
        .unwrap()
        .into_iter()
        .map(|r| r.label)
        .collect();
    labels.sort();
    assert_eq!(labels, ["101", "abc123"]);
    // A bisect record among them is refused by name.
    let bisect = crate::AnyRecord::Bisect(crate::samples::bisect_op()).to_json();
    std::fs::write(dir.path().join("bisect.json"), bisect).unwrap();
    let e = read_dir(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("bisect.json: a parity.bisect/2 record, not a run record"),
        "{e}"
    );
    std::fs::write(dir.path().join("bisect.json"), "{\"schema\": ").unwrap();
    let e = read_dir(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("bisect.json: not a readable parity record"),
        "{e}"
    );
    let e = read_dir(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing: cannot read the directory"), "{e}");
}

proptest! {
    /// Numbers in names order as numbers, whatever their width.
    #[test]
    fn natural_order_compares_numbers_as_numbers(a in 0u64..100_000, b in 0u64..100_000, pad in 0usize..3) {
        let x = format!("run-{a:0pad$}.json");
        let y = format!("run-{b}.json");
        if a != b {
            prop_assert_eq!(natural_cmp(&x, &y), a.cmp(&b));
        }
        prop_assert_eq!(natural_cmp(&x, &y), natural_cmp(&y, &x).reverse());
    }

    /// The history does not depend on the order the directory listed the runs in.
    #[test]
    fn the_history_is_the_same_whatever_order_the_runs_come_in(
        scales in proptest::collection::vec(0.5f64..4.0, 1..6),
        seed in any::<u64>(),
    ) {
        let saved: Vec<_> = scales
            .iter()
            .enumerate()
            .map(|(i, s)| run(&format!("r{i}.json"), &format!("2026-12-{:02}T09:00:00Z", i + 1), *s))
            .collect();
        let mut shuffled = saved.clone();
        let n = shuffled.len();
        for i in 0..n {
            let j = (seed.rotate_left(i as u32) as usize).wrapping_add(i) % n;
            shuffled.swap(i, j);
        }
        prop_assert_eq!(build(saved), build(shuffled));
    }
}
