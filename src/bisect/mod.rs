//! `parity bisect`: from the first divergent stage down to one StableHLO
//! operation (design in docs/bisect.md).
//!
//! 1. The stage's MLIR is normalised by the IREE compiler (generic form, calls
//!    inlined) and read into an operation graph (`parity-mlir`).
//! 2. Oracle evidence first ([`oracle`]): the stage's outputs and every oracle
//!    tensor named after a scope of the function are checkpoints; tapped
//!    variants (bisection or mark-all) find the earliest failing one. The
//!    region is what lies between it and the passing checkpoints it depends on.
//! 3. Inside a region of more than one operation, the f64 shadow ([`shadow`])
//!    names the first operation adding more error than rounding explains
//!    (inferred evidence), or bisect says honestly that the region is as far
//!    as the evidence goes.
//! 4. A reproducer directory with the smallest failing slice ([`repro`]).

mod cases;
mod confirm;
mod edits;
mod error;
pub mod inject;
mod layout;
mod matching;
mod measure;
pub(crate) mod node_ids;
mod oracle;
mod probe;
pub mod propose;
mod repair;
mod repro;
mod shadow;

pub use error::BisectError;
pub use parity_record::{BisectRecord, DivergentOp, Strategy, BISECT_SCHEMA};

use crate::run::inputs::InputSources;
use crate::run::{self, RunOptions};
use crate::target::Target;
pub use measure::loc_label;
use measure::{budget_dtype, max_finite_abs, op_line, oracle_as, ulp_at, LOCAL_ULP_BUDGET};
use oracle::OracleSearch;
use parity_iree::{ArtifactCache, IreeCompiler};
use parity_mlir::{Function, Module, SliceRequest, ValueId};
use parity_record::{Evidence, Mode, OpMetrics, Region, RunRecord, Status, ValueMetrics};
use parity_spec::{Arg, ModuleSource, Spec, Stage};
use parity_tensor::{DType, OracleStore, Tensor};
/// The f64 shadow's compile flags and conversions, for the dispatch diff's f64 check.
pub(crate) use probe::{widen, widen_reduce_precision, F64_FLAGS};
use probe::{Cut, Prober};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Mark-all is chosen automatically when all taps together stay under this.
pub const MARK_ALL_BYTES: usize = 512 << 20;

/// What to bisect and where to write the reproducer.
#[derive(Clone, Debug)]
pub struct BisectOptions {
    /// Run options (cache, compiler, case/stage selection).
    pub run: RunOptions,
    /// Tap placement.
    pub strategy: Strategy,
    /// Reproducer directory.
    pub repro_dir: PathBuf,
}

/// Runs the stage graph in isolated mode (for the selected cases and stages)
/// and bisects the first divergence.
pub fn bisect(spec: &Spec, options: &BisectOptions) -> BisectRecord {
    let mut run_options = options.run.clone();
    run_options.modes = vec![Mode::Isolated];
    let record = run::execute(spec, &run_options, &mut |_| {});
    bisect_record(spec, options, &record)
}

/// [`bisect`] over `targets`: with two or more, the stage graph runs on each
/// (isolated mode, as `parity check --target a,b` does) and bisect runs on
/// the target of the first divergence, the first target whose stage
/// diverges; one target (or none) is [`bisect`] on it.
pub fn bisect_targets(spec: &Spec, options: &BisectOptions, targets: &[String]) -> BisectRecord {
    let mut options = options.clone();
    if targets.len() < 2 {
        options.run.target = targets.first().cloned().or(options.run.target);
        return bisect(spec, &options);
    }
    let mut run_options = options.run.clone();
    run_options.modes = vec![Mode::Isolated];
    let record = run::execute_targets(spec, &run_options, targets, &mut |_| {});
    if let Some(target) = record
        .first_divergence
        .as_ref()
        .and_then(|d| d.target.clone())
    {
        options.run.target = Some(target);
    }
    let mut report = bisect_record(spec, &options, &record);
    crate::dispatch::evidence::attach(spec, &options, &record, &mut report);
    report
}

/// `parity check --bisect`: bisects the run's first isolated divergence (when
/// there is one) and records where it was localised, an operation or a
/// region, as the run record's `first_divergent_op`. Returns the bisect record.
pub fn bisect_into_record(
    spec: &Spec,
    options: &BisectOptions,
    record: &mut RunRecord,
) -> Option<BisectRecord> {
    record.first_divergence.as_ref()?;
    let mut bisected = bisect_record(spec, options, record);
    if record.targets.len() > 1 {
        crate::dispatch::evidence::attach(spec, options, record, &mut bisected);
    }
    record.first_divergent_op = bisected.localisation();
    Some(bisected)
}

