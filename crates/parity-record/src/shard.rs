//! Merging shards: [`merge`] puts the parts that `parity check --shard i/n`
//! ran back into the record of the whole (the partition itself is in
//! `partition.rs`).

use crate::common::{ErrorRecord, Mode};
use crate::plan::RunPlan;
use crate::run::{ModuleProvenance, RunRecord, StageRecord};
use std::collections::{HashMap, HashSet};

/// The partition lives below the run record, which carries a [`ShardRecord`].
pub use crate::partition::{Shard, ShardParseError, ShardRecord};

/// Why shard records cannot be merged; every message names the files.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("--merge needs at least one run record")]
    Empty,
    /// A record that was not written by `parity check --shard`.
    #[error("{file}: not a shard record (no `shard`; written without `parity check --shard`)")]
    NotAShard {
        /// The file.
        file: String,
    },
    /// Two shards that are not parts of the same run.
    #[error("{a} and {b}: shards of different runs ({what} differs: `{left}` vs `{right}`)")]
    Mismatch {
        /// The first file.
        a: String,
        /// The file that differs from it.
        b: String,
        /// What differs.
        what: &'static str,
        /// Its value in `a`.
        left: String,
        /// Its value in `b`.
        right: String,
    },
    /// Two records of the same shard, or holding the same stage run.
    #[error("{a} and {b}: overlapping shards ({what})")]
    Overlap {
        /// The first file.
        a: String,
        /// The second file.
        b: String,
        /// What both hold.
        what: String,
    },
    /// A shard that does not hold exactly the stage runs the plan assigns to
    /// it: some are missing (deleted from the record?) or extra.
    #[error("{file}: shard {index}/{count} does not hold what the plan assigns to it: {what}")]
    Incomplete {
        /// The shard's file.
        file: String,
        /// Its index.
        index: usize,
        /// Number of shards.
        count: usize,
        /// The missing and extra stage runs.
        what: String,
    },
    /// Some shards are missing: the merge would not be the whole run.
    #[error("shards {missing} of {count} missing (given: {given})")]
    Missing {
        /// The missing shard indices, comma-separated.
        missing: String,
        /// Number of shards.
        count: usize,
        /// The files given.
        given: String,
    },
}

