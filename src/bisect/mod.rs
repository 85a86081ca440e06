//! `parity bisect`: from the first divergent stage down to one StableHLO
//! operation.
//!
//! 1. The stage's MLIR is normalised by the IREE compiler (generic form, calls
//!    inlined) and read into an operation graph (`parity-mlir`).
//! 2. Oracle evidence first: the stage's outputs and every oracle tensor that
//!    names a scope of the function (naming convention: scope path with `/`
//!    replaced by `_`, e.g. `conformer_1/attention/rel_shift` ↔
//!    `conformer_1_attention_rel_shift`) are checkpoints. Tapped variants
//!    (bisection: one tap per probe, about log2(N) probes; mark-all: one probe)
//!    find the earliest failing checkpoint; the region is what lies between it
//!    and the passing checkpoints it depends on.
//! 3. Inside a region of more than one operation, the f64 shadow: the region
//!    promoted to f64 and run on the same inputs gives a reference for every
//!    value; each operation is then run alone in production precision on the
//!    shadow's inputs, and the first one whose own error exceeds what the
//!    budget dtype's rounding explains is named, labelled *inferred*.
//! 4. A reproducer directory with the smallest failing slice.

mod probe;
pub mod render;
mod repro;

use crate::run::{self, record::Mode, record::Status, RunOptions};
use parity_compare::{compare, CompareOptions};
use parity_iree::{ArtifactCache, CompileOptions, IreeCompiler, IreeRuntime};
use parity_mlir::{Function, ValueId};
use parity_spec::{Arg, ModuleSource, Spec, Stage};
use parity_tensor::{DType, OracleStore, Tensor};
use probe::{narrow, widen, Cut, Prober};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// Schema tag of the bisect report.
pub const BISECT_SCHEMA: &str = "parity.bisect/1";

/// An operation's own error (against the f64 shadow, in ULPs of the budget
/// dtype at the largest magnitude of its result) above this is more than
/// rounding explains.
pub const LOCAL_ULP_BUDGET: f64 = 64.0;

/// A checkpoint found by the naming convention passes when its max abs error
/// is within this many ULPs (of the budget dtype) at its largest magnitude.
pub const CHECKPOINT_ULP_BUDGET: f64 = 64.0;

/// Mark-all is chosen automatically when all taps together stay under this.
pub const MARK_ALL_BYTES: usize = 512 << 20;

/// How to place taps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Mark-all when the taps fit in memory, else bisection.
    Auto,
    /// A few taps per probe, about log2(N) probes.
    Bisection,
    /// One build with every tap.
    MarkAll,
}

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

/// The bisect report (JSON `parity.bisect/1`).
#[derive(Clone, Debug, Serialize)]
pub struct BisectReport {
    pub schema: String,
    /// pass (nothing diverges), fail (localised), error.
    pub status: Status,
    pub stage: Option<String>,
    pub case: Option<String>,
    pub function: Option<String>,
    /// The failing stage output bisect started from.
    pub output: Option<String>,
    pub strategy: Option<Strategy>,
    pub first_divergent_op: Option<DivergentOp>,
    /// The region between the passing and failing checkpoints.
    pub region: Option<Region>,
    /// Every checkpoint evaluated, in program order.
    pub checkpoints: Vec<CheckpointRecord>,
    /// Per-operation shadow errors in the region (when the shadow ran).
    pub shadow: Vec<ShadowRow>,
    /// Variants built and run.
    pub probes: usize,
    pub probe_log: Vec<String>,
    /// Probes whose tapped build changed the stage's own results.
    pub observer_effect: Vec<String>,
    pub reproducer: Option<String>,
    pub notes: Vec<String>,
    pub errors: Vec<String>,
}

/// `first_divergent_op` of the issue: stage, function, op, evidence, probes, metrics.
#[derive(Clone, Debug, Serialize)]
pub struct DivergentOp {
    pub stage: String,
    pub function: String,
    pub op_index: usize,
    pub op_name: String,
    /// The location's named-scope path (e.g. `conformer_1/attention/rel_shift/sliced/slice`).
    pub loc: String,
    /// The raw MLIR location.
    pub loc_raw: String,
    /// "oracle" or "inferred".
    pub evidence: String,
    pub probes: usize,
    pub text: String,
    pub operand_types: Vec<String>,
    pub result_types: Vec<String>,
    pub metrics: OpMetrics,
}

/// Error at an operation's inputs and output.
#[derive(Clone, Debug, Serialize)]
pub struct OpMetrics {
    pub inputs: Vec<ValueMetrics>,
    pub output: Vec<ValueMetrics>,
}

/// One value compared with a reference.
#[derive(Clone, Debug, Serialize)]
pub struct ValueMetrics {
    /// SSA name in the normalised function.
    pub value: String,
    /// What it was compared with: `oracle:<name>`, `shadow`, `constant`, `input`.
    pub against: String,
    pub max_abs: f64,
    pub rms: f64,
    /// Largest |reference|.
    pub max_ref: f64,
    /// max_abs in ULPs of the budget dtype at `max_ref`.
    pub ulps_at_max: f64,
}