/// Bisects the first isolated divergence of an existing run record.
pub fn bisect_record(spec: &Spec, options: &BisectOptions, record: &RunRecord) -> BisectRecord {
    let mut report = BisectRecord::new();
    let Some(div) = record.first_divergence.clone() else {
        // A stage that could not run is not a stage that passed.
        let stage_errors: Vec<_> = record
            .stages
            .iter()
            .filter_map(|s| s.error.clone())
            .collect();
        if record.errors.is_empty() && stage_errors.is_empty() {
            report
                .notes
                .push("no stage diverges in isolated mode: nothing to bisect".into());
        } else {
            report.status = Status::Error;
            report
                .errors
                .extend(record.errors.iter().chain(&stage_errors).map(|e| {
                    let mut e = e.clone();
                    e.message = format!("the run before bisecting: {}", e.message);
                    e
                }));
        }
        return report;
    };
    report.stage = Some(div.stage.clone());
    report.case = Some(div.case.clone());
    report.output = Some(div.output.clone());
    report.target = div.target.clone();
    let statuses: HashMap<String, bool> = record
        .stages
        .iter()
        .find(|s| {
            s.name == div.stage
                && s.case == div.case
                && s.mode == Mode::Isolated
                && div.target.as_ref().is_none_or(|t| &s.target == t)
        })
        .map(|s| {
            s.outputs
                .iter()
                .map(|o| (o.name.clone(), o.status == Status::Pass))
                .collect()
        })
        .unwrap_or_default();
    if let Err(e) = bisect_stage(spec, options, &div.stage, &div.case, &statuses, &mut report) {
        report.status = Status::Error;
        report.errors.push(e.to_record());
    }
    report
}

/// The stage as a program over the function's values: which values it
/// feeds (with the isolated-mode tensors), which it returns.
pub(crate) struct Program<'a> {
    /// The function (in the normalised module).
    func: &'a Function,
    /// The stage, templating applied.
    stage: &'a Stage,
    /// The oracle store.
    store: &'a OracleStore,
    /// Values fed by the stage's arguments, in argument order.
    inputs: Vec<ValueId>,
    /// The isolated-mode argument tensors.
    args: Vec<Tensor>,
    /// Values returned as the stage's outputs, in output order.
    outputs: Vec<ValueId>,
    /// The dtype whose rounding errors are measured in.
    budget: DType,
    /// The spec's `checkpoints:` map for this case: (oracle tensor, point).
    mapped: Vec<(String, String)>,
    /// The failing stage output bisect starts from, judged by its spec
    /// criteria when a repair makes it match ([`repair::search`]).
    start: StartOutput<'a>,
    /// The stage's other cases that run the same function, for the repair
    /// search's cross-case check.
    others: Vec<cases::OtherCase<'a>>,
}

/// The failing stage output bisect starts from.
pub(crate) struct StartOutput<'a> {
    /// Its value in the function.
    pub value: ValueId,
    /// Its spec entry (tolerance, mask, ULP dtype).
    pub spec: &'a parity_spec::OutputSpec,
    /// The spec, for its per-dtype default tolerances.
    pub whole: &'a Spec,
}

impl Program<'_> {
    /// The inputs with their tensors, for a probe.
    fn given(&self) -> Vec<(ValueId, &Tensor)> {
        self.inputs.iter().copied().zip(self.args.iter()).collect()
    }

    /// Operations `t` depends on, from the stage's inputs.
    fn ancestors(&self, t: ValueId) -> BTreeSet<usize> {
        self.func.cone(&self.inputs, &[t]).into_iter().collect()
    }

    /// The operation defining `v`.
    fn op_of(&self, v: ValueId) -> Option<usize> {
        self.func.op_of(v)
    }
}

/// The module of a stage, normalised and parsed, with its source name.
fn load_module(
    spec: &Spec,
    stage: &Stage,
    compiler: &IreeCompiler,
) -> Result<(Module, String), BisectError> {
    let module_spec =
        spec.subject
            .modules
            .get(&stage.module)
            .ok_or_else(|| BisectError::UnknownModule {
                stage: stage.name.clone(),
                module: stage.module.clone(),
            })?;
    let path = match &module_spec.source {
        ModuleSource::Mlir(p) => p.clone(),
        ModuleSource::Vmfb(p) => {
            return Err(BisectError::PrebuiltModule {
                stage: stage.name.clone(),
                path: p.clone(),
            })
        }
    };
    run::slices::read_normalised(compiler, &path).map_err(|source| BisectError::Module {
        stage: stage.name.clone(),
        source,
    })
}

/// The stage's module, normalised and parsed, with its source name; a
/// `bind:` stage's arguments bound by name exactly as the run bound them.
pub(crate) fn load_bound(
    spec: &Spec,
    stage: &mut Stage,
    compiler: &IreeCompiler,
) -> Result<(Module, String), BisectError> {
    let (module, source_name) = load_module(spec, stage, compiler)?;
    if stage.bind.is_some() {
        run::bind::rebind(&spec.path, &module, stage).map_err(|message| BisectError::Bind {
            stage: stage.name.clone(),
            message,
        })?;
    }
    Ok((module, source_name))
}

