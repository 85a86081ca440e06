//! One stage in one case and mode: gather arguments, invoke, compare outputs.

use super::cross::CrossTargets;
use super::inputs::InputSources;
use super::module_set::ModuleSet;
use parity_compare::{
    compare, default_tolerance, evaluate_with, CompareOptions, Criterion, Mask, Metrics,
    TruthErrors, UlpDType, VerdictOptions,
};
use parity_record::{
    Check, CriterionRecord, CrossTarget, ElementRecord, ErrorKind, Mode, OutputMetrics,
    OutputRecord, StageRecord, Status, TruthRecord,
};
use parity_spec::{Arg, MaskSource, OutputSpec, Spec, Stage};
use parity_tensor::{DType, Tensor};
use std::collections::HashMap;
use std::time::Instant;

pub use super::measure_error::MeasureError;
use super::stage_error::{ArgumentError, SignatureMismatch, SpecPosition, StageAt, StageError};

/// Why a stage's arguments were not gathered: an upstream it needs did not
/// run (the stage is skipped), or an error.
enum NotGathered {
    /// Skipped, with the reason.
    Skipped(String),
    /// An input error.
    Error(Box<StageError>),
}

/// A comparison's metrics, truth errors, and the oracle tensor and mask it used.
type Measured = (
    Metrics,
    Option<(TruthRecord, TruthErrors)>,
    (Tensor, Option<Mask>),
);

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
    /// The target's name (every stage record names it).
    pub target: &'a str,
    /// In a run over several targets: keep the outputs, or compare them with the first target's.
    pub cross: super::cross::CrossTargets<'a>,
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
            target: self.target.to_string(),
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
            Err(NotGathered::Skipped(why)) => {
                rec.status = Status::Skipped;
                rec.skipped_because = Some(why);
                return rec;
            }
            Err(NotGathered::Error(e)) => {
                rec.status = Status::Error;
                rec.error = Some(e.to_record());
                return rec;
            }
        };
        if let Err(e) = self.check_signature(stage, &args) {
            rec.status = Status::Error;
            rec.error = Some(e.to_record());
            return rec;
        }
        let clock = Instant::now();
        // Weights stay on the device: uploaded on first use in this runtime,
        // then reused by every stage and case that reads the same weight.
        let keys: Vec<Option<String>> = stage
            .args
            .iter()
            .map(|a| match a {
                Arg::Weight(name) => Some(format!("weight:{name}")),
                _ => None,
            })
            .collect();
        let results = self
            .modules
            .invoke_keyed(&stage.module, &stage.function, &args, &keys);
        rec.invoke_ms = clock.elapsed().as_secs_f64() * 1e3;
        let results = match results {
            Ok(r) => r,
            Err(source) => {
                // An input error is the spec's fault: point at the function line.
                let position = (source.kind() == ErrorKind::Input)
                    .then(|| self.position(stage, Some(&stage.locations.function)));
                let e = StageError::Invoke {
                    at: self.at(stage, None),
                    mode: self.mode,
                    position,
                    source,
                };
                rec.status = Status::Error;
                rec.error = Some(e.to_record());
                return rec;
            }
        };
        if results.len() != stage.outputs.len() {
            let e = StageError::Results {
                at: self.at(stage, None),
                mismatch: SignatureMismatch::ResultCount {
                    function: stage.function.clone(),
                    returns: results.len(),
                    listed: stage.outputs.len(),
                },
            };
            rec.status = Status::Error;
            rec.error = Some(e.to_record());
            return rec;
        }
        for (o, (spec_out, actual)) in stage.outputs.iter().zip(results).enumerate() {
            let reference = match self.cross {
                CrossTargets::CompareWith(r) => r
                    .get(self.case, self.mode, &stage.name, &spec_out.name)
                    .map(|t| (r.target.as_str(), t)),
                _ => None,
            };
            let out = self.check_output(stage, o, spec_out, &actual, &args, reference);
            if let CrossTargets::Keep(r) = self.cross {
                r.keep(self.case, self.mode, &stage.name, &spec_out.name, &actual);
            }
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
    ) -> Result<Vec<Tensor>, NotGathered> {
        let input_err = |index: usize, source: ArgumentError| {
            NotGathered::Error(Box::new(StageError::Argument {
                at: self.at(stage, stage.locations.args.get(index)),
                index,
                source,
            }))
        };
        let mut args = Vec::with_capacity(stage.args.len());
        for (i, arg) in stage.args.iter().enumerate() {
            let tensor = match arg {
                Arg::Oracle(name) => self
                    .sources
                    .oracle(name)
                    .map_err(|e| input_err(i, e.into()))?,
                Arg::Weight(name) => self
                    .sources
                    .weight(name)
                    .map_err(|e| input_err(i, e.into()))?,
                Arg::Literal {
                    dtype,
                    shape,
                    values,
                } => Tensor::from_f64_as(*dtype, shape.clone(), values)
                    .map_err(|e| input_err(i, e.into()))?,
                Arg::Stage { stage: up, output } => {
                    let upstream_oracle = || {
                        self.stages
                            .iter()
                            .find(|s| &s.name == up)
                            .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                            .map(|o| o.oracle.clone())
                            .ok_or_else(|| {
                                input_err(
                                    i,
                                    ArgumentError::UnknownUpstream {
                                        stage: up.clone(),
                                        output: output.clone(),
                                    },
                                )
                            })
                    };
                    match self.mode {
                        Mode::Isolated => {
                            let name = upstream_oracle()?;
                            self.sources
                                .oracle(&name)
                                .map_err(|e| input_err(i, e.into()))?
                        }
                        Mode::Chained => match produced.get(&(up.clone(), output.clone())) {
                            Some(t) => t.clone(),
                            None => {
                                let why =
                                    unavailable.get(up).map(String::as_str).unwrap_or("not run");
                                return Err(NotGathered::Skipped(format!(
                                    "upstream stage `{up}` {why}; needs `{up}.{output}`"
                                )));
                            }
                        },
                    }
                }
            };
            args.push(tensor);
        }
        Ok(args)
    }

    /// The stage and case, pointing at `loc` in the spec (the stage's own
    /// position when None).
    fn at(&self, stage: &Stage, loc: Option<&parity_spec::Location>) -> StageAt {
        StageAt {
            at: self.position(stage, loc),
            stage: stage.name.clone(),
            case: self.case.to_string(),
        }
    }

    /// `file:line:col` of `loc` in the spec (the stage's own position when None).
    fn position(&self, stage: &Stage, loc: Option<&parity_spec::Location>) -> SpecPosition {
        let loc = loc.copied().unwrap_or(stage.location);
        SpecPosition {
            file: self.spec.path.clone(),
            line: loc.line,
            col: loc.col,
        }
    }

    /// Checks the gathered arguments, and the number of outputs the spec lists,
    /// against the compiled function's signature, before IREE sees them: a
    /// mismatch is an input error at the stage's (or argument's) position.
    fn check_signature(&self, stage: &Stage, args: &[Tensor]) -> Result<(), Box<StageError>> {
        let Some(sig) = self.modules.signature(&stage.module, &stage.function) else {
            return Ok(());
        };
        let function = format!("{}.{}", stage.module, stage.function);
        let at = |loc: Option<&parity_spec::Location>, mismatch: SignatureMismatch| {
            Box::new(StageError::Signature {
                at: self.at(stage, loc),
                mismatch,
            })
        };
        if sig.args.len() != args.len() {
            return Err(at(
                Some(&stage.locations.function),
                SignatureMismatch::ArgumentCount {
                    function,
                    takes: sig.args.len(),
                    passes: args.len(),
                },
            ));
        }
        for (i, (ty, arg)) in sig.args.iter().zip(args).enumerate() {
            if let Some(why) = ty.mismatch(arg.dtype(), arg.shape()) {
                let spec_arg = stage.args.get(i);
                return Err(at(
                    stage.locations.args.get(i),
                    SignatureMismatch::Argument {
                        function,
                        index: i,
                        source_name: super::stage_error::argument_source(spec_arg),
                        why,
                        hint: super::stage_error::transpose_hint(
                            spec_arg,
                            ty,
                            arg.dtype(),
                            arg.shape(),
                        ),
                    },
                ));
            }
        }
        if sig.results.len() != stage.outputs.len() {
            return Err(at(
                Some(&stage.locations.function),
                SignatureMismatch::ResultCount {
                    function,
                    returns: sig.results.len(),
                    listed: stage.outputs.len(),
                },
            ));
        }
        Ok(())
    }

    /// Compares one production output with its oracle tensor under its tolerance.
    fn check_output(
        &self,
        stage: &Stage,
        index: usize,
        spec_out: &OutputSpec,
        actual: &Tensor,
        args: &[Tensor],
        reference: Option<(&str, Tensor)>,
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
            vs_target: None,
        };
        // The target's own tolerance for this output replaces the output's.
        let criteria = match self
            .spec
            .subject
            .target(Some(self.target))
            .and_then(|t| t.tolerances.get(&spec_out.name))
        {
            Some(t) => t.criteria.clone(),
            None => output_criteria(self.spec, spec_out, actual.dtype()),
        };
        match self.measure(spec_out, actual, args, &criteria) {
            Ok((metrics, truth, compared)) => {
                let truth_errors = truth.as_ref().map(|(_, errors)| *errors);
                let allow = VerdictOptions {
                    allow_empty: spec_out.allow_empty,
                };
                let verdict = evaluate_with(&criteria, &metrics, truth_errors.as_ref(), &allow);
                out.status = if verdict.passed {
                    Status::Pass
                } else {
                    Status::Fail
                };
                out.criteria = criteria_records(&verdict);
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
                out.metrics = Some(metrics_record(&metrics, truth.map(|(r, _)| r)));
                if let Some((target, first)) = reference {
                    out.vs_target = cross_target(
                        target,
                        actual,
                        &first,
                        compared.1.as_ref(),
                        spec_out,
                        &criteria,
                    );
                }
            }
            Err(source) => {
                // Run-time name errors (a missing oracle, truth or mask
                // tensor) point at the output's position in the spec.
                let e = StageError::Output {
                    at: self.at(stage, stage.locations.outputs.get(index)),
                    output: spec_out.name.clone(),
                    oracle: spec_out.oracle.clone(),
                    source,
                };
                out.status = Status::Error;
                out.error = Some(e.to_record());
            }
        }
        out
    }

    /// Runs the comparison (and the two truth comparisons when a truth is
    /// named); also returns the oracle tensor and mask it compared against.
    /// A truth with a non-finite unmasked element is an input error.
    fn measure(
        &self,
        spec_out: &OutputSpec,
        actual: &Tensor,
        args: &[Tensor],
        criteria: &[Criterion],
    ) -> Result<Measured, MeasureError> {
        let expected = self.sources.oracle(&spec_out.oracle)?;
        let mask = match &spec_out.mask {
            None => None,
            Some(m) => {
                let tensor = match &m.source {
                    MaskSource::Oracle(name) => self.sources.oracle(name)?,
                    MaskSource::Arg(i) => args
                        .get(*i)
                        .cloned()
                        .ok_or(MeasureError::MaskArgument(*i))?,
                };
                Some(Mask::new(
                    &tensor,
                    m.axes.clone(),
                    m.padded,
                    actual.shape(),
                )?)
            }
        };
        let options = output_compare_options(spec_out, criteria, actual.dtype());
        let metrics = compare(actual, &expected, mask.as_ref(), &options)?;
        let truth = match &spec_out.truth {
            None => None,
            Some(name) => {
                let truth = self.sources.oracle(name)?;
                if let Some((flat, value)) = first_nonfinite(&truth, mask.as_ref()) {
                    return Err(MeasureError::NonFiniteTruth {
                        name: name.clone(),
                        value,
                        index: unravel(flat, truth.shape()),
                    });
                }
                // The truth is finite, so every non-finite element of a side is a mismatch.
                let vs = |t: &Tensor| {
                    compare(t, &truth, mask.as_ref(), &CompareOptions::default())
                        .map(|m| (m.rms, m.nan_mismatch + m.inf_mismatch))
                        .map_err(|source| MeasureError::VsTruth {
                            name: name.clone(),
                            source,
                        })
                };
                let ((actual_rms, actual_nonfinite), (expected_rms, expected_nonfinite)) =
                    (vs(actual)?, vs(&expected)?);
                let errors = TruthErrors {
                    actual_vs_truth: actual_rms,
                    expected_vs_truth: expected_rms,
                    actual_nonfinite,
                    expected_nonfinite,
                };
                // The record's RMS covers every element: unbounded past a non-finite one.
                let unbounded = |rms: f64, nonfinite: u64| {
                    if nonfinite > 0 {
                        f64::INFINITY
                    } else {
                        rms
                    }
                };
                let record = TruthRecord {
                    truth: name.clone(),
                    actual_vs_truth: unbounded(actual_rms, actual_nonfinite),
                    expected_vs_truth: unbounded(expected_rms, expected_nonfinite),
                    actual_nonfinite,
                    expected_nonfinite,
                };
                Some((record, errors))
            }
        };
        Ok((metrics, truth, (expected, mask)))
    }
}

