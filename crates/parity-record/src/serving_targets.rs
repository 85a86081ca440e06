//! Serving triangulation: `parity serve --target a,b` runs the scenario on
//! each target, and each request that fails or errors on one is labelled
//! with which side is off, as stages and token cases are
//! ([`crate::triangulation`]): a pure function of the record.

use crate::common::Status;
use crate::serving::ServingRecord;
pub use crate::serving::{ServingTargetSide, ServingTriangulationRow};
use crate::triangulation::label_by_status;

/// The labelled requests of a record over several targets (its `targets`;
/// none for one). A request is found on each target by id.
pub fn triangulate_serving(r: &ServingRecord) -> Vec<ServingTriangulationRow> {
    if r.targets.len() < 2 {
        return Vec::new();
    }
    let first = &r.targets[0];
    let on = |target: &str, id: &str| {
        r.requests
            .iter()
            .find(|q| q.target.as_deref() == Some(target) && q.id == id)
    };
    let mut ids: Vec<&str> = Vec::new();
    for q in &r.requests {
        if !ids.contains(&q.id.as_str()) {
            ids.push(&q.id);
        }
    }
    let mut rows = Vec::new();
    for id in ids {
        let reference = on(first, id).map(|q| &q.tokens);
        let targets: Vec<ServingTargetSide> = r
            .targets
            .iter()
            .map(|t| match on(t, id) {
                Some(q) => ServingTargetSide {
                    target: t.clone(),
                    status: q.status,
                    same_tokens_as_first: Some(&q.tokens) == reference,
                },
                None => ServingTargetSide {
                    target: t.clone(),
                    status: Status::Skipped,
                    same_tokens_as_first: false,
                },
            })
            .collect();
        let off: Vec<String> = targets
            .iter()
            .filter(|s| s.status != Status::Pass)
            .map(|s| s.target.clone())
            .collect();
        if off.is_empty() {
            continue;
        }
        let statuses: Vec<Status> = targets.iter().map(|s| s.status).collect();
        // Serving has no f64 truth: never `oracle`.
        let agree = targets.iter().all(|s| s.same_tokens_as_first);
        let label = label_by_status(&statuses, agree, false);
        rows.push(ServingTriangulationRow {
            request: id.to_string(),
            label,
            off,
            targets,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::ServingRequestRecord;
    use crate::triangulation::TriangulationLabel;

    fn req(id: &str, target: &str, status: Status, tokens: &[u32]) -> ServingRequestRecord {
        ServingRequestRecord {
            id: id.into(),
            case: "c".into(),
            kind: "audio".into(),
            status,
            arrive: 0,
            slot: Some(0),
            admitted_step: Some(0),
            cancelled_step: None,
            finished_step: Some(1),
            tokens: tokens.to_vec(),
            logprobs: vec![],
            finish: None,
            oracle_tokens: vec![],
            solo_tokens: vec![],
            bitwise_logits: None,
            effective_length: None,
            solo_effective_length: None,
            dense_ple_sha256: None,
            reused_slot: false,
            refused: None,
            error: None,
            verdicts: vec![],
            target: Some(target.into()),
        }
    }

    #[test]
    fn each_failing_request_is_labelled_by_which_targets_fail_and_how() {
        let mut r = ServingRecord::new("s".into(), "in-process".into(), "0", "t".into());
        r.targets = vec!["cpu".into(), "gpu".into()];
        r.requests = vec![
            req("ok", "cpu", Status::Pass, &[1, 2]),
            req("ok", "gpu", Status::Pass, &[1, 2]),
            req("gpu_only", "cpu", Status::Pass, &[1, 2]),
            req("gpu_only", "gpu", Status::Fail, &[1, 3]),
            req("both_same", "cpu", Status::Fail, &[4]),
            req("both_same", "gpu", Status::Fail, &[4]),
            req("both_differ", "cpu", Status::Fail, &[4]),
            req("both_differ", "gpu", Status::Fail, &[5]),
            req("err", "cpu", Status::Pass, &[1]),
            req("err", "gpu", Status::Error, &[]),
            req("cpu_only_ran", "cpu", Status::Fail, &[1]),
        ];
        let rows = triangulate_serving(&r);
        let got: Vec<(&str, TriangulationLabel)> =
            rows.iter().map(|x| (x.request.as_str(), x.label)).collect();
        assert_eq!(
            got,
            [
                ("gpu_only", TriangulationLabel::BackendSpecific),
                ("both_same", TriangulationLabel::Port),
                ("both_differ", TriangulationLabel::Undetermined),
                ("err", TriangulationLabel::Incomplete),
                ("cpu_only_ran", TriangulationLabel::Incomplete),
            ]
        );
        assert_eq!(rows[0].off, ["gpu"]);
        assert!(rows[0].explain().starts_with("gpu off, cpu passes"));
        // One target: no triangulation.
        r.targets.truncate(1);
        assert!(triangulate_serving(&r).is_empty());
    }
}
