//! Triangulation: one run over several targets (`parity check --target a,b`)
//! compares every output with the oracle on each target and with the first
//! target's output, and labels each output that fails anywhere with which
//! side is off. The labels are a pure function of the run record, so
//! `parity report` re-derives them from a saved record.

use crate::common::{Mode, Status};
use crate::run::{OutputRecord, RunRecord};
use std::collections::BTreeMap;

/// The row types live below the run record, which carries them.
pub use crate::triangulation_row::{
    label_by_status, names_where, CrossTarget, TriangulationLabel, TriangulationRow,
    TriangulationTarget,
};

/// Labels every output that failed (or errored) on at least one of the
/// record's targets; outputs that pass everywhere are not listed. Empty when
/// the record has fewer than two targets.
pub fn triangulate(record: &RunRecord) -> Vec<TriangulationRow> {
    if record.targets.len() < 2 {
        return Vec::new();
    }
    let rank: BTreeMap<&str, usize> = record
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    // (stage order of first appearance, case, mode, output) -> per target.
    type Key<'a> = (usize, &'a str, Mode, &'a str);
    let mut order: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut groups: BTreeMap<Key, Vec<Option<&OutputRecord>>> = BTreeMap::new();
    let mut names: BTreeMap<Key, &str> = BTreeMap::new();
    // A stage run with no outputs (errored before comparing, or skipped): its status.
    let mut bare: BTreeMap<(&str, &str, Mode, usize), Status> = BTreeMap::new();
    for s in &record.stages {
        let Some(&t) = rank.get(s.target.as_str()) else {
            continue;
        };
        let next = order.len();
        let first_seen = *order
            .entry((s.name.as_str(), s.case.as_str()))
            .or_insert(next);
        if s.outputs.is_empty() {
            bare.insert((s.name.as_str(), s.case.as_str(), s.mode, t), s.status);
        }
        for o in &s.outputs {
            let key = (first_seen, s.case.as_str(), s.mode, o.name.as_str());
            names.insert(key, s.name.as_str());
            groups.entry(key).or_insert_with(|| vec![None; rank.len()])[t] = Some(o);
        }
    }
    let mut rows: Vec<(Key, TriangulationRow)> = groups
        .into_iter()
        .filter_map(|(key, sides)| {
            let (_, case, mode, output) = key;
            let stage = names[&key];
            let missing = |t: usize| {
                bare.get(&(stage, case, mode, t))
                    .copied()
                    .unwrap_or(Status::Skipped)
            };
            let row = label(&record.targets, &sides, &missing)?;
            Some((
                key,
                TriangulationRow {
                    stage: stage.to_string(),
                    case: case.to_string(),
                    mode,
                    output: output.to_string(),
                    label: row.0,
                    off: row.1,
                    targets: row.2,
                },
            ))
        })
        .collect();
    rows.sort_by(|a, b| (a.0 .2, a.0 .0, a.0 .1).cmp(&(b.0 .2, b.0 .0, b.0 .1)));
    rows.into_iter().map(|(_, r)| r).collect()
}

type Labelled = (TriangulationLabel, Vec<String>, Vec<TriangulationTarget>);