/// `actual` compared with the first target's output `first` (named `target`)
/// under the output's criteria and mask; None when the two cannot be compared
/// (a shape or dtype that differs between targets is already an error of its own).
fn cross_target(
    target: &str,
    actual: &Tensor,
    first: &Tensor,
    mask: Option<&Mask>,
    spec_out: &OutputSpec,
    criteria: &[Criterion],
) -> Option<CrossTarget> {
    // Between two productions only the direct criteria apply: `vs_f64`
    // judges a production against the oracle's distance from a truth.
    let criteria: Vec<Criterion> = criteria
        .iter()
        .filter(|c| !matches!(c, Criterion::VsF64 { .. }))
        .cloned()
        .collect();
    let options = output_compare_options(spec_out, &criteria, actual.dtype());
    let m = compare(actual, first, mask, &options).ok()?;
    let allow = VerdictOptions {
        allow_empty: spec_out.allow_empty,
    };
    let verdict = evaluate_with(&criteria, &m, None, &allow);
    Some(CrossTarget {
        target: target.to_string(),
        status: if verdict.passed {
            Status::Pass
        } else {
            Status::Fail
        },
        max_abs: m.max_abs,
        rms: m.rms,
        max_ulp: m.max_ulp,
        mismatches: m.mismatches,
        count: m.count,
    })
}

