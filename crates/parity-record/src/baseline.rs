//! The baseline comparison (`parity.baseline/1`): `parity report RUN.json
//! --baseline BASE.json` sets each metric of every output of the run beside
//! the same output's in an earlier run, and fails when an error grew past a
//! noise band, even within tolerance (a ratchet: errors may shrink, not grow).
//!
//! An output is the same when (stage, case, mode, output) match. A metric
//! regressed when `current > baseline + |baseline| * band.rel + band.abs`
//! (NaN counts as larger than any number; two NaNs, or two equal infinities,
//! are unchanged).

use crate::common::{Mode, Status};
use crate::exit::ExitCode;
use crate::run::{OutputMetrics, RunRecord};
use serde::{Deserialize, Serialize};

/// The schema identifier of a baseline comparison.
pub const BASELINE_SCHEMA: &str = "parity.baseline/1";

/// A metric the ratchet watches; every one is an error (larger is worse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Largest absolute difference.
    MaxAbs,
    /// Mean absolute difference.
    MeanAbs,
    /// RMS of the difference.
    Rms,
    /// Relative L2 error.
    RelL2,
    /// `1 - cosine`: the cosine similarity's distance from 1.
    Cosine,
    /// Largest ULP distance.
    MaxUlp,
    /// 99th percentile ULP distance.
    UlpP99,
    /// allclose violations plus NaN/Inf mismatches.
    Mismatches,
}

impl Metric {
    /// Every metric, in display order.
    pub const ALL: [Metric; 8] = [
        Metric::MaxAbs,
        Metric::MeanAbs,
        Metric::Rms,
        Metric::RelL2,
        Metric::Cosine,
        Metric::MaxUlp,
        Metric::UlpP99,
        Metric::Mismatches,
    ];

    /// What the ratchet watches when neither the command line nor the spec says.
    pub const DEFAULT: [Metric; 6] = [
        Metric::MaxAbs,
        Metric::Rms,
        Metric::RelL2,
        Metric::Cosine,
        Metric::MaxUlp,
        Metric::Mismatches,
    ];

    /// Its name in flags, specs and records.
    pub fn name(self) -> &'static str {
        match self {
            Metric::MaxAbs => "max_abs",
            Metric::MeanAbs => "mean_abs",
            Metric::Rms => "rms",
            Metric::RelL2 => "rel_l2",
            Metric::Cosine => "cosine",
            Metric::MaxUlp => "max_ulp",
            Metric::UlpP99 => "ulp_p99",
            Metric::Mismatches => "mismatches",
        }
    }

    /// Its label in tables: the name, except `1 - cosine` for the cosine.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Cosine => "1 - cosine",
            m => m.name(),
        }
    }

    /// The metric named `name`.
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Its value in `m` as an error (`1 - cosine` for the cosine), when it applies.
    pub fn value(self, m: &OutputMetrics) -> Option<f64> {
        let ulp = |u: Option<u64>| u.map(|u| u as f64);
        match self {
            Metric::MaxAbs => Some(m.max_abs),
            Metric::MeanAbs => Some(m.mean_abs),
            Metric::Rms => Some(m.rms),
            Metric::RelL2 => Some(m.rel_l2),
            Metric::Cosine => Some(1.0 - m.cosine),
            Metric::MaxUlp => ulp(m.max_ulp),
            Metric::UlpP99 => ulp(m.ulp_p99),
            Metric::Mismatches => Some(m.mismatches as f64),
        }
    }
}

/// How much an error may grow before it counts as a regression.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// Relative growth allowed, as a fraction of the baseline value (0.1 = 10%).
    #[serde(with = "crate::float")]
    pub rel: f64,
    /// Absolute growth allowed on top.
    #[serde(with = "crate::float")]
    pub abs: f64,
}

impl Default for Band {
    fn default() -> Self {
        Band { rel: 0.1, abs: 0.0 }
    }
}

impl Band {
    /// The largest value that is not a regression from `baseline`.
    pub fn limit(&self, baseline: f64) -> f64 {
        baseline + baseline.abs() * self.rel + self.abs
    }
}

/// What happened to one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Exactly the baseline's value.
    Same,
    /// Smaller than the baseline's.
    Improved,
    /// Larger, but within the band.
    Within,
    /// Larger than the band allows: fails the comparison.
    Regressed,
}

impl Change {
    /// The name in records and text.
    pub fn name(self) -> &'static str {
        match self {
            Change::Same => "same",
            Change::Improved => "improved",
            Change::Within => "within band",
            Change::Regressed => "REGRESSED",
        }
    }

    /// How `current` compares with `baseline` under `band`.
    pub fn of(baseline: f64, current: f64, band: &Band) -> Change {
        let same = baseline == current || (baseline.is_nan() && current.is_nan());
        if same {
            Change::Same
        } else if current.is_nan() {
            Change::Regressed
        } else if baseline.is_nan() || current < baseline {
            Change::Improved
        } else if current > band.limit(baseline) {
            Change::Regressed
        } else {
            Change::Within
        }
    }
}