/// The label of one output from each target's record of it (None: it passes everywhere).
/// `missing(t)`: the status of target `t`'s stage run when it has no record of the output.
fn label(
    targets: &[crate::run::TargetRecord],
    sides: &[Option<&OutputRecord>],
    missing: &dyn Fn(usize) -> Status,
) -> Option<Labelled> {
    let view: Vec<TriangulationTarget> = targets
        .iter()
        .zip(sides)
        .enumerate()
        .map(|(i, (t, o))| TriangulationTarget {
            target: t.name.clone(),
            status: o.map_or_else(|| missing(i), |o| o.status),
            max_abs: o.and_then(|o| o.metrics.as_ref()).map(|m| m.max_abs),
            vs_first: o.and_then(|o| o.vs_target.as_ref()).map(|c| c.status),
            vs_f64: o
                .and_then(|o| o.metrics.as_ref())
                .and_then(|m| m.vs_f64.as_ref())
                .map(|v| [v.actual_vs_truth, v.expected_vs_truth]),
        })
        .collect();
    if view.iter().all(|t| t.status == Status::Pass) {
        return None;
    }
    let off: Vec<String> = view
        .iter()
        .filter(|t| t.status == Status::Fail)
        .map(|t| t.target.clone())
        .collect();
    let label = if view
        .iter()
        .any(|t| !matches!(t.status, Status::Pass | Status::Fail))
    {
        TriangulationLabel::Incomplete
    } else if view.iter().any(|t| t.status == Status::Pass) {
        TriangulationLabel::BackendSpecific
    } else if view.iter().all(|t| t.vs_f64.is_some_and(|[p, o]| p < o)) {
        TriangulationLabel::Oracle
    } else if view
        .iter()
        .skip(1)
        .all(|t| t.vs_first == Some(Status::Pass))
    {
        TriangulationLabel::Port
    } else {
        TriangulationLabel::Undetermined
    };
    Some((label, off, view))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::TargetRecord;
    use crate::samples;

    fn targets(names: &[&str]) -> Vec<TargetRecord> {
        names
            .iter()
            .map(|n| TargetRecord {
                name: n.to_string(),
                backend: "llvm-cpu".into(),
                device: "local-task".into(),
                flags: Vec::new(),
            })
            .collect()
    }

    /// A record of the failing sample run on two targets, the second with
    /// `second` applied to each of its outputs.
    fn two_targets(second: impl Fn(&mut OutputRecord)) -> RunRecord {
        let one = samples::failing_run();
        let mut record = one.clone();
        record.targets = targets(&["cpu", "gpu"]);
        record.stages.clear();
        for s in &one.stages {
            let mut a = s.clone();
            a.target = "cpu".into();
            let mut b = s.clone();
            b.target = "gpu".into();
            for o in &mut b.outputs {
                second(o);
            }
            record.stages.push(a);
            record.stages.push(b);
        }
        record
    }

    fn cross(status: Status) -> CrossTarget {
        CrossTarget {
            target: "cpu".into(),
            status,
            max_abs: 0.0,
            rms: 0.0,
            max_ulp: Some(0),
            mismatches: 0,
            count: 1,
        }
    }

    #[test]
    fn one_target_is_not_triangulated() {
        let mut record = samples::failing_run();
        record.targets = targets(&["cpu"]);
        assert!(triangulate(&record).is_empty());
    }

    #[test]
    fn both_fail_and_agree_is_the_port() {
        let record = two_targets(|o| o.vs_target = Some(cross(Status::Pass)));
        let rows = triangulate(&record);
        assert!(!rows.is_empty());
        assert!(
            rows.iter().all(|r| r.label == TriangulationLabel::Port),
            "{rows:#?}"
        );
        assert!(rows.iter().all(|r| r.off == ["cpu", "gpu"]));
    }

    #[test]
    fn both_fail_and_disagree_is_undetermined() {
        let record = two_targets(|o| o.vs_target = Some(cross(Status::Fail)));
        let rows = triangulate(&record);
        assert!(rows
            .iter()
            .all(|r| r.label == TriangulationLabel::Undetermined));
    }

    #[test]
    fn one_side_passing_is_backend_specific_and_names_the_other() {
        let record = two_targets(|o| {
            o.status = Status::Pass;
            o.vs_target = Some(cross(Status::Fail));
        });
        let rows = triangulate(&record);
        assert!(!rows.is_empty());
        for r in &rows {
            assert_eq!(r.label, TriangulationLabel::BackendSpecific);
            assert_eq!(r.off, ["cpu"]);
            assert!(
                r.explain().starts_with("cpu off, gpu matches the oracle"),
                "{}",
                r.explain()
            );
        }
    }

    #[test]
    fn truth_nearer_to_production_everywhere_is_the_oracle() {
        let mut record = two_targets(|o| o.vs_target = Some(cross(Status::Pass)));
        for s in &mut record.stages {
            for o in &mut s.outputs {
                if let Some(m) = &mut o.metrics {
                    m.vs_f64 = Some(crate::run::TruthRecord {
                        truth: "t".into(),
                        actual_vs_truth: 1e-7,
                        expected_vs_truth: 1e-2,
                        actual_nonfinite: 0,
                        expected_nonfinite: 0,
                    });
                }
            }
        }
        let rows = triangulate(&record);
        assert!(rows
            .iter()
            .filter(|r| r.targets.iter().all(|t| t.vs_f64.is_some()))
            .all(|r| r.label == TriangulationLabel::Oracle));
        assert!(rows.iter().any(|r| r.label == TriangulationLabel::Oracle));
    }

    #[test]
    fn a_missing_side_is_incomplete() {
        let mut record = two_targets(|o| o.vs_target = Some(cross(Status::Pass)));
        record.stages.retain(|s| s.target == "cpu");
        let rows = triangulate(&record);
        assert!(!rows.is_empty());
        assert!(rows
            .iter()
            .all(|r| r.label == TriangulationLabel::Incomplete));
    }
}