/// The function a stage runs, or slices, in its normalised module.
pub(crate) fn stage_function<'m>(
    module: &'m Module,
    stage: &Stage,
    source_name: &str,
) -> Result<&'m Function, BisectError> {
    let name = stage
        .slice
        .as_ref()
        .map_or(&stage.function, |s| &s.function);
    module
        .function(name)
        .ok_or_else(|| BisectError::UnknownFunction {
            module: source_name.to_string(),
            function: name.clone(),
            stage: stage.name.clone(),
        })
}

/// Inputs and outputs of a stage as values of its function: the function's
/// own for a `function:` stage; for a `slice:` stage, the slice's arguments in
/// the order parity-mlir gives them (the runner's order) and its `to` points.
pub(crate) fn stage_values(
    module: &Module,
    func: &Function,
    stage: &Stage,
) -> Result<(Vec<ValueId>, Vec<ValueId>), BisectError> {
    let Some(slice) = &stage.slice else {
        return Ok((func.args.clone(), func.results.clone()));
    };
    let resolve = |p: &String| {
        func.resolve_point(p)
            .map_err(|source| BisectError::SlicePoint {
                stage: stage.name.clone(),
                point: p.clone(),
                source,
            })
    };
    let from: Vec<ValueId> = slice.from.iter().map(resolve).collect::<Result<_, _>>()?;
    let to: Vec<ValueId> = slice.to.iter().map(resolve).collect::<Result<_, _>>()?;
    let req = SliceRequest {
        name: "stage".into(),
        from,
        to: to.clone(),
    };
    let (_, infos) = parity_mlir::emit_slices(module, func, "stage", &[req]).map_err(|source| {
        BisectError::StageSlice {
            stage: stage.name.clone(),
            source,
        }
    })?;
    let ins = infos[0].args.iter().map(|(_, v)| *v).collect();
    Ok((ins, to))
}