/// One metric of one output, then and now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// Which metric.
    pub metric: Metric,
    /// In the baseline.
    #[serde(with = "crate::float")]
    pub baseline: f64,
    /// In the run.
    #[serde(with = "crate::float")]
    pub current: f64,
    /// The largest value that would not have regressed.
    #[serde(with = "crate::float")]
    pub limit: f64,
    /// The verdict.
    pub change: Change,
}

/// One output found in both records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputChange {
    /// Stage name.
    pub stage: String,
    /// Case name.
    pub case: String,
    /// Mode.
    pub mode: Mode,
    /// Output name.
    pub output: String,
    /// The output's status in the baseline.
    pub baseline_status: Status,
    /// The output's status in the run.
    pub status: Status,
    /// Every watched metric that both records hold, in the watched order.
    pub metrics: Vec<MetricChange>,
}

impl OutputChange {
    /// Whether any metric regressed.
    pub fn regressed(&self) -> bool {
        self.metrics.iter().any(|m| m.change == Change::Regressed)
    }

    /// `stage/output (case, mode)`, as the text renderers name it.
    pub fn label(&self) -> String {
        format!(
            "{}/{} ({}, {})",
            self.stage,
            self.output,
            self.case,
            self.mode.name()
        )
    }
}

/// Why a run cannot be compared with a baseline.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BaselineError {
    /// No output is in both records: nothing would be compared, and a
    /// comparison of nothing must not pass.
    #[error(
        "{run} and {baseline}: no output in common ({run_outputs} measured outputs in the run, \
         {baseline_outputs} in the baseline, none the same stage, case, mode and output); \
         is the baseline a run of another spec?"
    )]
    NothingInCommon {
        /// The run record's file.
        run: String,
        /// The baseline record's file.
        baseline: String,
        /// Outputs with metrics in the run.
        run_outputs: usize,
        /// Outputs with metrics in the baseline.
        baseline_outputs: usize,
    },
}

/// A run compared with its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRecord {
    /// Always [`BASELINE_SCHEMA`].
    pub schema: String,
    /// fail when some metric regressed, else pass.
    pub status: Status,
    /// The run record's file.
    pub run: String,
    /// The baseline record's file.
    pub baseline: String,
    /// The run's spec and parity version, then the baseline's, when they differ (else empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The noise band.
    pub band: Band,
    /// The metrics watched.
    pub metrics: Vec<Metric>,
    /// Outputs found in both, in the run's order.
    pub outputs: Vec<OutputChange>,
    /// Outputs (labels) the run has with metrics and the baseline does not.
    pub only_in_run: Vec<String>,
    /// Outputs (labels) the baseline has with metrics and the run does not.
    pub only_in_baseline: Vec<String>,
}

