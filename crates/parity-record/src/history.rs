//! The history of a spec's runs (`parity.history/1`): `parity report
//! --history DIR` reads the run records saved in DIR (e.g. one per commit
//! in CI), orders them, and sets each stage's headroom beside its earlier
//! ones, flagging where an error grew past the baseline ratchet's noise band.
//!
//! Order: by each record's `started` time (RFC 3339), ties by file name;
//! when a record's `started` does not parse, every record by file name
//! (digit runs compared as numbers: `run-9` before `run-10`).
//!
//! Growth: each output (stage, target, case, mode, output) is compared with
//! the same output in the latest earlier run that measured it, metric by
//! metric, with [`Change::of`] under the band: the same rule as
//! `parity report --baseline`. The history fails (exit 1) when a stage grew
//! in the newest run; earlier growths are flagged, not failed (they were
//! the earlier runs' to fail).

use crate::baseline::{Band, Change, Metric};
use crate::common::{Mode, Status};
use crate::exit::ExitCode;
use crate::run::{OutputMetrics, RunRecord};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The schema identifier of a history record.
pub const HISTORY_SCHEMA: &str = "parity.history/1";

/// How the runs were put in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryOrder {
    /// By each record's `started` time, ties by file name.
    Started,
    /// By file name: some record's `started` did not parse.
    FileName,
}

/// One saved run, as it was read from the directory.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedRun {
    /// The file it was read from.
    pub file: String,
    /// Its label: the file's stem, or the folder's name for `DIR/<name>/run.json`.
    pub label: String,
    /// The record.
    pub record: RunRecord,
}

/// One run of the history, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRun {
    /// The file it was read from.
    pub file: String,
    /// Its label (the file's stem, or the folder's name for `<name>/run.json`).
    pub label: String,
    /// The run's `started` time.
    pub started: String,
    /// The run's own status.
    pub status: Status,
    /// The parity that wrote it.
    pub parity_version: String,
}

/// A stage's headroom in one run: its worst output over cases and modes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// The tightest criterion's error as a fraction of its limit (above 1 fails).
    #[serde(with = "crate::float")]
    pub ratio: f64,
    /// The output it was measured on.
    pub output: String,
    /// Its case.
    pub case: String,
    /// Its mode.
    pub mode: Mode,
    /// The criterion's name.
    pub criterion: String,
    /// The stage's worst status in that run.
    pub status: Status,
}

/// Where a stage's error grew past the band, in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    /// The run (index into [`HistoryRecord::runs`]) where it grew.
    pub run: usize,
    /// The earlier run it grew from (the latest that measured the output).
    pub since: usize,
    /// The output whose metric grew the most (past its limit).
    pub output: String,
    /// Its case.
    pub case: String,
    /// Its mode.
    pub mode: Mode,
    /// The metric.
    pub metric: Metric,
    /// Its value in run `since`.
    #[serde(with = "crate::float")]
    pub previous: f64,
    /// Its value in run `run`.
    #[serde(with = "crate::float")]
    pub current: f64,
    /// The largest value that would not have grown past the band.
    #[serde(with = "crate::float")]
    pub limit: f64,
    /// How many metrics of the stage's outputs grew past the band in this run.
    pub regressed: usize,
}

/// One stage (on one target) over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageHistory {
    /// The stage's name.
    pub stage: String,
    /// Its target, in runs over several targets (else empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// One per run: its headroom there, or nothing when no output was compared.
    pub points: Vec<Option<HistoryPoint>>,
    /// The runs where its error grew past the band, oldest first.
    pub growth: Vec<Growth>,
}

impl StageHistory {
    /// `stage`, or `stage @target`.
    pub fn name(&self) -> String {
        if self.target.is_empty() {
            self.stage.clone()
        } else {
            format!("{} @{}", self.stage, self.target)
        }
    }
}

/// A record in the directory that is not part of the history, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedRun {
    /// The file.
    pub file: String,
    /// Why it was left out.
    pub reason: String,
}

