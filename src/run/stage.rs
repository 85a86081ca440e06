//! One stage in one case and mode: gather arguments, invoke, compare outputs.

use super::inputs::InputSources;
use super::modules::ModuleSet;
use parity_compare::{
    compare, default_tolerance, evaluate, CompareOptions, Criterion, Mask, Metrics, TruthErrors,
    UlpDType,
};
use parity_record::{
    Check, CriterionRecord, ElementRecord, ErrorKind, ErrorRecord, Mode, OutputMetrics,
    OutputRecord, StageRecord, Status, TruthRecord,
};
use parity_spec::{Arg, MaskSource, OutputSpec, Spec, Stage};
use parity_tensor::Tensor;
use std::collections::HashMap;
use std::time::Instant;

/// A comparison's metrics, truth errors, and the oracle tensor and mask it used.
type Measured = (Metrics, Option<TruthRecord>, (Tensor, Option<Mask>));

/// Production outputs of the current case and mode, keyed by (stage, output).
pub type Produced = HashMap<(String, String), Tensor>;

/// Everything a stage run needs besides the stage itself.
pub struct StageContext<'a> {
    /// The spec (tolerance defaults).
    pub spec: &'a Spec,
    /// The stages of this case, templating applied.
    pub stages: &'a [Stage],
    /// Case name.
    pub case: &'a str,
    /// Isolated or chained.
    pub mode: Mode,
    /// Oracle store and weights.
    pub sources: &'a InputSources,
    /// Compiled, loaded modules.
    pub modules: &'a ModuleSet,
}