/// Merges the records of every shard of one run (`(file, record)` pairs, any
/// order) into the record of the whole: stages in the unsharded execution
/// order, run-level errors and warnings without repeats, divergences located
/// over all stages, status and exit code of the whole. `started` is the
/// earliest shard's, `elapsed_s` the longest shard's (shards run in
/// parallel). The merged record has no `shard`.
pub fn merge(records: &[(String, RunRecord)]) -> Result<RunRecord, MergeError> {
    let mut shards: Vec<(&str, &RunRecord, &ShardRecord)> = Vec::new();
    for (file, record) in records {
        let shard = record
            .shard
            .as_ref()
            .ok_or_else(|| MergeError::NotAShard { file: file.clone() })?;
        shards.push((file, record, shard));
    }
    let &(file0, first, shard0) = shards.first().ok_or(MergeError::Empty)?;
    for &(file, record, shard) in &shards[1..] {
        let mismatch = |what, left: String, right: String| MergeError::Mismatch {
            a: file0.to_string(),
            b: file.to_string(),
            what,
            left,
            right,
        };
        if shard.spec_sha256 != shard0.spec_sha256 {
            let (l, r) = (shard0.spec_sha256.clone(), shard.spec_sha256.clone());
            return Err(mismatch("spec sha256", l, r));
        }
        if record.parity_version != first.parity_version {
            let (l, r) = (first.parity_version.clone(), record.parity_version.clone());
            return Err(mismatch("parity version", l, r));
        }
        if record.compiler_revision != first.compiler_revision {
            let show = |r: &Option<String>| r.clone().unwrap_or_else(|| "none".into());
            let (l, r) = (
                show(&first.compiler_revision),
                show(&record.compiler_revision),
            );
            return Err(mismatch("compiler revision", l, r));
        }
        if shard.count != shard0.count {
            let (l, r) = (shard0.count.to_string(), shard.count.to_string());
            return Err(mismatch("shard count", l, r));
        }
        if shard.plan != shard0.plan {
            let show = |p: &RunPlan| serde_json::to_string(p).unwrap_or_default();
            return Err(mismatch(
                "plan (modes, cases, stages)",
                show(&shard0.plan),
                show(&shard.plan),
            ));
        }
    }
    let mut by_index: HashMap<usize, &str> = HashMap::new();
    for &(file, _, shard) in &shards {
        if let Some(other) = by_index.insert(shard.index, file) {
            return Err(MergeError::Overlap {
                a: other.to_string(),
                b: file.to_string(),
                what: format!("both are shard {}/{}", shard.index, shard.count),
            });
        }
    }
    let missing: Vec<String> = (1..=shard0.count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            count: shard0.count,
            given: shards.iter().map(|s| s.0).collect::<Vec<_>>().join(", "),
        });
    }
    shards.sort_by_key(|s| s.2.index);

    let mut merged = first.clone();
    merged.shard = None;
    merged.first_divergent_op = None;
    merged.errors = Vec::new();
    merged.warnings = Vec::new();
    merged.provenance.modules = Vec::new();
    merged.provenance.oracle = None;
    // What was uploaded is a fact of each shard's execution, like its time:
    // the merged record adds the shards' counts up, per target.
    merged.provenance.uploads = Vec::new();
    for &(_, record, _) in &shards {
        for u in &record.provenance.uploads {
            match merged
                .provenance
                .uploads
                .iter_mut()
                .find(|m| m.target == u.target)
            {
                Some(m) => *m = m.sum(u),
                None => merged.provenance.uploads.push(u.clone()),
            }
        }
    }
    let mut stages: Vec<(&str, &StageRecord)> = Vec::new();
    let mut owner: HashMap<(&str, &str, Mode), &str> = HashMap::new();
    for &(file, record, _) in &shards {
        push_new(&mut merged.errors, &record.errors, |a: &ErrorRecord, b| {
            a == b
        });
        push_new(&mut merged.warnings, &record.warnings, |a, b| a == b);
        push_new(
            &mut merged.provenance.modules,
            &record.provenance.modules,
            |a: &ModuleProvenance, b| a.name == b.name,
        );
        if merged.provenance.oracle.is_none() {
            merged.provenance.oracle = record.provenance.oracle.clone();
        }
        if record.started < merged.started {
            merged.started = record.started.clone();
        }
        merged.elapsed_s = merged.elapsed_s.max(record.elapsed_s);
        for stage in &record.stages {
            let key = (stage.name.as_str(), stage.case.as_str(), stage.mode);
            if let Some(other) = owner.insert(key, file) {
                return Err(MergeError::Overlap {
                    a: other.to_string(),
                    b: file.to_string(),
                    what: format!(
                        "both hold stage `{}` of case `{}` ({})",
                        stage.name,
                        stage.case,
                        stage.mode.name()
                    ),
                });
            }
            stages.push((file, stage));
        }
    }
    for &(file, record, shard) in &shards {
        check_assignment(file, record, shard)?;
    }
    // A stable sort: records the plan does not know keep their shard order, last.
    stages.sort_by_key(|(_, s)| shard0.plan.position(s));
    merged.stages = stages.into_iter().map(|(_, s)| s.clone()).collect();
    shard0.plan.locate(&mut merged);
    merged.status = merged.derived_status();
    Ok(merged)
}

/// The stage runs (name, case, mode) the plan assigns to `shard`, in execution order.
fn assigned(shard: &ShardRecord) -> Vec<(&str, &str, Mode)> {
    let plan = &shard.plan;
    let part = Shard {
        index: shard.index,
        count: shard.count,
    };
    let mut runs = Vec::new();
    for &mode in &plan.modes {
        for (c, case) in plan.cases.iter().enumerate() {
            for (rank, stage) in plan.stages.iter().enumerate() {
                if part.owns(mode, c, rank, plan.stages.len()) {
                    runs.push((stage.name.as_str(), case.as_str(), mode));
                }
            }
        }
    }
    runs
}