/// The history of one spec's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// Always [`HISTORY_SCHEMA`].
    pub schema: String,
    /// fail when a stage grew past the band in the newest run, else pass.
    pub status: Status,
    /// The directory the runs were read from.
    pub dir: String,
    /// The spec of the newest run; runs of other specs are skipped.
    pub spec: String,
    /// How the runs were ordered.
    pub order: HistoryOrder,
    /// The noise band.
    pub band: Band,
    /// The metrics watched for growth.
    pub metrics: Vec<Metric>,
    /// The runs, oldest first.
    pub runs: Vec<HistoryRun>,
    /// Every stage of any run, in the newest run's order, then older ones'.
    pub stages: Vec<StageHistory>,
    /// Records left out (another spec).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedRun>,
}

/// `run-10` after `run-9`: digit runs compare as numbers, the rest as text.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn parts(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    // Numbers by length then digits (no overflow), before text at the same place.
    fn key((digit, p): (bool, &str)) -> (bool, usize, &str) {
        let trimmed = p.trim_start_matches('0');
        if digit {
            (false, trimmed.len(), trimmed)
        } else {
            (true, 0, p)
        }
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = key(*x).cmp(&key(*y));
        if o.is_ne() {
            return o;
        }
    }
    pa.len().cmp(&pb.len()).then_with(|| a.cmp(b))
}

/// Puts `runs` in order (see the module docs).
pub fn order(mut runs: Vec<SavedRun>) -> (Vec<SavedRun>, HistoryOrder) {
    let times: Option<Vec<i64>> = runs
        .iter()
        .map(|r| started_seconds(&r.record.started))
        .collect();
    match times {
        Some(t) => {
            let mut keyed: Vec<_> = t.into_iter().zip(runs).collect();
            keyed
                .sort_by(|(ta, a), (tb, b)| ta.cmp(tb).then_with(|| natural_cmp(&a.file, &b.file)));
            (
                keyed.into_iter().map(|(_, r)| r).collect(),
                HistoryOrder::Started,
            )
        }
        None => {
            runs.sort_by(|a, b| natural_cmp(&a.file, &b.file));
            (runs, HistoryOrder::FileName)
        }
    }
}