/// The first unmasked element of `t` that is NaN or infinite, and its value.
fn first_nonfinite(t: &Tensor, mask: Option<&Mask>) -> Option<(usize, f64)> {
    if !t.dtype().is_float() {
        return None;
    }
    (0..t.numel())
        .map(|i| (i, t.get_f64(i)))
        .find(|&(i, v)| !v.is_finite() && !mask.is_some_and(|m| m.is_padded(i)))
}

/// Row-major multi-index of flat element `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = flat % d;
            flat /= d;
        }
    }
    idx
}

/// The record form of a verdict's criterion results, in order.
pub fn criteria_records(verdict: &parity_compare::Verdict) -> Vec<CriterionRecord> {
    verdict
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
        .collect()
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
        nan_both: m.nan_both,
        equal_nan: m.equal_nan,
        inf_mismatch: m.inf_mismatch,
        bitwise_mismatches: m.bitwise_mismatches,
        padded_nonzero: m.padded_nonzero,
        first_violation: m.first_violation.as_ref().map(element),
        worst: m.worst.iter().map(element).collect(),
        vs_f64,
    }
}

/// The criteria an output is judged by: its own tolerance, else the spec's
/// default for the production dtype, else the built-in table's.
pub fn output_criteria(spec: &Spec, out: &OutputSpec, dtype: DType) -> Vec<Criterion> {
    out.tolerance
        .clone()
        .or_else(|| spec.tolerances.get(&dtype).cloned())
        .unwrap_or_else(|| default_tolerance(dtype))
}

/// How an output is compared under `criteria` (its ULP dtype, NaN rule and
/// padded-zero check; the mask is the caller's).
pub fn output_compare_options(
    out: &OutputSpec,
    criteria: &[Criterion],
    dtype: DType,
) -> CompareOptions {
    CompareOptions {
        ulp_dtype: out.ulp_dtype.and_then(UlpDType::from_dtype),
        assert_padded_zero: out.mask.as_ref().is_some_and(|m| m.assert_zero),
        equal_nan: out.equal_nan,
        ..CompareOptions::for_criteria(criteria, dtype)
    }
}