/// Refuses a shard whose stage runs are not exactly those the plan assigns
/// to it: a missing one (a deleted failure would otherwise merge into a
/// pass) or an extra one (another shard's, or one the plan does not know).
fn check_assignment(file: &str, record: &RunRecord, shard: &ShardRecord) -> Result<(), MergeError> {
    let expected = assigned(shard);
    let held: Vec<(&str, &str, Mode)> = record
        .stages
        .iter()
        .map(|s| (s.name.as_str(), s.case.as_str(), s.mode))
        .collect();
    let show = |runs: Vec<&(&str, &str, Mode)>| {
        const SHOWN: usize = 8;
        let mut text: Vec<String> = runs
            .iter()
            .take(SHOWN)
            .map(|(name, case, mode)| format!("`{name}` of case `{case}` ({})", mode.name()))
            .collect();
        if runs.len() > SHOWN {
            text.push(format!("and {} more", runs.len() - SHOWN));
        }
        text.join(", ")
    };
    let (expected_set, held_set): (HashSet<_>, HashSet<_>) =
        (expected.iter().collect(), held.iter().collect());
    let missing: Vec<_> = expected.iter().filter(|r| !held_set.contains(r)).collect();
    let extra: Vec<_> = held.iter().filter(|r| !expected_set.contains(r)).collect();
    let mut what = Vec::new();
    if !missing.is_empty() {
        what.push(format!(
            "{} missing: {}",
            runs(missing.len()),
            show(missing)
        ));
    }
    if !extra.is_empty() {
        what.push(format!(
            "{} not assigned to it: {}",
            runs(extra.len()),
            show(extra)
        ));
    }
    if what.is_empty() {
        return Ok(());
    }
    if let Some(e) = record.errors.first() {
        what.push(format!("its run-level error: {}", e.message));
    }
    Err(MergeError::Incomplete {
        file: file.to_string(),
        index: shard.index,
        count: shard.count,
        what: what.join("; "),
    })
}

/// `1 stage run`, `2 stage runs`.
fn runs(n: usize) -> String {
    format!("{n} stage run{}", if n == 1 { "" } else { "s" })
}