/// The localised region.
#[derive(Clone, Debug, Serialize)]
pub struct Region {
    pub passing: Vec<String>,
    pub failing: String,
    /// Operations (not counting constants) between them.
    pub ops: usize,
    pub op_list: Vec<String>,
}

/// One checkpoint and its verdict.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointRecord {
    pub oracle: String,
    pub value: String,
    pub op_index: Option<usize>,
    pub loc: String,
    /// `stage-output` or `convention`.
    pub kind: String,
    pub passed: bool,
    pub metrics: Option<ValueMetrics>,
}

/// One operation of the region under the f64 shadow.
#[derive(Clone, Debug, Serialize)]
pub struct ShadowRow {
    pub op_index: usize,
    pub op_name: String,
    pub loc: String,
    pub result_type: String,
    /// Production vs shadow, accumulated through the region (ULPs at max).
    pub accumulated_ulps: f64,
    /// The op alone in production precision on the shadow's inputs vs shadow (ULPs at max).
    pub local_ulps: Option<f64>,
    pub flagged: bool,
}

impl BisectReport {
    fn new() -> Self {
        BisectReport {
            schema: BISECT_SCHEMA.to_string(),
            status: Status::Pass,
            stage: None,
            case: None,
            function: None,
            output: None,
            strategy: None,
            first_divergent_op: None,
            region: None,
            checkpoints: Vec::new(),
            shadow: Vec::new(),
            probes: 0,
            probe_log: Vec::new(),
            observer_effect: Vec::new(),
            reproducer: None,
            notes: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Exit code: 0 nothing diverges, 1 localised, 2 input, 3 execution.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            Status::Pass => 0,
            Status::Fail => 1,
            _ => {
                if self.errors.iter().any(|e| e.starts_with("input:")) {
                    2
                } else {
                    3
                }
            }
        }
    }
}

/// Runs the stage graph in isolated mode (for the selected cases and stages)
/// and bisects the first divergence.
pub fn bisect(spec: &Spec, options: &BisectOptions) -> BisectReport {
    let mut run_options = options.run.clone();
    run_options.modes = vec![Mode::Isolated];
    let record = run::execute(spec, &run_options, &mut |_| {});
    bisect_record(spec, options, &record)
}

/// Bisects the first isolated divergence of an existing run record.
pub fn bisect_record(
    spec: &Spec,
    options: &BisectOptions,
    record: &run::record::RunRecord,
) -> BisectReport {
    let mut report = BisectReport::new();
    let Some(div) = record.first_divergence.clone() else {
        if !record.errors.is_empty() {
            report.status = Status::Error;
            report.errors.extend(record.errors.iter().map(|e| {
                let kind = match e.kind {
                    run::record::ErrorKind::Input => "input",
                    _ => "execution",
                };
                format!("{kind}: run before bisect: {}", e.message)
            }));
        } else {
            report
                .notes
                .push("no stage diverges in isolated mode: nothing to bisect".into());
        }
        return report;
    };
    report.stage = Some(div.stage.clone());
    report.case = Some(div.case.clone());
    report.output = Some(div.output.clone());
    let stage_rec = record
        .stages
        .iter()
        .find(|s| s.name == div.stage && s.case == div.case && s.mode == Mode::Isolated);
    let statuses: HashMap<String, bool> = stage_rec
        .map(|s| {
            s.outputs
                .iter()
                .map(|o| (o.name.clone(), o.status == Status::Pass))
                .collect()
        })
        .unwrap_or_default();
    match Bisector::run(spec, options, &div.stage, &div.case, &statuses, &mut report) {
        Ok(()) => {}
        Err(e) => {
            report.status = Status::Error;
            report.errors.push(e);
        }
    }
    report
}

/// A checkpoint candidate.
#[derive(Clone, Debug)]
struct Checkpoint {
    value: ValueId,
    oracle: String,
    kind: &'static str,
    /// Known verdict (stage outputs come with the run's verdict).
    known: Option<bool>,
}

struct Bisector;