impl StageContext<'_> {
    /// Runs `stage`, storing its production outputs in `produced`.
    /// `unavailable` maps stages that errored or were skipped to their status.
    pub fn run(
        &self,
        stage: &Stage,
        produced: &mut Produced,
        unavailable: &HashMap<String, String>,
    ) -> StageRecord {
        let mut rec = StageRecord {
            name: stage.name.clone(),
            case: self.case.to_string(),
            mode: self.mode,
            function: format!("{}.{}", stage.module, stage.function),
            status: Status::Pass,
            error: None,
            skipped_because: None,
            invoke_ms: 0.0,
            outputs: Vec::new(),
        };
        let args = match self.gather_args(stage, produced, unavailable) {
            Ok(args) => args,
            Err((status, kind, message)) => {
                rec.status = status;
                match kind {
                    Some(kind) => {
                        rec.error = Some(ErrorRecord {
                            kind,
                            message,
                            location: None,
                        })
                    }
                    None => rec.skipped_because = Some(message),
                }
                return rec;
            }
        };
        let clock = Instant::now();
        let results = self.modules.invoke(&stage.module, &stage.function, &args);
        rec.invoke_ms = clock.elapsed().as_secs_f64() * 1e3;
        let results = match results {
            Ok(r) => r,
            Err(message) => {
                rec.status = Status::Error;
                rec.error = Some(ErrorRecord::execution(format!(
                    "stage `{}` ({}, {}): {message}",
                    stage.name,
                    self.case,
                    self.mode.name()
                )));
                return rec;
            }
        };
        if results.len() != stage.outputs.len() {
            rec.status = Status::Error;
            rec.error = Some(ErrorRecord::input(format!(
                "stage `{}`: function `{}` returned {} results but the spec lists {} outputs",
                stage.name,
                stage.function,
                results.len(),
                stage.outputs.len()
            )));
            return rec;
        }
        for (spec_out, actual) in stage.outputs.iter().zip(results) {
            let out = self.check_output(stage, spec_out, &actual, &args);
            if out.status == Status::Error {
                rec.status = Status::Error;
                if rec.error.is_none() {
                    rec.error = out.error.clone();
                }
            } else if out.status == Status::Fail && rec.status == Status::Pass {
                rec.status = Status::Fail;
            }
            rec.outputs.push(out);
            produced.insert((stage.name.clone(), spec_out.name.clone()), actual);
        }
        rec
    }

    /// Resolves every argument: oracle tensors, weights, literals, and
    /// upstream outputs (oracle values in isolated mode, production values in
    /// chained mode).
    fn gather_args(
        &self,
        stage: &Stage,
        produced: &Produced,
        unavailable: &HashMap<String, String>,
    ) -> Result<Vec<Tensor>, (Status, Option<ErrorKind>, String)> {
        let input_err = |i: usize, m: String| {
            (
                Status::Error,
                Some(ErrorKind::Input),
                format!("stage `{}` ({}), argument {i}: {m}", stage.name, self.case),
            )
        };
        let mut args = Vec::with_capacity(stage.args.len());
        for (i, arg) in stage.args.iter().enumerate() {
            let tensor = match arg {
                Arg::Oracle(name) => self.sources.oracle(name).map_err(|m| input_err(i, m))?,
                Arg::Weight(name) => self.sources.weight(name).map_err(|m| input_err(i, m))?,
                Arg::Literal {
                    dtype,
                    shape,
                    values,
                } => Tensor::from_f64_as(*dtype, shape.clone(), values)
                    .map_err(|e| input_err(i, e.to_string()))?,
                Arg::Stage { stage: up, output } => {
                    let upstream_oracle = || {
                        self.stages
                            .iter()
                            .find(|s| &s.name == up)
                            .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                            .map(|o| o.oracle.clone())
                            .ok_or_else(|| {
                                input_err(i, format!("unknown upstream `{up}.{output}`"))
                            })
                    };
                    match self.mode {
                        Mode::Isolated => {
                            let name = upstream_oracle()?;
                            self.sources.oracle(&name).map_err(|m| input_err(i, m))?
                        }
                        Mode::Chained => match produced.get(&(up.clone(), output.clone())) {
                            Some(t) => t.clone(),
                            None => {
                                let why =
                                    unavailable.get(up).map(String::as_str).unwrap_or("not run");
                                return Err((
                                    Status::Skipped,
                                    None,
                                    format!("upstream stage `{up}` {why}; needs `{up}.{output}`"),
                                ));
                            }
                        },
                    }
                }
            };
            args.push(tensor);
        }
        Ok(args)
    }

    /// Compares one production output with its oracle tensor under its tolerance.
    fn check_output(
        &self,
        stage: &Stage,
        spec_out: &OutputSpec,
        actual: &Tensor,
        args: &[Tensor],
    ) -> OutputRecord {
        let mut out = OutputRecord {
            name: spec_out.name.clone(),
            oracle: spec_out.oracle.clone(),
            status: Status::Pass,
            dtype: actual.dtype().name().to_string(),
            shape: actual.shape().to_vec(),
            error: None,
            metrics: None,
            criteria: Vec::new(),
            error_map: None,
        };
        let context = |m: String| {
            format!(
                "stage `{}` ({}), output `{}` vs oracle `{}`: {m}",
                stage.name, self.case, spec_out.name, spec_out.oracle
            )
        };
        let criteria = spec_out
            .tolerance
            .clone()
            .or_else(|| self.spec.tolerances.get(&actual.dtype()).cloned())
            .unwrap_or_else(|| default_tolerance(actual.dtype()));
        match self.measure(spec_out, actual, args, &criteria) {
            Ok((metrics, truth, compared)) => {
                let truth_errors = truth.as_ref().map(|t| TruthErrors {
                    actual_vs_truth: t.actual_vs_truth,
                    expected_vs_truth: t.expected_vs_truth,
                });
                let verdict = evaluate(&criteria, &metrics, truth_errors.as_ref());
                out.status = if verdict.passed {
                    Status::Pass
                } else {
                    Status::Fail
                };
                out.criteria = verdict
                    .results
                    .iter()
                    .map(|r| CriterionRecord {
                        criterion: Check::Tolerance(r.criterion.clone()),
                        passed: r.passed,
                        observed: r.observed,
                        threshold: r.threshold,
                        min_passing: r.min_passing,
                        note: r.note.clone(),
                    })
                    .collect();
                // `assert_zero` on a mask is a criterion of its own: padded
                // positions of the production tensor must be exactly zero.
                if let Some(nonzero) = metrics.padded_nonzero {
                    out.criteria.push(CriterionRecord {
                        criterion: Check::PaddedZero,
                        passed: nonzero == 0,
                        observed: nonzero as f64,
                        threshold: 0.0,
                        min_passing: nonzero as f64,
                        note: (nonzero > 0).then(|| {
                            format!("{nonzero} padded elements of the production output are not exactly zero")
                        }),
                    });
                    if nonzero > 0 {
                        out.status = Status::Fail;
                    }
                }
                if out.status == Status::Fail {
                    out.error_map =
                        super::error_map::compute(actual, &compared.0, compared.1.as_ref());
                }
                out.metrics = Some(metrics_record(&metrics, truth));
            }
            Err(message) => {
                out.status = Status::Error;
                out.error = Some(ErrorRecord::input(context(message)));
            }
        }
        out
    }

    /// Runs the comparison (and the two truth comparisons when a truth is
    /// named); also returns the oracle tensor and mask it compared against.
    fn measure(
        &self,
        spec_out: &OutputSpec,
        actual: &Tensor,
        args: &[Tensor],
        criteria: &[Criterion],
    ) -> Result<Measured, String> {
        let expected = self.sources.oracle(&spec_out.oracle)?;
        let mask = match &spec_out.mask {
            None => None,
            Some(m) => {
                let tensor = match &m.source {
                    MaskSource::Oracle(name) => self.sources.oracle(name)?,
                    MaskSource::Arg(i) => args
                        .get(*i)
                        .cloned()
                        .ok_or_else(|| format!("mask argument index {i} out of range"))?,
                };
                Some(
                    Mask::new(&tensor, m.axes.clone(), m.padded, actual.shape())
                        .map_err(|e| format!("mask: {e}"))?,
                )
            }
        };
        let options = CompareOptions {
            ulp_dtype: spec_out.ulp_dtype.and_then(UlpDType::from_dtype),
            assert_padded_zero: spec_out.mask.as_ref().is_some_and(|m| m.assert_zero),
            ..CompareOptions::for_criteria(criteria, actual.dtype())
        };
        let metrics =
            compare(actual, &expected, mask.as_ref(), &options).map_err(|e| e.to_string())?;
        let truth = match &spec_out.truth {
            None => None,
            Some(name) => {
                let truth = self.sources.oracle(name)?;
                let rms_vs = |t: &Tensor| {
                    compare(t, &truth, mask.as_ref(), &CompareOptions::default())
                        .map(|m| m.rms)
                        .map_err(|e| format!("vs truth `{name}`: {e}"))
                };
                Some(TruthRecord {
                    truth: name.clone(),
                    actual_vs_truth: rms_vs(actual)?,
                    expected_vs_truth: rms_vs(&expected)?,
                })
            }
        };
        Ok((metrics, truth, (expected, mask)))
    }
}

