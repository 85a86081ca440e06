//! Token triangulation labels, on hand-built records.

use super::*;
use crate::samples_tokens::{tokens_pass, tokens_targets};
use crate::triangulation::TriangulationLabel;

fn labels(r: &TokensRecord) -> Vec<(String, TriangulationLabel, Vec<String>)> {
    triangulate_tokens(r)
        .into_iter()
        .map(|row| (row.case, row.label, row.off))
        .collect()
}

#[test]
fn one_target_agreeing_with_the_oracle_makes_the_other_backend_specific() {
    let r = tokens_targets();
    assert_eq!(
        labels(&r),
        vec![
            (
                "clean_a".to_string(),
                TriangulationLabel::BackendSpecific,
                vec!["vulkan".to_string()]
            ),
            (
                "fault".to_string(),
                TriangulationLabel::Port,
                vec!["cpu".to_string(), "vulkan".to_string()]
            ),
        ]
    );
    let rows = triangulate_tokens(&r);
    assert_eq!(
        rows[0].explain(),
        "vulkan off, cpu matches the oracle's tokens: the backend, not the port"
    );
    assert_eq!(rows[0].targets[1].step, Some(3));
    assert_eq!(rows[0].targets[1].production_token, Some(7));
    assert_eq!(rows[0].targets[0].step, None);
}

#[test]
fn targets_that_fail_differently_are_undetermined_and_an_error_is_incomplete() {
    let mut r = tokens_targets();
    // vulkan's `fault` decodes other tokens than cpu's.
    r.cases[4].greedy_tokens[2] = 5;
    r.cases[5].status = Status::Error;
    assert_eq!(
        labels(&r)
            .into_iter()
            .map(|(c, l, _)| (c, l))
            .collect::<Vec<_>>(),
        vec![
            ("clean_a".to_string(), TriangulationLabel::BackendSpecific),
            ("fault".to_string(), TriangulationLabel::Undetermined),
            ("near_tie".to_string(), TriangulationLabel::Incomplete),
        ]
    );
    // A target that did not run a case is incomplete too.
    r.cases.remove(3);
    assert_eq!(
        triangulate_tokens(&r)[0].label,
        TriangulationLabel::Incomplete
    );
    assert_eq!(triangulate_tokens(&r)[0].targets[1].status, Status::Skipped);
}

#[test]
fn the_truth_picking_production_on_every_target_is_the_oracle() {
    let mut r = tokens_targets();
    for i in [1, 4] {
        let d = r.cases[i].first_divergent_token.as_mut().unwrap();
        d.truth_token = Some(d.production_token);
    }
    assert_eq!(triangulate_tokens(&r)[1].label, TriangulationLabel::Oracle);
}

#[test]
fn a_record_of_one_target_has_no_rows() {
    assert!(triangulate_tokens(&tokens_pass()).is_empty());
    let r = tokens_targets();
    let json = serde_json::to_string(&r).unwrap();
    let back: TokensRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(back, r);
    // A one-target record's JSON has none of the new keys.
    let one = serde_json::to_value(tokens_pass()).unwrap();
    for key in ["targets", "triangulation", "divergence_target"] {
        assert!(one.get(key).is_none(), "{key}");
    }
    assert!(one["cases"][0].get("target").is_none());
}