/// Seconds since the epoch of an RFC 3339 time (`2026-12-01T09:00:00Z`,
/// fractions and offsets allowed); None when it does not parse.
pub fn started_seconds(text: &str) -> Option<i64> {
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

type OutputKey = (String, String, String, Mode, String);

impl HistoryRecord {
    /// The history of `saved` (any order), read from `dir`: the runs of the
    /// newest run's spec, in order, each stage's headroom per run and where
    /// its error grew past `band` on one of `metrics`. None when `saved` is empty.
    pub fn build(
        dir: &str,
        saved: Vec<SavedRun>,
        band: Band,
        metrics: &[Metric],
    ) -> Option<HistoryRecord> {
        let (ordered, order) = self::order(saved);
        let spec = ordered.last()?.record.spec.clone();
        let same = |s: &str| s.trim_start_matches("./") == spec.trim_start_matches("./");
        let (runs, others): (Vec<_>, Vec<_>) =
            ordered.into_iter().partition(|r| same(&r.record.spec));
        let skipped = others
            .into_iter()
            .map(|r| SkippedRun {
                reason: format!(
                    "a run of {}, not of {spec} (the newest run's spec)",
                    r.record.spec
                ),
                file: r.file,
            })
            .collect();
        let mut stages: Vec<StageHistory> = Vec::new();
        for saved in runs.iter().rev() {
            let multi = saved.record.is_multi_target();
            for s in &saved.record.stages {
                let target = if multi { s.target.as_str() } else { "" };
                if !stages
                    .iter()
                    .any(|h| h.stage == s.name && h.target == target)
                {
                    stages.push(StageHistory {
                        stage: s.name.clone(),
                        target: target.to_string(),
                        points: vec![None; runs.len()],
                        growth: Vec::new(),
                    });
                }
            }
        }
        let mut last: HashMap<OutputKey, (usize, &OutputMetrics)> = HashMap::new();
        for (i, saved) in runs.iter().enumerate() {
            let multi = saved.record.is_multi_target();
            let mut grown: HashMap<usize, Vec<Growth>> = HashMap::new();
            let mut status: HashMap<usize, Status> = HashMap::new();
            for s in &saved.record.stages {
                let target = if multi { s.target.as_str() } else { "" };
                let Some(k) = stages
                    .iter()
                    .position(|h| h.stage == s.name && h.target == target)
                else {
                    continue;
                };
                let st = status.entry(k).or_insert(s.status);
                *st = worse(*st, s.status);
                for o in &s.outputs {
                    let tight = o.criteria.iter().map(|c| (c, c.ratio())).reduce(|a, b| {
                        if b.1 > a.1 {
                            b
                        } else {
                            a
                        }
                    });
                    if let Some((c, ratio)) = tight {
                        let point = &mut stages[k].points[i];
                        // Ties keep the first (isolated before chained, cases in order).
                        if point.as_ref().is_none_or(|p| ratio > p.ratio) {
                            *point = Some(HistoryPoint {
                                ratio,
                                output: o.name.clone(),
                                case: s.case.clone(),
                                mode: s.mode,
                                criterion: c.criterion.name().to_string(),
                                status: Status::Pass,
                            });
                        }
                    }
                    let Some(m) = &o.metrics else { continue };
                    let key = (
                        s.name.clone(),
                        target.to_string(),
                        s.case.clone(),
                        s.mode,
                        o.name.clone(),
                    );
                    if let Some((since, before)) = last.insert(key, (i, m)) {
                        for metric in metrics {
                            let (Some(b), Some(c)) = (metric.value(before), metric.value(m)) else {
                                continue;
                            };
                            if Change::of(b, c, &band) == Change::Regressed {
                                grown.entry(k).or_default().push(Growth {
                                    run: i,
                                    since,
                                    output: o.name.clone(),
                                    case: s.case.clone(),
                                    mode: s.mode,
                                    metric: *metric,
                                    previous: b,
                                    current: c,
                                    limit: band.limit(b),
                                    regressed: 0,
                                });
                            }
                        }
                    }
                }
            }
            for (k, st) in status {
                if let Some(p) = &mut stages[k].points[i] {
                    p.status = st;
                }
            }
            let mut grown: Vec<_> = grown.into_iter().collect();
            grown.sort_by_key(|(k, _)| *k);
            for (k, all) in grown {
                let n = all.len();
                // The one that grew furthest past its limit names the growth.
                let over = |g: &Growth| {
                    if g.current.is_nan() {
                        f64::INFINITY
                    } else if g.limit > 0.0 {
                        g.current / g.limit
                    } else {
                        f64::MAX
                    }
                };
                let worst = all
                    .into_iter()
                    .reduce(|a, b| if over(&b) > over(&a) { b } else { a });
                if let Some(mut worst) = worst {
                    worst.regressed = n;
                    stages[k].growth.push(worst);
                }
            }
        }
        let runs: Vec<HistoryRun> = runs
            .into_iter()
            .map(|r| HistoryRun {
                file: r.file,
                label: r.label,
                started: r.record.started,
                status: r.record.status,
                parity_version: r.record.parity_version,
            })
            .collect();
        let mut record = HistoryRecord {
            schema: HISTORY_SCHEMA.to_string(),
            status: Status::Pass,
            dir: dir.to_string(),
            spec,
            order,
            band,
            metrics: metrics.to_vec(),
            runs,
            stages,
            skipped,
        };
        record.status = record.derived_status();
        Some(record)
    }

    /// fail when a stage grew in the newest run, else pass.
    pub fn derived_status(&self) -> Status {
        if self.grew_in_newest().next().is_some() {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// The stages whose error grew past the band in the newest run, with that growth.
    pub fn grew_in_newest(&self) -> impl Iterator<Item = (&StageHistory, &Growth)> {
        let newest = self.runs.len().checked_sub(1);
        self.stages.iter().filter_map(move |s| {
            let g = s.growth.last()?;
            (Some(g.run) == newest).then_some((s, g))
        })
    }

    /// 1 when a stage grew in the newest run, else 0.
    pub fn exit_code(&self) -> ExitCode {
        match self.status {
            Status::Fail => ExitCode::Fail,
            _ => ExitCode::Pass,
        }
    }
}

fn worse(a: Status, b: Status) -> Status {
    let rank = |s: Status| match s {
        Status::Pass => 0,
        Status::Skipped => 1,
        Status::Fail => 2,
        Status::Error => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