/// Appends the items of `from` that `into` does not hold yet (by `same`).
fn push_new<T: Clone>(into: &mut Vec<T>, from: &[T], same: impl Fn(&T, &T) -> bool) {
    for item in from {
        if !into.iter().any(|have| same(have, item)) {
            into.push(item.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::Status;
    use crate::plan::PlanStage;
    use crate::samples;
    use crate::AnyRecord;
    use std::path::Path;

    /// samples::failing_run in plan order, and its plan.
    fn whole() -> (RunRecord, RunPlan) {
        let up = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        let stage = |name: &str, upstream: Vec<String>| PlanStage {
            name: name.into(),
            upstream,
        };
        let plan = RunPlan {
            modes: vec![Mode::Isolated, Mode::Chained],
            cases: vec!["b2".into()],
            stages: vec![
                stage("embed", up(&[])),
                stage("norm", up(&["embed"])),
                stage("proj", up(&["embed", "norm"])),
                stage("head", up(&["embed", "norm", "proj"])),
            ],
            extents: Vec::new(),
        };
        let mut run = samples::failing_run();
        // Every planned stage run: `head` in isolation, `proj` chained.
        let renamed = |from: usize, name: &str| StageRecord {
            name: name.into(),
            function: format!("main.{name}"),
            ..run.stages[from].clone()
        };
        let (head, proj) = (renamed(0, "head"), renamed(2, "proj"));
        assert_eq!((head.mode, proj.mode), (Mode::Isolated, Mode::Chained));
        run.stages.extend([head, proj]);
        // Numbers that serde_json's default parser changes in the last digit.
        let m = run.stages[1].outputs[0].metrics.as_mut().unwrap();
        m.cosine = 0.9999999999999999;
        m.rel_l2 = 0.30000000000000004;
        run.stages.sort_by_key(|s| plan.position(s));
        plan.locate(&mut run);
        (run, plan)
    }

    /// The records of shards 1..=count of `run`, as `(file, record)`.
    fn split(run: &RunRecord, plan: &RunPlan, count: usize) -> Vec<(String, RunRecord)> {
        (1..=count)
            .map(|index| {
                let shard = Shard { index, count };
                let mut r = run.clone();
                r.stages.retain(|s| {
                    let (_, case, rank) = plan.position(s);
                    shard.owns(s.mode, case, rank, plan.stages.len())
                });
                plan.locate(&mut r);
                r.status = r.derived_status();
                r.shard = Some(ShardRecord {
                    index,
                    count,
                    spec_sha256: "ab".repeat(32),
                    plan: plan.clone(),
                });
                (format!("shard{index}.json"), r)
            })
            .collect()
    }

    #[test]
    fn shards_merge_back_into_the_whole_in_any_order() {
        let (run, plan) = whole();
        for count in 1..=4 {
            let mut shards = split(&run, &plan, count);
            shards.reverse();
            assert_eq!(merge(&shards), Ok(run.clone()), "{count} shards");
        }
        // With 3 shards, shard 2 holds only norm (isolated): its own first divergence.
        let shards = split(&run, &plan, 3);
        assert_eq!(shards[1].1.stages.len(), 1);
        assert_eq!(run.first_divergence.as_ref().unwrap().stage, "norm");
    }

    #[test]
    fn shards_read_back_from_their_files_merge_into_the_whole_to_the_last_digit() {
        let (run, plan) = whole();
        let whole_text = AnyRecord::Run(run.clone()).to_json();
        assert!(whole_text.contains("0.9999999999999999"), "{whole_text}");
        for count in 1..=4 {
            let read_back: Vec<(String, RunRecord)> = split(&run, &plan, count)
                .into_iter()
                .map(|(file, r)| {
                    let text = AnyRecord::Run(r).to_json();
                    match AnyRecord::parse(&text, Path::new(&file)) {
                        Ok(AnyRecord::Run(r)) => (file, r),
                        other => panic!("{file}: {other:?}"),
                    }
                })
                .collect();
            let merged = AnyRecord::Run(merge(&read_back).unwrap());
            assert_eq!(merged.to_json(), whole_text, "{count} shards");
            // And a re-render of the merged record changes nothing.
            let again = AnyRecord::parse(&merged.to_json(), Path::new("merged.json")).unwrap();
            assert_eq!(again.to_json(), whole_text);
        }
    }

    #[test]
    fn refuses_a_shard_without_its_whole_part() {
        let (run, plan) = whole();
        let shards = split(&run, &plan, 2);
        let err = |records: &[(String, RunRecord)]| merge(records).unwrap_err().to_string();
        // The failing stage runs deleted: what is left would pass.
        let mut cut = shards.clone();
        for (_, r) in &mut cut {
            r.stages.retain(|s| s.status == Status::Pass);
            r.status = r.derived_status();
            plan.locate(r);
        }
        assert_eq!(
            err(&cut),
            "shard1.json: shard 1/2 does not hold what the plan assigns to it: \
             1 stage run missing: `proj` of case `b2` (isolated)"
        );
        assert_eq!(
            err(&[shards[0].clone(), cut[1].clone()]),
            "shard2.json: shard 2/2 does not hold what the plan assigns to it: \
             3 stage runs missing: `norm` of case `b2` (isolated), \
             `norm` of case `b2` (chained), `head` of case `b2` (chained)"
        );
        // A stage run the plan does not know, or in the wrong shard.
        let mut extra = shards[1].clone();
        extra.1.stages.push(StageRecord {
            name: "ghost".into(),
            ..shards[1].1.stages[0].clone()
        });
        assert!(err(&[shards[0].clone(), extra])
            .ends_with("1 stage run not assigned to it: `ghost` of case `b2` (isolated)"));
        let mut moved = shards.clone();
        let stage = moved[0].1.stages.remove(0);
        moved[1].1.stages.push(stage);
        assert_eq!(
            err(&moved),
            "shard1.json: shard 1/2 does not hold what the plan assigns to it: \
             1 stage run missing: `embed` of case `b2` (isolated)"
        );
        // A shard's run-level error is quoted: it may be why runs are missing.
        let mut failed = shards.clone();
        failed[0].1.stages.clear();
        failed[0]
            .1
            .errors
            .push(ErrorRecord::input("case `b2`: bad input"));
        assert!(err(&failed).ends_with("; its run-level error: case `b2`: bad input"));
    }

    #[test]
    fn refuses_what_is_not_one_whole_run() {
        let (run, plan) = whole();
        let shards = split(&run, &plan, 2);
        let err = |records: &[(String, RunRecord)]| merge(records).unwrap_err().to_string();
        assert_eq!(
            err(&[shards[0].clone(), shards[0].clone()]),
            "shard1.json and shard1.json: overlapping shards (both are shard 1/2)"
        );
        assert_eq!(
            err(&shards[1..]),
            "shards 1 of 2 missing (given: shard2.json)"
        );
        let mut other = shards[1].clone();
        other.1.parity_version = "9.9.9".into();
        assert_eq!(
            err(&[shards[0].clone(), other]),
            "shard1.json and shard2.json: shards of different runs (parity version differs: `0.1.0` vs `9.9.9`)"
        );
        let mut other = shards[1].clone();
        other.1.compiler_revision = None;
        assert!(err(&[shards[0].clone(), other]).contains("compiler revision differs"));
        let mut other = shards[1].clone();
        other.1.stages.push(shards[0].1.stages[0].clone());
        assert!(err(&[shards[0].clone(), other]).contains(
            "shard1.json and shard2.json: overlapping shards (both hold stage `embed` of case `b2` (isolated))"
        ));
        let mut plain = shards[1].clone();
        plain.1.shard = None;
        assert_eq!(
            err(&[shards[0].clone(), plain]),
            "shard2.json: not a shard record (no `shard`; written without `parity check --shard`)"
        );
        assert_eq!(merge(&[]), Err(MergeError::Empty));
    }
}