impl Bisector {
    fn run(
        spec: &Spec,
        options: &BisectOptions,
        stage_name: &str,
        case_name: &str,
        statuses: &HashMap<String, bool>,
        report: &mut BisectReport,
    ) -> Result<(), String> {
        let case = spec
            .case(case_name)
            .ok_or_else(|| format!("input: no case `{case_name}`"))?;
        let stages = spec.instantiate(case).map_err(|e| format!("input: {e}"))?;
        let stage = stages
            .iter()
            .find(|s| s.name == stage_name)
            .ok_or_else(|| format!("input: no stage `{stage_name}`"))?;
        let module_spec = spec
            .subject
            .modules
            .get(&stage.module)
            .ok_or_else(|| format!("input: no module `{}`", stage.module))?;
        let path = match &module_spec.source {
            ModuleSource::Mlir(p) => p.clone(),
            ModuleSource::Vmfb(p) => {
                return Err(format!(
                    "input: stage `{stage_name}` runs a prebuilt vmfb ({}); bisect needs the MLIR",
                    p.display()
                ))
            }
        };
        let source_name = path.display().to_string();
        let bytes = std::fs::read(&path)
            .map_err(|e| format!("input: cannot read {}: {e}", path.display()))?;
        let compiler = IreeCompiler::load(options.run.compiler_lib.as_deref())
            .map_err(|e| format!("execution: {e}"))?;
        let normal = compiler
            .normalize(&source_name, &bytes)
            .map_err(|e| format!("input: {e}"))?;
        let module = parity_mlir::parse(&normal)
            .map_err(|e| format!("input: {source_name} (normalised): {e}"))?;
        let (fn_name, slice) = match &stage.slice {
            Some(s) => (s.function.clone(), Some(s.clone())),
            None => (stage.function.clone(), None),
        };
        let func = module.function(&fn_name).ok_or_else(|| {
            format!("input: {source_name} has no function `{fn_name}` (stage `{stage_name}`)")
        })?;
        report.function = Some(fn_name.clone());

        let store = OracleStore::open(&spec.oracle).map_err(|e| format!("input: {e}"))?;
        let sources = run::inputs::InputSources::open(spec).map_err(|e| format!("input: {e}"))?;
        let args = isolated_args(stage, &stages, &sources)?;

        // The program: which values the stage feeds, which it returns.
        let (inputs, outputs): (Vec<ValueId>, Vec<ValueId>) = match &slice {
            None => (func.args.clone(), func.results.clone()),
            Some(s) => {
                let resolve = |p: &String| {
                    func.resolve_point(p)
                        .map_err(|e| format!("input: stage `{stage_name}` slice point `{p}`: {e}"))
                };
                let from: Vec<ValueId> = s.from.iter().map(resolve).collect::<Result<_, _>>()?;
                let to: Vec<ValueId> = s.to.iter().map(resolve).collect::<Result<_, _>>()?;
                // The slice's argument order is the runner's: parity-mlir decides it.
                let req = parity_mlir::SliceRequest {
                    name: "stage".into(),
                    from,
                    to: to.clone(),
                };
                let (_, infos) = parity_mlir::emit_slices(&module, func, "stage", &[req])
                    .map_err(|e| format!("input: stage `{stage_name}`: {e}"))?;
                let ins = infos[0].args.iter().map(|(_, v)| *v).collect();
                (ins, to)
            }
        };
        if inputs.len() != args.len() {
            return Err(format!(
                "input: stage `{stage_name}`: the function takes {} inputs, the spec gives {}",
                inputs.len(),
                args.len()
            ));
        }
        if outputs.len() != stage.outputs.len() {
            return Err(format!(
                "input: stage `{stage_name}`: the function returns {} values, the spec lists {} outputs",
                outputs.len(),
                stage.outputs.len()
            ));
        }
        let budget = budget_dtype(stage, report.output.as_deref());

        let runtime =
            IreeRuntime::new(&spec.subject.driver).map_err(|e| format!("execution: {e}"))?;
        let cache = ArtifactCache::new(&options.run.cache_dir);
        let mut flags = spec.subject.flags.clone();
        flags.extend(module_spec.flags.iter().cloned());
        let mut prober = Prober {
            compiler: &compiler,
            cache: &cache,
            runtime: &runtime,
            module: &module,
            func,
            options: CompileOptions {
                target_backend: spec.subject.target_backend.clone(),
                flags,
            },
            source_name: source_name.clone(),
            probes: 0,
            log: Vec::new(),
        };
        let given: Vec<(ValueId, &Tensor)> = inputs.iter().copied().zip(args.iter()).collect();

        // Baseline: the untapped slice of the stage; its results are what every
        // tapped variant must reproduce bit for bit (observer effect).
        let baseline = prober
            .run(
                &[Cut {
                    name: "baseline".into(),
                    given: given.clone(),
                    want: outputs.clone(),
                }],
                false,
                "baseline (untapped)",
            )
            .map_err(|e| format!("execution: {e}"))?
            .remove(0);

        // Checkpoints: stage outputs (with the run's verdicts) and oracle
        // tensors named after scopes of the function.
        let mut checkpoints: Vec<Checkpoint> = Vec::new();
        for (o, &v) in stage.outputs.iter().zip(&outputs) {
            checkpoints.push(Checkpoint {
                value: v,
                oracle: o.oracle.clone(),
                kind: "stage-output",
                known: statuses.get(&o.name).copied(),
            });
        }
        let prefix = format!("{case_name}/");
        for (key, v) in func.scope_outputs() {
            let name = format!("{prefix}{key}");
            if !store.contains(&name) || checkpoints.iter().any(|c| c.value == v) {
                continue;
            }
            // Same shape, or the same up to unit dimensions (an oracle that
            // squeezes [1,32,1,1] to [1,32] still names the same elements).
            let shape_ok = store
                .entry(&name)
                .zip(func.values[v].ty.shape())
                .is_some_and(|(e, s)| squeezed(&e.shape) == squeezed(&s));
            if shape_ok {
                checkpoints.push(Checkpoint {
                    value: v,
                    oracle: name,
                    kind: "convention",
                    known: None,
                });
            }
        }

        // The failing output to start from: the earliest failing stage output.
        let op_pos = |v: ValueId| func.op_of(v);
        let failing_out = stage
            .outputs
            .iter()
            .zip(&outputs)
            .filter(|(o, _)| statuses.get(&o.name) == Some(&false))
            .min_by_key(|(_, &v)| op_pos(v).unwrap_or(usize::MAX))
            .map(|(o, &v)| (o.name.clone(), v))
            .ok_or_else(|| {
                format!("input: stage `{stage_name}` has no failing output to start from")
            })?;
        report.output = Some(failing_out.0.clone());
        let mut target = failing_out.1;
        let mut verdicts: HashMap<ValueId, (bool, Option<ValueMetrics>)> = HashMap::new();
        for c in &checkpoints {
            if let Some(k) = c.known {
                verdicts.insert(c.value, (k, None));
            }
        }
        let oracle_of: HashMap<ValueId, String> = checkpoints
            .iter()
            .map(|c| (c.value, c.oracle.clone()))
            .collect();

        // Evaluates checkpoints with one tapped probe.
        let evaluate = |prober: &mut Prober,
                        vals: &[ValueId],
                        why: &str,
                        verdicts: &mut HashMap<ValueId, (bool, Option<ValueMetrics>)>,
                        observer: &mut Vec<String>|
         -> Result<(), String> {
            let mut want = outputs.clone();
            want.extend_from_slice(vals);
            let res = prober
                .run(
                    &[Cut {
                        name: "tapped".into(),
                        given: given.clone(),
                        want,
                    }],
                    false,
                    why,
                )
                .map_err(|e| format!("execution: {e}"))?
                .remove(0);
            let differing: Vec<String> = baseline
                .iter()
                .zip(&res)
                .enumerate()
                .filter(|(_, (a, b))| a.bytes() != b.bytes())
                .map(|(i, _)| stage.outputs[i].name.clone())
                .collect();
            if !differing.is_empty() {
                observer.push(format!(
                    "probe {}: tapping changed the stage's own results ({}): fusion differs with taps",
                    prober.probes,
                    differing.join(", ")
                ));
            }
            for (k, &v) in vals.iter().enumerate() {
                let actual = &res[outputs.len() + k];
                let name = &oracle_of[&v];
                let expected = oracle_as(&store, name, func, v)?;
                let m = value_metrics(
                    func,
                    v,
                    actual,
                    &expected,
                    &format!("oracle:{name}"),
                    budget,
                )?;
                let pass = m.ulps_at_max <= CHECKPOINT_ULP_BUDGET;
                verdicts.insert(v, (pass, Some(m)));
            }
            Ok(())
        };

        let ancestors =
            |t: ValueId| -> BTreeSet<usize> { func.cone(&inputs, &[t]).into_iter().collect() };
        let candidates_of =
            |t: ValueId, verdicts: &HashMap<ValueId, (bool, Option<ValueMetrics>)>| {
                let anc = ancestors(t);
                let mut c: Vec<ValueId> = checkpoints
                    .iter()
                    .map(|c| c.value)
                    .filter(|&v| v != t && !verdicts.contains_key(&v))
                    .filter(|&v| op_pos(v).is_some_and(|o| anc.contains(&o)))
                    .collect();
                c.sort_by_key(|&v| op_pos(v));
                c.dedup();
                c
            };
        let initial = candidates_of(target, &verdicts);
        let tap_bytes: usize = initial
            .iter()
            .map(|&v| {
                func.values[v]
                    .ty
                    .shape()
                    .map_or(0, |s| s.iter().product::<usize>() * 8)
            })
            .sum();
        let strategy = match options.strategy {
            Strategy::Auto if tap_bytes <= MARK_ALL_BYTES => Strategy::MarkAll,
            Strategy::Auto => Strategy::Bisection,
            s => s,
        };
        report.strategy = Some(strategy);
        let mut observer = Vec::new();
        match strategy {
            Strategy::MarkAll | Strategy::Auto => {
                if !initial.is_empty() {
                    evaluate(
                        &mut prober,
                        &initial,
                        "oracle checkpoints, all taps",
                        &mut verdicts,
                        &mut observer,
                    )?;
                }
                // The earliest failing checkpoint that the target depends on.
                let anc = ancestors(target);
                if let Some(&v) = initial
                    .iter()
                    .filter(|&&v| verdicts.get(&v).is_some_and(|(p, _)| !p))
                    .filter(|&&v| op_pos(v).is_some_and(|o| anc.contains(&o)))
                    .min_by_key(|&&v| op_pos(v))
                {
                    target = v;
                }
            }
            Strategy::Bisection => loop {
                let cands = candidates_of(target, &verdicts);
                if cands.is_empty() {
                    break;
                }
                let mid = cands[cands.len() / 2];
                evaluate(
                    &mut prober,
                    &[mid],
                    "oracle checkpoint, bisection",
                    &mut verdicts,
                    &mut observer,
                )?;
                if verdicts.get(&mid).is_some_and(|(p, _)| !p) {
                    target = mid;
                } else {
                    // A passing checkpoint vouches for what it depends on: mark
                    // its checkpoint ancestors as passing by implication.
                    let anc = ancestors(mid);
                    for v in cands {
                        if v != mid && op_pos(v).is_some_and(|o| anc.contains(&o)) {
                            verdicts.entry(v).or_insert((true, None));
                        }
                    }
                }
            },
        }
        report.observer_effect = observer;

        // Region: from the passing checkpoints (and the stage inputs) to the target.
        let anc_t = ancestors(target);
        let passing: Vec<ValueId> = checkpoints
            .iter()
            .map(|c| c.value)
            .filter(|&v| v != target && verdicts.get(&v).is_some_and(|(p, _)| *p))
            .filter(|&v| op_pos(v).is_some_and(|o| anc_t.contains(&o)))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut from: Vec<ValueId> = passing.clone();
        from.extend(inputs.iter().copied());
        let region_ops: Vec<usize> = func
            .cone(&from, &[target])
            .into_iter()
            .filter(|&o| func.ops[o].results.iter().any(|&r| !func.is_constant(r)))
            .collect();
        for c in &checkpoints {
            if let Some((passed, m)) = verdicts.get(&c.value) {
                report.checkpoints.push(CheckpointRecord {
                    oracle: c.oracle.clone(),
                    value: func.values[c.value].name.clone(),
                    op_index: op_pos(c.value),
                    loc: value_path(func, c.value),
                    kind: c.kind.to_string(),
                    passed: *passed,
                    metrics: m.clone(),
                });
            }
        }
        report.checkpoints.sort_by_key(|c| c.op_index);
        let target_oracle = oracle_of[&target].clone();
        report.region = Some(Region {
            passing: passing.iter().map(|v| oracle_of[v].clone()).collect(),
            failing: target_oracle.clone(),
            ops: region_ops.len(),
            op_list: region_ops.iter().map(|&o| op_line(func, o)).collect(),
        });

        // Tensors for every value fed into the region: the oracle's for passing
        // checkpoints, the stage inputs otherwise.
        let mut feed: Vec<(ValueId, Tensor)> = Vec::new();
        for &v in &passing {
            let t = oracle_as(&store, &oracle_of[&v], func, v)?;
            feed.push((v, t));
        }
        for (&v, t) in inputs.iter().zip(&args) {
            if !passing.contains(&v) {
                feed.push((v, t.clone()));
            }
        }
        let target_expected = oracle_as(&store, &target_oracle, func, target)?;

        let result = if region_ops.len() == 1 {
            let op = region_ops[0];
            let inputs_m = operand_metrics(func, op, &verdicts, &oracle_of);
            let out_m = verdicts
                .get(&target)
                .and_then(|(_, m)| m.clone())
                .into_iter()
                .collect();
            report.status = Status::Fail;
            let d = divergent_op(stage_name, func, op, "oracle", inputs_m, out_m);
            let repro_inputs: Vec<(ValueId, Tensor)> = feed.clone();
            Some((d, repro_inputs, vec![(target, target_expected.clone())]))
        } else {
            // f64 shadow over the region.
            let feed_refs: Vec<(ValueId, &Tensor)> = feed.iter().map(|(v, t)| (*v, t)).collect();
            let region_bytes: usize = region_ops
                .iter()
                .flat_map(|&o| func.ops[o].results.iter())
                .map(|&v| {
                    func.values[v]
                        .ty
                        .shape()
                        .map_or(0, |s| s.iter().product::<usize>() * 12)
                })
                .sum();
            let shadow_bisect = match options.strategy {
                Strategy::Bisection => true,
                Strategy::MarkAll => false,
                Strategy::Auto => region_bytes > MARK_ALL_BYTES,
            };
            // Bisection: the first op (program order) whose accumulated error
            // against the shadow exceeds the budget, with one tap per probe;
            // then only it and its operands' producers are examined.
            let mut shadow_ops: Vec<usize> = region_ops.clone();
            if shadow_bisect {
                let float_ops: Vec<(usize, ValueId)> = region_ops
                    .iter()
                    .filter_map(|&o| {
                        func.ops[o]
                            .results
                            .iter()
                            .copied()
                            .find(|&r| func.values[r].ty.is_float())
                            .map(|r| (o, r))
                    })
                    .collect();
                let (mut lo, mut hi) = (0, float_ops.len());
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    let (o, v) = float_ops[mid];
                    let cut = |name: &str| Cut {
                        name: name.into(),
                        given: feed_refs.clone(),
                        want: vec![v],
                    };
                    let why = format!("shadow bisection: tap op #{o}");
                    let p = prober
                        .run(&[cut("tap")], false, &why)
                        .map_err(|e| format!("execution: {e}"))?;
                    let sh = prober
                        .run(&[cut("tap")], true, &why)
                        .map_err(|e| format!("execution: {e}"))?;
                    let acc =
                        value_metrics(func, v, &p[0][0], &sh[0][0], "shadow", budget)?.ulps_at_max;
                    if acc > LOCAL_ULP_BUDGET {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                if let Some(&(k, _)) = float_ops.get(lo) {
                    let op = &func.ops[k];
                    let mut subset: BTreeSet<usize> = BTreeSet::from([k]);
                    for &v in op.operands.iter().chain(&op.captures) {
                        if let Some(p) = func.op_of(v) {
                            if region_ops.contains(&p) {
                                subset.insert(p);
                            }
                        }
                    }
                    shadow_ops = subset.into_iter().collect();
                } else {
                    // No value of the region drifts from the shadow beyond the budget.
                    shadow_ops.clear();
                }
            }
            let passing_names = if passing.is_empty() {
                "the stage inputs".to_string()
            } else {
                passing
                    .iter()
                    .map(|v| oracle_of[v].clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let semantic_note = format!(
                "localised to a region of {} operations between {} (pass) and {} (fail); \
                 the f64 shadow finds no operation there losing more than {} ULPs of {}, \
                 so the difference is semantic (the oracle computes something else \
                 somewhere in these operations), and no oracle tensor inside the region \
                 narrows it further",
                region_ops.len(),
                passing_names,
                target_oracle,
                LOCAL_ULP_BUDGET,
                budget.name()
            );
            if shadow_ops.is_empty() {
                report.status = Status::Fail;
                report.notes.push(semantic_note);
                None
            } else {
                loop {
                    let taps: Vec<ValueId> = shadow_ops
                        .iter()
                        .flat_map(|&o| func.ops[o].results.iter().copied())
                        .collect();
                    let prod = prober
                        .run(
                            &[Cut {
                                name: "region".into(),
                                given: feed_refs.clone(),
                                want: taps.clone(),
                            }],
                            false,
                            "region, production precision, every value tapped",
                        )
                        .map_err(|e| format!("execution: {e}"))?
                        .remove(0);
                    let shadow = prober
                        .run(
                            &[Cut {
                                name: "region".into(),
                                given: feed_refs.clone(),
                                want: taps.clone(),
                            }],
                            true,
                            "region, f64 shadow, every value tapped",
                        )
                        .map_err(|e| format!("execution: {e}"))?
                        .remove(0);
                    let prod_of: HashMap<ValueId, Tensor> =
                        taps.iter().copied().zip(prod).collect();
                    let mut shadow_of: HashMap<ValueId, Tensor> =
                        taps.iter().copied().zip(shadow).collect();
                    for (v, t) in &feed {
                        shadow_of.entry(*v).or_insert(widen(t)?);
                    }
                    // Each op alone, in production precision, on the shadow's inputs.
                    let mut local_inputs: Vec<Vec<(ValueId, Tensor)>> = Vec::new();
                    let mut local_ops: Vec<usize> = Vec::new();
                    for &o in &shadow_ops {
                        let op = &func.ops[o];
                        let float_out = op.results.iter().any(|&r| func.values[r].ty.is_float());
                        if !float_out {
                            continue;
                        }
                        let mut ins = Vec::new();
                        let mut ok = true;
                        let mut seen = BTreeSet::new();
                        for &v in op.operands.iter().chain(&op.captures) {
                            if func.is_constant(v) || !seen.insert(v) {
                                continue;
                            }
                            let Some(sh) = shadow_of.get(&v) else {
                                ok = false;
                                break;
                            };
                            let dt = func.values[v]
                                .ty
                                .element()
                                .and_then(probe::dtype_of)
                                .unwrap_or(sh.dtype());
                            ins.push((v, narrow(sh, dt)?));
                        }
                        if ok {
                            local_inputs.push(ins);
                            local_ops.push(o);
                        }
                    }
                    let cuts: Vec<Cut> = local_ops
                        .iter()
                        .zip(&local_inputs)
                        .map(|(&o, ins)| Cut {
                            name: format!("op_{o}"),
                            given: ins.iter().map(|(v, t)| (*v, t)).collect(),
                            want: func.ops[o].results.clone(),
                        })
                        .collect();
                    let local = if cuts.is_empty() {
                        Vec::new()
                    } else {
                        prober
                            .run(&cuts, false, "each region op alone on the shadow's inputs")
                            .map_err(|e| format!("execution: {e}"))?
                    };
                    let local_of: HashMap<usize, Vec<Tensor>> =
                        local_ops.iter().copied().zip(local).collect();
                    let mut flagged: Option<usize> = None;
                    for &o in &shadow_ops {
                        let op = &func.ops[o];
                        let r = op.results[0];
                        let acc = match (prod_of.get(&r), shadow_of.get(&r)) {
                            (Some(p), Some(s)) if func.values[r].ty.is_float() => {
                                value_metrics(func, r, p, s, "shadow", budget)?.ulps_at_max
                            }
                            _ => 0.0,
                        };
                        let local_ulps = match local_of.get(&o) {
                            Some(res) => {
                                let mut worst: f64 = 0.0;
                                for (k, t) in res.iter().enumerate() {
                                    let rv = op.results[k];
                                    if let Some(s) = shadow_of.get(&rv) {
                                        if func.values[rv].ty.is_float() {
                                            worst = worst.max(
                                                value_metrics(func, rv, t, s, "shadow", budget)?
                                                    .ulps_at_max,
                                            );
                                        }
                                    }
                                }
                                Some(worst)
                            }
                            None => None,
                        };
                        let is_flag =
                            flagged.is_none() && local_ulps.is_some_and(|l| l > LOCAL_ULP_BUDGET);
                        if is_flag {
                            flagged = Some(o);
                        }
                        report.shadow.push(ShadowRow {
                            op_index: o,
                            op_name: op.name.clone(),
                            loc: loc_label(&op.loc),
                            result_type: func.values[r].ty.text.clone(),
                            accumulated_ulps: acc,
                            local_ulps,
                            flagged: is_flag,
                        });
                    }
                    if flagged.is_none() && shadow_ops.len() < region_ops.len() {
                        report.notes.push(
                    "shadow bisection was inconclusive (the first op over budget did not add the error itself); fell back to mark-all over the region".into(),
                );
                        report.shadow.clear();
                        shadow_ops = region_ops.clone();
                        continue;
                    }
                    break match flagged {
                        Some(o) => {
                            let op = &func.ops[o];
                            let mut ins_m = Vec::new();
                            for (v, t) in local_inputs
                                [local_ops.iter().position(|&x| x == o).unwrap_or(0)]
                            .iter()
                            {
                                if let Some(s) = shadow_of.get(v) {
                                    if let Some(p) = prod_of.get(v).or_else(|| {
                                        feed.iter().find(|(f, _)| f == v).map(|(_, t)| t)
                                    }) {
                                        if func.values[*v].ty.is_float() {
                                            ins_m.push(value_metrics(
                                                func, *v, p, s, "shadow", budget,
                                            )?);
                                        }
                                    }
                                    let _ = t;
                                }
                            }
                            let mut out_m = Vec::new();
                            for &rv in &op.results {
                                if let (Some(p), Some(s)) = (
                                    local_of.get(&o).and_then(|r| {
                                        r.get(op.results.iter().position(|&x| x == rv).unwrap_or(0))
                                    }),
                                    shadow_of.get(&rv),
                                ) {
                                    if func.values[rv].ty.is_float() {
                                        out_m.push(value_metrics(
                                            func,
                                            rv,
                                            p,
                                            s,
                                            "shadow (op alone)",
                                            budget,
                                        )?);
                                    }
                                }
                            }
                            report.status = Status::Fail;
                            let d = divergent_op(stage_name, func, o, "inferred", ins_m, out_m);
                            let li = local_inputs
                                [local_ops.iter().position(|&x| x == o).unwrap_or(0)]
                            .clone();
                            let mut expected = Vec::new();
                            for &rv in &op.results {
                                let dt = func.values[rv]
                                    .ty
                                    .element()
                                    .and_then(probe::dtype_of)
                                    .unwrap_or(DType::F32);
                                if let Some(s) = shadow_of.get(&rv) {
                                    expected.push((rv, narrow(s, dt)?));
                                }
                            }
                            Some((d, li, expected))
                        }
                        None => {
                            report.status = Status::Fail;
                            report.notes.push(semantic_note.clone());
                            None
                        }
                    };
                }
            }
        };

        let repro_dir = &options.repro_dir;
        let written = match &result {
            Some((d, ins, expected)) => {
                report.first_divergent_op = Some(DivergentOp {
                    probes: prober.probes,
                    ..d.clone()
                });
                repro::write(
                    repro_dir,
                    &module,
                    func,
                    &[d.op_index],
                    ins,
                    expected,
                    spec,
                    &prober.options,
                    &source_name,
                    &d.evidence,
                )
            }
            None => repro::write(
                repro_dir,
                &module,
                func,
                &region_ops,
                &feed,
                &[(target, target_expected)],
                spec,
                &prober.options,
                &source_name,
                "region",
            ),
        };
        match written {
            Ok(()) => report.reproducer = Some(repro_dir.display().to_string()),
            Err(e) => report
                .errors
                .push(format!("execution: writing the reproducer: {e}")),
        }
        if let Some(d) = report.first_divergent_op.as_mut() {
            d.probes = prober.probes;
        }
        report.probes = prober.probes;
        report.probe_log = prober.log;
        Ok(())
    }
}

/// A location for people: its named-scope path, else the raw location
/// (`"model.mlir":12:5` for hand-written MLIR).
fn loc_label(loc: &parity_mlir::Location) -> String {
    loc.path().unwrap_or_else(|| {
        let raw = loc.raw.trim();
        raw.strip_prefix("loc(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(raw)
            .replace('"', "")
    })
}

/// Shape without unit dimensions.
fn squeezed(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// An oracle tensor shaped like value `v` (reshaped when they differ only by
/// unit dimensions).
fn oracle_as(
    store: &OracleStore,
    name: &str,
    func: &Function,
    v: ValueId,
) -> Result<Tensor, String> {
    let t = store.get(name).map_err(|e| format!("input: {e}"))?;
    match func.values[v].ty.shape() {
        Some(shape) if shape != t.shape() && squeezed(&shape) == squeezed(t.shape()) => t
            .reshaped(shape.clone())
            .ok_or_else(|| format!("input: oracle `{name}` cannot be viewed as {shape:?}")),
        _ => Ok(t),
    }
}

/// The dtype whose rounding the errors are measured in: the failing output's
/// `ulp_dtype`, else f32.
fn budget_dtype(stage: &Stage, output: Option<&str>) -> DType {
    stage
        .outputs
        .iter()
        .find(|o| Some(o.name.as_str()) == output)
        .and_then(|o| o.ulp_dtype)
        .unwrap_or(DType::F32)
}

/// Machine epsilon (spacing at 1) of a float dtype.
fn eps(d: DType) -> f64 {
    match d {
        DType::Bf16 => 2f64.powi(-7),
        DType::F16 => 2f64.powi(-10),
        DType::F64 => 2f64.powi(-52),
        _ => 2f64.powi(-23),
    }
}

/// One ULP of `budget` at magnitude `m`.
fn ulp_at(m: f64, budget: DType) -> f64 {
    if m > 0.0 && m.is_finite() {
        eps(budget) * 2f64.powi(m.log2().floor() as i32)
    } else {
        eps(budget) * f64::MIN_POSITIVE
    }
}

fn value_metrics(
    func: &Function,
    v: ValueId,
    actual: &Tensor,
    expected: &Tensor,
    against: &str,
    budget: DType,
) -> Result<ValueMetrics, String> {
    let m = compare(actual, expected, None, &CompareOptions::default()).map_err(|e| {
        format!(
            "input: comparing {} with {against}: {e}",
            func.values[v].name
        )
    })?;
    let max_ref = expected
        .to_f64_vec()
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |a, &x| a.max(x.abs()));
    let nan_trouble = m.nan_mismatch > 0 || m.inf_mismatch > 0;
    let ulps = if nan_trouble {
        f64::INFINITY
    } else {
        m.max_abs / ulp_at(max_ref, budget)
    };
    Ok(ValueMetrics {
        value: func.values[v].name.clone(),
        against: against.to_string(),
        max_abs: m.max_abs,
        rms: m.rms,
        max_ref,
        ulps_at_max: ulps,
    })
}

fn operand_metrics(
    func: &Function,
    op: usize,
    verdicts: &HashMap<ValueId, (bool, Option<ValueMetrics>)>,
    oracle_of: &HashMap<ValueId, String>,
) -> Vec<ValueMetrics> {
    let o = &func.ops[op];
    o.operands
        .iter()
        .map(|&v| match verdicts.get(&v).and_then(|(_, m)| m.clone()) {
            Some(m) => m,
            None => ValueMetrics {
                value: func.values[v].name.clone(),
                against: if func.is_constant(v) {
                    "constant".into()
                } else if let Some(n) = oracle_of.get(&v) {
                    format!("oracle:{n} (passes)")
                } else {
                    "input".into()
                },
                max_abs: 0.0,
                rms: 0.0,
                max_ref: 0.0,
                ulps_at_max: 0.0,
            },
        })
        .collect()
}

fn divergent_op(
    stage: &str,
    func: &Function,
    o: usize,
    evidence: &str,
    inputs: Vec<ValueMetrics>,
    output: Vec<ValueMetrics>,
) -> DivergentOp {
    let op = &func.ops[o];
    DivergentOp {
        stage: stage.to_string(),
        function: func.name.clone(),
        op_index: o,
        op_name: op.name.clone(),
        loc: loc_label(&op.loc),
        loc_raw: op.loc.raw.clone(),
        evidence: evidence.to_string(),
        probes: 0,
        text: op.text.clone(),
        operand_types: op
            .operands
            .iter()
            .map(|&v| func.values[v].ty.text.clone())
            .collect(),
        result_types: op
            .results
            .iter()
            .map(|&v| func.values[v].ty.text.clone())
            .collect(),
        metrics: OpMetrics { inputs, output },
    }
}

fn value_path(func: &Function, v: ValueId) -> String {
    loc_label(&func.values[v].loc)
}

fn op_line(func: &Function, o: usize) -> String {
    let op = &func.ops[o];
    format!(
        "#{o} {} = {} @ {}",
        op.results
            .iter()
            .map(|&r| func.values[r].name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        op.name,
        loc_label(&op.loc)
    )
}

/// The stage's arguments in isolated mode: oracle tensors, weights, literals,
/// upstream outputs' oracle tensors.
fn isolated_args(
    stage: &Stage,
    stages: &[Stage],
    sources: &run::inputs::InputSources,
) -> Result<Vec<Tensor>, String> {
    let mut out = Vec::new();
    for (i, a) in stage.args.iter().enumerate() {
        let t = match a {
            Arg::Oracle(n) => sources.oracle(n),
            Arg::Weight(n) => sources.weight(n),
            Arg::Literal {
                dtype,
                shape,
                values,
            } => Tensor::from_f64_as(*dtype, shape.clone(), values).map_err(|e| e.to_string()),
            Arg::Stage { stage: up, output } => stages
                .iter()
                .find(|s| &s.name == up)
                .and_then(|s| s.outputs.iter().find(|o| &o.name == output))
                .ok_or_else(|| format!("unknown upstream `{up}.{output}`"))
                .and_then(|o| sources.oracle(&o.oracle)),
        }
        .map_err(|e| format!("input: stage `{}` argument {i}: {e}", stage.name))?;
        out.push(t);
    }
    Ok(out)
}