fn bisect_stage(
    spec: &Spec,
    options: &BisectOptions,
    stage_name: &str,
    case_name: &str,
    statuses: &HashMap<String, bool>,
    report: &mut BisectRecord,
) -> Result<(), BisectError> {
    let case = spec
        .case(case_name)
        .ok_or_else(|| BisectError::UnknownCase {
            case: case_name.to_string(),
        })?;
    let mut stages = spec
        .instantiate(case)
        .map_err(|source| BisectError::Instantiate {
            case: case_name.to_string(),
            source,
        })?;
    let at = stages
        .iter()
        .position(|s| s.name == stage_name)
        .ok_or_else(|| BisectError::UnknownStage {
            stage: stage_name.to_string(),
        })?;
    let target = Target::ready(spec, options.run.target.as_deref())?;
    // A target that runs its own prebuilt vmfb for the stage's module has no
    // MLIR of that build: the subject's MLIR is another program.
    if let Some(ModuleSource::Vmfb(path)) = target
        .spec()
        .modules
        .get(&stages[at].module)
        .map(|m| &m.source)
    {
        return Err(BisectError::PrebuiltModule {
            stage: stage_name.to_string(),
            path: path.clone(),
        });
    }
    let compiler =
        IreeCompiler::load(options.run.compiler_lib.as_deref()).map_err(BisectError::Compiler)?;
    let (module, source_name) = load_bound(spec, &mut stages[at], &compiler)?;
    let stage = &stages[at];
    let func = stage_function(&module, stage, &source_name)?;
    report.function = Some(func.name.clone());
    report.node_ids = Some(node_ids::model_explorer_ids(func));
    let store =
        OracleStore::open(&spec.oracle).map_err(|e| BisectError::OracleStore(Box::new(e)))?;
    let sources = InputSources::open(spec).map_err(|e| BisectError::Inputs(Box::new(e)))?;
    let (inputs, outputs) = stage_values(&module, func, stage)?;
    let args = isolated_args(&spec.path, stage, &stages, &sources)?;
    if inputs.len() != args.len() {
        return Err(BisectError::InputCount {
            stage: stage_name.to_string(),
            takes: inputs.len(),
            given: args.len(),
        });
    }
    if outputs.len() != stage.outputs.len() {
        return Err(BisectError::OutputCount {
            stage: stage_name.to_string(),
            returns: outputs.len(),
            listed: stage.outputs.len(),
        });
    }
    // Start from the earliest failing stage output (program order).
    let (start_spec, start_value) = stage
        .outputs
        .iter()
        .zip(&outputs)
        .filter(|(o, _)| statuses.get(&o.name) == Some(&false))
        .min_by_key(|(_, &v)| func.op_of(v).unwrap_or(usize::MAX))
        .map(|(o, &v)| (o, v))
        .ok_or_else(|| BisectError::NoFailingOutput {
            stage: stage_name.to_string(),
        })?;
    let start_name = start_spec.name.clone();
    report.output = Some(start_name.clone());
    let (mut other_stages, mut skipped_cases) = cases::instantiate_others(spec, case_name);
    let others = cases::usable(
        spec,
        &module,
        stage,
        &mut other_stages,
        &sources,
        &mut skipped_cases,
    );
    let program = Program {
        func,
        stage,
        store: &store,
        inputs,
        args,
        outputs,
        budget: budget_dtype(stage, Some(&start_name)),
        mapped: spec
            .checkpoints
            .iter()
            .filter_map(|c| {
                parity_spec::TokensSpec::render(&c.oracle, case)
                    .ok()
                    .map(|name| (name, c.point.clone()))
            })
            .collect(),
        start: StartOutput {
            value: start_value,
            spec: start_spec,
            whole: spec,
        },
        others,
    };

    let runtime = target.runtime().map_err(BisectError::Runtime)?;
    let cache = ArtifactCache::new(&options.run.cache_dir);
    let iree = probe::Iree {
        compiler: &compiler,
        cache: &cache,
        runtime: &runtime,
    };
    let mut prober = Prober::new(
        iree,
        &module,
        func,
        target.module_options(spec, &stage.module),
        source_name.clone(),
    );
    let outcome = localise(
        &program,
        &mut prober,
        statuses,
        (case_name, skipped_cases),
        options.strategy,
        report,
    );
    report.probes = prober.probes;
    report.probe_log = std::mem::take(&mut prober.log);
    let found = outcome?;
    if let Some(op) = report.first_divergent_op.as_mut() {
        op.probes = prober.probes;
    }
    let (ops, inputs, expected, evidence) = match &found {
        Localised::Op {
            op_index,
            evidence,
            inputs,
            expected,
        } => (vec![*op_index], inputs, expected, *evidence),
        Localised::Region {
            ops,
            inputs,
            expected,
            ..
        } => (ops.clone(), inputs, expected, Evidence::Region),
    };
    let thresholds = repro_thresholds(&program, expected, evidence);
    match repro::write(
        &options.repro_dir,
        &module,
        func,
        &ops,
        inputs,
        expected,
        &thresholds,
        &target,
        &prober.options,
        &source_name,
        evidence,
    ) {
        Ok(written) => {
            report.reproducer = Some(options.repro_dir.display().to_string());
            match repro::verify(&prober, &written) {
                Ok(check) => {
                    if !check.reproduces {
                        report.notes.push(format!(
                            "the reproducer in {} does not fail on its own: {}; the evidence \
                             above stands, but the slice alone does not show it",
                            options.repro_dir.display(),
                            check
                                .outputs
                                .iter()
                                .map(|o| format!(
                                    "max_abs {:.3e} <= {:.3e}",
                                    o.max_abs, o.threshold
                                ))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    report.reproducer_check = Some(check);
                }
                Err(e) => report.errors.push(
                    BisectError::Reproducer {
                        action: "running",
                        dir: options.repro_dir.clone(),
                        source: Box::new(e),
                    }
                    .to_record(),
                ),
            }
        }
        Err(e) => report.errors.push(
            BisectError::Reproducer {
                action: "writing",
                dir: options.repro_dir.clone(),
                source: Box::new(e),
            }
            .to_record(),
        ),
    }
    Ok(())
}

/// The absolute threshold of each expected value in the reproducer: what
/// bisect judged it by. A stage output with a `max_abs` criterion keeps the
/// spec's bound; otherwise the ULP budget (checkpoint budget for oracle
/// evidence, local budget for the shadow's) of the budget dtype at the
/// expected value's largest magnitude (floored at the dtype's smallest
/// normal, so an all-zero value still gets a usable threshold).
fn repro_thresholds(
    program: &Program,
    expected: &[(ValueId, Tensor)],
    evidence: Evidence,
) -> Vec<f64> {
    let by_oracle = matches!(evidence, Evidence::Oracle | Evidence::Region);
    expected
        .iter()
        .map(|(v, t)| {
            let spec_max_abs = program
                .outputs
                .iter()
                .position(|o| o == v)
                .filter(|_| by_oracle)
                .and_then(|i| program.stage.outputs.get(i))
                .and_then(|o| o.tolerance.as_ref())
                .and_then(|c| {
                    c.iter().find_map(|c| match c {
                        parity_compare::Criterion::MaxAbs(x) => Some(*x),
                        _ => None,
                    })
                });
            spec_max_abs.unwrap_or_else(|| {
                let ulps = if by_oracle {
                    measure::CHECKPOINT_ULP_BUDGET
                } else {
                    LOCAL_ULP_BUDGET
                };
                let floor = match program.budget {
                    DType::F16 => 6.103_515_625e-5,
                    _ => f32::MIN_POSITIVE as f64,
                };
                ulps * ulp_at(max_finite_abs(t).max(floor), program.budget)
            })
        })
        .collect()
}

/// Where the evidence led, with what the reproducer needs.
enum Localised {
    /// One operation.
    Op {
        op_index: usize,
        evidence: Evidence,
        inputs: Vec<(ValueId, Tensor)>,
        expected: Vec<(ValueId, Tensor)>,
    },
    /// A region the evidence cannot narrow, or the one the repair search
    /// narrowed (the reproducer is then still the region).
    Region {
        ops: Vec<usize>,
        inputs: Vec<(ValueId, Tensor)>,
        expected: Vec<(ValueId, Tensor)>,
    },
}

/// Oracle checkpoints, then the region, then (when it holds several
/// operations) the f64 shadow. Fills the report's evidence as it goes.
fn localise(
    program: &Program,
    prober: &mut Prober,
    statuses: &HashMap<String, bool>,
    (case, skipped_cases): (&str, Vec<String>),
    strategy: Strategy,
    report: &mut BisectRecord,
) -> Result<Localised, BisectError> {
    let func = program.func;
    // The untapped build: every tapped build must reproduce its results.
    let baseline = prober
        .run(
            &[Cut {
                name: "baseline".into(),
                given: program.given(),
                want: program.outputs.clone(),
            }],
            false,
            "baseline (untapped)",
        )?
        .remove(0);
    let start = report
        .output
        .as_ref()
        .and_then(|name| program.stage.outputs.iter().position(|o| &o.name == name))
        .map(|i| program.outputs[i])
        .ok_or_else(|| BisectError::UnknownOutput {
            output: report.output.clone().unwrap_or_default(),
        })?;
    let baseline_outputs = baseline.clone();
    let mut search = OracleSearch::new(program, statuses, case, baseline);
    let located = search.locate(prober, start, strategy);
    report.checkpoints = search.records();
    report.observer_effect = std::mem::take(&mut search.observer_effect);
    if !report.observer_effect.is_empty() {
        report.notes.push(
            "observer effect: tapped builds compute the stage's outputs differently from the \
             untapped build that failed (see observer effect below), so the checkpoint \
             verdicts describe another computation; the localisation may point at where the \
             compiler builds the two differently (an FMA contraction, a fusion) rather than at \
             a fault"
                .into(),
        );
    }
    let (target, used) = located?;
    report.strategy = Some(used);

    // The region: from the passing checkpoints (and the stage inputs) to the target.
    let passing = search.passing_for(target);
    let oracle_name = |v: ValueId| search.oracle_of(v).unwrap_or_default().to_string();
    let target_oracle = oracle_name(target);
    let mut from = passing.clone();
    from.extend(program.inputs.iter().copied());
    let region: Vec<usize> = func
        .cone(&from, &[target])
        .into_iter()
        .filter(|&o| func.ops[o].results.iter().any(|&r| !func.is_constant(r)))
        .collect();
    report.region = Some(Region {
        passing: passing.iter().map(|&v| oracle_name(v)).collect(),
        failing: target_oracle.clone(),
        ops: region.len(),
        op_list: region.iter().map(|&o| op_line(func, o)).collect(),
    });
    // Region inputs: the oracle's tensors at the passing checkpoints, the
    // stage's inputs otherwise.
    let mut feed: Vec<(ValueId, Tensor)> = Vec::new();
    for &v in &passing {
        feed.push((v, oracle_as(program.store, &oracle_name(v), func, v)?));
    }
    for (&v, t) in program.inputs.iter().zip(&program.args) {
        if !passing.contains(&v) {
            feed.push((v, t.clone()));
        }
    }
    let expected = vec![(
        target,
        oracle_as(program.store, &target_oracle, func, target)?,
    )];
    report.status = Status::Fail;

    if let [op] = region[..] {
        let inputs = func.ops[op]
            .operands
            .iter()
            .map(|&v| match search.metrics_of(v) {
                Some(m) => m.clone(),
                None => ValueMetrics::exact(
                    func.values[v].name.clone(),
                    if func.is_constant(v) {
                        "constant".into()
                    } else if let Some(n) = search.oracle_of(v) {
                        format!("oracle:{n} (passes)")
                    } else {
                        "stage input".into()
                    },
                ),
            })
            .collect();
        let output = search.metrics_of(target).cloned().into_iter().collect();
        report.first_divergent_op =
            Some(divergent_op(program, op, Evidence::Oracle, inputs, output));
        return Ok(Localised::Op {
            op_index: op,
            evidence: Evidence::Oracle,
            inputs: feed,
            expected,
        });
    }

    // NaN/Inf at the failing checkpoint where the oracle is finite (known
    // from the search's metrics or the untapped build's outputs: no probe).
    let target_nonfinite = match search.metrics_of(target) {
        Some(m) => m.nonfinite > 0,
        None => program
            .outputs
            .iter()
            .position(|&o| o == target)
            .and_then(|i| baseline_outputs.get(i))
            .is_some_and(|p| !measure::nonfinite_where_finite(p, &expected[0].1).is_empty()),
    };
    // The stage's other cases of the same function, for the repair
    // search's cross-case check.
    let mut skipped_cases = skipped_cases;
    let feeds = cases::case_feeds(
        program,
        case,
        (&feed, &passing, target),
        |v| search.oracle_of(v).map(String::from),
        &mut skipped_cases,
    );
    let cross = repair::CrossCases {
        feeds,
        skipped: skipped_cases,
    };
    let end = confirm::End {
        value: target,
        oracle: &expected[0].1,
        oracle_name: &target_oracle,
    };
    let outcome = shadow::run(
        program,
        prober,
        &region,
        &feed,
        strategy,
        target_nonfinite,
        &end,
    )?;
    report.shadow = outcome.rows;
    report.confirmation = outcome.confirmation;
    report.notes.extend(outcome.notes);
    match outcome.found {
        Some(f)
            if f.evidence == Evidence::NonFinite
                && repaired_upstream(
                    program,
                    prober,
                    (&region, &feed),
                    &expected,
                    &cross,
                    f.op,
                    report,
                ) =>
        {
            report.notes.extend(f.note);
            Ok(Localised::Region {
                ops: region,
                inputs: feed,
                expected,
            })
        }
        Some(f) => {
            report.notes.extend(f.note);
            report.first_divergent_op =
                Some(divergent_op(program, f.op, f.evidence, f.inputs, f.output));
            Ok(Localised::Op {
                op_index: f.op,
                evidence: f.evidence,
                inputs: f.repro_inputs,
                expected: f.expected,
            })
        }
        None => {
            if region.len() <= repair::MAX_REGION_OPS {
                match repair::search(
                    program,
                    prober,
                    (&region, &feed),
                    target,
                    &expected[0].1,
                    &cross,
                ) {
                    Ok(found) => {
                        if repaired(program, &found, report) {
                            // The op is named; the reproducer stays the region
                            // (the oracle has a tensor only at its end).
                            return Ok(Localised::Region {
                                ops: region,
                                inputs: feed,
                                expected,
                            });
                        }
                    }
                    Err(e) => report
                        .notes
                        .push(format!("the repair search could not run: {e}")),
                }
            }
            let passing_names = if passing.is_empty() {
                "the stage inputs".to_string()
            } else {
                report
                    .region
                    .as_ref()
                    .map(|r| r.passing.join(", "))
                    .unwrap_or_default()
            };
            let shadow_says = if report.confirmation.is_some() {
                "the operations the f64 shadow flags do not explain the divergence (their \
                 confirmation fails, see above), so the difference is not their rounding"
                    .to_string()
            } else {
                format!(
                    "the f64 shadow finds no operation there losing more than \
                     {LOCAL_ULP_BUDGET} ULPs of {}, so the difference is semantic (the oracle \
                     computes something else somewhere in these operations)",
                    program.budget.name()
                )
            };
            report.notes.push(format!(
                "localised to a region of {} operations between {passing_names} (pass) and \
                 {target_oracle} (fail); {shadow_says}, and no oracle tensor inside the region \
                 narrows it further",
                region.len(),
            ));
            Ok(Localised::Region {
                ops: region,
                inputs: feed,
                expected,
            })
        }
    }
}

/// A non-finite origin is where the first NaN/Inf appears, not always the
/// fault: a wrong op upstream (`x + max` for `x - max` before an exp) makes
/// a later op overflow on operands the f64 shadow agrees with (the shadow
/// replays the same wrong program, with more range). When an edit of
/// another op makes the region match the oracle, that op is named with
/// repair evidence (or, when the edits disagree, none: ambiguous) and the
/// origin stays in the notes. Returns whether the origin was set aside.
fn repaired_upstream(
    program: &Program,
    prober: &mut Prober,
    (region, feed): (&[usize], &[(ValueId, Tensor)]),
    expected: &[(ValueId, Tensor)],
    cross: &repair::CrossCases,
    origin: usize,
    report: &mut BisectRecord,
) -> bool {
    if region.len() > repair::MAX_REGION_OPS {
        return false;
    }
    let Ok(found) = repair::search(
        program,
        prober,
        (region, feed),
        expected[0].0,
        &expected[0].1,
        cross,
    ) else {
        return false;
    };
    if found.repairs.is_empty() || repair::claimed(&found) == Some(origin) {
        return false;
    }
    // Edits elsewhere repair the region: the origin is in doubt. Name the
    // repaired op when the search names one, else no op (ambiguous).
    let notes = std::mem::take(&mut report.notes);
    repaired(program, &found, report);
    let repair_notes = std::mem::replace(&mut report.notes, notes);
    report.notes.push(format!(
        "the first NaN/Inf appears at #{origin} {}, from operands the f64 shadow agrees with; \
         edits of other operations repair the region, so #{origin} may only overflow on what \
         it is given and is not named for it",
        program.func.ops[origin].name
    ));
    report.notes.extend(repair_notes);
    true
}

/// Reads the repair search into the report: the op when every surviving
/// edit is on one op (evidence `repair`), else the ranked list in a note.
fn repaired(program: &Program, found: &repair::RepairOutcome, report: &mut BisectRecord) -> bool {
    let list = |n: usize| {
        found
            .repairs
            .iter()
            .take(n)
            .map(|r| {
                format!(
                    "{} ({}, {:.1} ULP)",
                    op_line(program.func, r.op),
                    r.edit,
                    r.ulps
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let what_wide = "every elementwise op of the same arity, another activation, conv \
                     layouts, mask band edges, a missing binary op with a value the region \
                     computes, an operand pointed at another value, fitted soft caps";
    let wide = if !found.wide {
        String::new()
    } else if found.cut > 0 {
        format!(
            "; then the wide catalogue ({what_wide}), {} more over its bounds not tried",
            found.cut
        )
    } else {
        format!("; then the wide catalogue ({what_wide})")
    };
    if found.repairs.is_empty() {
        report.notes.push(format!(
            "repair search: none of {} edits (swapped operands, comparison directions, \
             wrong binary and unary ops, wrong dimensions, off-by-one slices and pads, \
             integer offsets into converts, ops bypassed, negates, fitted splat constants, \
             fitted scales and offsets after an op{wide}) makes the region match the oracle \
             ({})",
            found.tried, found.judged_by
        ));
        return false;
    }
    let claimed = repair::claimed(found);
    report.repair = Some(repair_record(program, found, claimed));
    let Some(op) = claimed else {
        report.notes.push(format!(
            "repair search: {} of {} edits make the region match the oracle ({}), on \
             different operations, so it does not name one (ambiguous): {}",
            found.repairs.len(),
            found.tried,
            found.judged_by,
            list(32)
        ));
        if let Some(eq) = &found.equivalence {
            report.notes.push(equivalence_note(program, found, eq));
            // One function on two adjacent ops: the answer is the pair.
            if let (true, Some((a, b))) = (eq.holds(), adjacent_pair(program.func, found)) {
                let func = program.func;
                let mut op = divergent_op(program, a, Evidence::Repair, Vec::new(), Vec::new());
                op.pair = Some(parity_record::PairedOp {
                    op_index: b,
                    op_name: func.ops[b].name.clone(),
                    loc: loc_label(&func.ops[b].loc),
                });
                report.notes.push(format!(
                    "repair search: every repair acts at one of two adjacent operations, \
                     #{a} and #{b}, and they compute one function: the fix is at one of the \
                     pair (evidence `repair`, kind `pair`); no oracle tensor can say which"
                ));
                report.first_divergent_op = Some(op);
                return true;
            }
        }
        return false;
    };
    let on = if found.repairs.iter().all(|r| r.op == op) {
        "all on one operation".to_string()
    } else {
        format!(
            "all acting at #{op} (an op inserted after another whose only user is #{op} acts \
             at #{op}'s input)"
        )
    };
    report.notes.push(format!(
        "repair search: {} of {} edits make the region match the oracle ({}), {on}: {}",
        found.repairs.len(),
        found.tried,
        found.judged_by,
        list(4)
    ));
    report.first_divergent_op = Some(divergent_op(
        program,
        op,
        Evidence::Repair,
        Vec::new(),
        Vec::new(),
    ));
    true
}

/// The two ops every repair acts at, earlier first, when there are two and
/// one reads the other's result.
fn adjacent_pair(func: &Function, found: &repair::RepairOutcome) -> Option<(usize, usize)> {
    let mut ops: Vec<usize> = found.repairs.iter().map(|r| r.op).collect();
    ops.sort_unstable();
    ops.dedup();
    let [a, b] = ops[..] else { return None };
    let feeds = |p: usize, q: usize| {
        func.ops[p]
            .results
            .iter()
            .any(|r| func.ops[q].operands.contains(r))
    };
    (feeds(a, b) || feeds(b, a)).then_some((a, b))
}

/// The repair search for the record.
fn repair_record(
    program: &Program,
    found: &repair::RepairOutcome,
    claimed: Option<usize>,
) -> parity_record::RepairSearch {
    let func = program.func;
    let candidate = |r: &repair::Repair| parity_record::RepairCandidate {
        op_index: r.op,
        op_name: func.ops[r.op].name.clone(),
        loc: loc_label(&func.ops[r.op].loc),
        edit: r.edit.clone(),
        ulps: r.ulps,
    };
    parity_record::RepairSearch {
        tried: found.tried,
        wide: found.wide,
        cut: found.cut,
        judged_by: found.judged_by.clone(),
        candidates: found.repairs.iter().map(candidate).collect(),
        claimed,
        equivalence: found.equivalence.clone(),
        cross_case: found.cross_case.as_ref().map(|c| parity_record::CrossCase {
            cases: c.cases.clone(),
            skipped: c.skipped.clone(),
            dropped: c
                .dropped
                .iter()
                .map(|(r, case, ulps)| parity_record::DroppedRepair {
                    candidate: candidate(r),
                    case: case.clone(),
                    ulps: *ulps,
                })
                .collect(),
            uncarried: c.uncarried.clone(),
        }),
    }
}

/// What the equivalence check of ambiguous repairs says, and what would
/// separate them.
fn equivalence_note(
    program: &Program,
    found: &repair::RepairOutcome,
    eq: &parity_record::Equivalence,
) -> String {
    let ops: BTreeSet<usize> = found.repairs.iter().map(|r| r.op).collect();
    let (first, last) = (
        ops.first().copied().unwrap_or(0),
        ops.last().copied().unwrap_or(0),
    );
    let span = format!(
        "an oracle tensor between {} and {}",
        op_line(program.func, first),
        op_line(program.func, last)
    );
    if !eq.unedited_differs {
        return format!(
            "equivalence of the repairs: not shown; on {} perturbed copies of the region's \
             inputs the unedited region matches the first repair too, so those inputs do \
             not exercise the fault",
            eq.inputs
        );
    }
    if eq.differ.is_empty() {
        format!(
            "equivalence of the repairs: all {} compute the same function on {} perturbed \
             copies of the region's inputs (each float element times a factor in [0.5, 1.5]), \
             where the unedited region does not: no oracle tensor at the region's end, in \
             this case or another, can tell them apart; {span} can",
            found.repairs.len(),
            eq.inputs
        )
    } else {
        let differ: Vec<String> = eq
            .differ
            .iter()
            .map(|&i| format!("#{}", found.repairs[i].op))
            .collect();
        // What another case could at best achieve: rule out the ones that
        // differ, leaving those that agree with the first.
        let agreeing: Vec<&repair::Repair> = eq.agree.iter().map(|&i| &found.repairs[i]).collect();
        let rest = match repair::claimed_by(&agreeing) {
            Some(op) => format!(
                "the {} that agree with the first all act at #{op}: if another case rules \
                 out the others, #{op} is the answer",
                agreeing.len()
            ),
            None => format!(
                "the {} that agree with the first act at {} operations, so even then no \
                 operation would be named",
                agreeing.len(),
                agreeing.iter().map(|r| r.op).collect::<BTreeSet<_>>().len()
            ),
        };
        format!(
            "equivalence of the repairs: not the same function: on {} perturbed copies of the \
             region's inputs, the repairs at {} differ from the first; the oracle's tensors at \
             the region's end in another case can separate them, and so can {span}; {rest}",
            eq.inputs,
            differ.join(", ")
        )
    }
}

fn divergent_op(
    program: &Program,
    o: usize,
    evidence: Evidence,
    inputs: Vec<ValueMetrics>,
    output: Vec<ValueMetrics>,
) -> DivergentOp {
    let func = program.func;
    let op = &func.ops[o];
    let types = |vs: &[ValueId]| vs.iter().map(|&v| func.values[v].ty.text.clone()).collect();
    DivergentOp {
        stage: program.stage.name.clone(),
        function: func.name.clone(),
        op_index: o,
        op_name: op.name.clone(),
        loc: loc_label(&op.loc),
        loc_raw: op.loc.raw.clone(),
        evidence,
        pair: None,
        probes: 0,
        text: op.text.clone(),
        operand_types: types(&op.operands),
        result_types: types(&op.results),
        metrics: OpMetrics { inputs, output },
    }
}

/// The stage's arguments in isolated mode: oracle tensors, weights, literals,
/// and the oracle tensors of upstream outputs.
pub(crate) fn isolated_args(
    spec_path: &std::path::Path,
    stage: &Stage,
    stages: &[Stage],
    sources: &InputSources,
) -> Result<Vec<Tensor>, BisectError> {
    let mut out = Vec::new();
    for (index, a) in stage.args.iter().enumerate() {
        let loc = stage
            .locations
            .args
            .get(index)
            .copied()
            .unwrap_or(stage.location);
        let at = || parity_spec::Position {
            file: spec_path.to_path_buf(),
            line: loc.line,
            col: loc.col,
            alias: None,
        };
        let from_inputs = |source| BisectError::Argument {
            at: at(),
            stage: stage.name.clone(),
            index,
            source: Box::new(source),
        };
        let t = match a {
            Arg::Oracle(n) => sources.oracle(n).map_err(from_inputs)?,
            Arg::Weight(n) => sources.weight(n).map_err(from_inputs)?,
            Arg::Literal {
                dtype,
                shape,
                values,
            } => Tensor::from_f64_as(*dtype, shape.clone(), values).map_err(|source| {
                BisectError::Literal {
                    at: at(),
                    stage: stage.name.clone(),
                    index,
                    source: Box::new(source),
                }
            })?,
            Arg::Stage { stage: up, output } => {
                let upstream = stages
                    .iter()
                    .find(|s| &s.name == up)
                    .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                    .ok_or_else(|| BisectError::UnknownUpstream {
                        at: at(),
                        stage: stage.name.clone(),
                        index,
                        upstream: format!("{up}.{output}"),
                    })?;
                sources.oracle(&upstream.oracle).map_err(from_inputs)?
            }
        };
        out.push(t);
    }
    Ok(out)
}