impl BaselineRecord {
    /// Compares `run` (from file `run_file`) with `baseline` (from
    /// `baseline_file`); refuses two records with no output in common.
    pub fn compare(
        run: &RunRecord,
        run_file: &str,
        baseline: &RunRecord,
        baseline_file: &str,
        band: Band,
        metrics: &[Metric],
    ) -> Result<BaselineRecord, BaselineError> {
        let measured = |r: &'_ RunRecord| -> Vec<(OutputChange, OutputMetrics)> {
            r.stages
                .iter()
                .flat_map(|s| s.outputs.iter().map(move |o| (s, o)))
                .filter_map(|(s, o)| {
                    let change = OutputChange {
                        stage: s.name.clone(),
                        case: s.case.clone(),
                        mode: s.mode,
                        output: o.name.clone(),
                        baseline_status: o.status,
                        status: o.status,
                        metrics: Vec::new(),
                    };
                    Some((change, o.metrics.clone()?))
                })
                .collect()
        };
        let key = |c: &OutputChange| -> (String, String, Mode, String) {
            (c.stage.clone(), c.case.clone(), c.mode, c.output.clone())
        };
        let now = measured(run);
        let then = measured(baseline);
        let then_by_key: std::collections::HashMap<_, _> =
            then.iter().map(|(c, m)| (key(c), (c, m))).collect();
        let mut outputs = Vec::new();
        let mut only_in_run = Vec::new();
        for (mut change, current) in now.iter().cloned() {
            let Some((old, previous)) = then_by_key.get(&key(&change)) else {
                only_in_run.push(change.label());
                continue;
            };
            change.baseline_status = old.status;
            change.metrics = metrics
                .iter()
                .filter_map(|&metric| {
                    let (b, c) = (metric.value(previous)?, metric.value(&current)?);
                    Some(MetricChange {
                        metric,
                        baseline: b,
                        current: c,
                        limit: band.limit(b),
                        change: Change::of(b, c, &band),
                    })
                })
                .collect();
            outputs.push(change);
        }
        let now_keys: std::collections::HashSet<_> = now.iter().map(|(c, _)| key(c)).collect();
        let only_in_baseline = then
            .iter()
            .filter(|(c, _)| !now_keys.contains(&key(c)))
            .map(|(c, _)| c.label())
            .collect();
        if outputs.is_empty() {
            return Err(BaselineError::NothingInCommon {
                run: run_file.to_string(),
                baseline: baseline_file.to_string(),
                run_outputs: now.len(),
                baseline_outputs: then.len(),
            });
        }
        let mut notes = Vec::new();
        if run.spec != baseline.spec {
            notes.push(format!(
                "the run's spec is {}, the baseline's {}",
                run.spec, baseline.spec
            ));
        }
        if run.parity_version != baseline.parity_version {
            notes.push(format!(
                "the run's parity is {}, the baseline's {}",
                run.parity_version, baseline.parity_version
            ));
        }
        let status = if outputs.iter().any(OutputChange::regressed) {
            Status::Fail
        } else {
            Status::Pass
        };
        Ok(BaselineRecord {
            schema: BASELINE_SCHEMA.to_string(),
            status,
            run: run_file.to_string(),
            baseline: baseline_file.to_string(),
            notes,
            band,
            metrics: metrics.to_vec(),
            outputs,
            only_in_run,
            only_in_baseline,
        })
    }

    /// Every metric that regressed, with its output.
    pub fn regressions(&self) -> impl Iterator<Item = (&OutputChange, &MetricChange)> {
        self.outputs.iter().flat_map(|o| {
            o.metrics
                .iter()
                .filter(|m| m.change == Change::Regressed)
                .map(move |m| (o, m))
        })
    }

    /// 1 when some metric regressed, else 0 (the run's own code is combined by the caller).
    pub fn exit_code(&self) -> ExitCode {
        match self.status {
            Status::Fail => ExitCode::Fail,
            _ => ExitCode::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn band_decides_between_within_and_regressed() {
        let band = Band { rel: 0.1, abs: 0.0 };
        assert_eq!(Change::of(1.0, 1.0, &band), Change::Same);
        assert_eq!(Change::of(1.0, 1.1, &band), Change::Within);
        assert_eq!(Change::of(1.0, 1.1000001, &band), Change::Regressed);
        assert_eq!(Change::of(1.0, 0.5, &band), Change::Improved);
        // A bit-identical output stays bit-identical unless the band says otherwise.
        assert_eq!(Change::of(0.0, 1e-12, &band), Change::Regressed);
        let abs = Band {
            rel: 0.0,
            abs: 1e-9,
        };
        assert_eq!(Change::of(0.0, 1e-12, &abs), Change::Within);
        assert_eq!(Change::of(1.0, f64::NAN, &band), Change::Regressed);
        assert_eq!(Change::of(f64::NAN, f64::NAN, &band), Change::Same);
        assert_eq!(Change::of(f64::NAN, 3.0, &band), Change::Improved);
        assert_eq!(Change::of(1.0, f64::INFINITY, &band), Change::Regressed);
        assert_eq!(
            Change::of(f64::INFINITY, f64::INFINITY, &band),
            Change::Same
        );
    }

    #[test]
    fn a_baseline_with_no_output_in_common_is_refused() {
        let run = crate::samples::passing_run();
        let mut other = crate::samples::passing_run();
        for s in &mut other.stages {
            s.name = format!("other_{}", s.name);
        }
        let compare = |base: &RunRecord| {
            BaselineRecord::compare(
                &run,
                "now/run.json",
                base,
                "other/run.json",
                Band::default(),
                &Metric::DEFAULT,
            )
        };
        let e = compare(&other).unwrap_err();
        assert_eq!(
            e,
            BaselineError::NothingInCommon {
                run: "now/run.json".into(),
                baseline: "other/run.json".into(),
                run_outputs: 4,
                baseline_outputs: 4,
            }
        );
        let m = e.to_string();
        assert!(
            m.starts_with("now/run.json and other/run.json: no output in common"),
            "{m}"
        );
        // A baseline that measured nothing (every stage errored) compares nothing either.
        let mut empty = run.clone();
        empty.stages.clear();
        assert!(compare(&empty).is_err());
        // One output in common is enough.
        other.stages[0].name = "embed".into();
        assert_eq!(compare(&other).map(|b| b.outputs.len()), Ok(1));
    }

    #[test]
    fn metric_names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(Metric::parse(m.name()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        assert_eq!(Metric::parse("max_abs "), None);
    }

    proptest! {
        #[test]
        fn never_regressed_within_the_limit(base in 0.0f64..1e6, rel in 0.0f64..1.0, abs in 0.0f64..1.0, t in 0.0f64..=1.0) {
            let band = Band { rel, abs };
            let current = (base + (band.limit(base) - base) * t).min(band.limit(base));
            prop_assert_ne!(Change::of(base, current, &band), Change::Regressed);
            let above = band.limit(base) * (1.0 + 1e-9) + 1e-300;
            prop_assert_eq!(Change::of(base, above, &band), Change::Regressed);
        }
    }
}
