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
mod localise;
mod matching;
mod measure;
pub(crate) mod node_ids;
mod oracle;
mod probe;
pub mod propose;
mod repair;
mod repaired;
mod repro;
mod reproduce;
mod shadow;
mod stage;

pub use error::BisectError;
pub use parity_record::{BisectRecord, DivergentOp, Strategy, BISECT_SCHEMA};

use crate::run::inputs::InputSources;
use crate::run::{self, RunOptions};
use localise::localise;
use measure::budget_dtype;
pub use measure::loc_label;
use parity_iree::{ArtifactCache, IreeCompiler};
use parity_mlir::{Function, ValueId};
use parity_record::{Evidence, Mode, OpMetrics, RunRecord, Status, ValueMetrics};
use parity_spec::{Spec, Stage};
use parity_tensor::{DType, OracleStore, Tensor};
use probe::Prober;
/// The f64 shadow's compile flags and conversions, for the dispatch diff's f64 check.
pub(crate) use probe::{widen, widen_reduce_precision, F64_FLAGS};
use stage::{check_counts, instantiate, mapped_checkpoints, mlir_target, start_output};
pub(crate) use stage::{isolated_args, load_bound, stage_function, stage_values};
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

/// Bisects `stage_name` of `case_name`: the stage loaded as a [`Program`],
/// its divergence localised, and the reproducer written and run.
fn bisect_stage(
    spec: &Spec,
    options: &BisectOptions,
    stage_name: &str,
    case_name: &str,
    statuses: &HashMap<String, bool>,
    report: &mut BisectRecord,
) -> Result<(), BisectError> {
    let (case, mut stages, at) = instantiate(spec, case_name, stage_name)?;
    let target = mlir_target(spec, options, &stages[at])?;
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
    check_counts(stage, &inputs, &args, &outputs)?;
    let (start_spec, start_value) = start_output(stage, &outputs, func, statuses)?;
    report.output = Some(start_spec.name.clone());
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
        budget: budget_dtype(stage, Some(&start_spec.name)),
        mapped: mapped_checkpoints(spec, case),
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
        source_name,
    );
    let found = localise_counted(
        &program,
        &mut prober,
        statuses,
        (case_name, skipped_cases),
        options.strategy,
        report,
    )?;
    reproduce::reproduce(
        &found,
        &program,
        &prober,
        &target,
        &options.repro_dir,
        report,
    );
    Ok(())
}

/// [`localise`], with the probes it ran recorded in the report whether or
/// not it localised.
fn localise_counted(
    program: &Program,
    prober: &mut Prober,
    statuses: &HashMap<String, bool>,
    cases: (&str, Vec<String>),
    strategy: Strategy,
    report: &mut BisectRecord,
) -> Result<localise::Localised, BisectError> {
    let outcome = localise(program, prober, statuses, cases, strategy, report);
    report.probes = prober.probes;
    report.probe_log = std::mem::take(&mut prober.log);
    let found = outcome?;
    if let Some(op) = report.first_divergent_op.as_mut() {
        op.probes = prober.probes;
    }
    Ok(found)
}

/// The record's divergent operation: op `o` of the stage's function with
/// its evidence and metrics (probes filled in later).
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
