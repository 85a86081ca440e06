use super::*;
use crate::samples_more::{fuzz_targets, fuzz_violation};

#[test]
fn one_target_is_not_triangulated() {
    assert!(triangulate_fuzz(&fuzz_violation()).is_empty());
}

#[test]
fn violated_on_one_target_only_is_backend_specific() {
    let r = fuzz_targets();
    let rows = triangulate_fuzz(&r);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let pad = &rows[0];
    assert_eq!(pad.invariant, "pad_content");
    assert_eq!(pad.label, TriangulationLabel::BackendSpecific);
    assert_eq!(pad.off, vec!["vulkan".to_string()]);
    assert_eq!(pad.targets[1].seed, Some(12_345));
    assert_eq!(
        pad.explain(),
        "vulkan violates it, cpu keeps it: the backend, not the port"
    );
}

#[test]
fn kept_everywhere_but_apart_between_targets_is_undetermined_and_fails() {
    let r = fuzz_targets();
    let bucket = &triangulate_fuzz(&r)[1];
    assert_eq!(bucket.invariant, "bucket");
    assert_eq!(bucket.label, TriangulationLabel::Undetermined);
    assert_eq!(bucket.off, vec!["vulkan".to_string()]);
    assert!(bucket
        .explain()
        .contains("vulkan computes outputs beyond its tolerance"));
    // Outputs that differ between targets fail the run even where each keeps it.
    let mut only = r.clone();
    only.violations.clear();
    only.invariants.retain(|i| i.name == "bucket");
    assert_eq!(only.derived_status(), Status::Fail);
    assert_eq!(only.exit_code(), crate::exit::ExitCode::Fail);
    for i in &mut only.invariants {
        i.vs_first = None;
    }
    assert_eq!(only.derived_status(), Status::Pass);
    assert!(triangulate_fuzz(&only).is_empty());
}

#[test]
fn violated_alike_everywhere_is_the_port_and_on_other_cases_undetermined() {
    let mut r = fuzz_targets();
    for i in r.invariants.iter_mut().filter(|i| i.name == "pad_content") {
        i.status = Status::Fail;
    }
    let mut cpu = r.violations[0].clone();
    cpu.target = Some("cpu".into());
    r.violations.push(cpu);
    let rows = triangulate_fuzz(&r);
    assert_eq!(rows[0].label, TriangulationLabel::Port);
    assert_eq!(rows[0].off, vec!["cpu".to_string(), "vulkan".to_string()]);
    r.violations[1].seed = 7;
    assert_eq!(
        triangulate_fuzz(&r)[0].label,
        TriangulationLabel::Undetermined
    );
}

#[test]
fn an_error_on_one_target_is_incomplete_and_skipped_everywhere_is_not_listed() {
    let mut r = fuzz_targets();
    for i in r.invariants.iter_mut().filter(|i| i.name == "bucket") {
        i.status = Status::Skipped;
        i.vs_first = None;
    }
    r.invariants[0].status = Status::Error;
    let rows = triangulate_fuzz(&r);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0].label, TriangulationLabel::Incomplete);
    assert!(
        rows[0].explain().contains("(cpu did not)"),
        "{}",
        rows[0].explain()
    );
}

#[test]
fn the_record_round_trips_through_json() {
    let r = fuzz_targets();
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"label\":\"backend-specific\""), "{text}");
    let back: FuzzRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    // A one-target record carries none of the new fields.
    let one = serde_json::to_string(&fuzz_violation()).unwrap();
    assert!(
        !one.contains("\"target") && !one.contains("triangulation"),
        "{one}"
    );
}