/// The record form of the comparison engine's metrics.
pub fn metrics_record(m: &Metrics, vs_f64: Option<TruthRecord>) -> OutputMetrics {
    let element = |e: &parity_compare::ElementDiff| ElementRecord {
        index: e.index.clone(),
        actual: e.actual,
        expected: e.expected,
    };
    OutputMetrics {
        count: m.count,
        masked_out: m.masked_out,
        max_abs: m.max_abs,
        mean_abs: m.mean_abs,
        rms: m.rms,
        rel_l2: m.rel_l2,
        cosine: m.cosine,
        max_ulp: m.max_ulp,
        ulp_dtype: m.ulp_dtype.map(|d| d.name().to_string()),
        ulp_p50: m.ulp_quantile(0.5),
        ulp_p99: m.ulp_quantile(0.99),
        ulp_histogram: m
            .ulp_histogram
            .as_ref()
            .map(|h| {
                h.display_buckets()
                    .iter()
                    .map(|b| [b.lo, b.hi, b.count])
                    .collect()
            })
            .unwrap_or_default(),
        mismatches: m.mismatches,
        nan_mismatch: m.nan_mismatch,
        inf_mismatch: m.inf_mismatch,
        bitwise_mismatches: m.bitwise_mismatches,
        padded_nonzero: m.padded_nonzero,
        first_violation: m.first_violation.as_ref().map(element),
        worst: m.worst.iter().map(element).collect(),
        vs_f64,
    }
}
