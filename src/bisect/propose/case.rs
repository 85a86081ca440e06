//! One case of a map proposal: the stage run once with every candidate
//! tapped, and each oracle tensor of the case judged against the taps.

use super::{Found, Proposal, ProposeError};
use crate::bisect::matching::{
    candidates, points_of, scope_names_of, stage_inputs, stage_tolerance, Judge,
};
use crate::bisect::probe::{Cut, Iree, Prober};
use crate::bisect::{isolated_args, load_bound, stage_function, stage_values, BisectError};
use crate::run::inputs::InputSources;
use crate::run::RunOptions;
use crate::target::Target;
use parity_iree::{ArtifactCache, IreeCompiler};
use parity_mlir::ValueId;
use parity_spec::{Spec, Stage};
use parity_tensor::{OracleStore, Tensor};
use std::collections::{BTreeMap, BTreeSet};

/// What the cases' runs share: the target, the IREE compiler, the oracle
/// store and the input sources.
pub(super) struct Setup<'a> {
    spec: &'a Spec,
    run: &'a RunOptions,
    stage_name: &'a str,
    target: Target,
    compiler: IreeCompiler,
    store: OracleStore,
    sources: InputSources,
}

impl<'a> Setup<'a> {
    /// Readies the target, loads the compiler and opens the oracle store and inputs.
    pub(super) fn open(
        spec: &'a Spec,
        run: &'a RunOptions,
        stage_name: &'a str,
        cases: &[String],
    ) -> Result<Self, ProposeError> {
        let target = Target::ready(spec, run.target.as_deref())
            .map_err(|e| ProposeError::Setup(Box::new(e.into())))?;
        let compiler =
            IreeCompiler::load(run.compiler_lib.as_deref()).map_err(|e| ProposeError::Probe {
                stage: stage_name.to_string(),
                case: cases.join(", "),
                source: Box::new(BisectError::Compiler(e)),
            })?;
        let store =
            OracleStore::open(&spec.oracle).map_err(|e| BisectError::OracleStore(Box::new(e)))?;
        let sources = InputSources::open(spec).map_err(|e| BisectError::Inputs(Box::new(e)))?;
        Ok(Setup {
            spec,
            run,
            stage_name,
            target,
            compiler,
            store,
            sources,
        })
    }

    /// Runs the stage on one case, adds what each of the case's oracle
    /// tensors matched to `per_case`, and records the stage's function,
    /// tolerance and tap counts in `proposal`.
    pub(super) fn propose_case(
        &self,
        case_name: &str,
        proposal: &mut Proposal,
        per_case: &mut BTreeMap<String, Vec<Found>>,
    ) -> Result<(), ProposeError> {
        let (spec, stage_name) = (self.spec, self.stage_name);
        let case_err = |why: String| ProposeError::Case {
            spec: spec.path.display().to_string(),
            case: case_name.to_string(),
            why,
        };
        let case = spec
            .case(case_name)
            .ok_or_else(|| case_err("no such case".into()))?;
        let mut stages = spec
            .instantiate(case)
            .map_err(|e| case_err(e.to_string()))?;
        let at = stages
            .iter()
            .position(|s| s.name == stage_name)
            .ok_or_else(|| case_err(format!("no stage `{stage_name}`")))?;
        let (module, source_name) = load_bound(spec, &mut stages[at], &self.compiler)?;
        let stage = &stages[at];
        let func = stage_function(&module, stage, &source_name)?;
        let (inputs, outputs) = stage_values(&module, func, stage)?;
        let args = isolated_args(&spec.path, stage, &stages, &self.sources)?;
        if inputs.len() != args.len() {
            return Err(BisectError::InputCount {
                stage: stage_name.to_string(),
                takes: inputs.len(),
                given: args.len(),
            }
            .into());
        }
        let tolerance = stage_tolerance(stage, &self.store);
        let (tapped, untapped) = candidates(func, &inputs, &outputs, &self.store, case_name);
        let given: Vec<(ValueId, &Tensor)> = inputs.iter().copied().zip(args.iter()).collect();
        let probe = Probe {
            stage,
            case,
            module: &module,
            func,
        };
        let values = self.tap(&probe, source_name, given, &tapped)?;
        let judge = Judge {
            func,
            tapped: &tapped,
            values: &values,
            tolerance: &tolerance,
            points: points_of(func),
            scopes: scope_names_of(func),
        };
        let feeds: BTreeSet<String> = stage_inputs(stage, &stages);
        self.judge_case(case_name, stage, &feeds, &judge, per_case)?;
        proposal.function = func.name.clone();
        proposal.tolerance = tolerance;
        proposal.tapped = tapped.len();
        proposal.untapped = untapped;
        Ok(())
    }

    /// The tensors of the `tapped` values on the case's `given` inputs, from
    /// one build with every candidate tapped.
    fn tap(
        &self,
        probe: &Probe<'_>,
        source_name: String,
        given: Vec<(ValueId, &Tensor)>,
        tapped: &[ValueId],
    ) -> Result<Vec<Tensor>, ProposeError> {
        let Probe {
            stage,
            case,
            module,
            func,
        } = *probe;
        let runtime = self
            .target
            .runtime()
            .map_err(|e| probe_error(stage, case, BisectError::Runtime(e)))?;
        let cache = ArtifactCache::new(&self.run.cache_dir);
        let iree = Iree {
            compiler: &self.compiler,
            cache: &cache,
            runtime: &runtime,
        };
        let mut prober = Prober::new(
            iree,
            module,
            func,
            self.target.module_options(self.spec, &stage.module),
            source_name,
        );
        if tapped.is_empty() {
            return Ok(Vec::new());
        }
        Ok(prober
            .run(
                &[Cut {
                    name: "tapped".into(),
                    given,
                    want: tapped.to_vec(),
                }],
                false,
                "propose map, every candidate tapped",
            )
            .map_err(|e| probe_error(stage, case, e))?
            .remove(0))
    }

    /// What each oracle tensor of the case (f64 shadows aside) is: a stage
    /// input, a stage output, or what `judge` finds; added to `per_case`
    /// under its `{case}` name.
    fn judge_case(
        &self,
        case_name: &str,
        stage: &Stage,
        feeds: &BTreeSet<String>,
        judge: &Judge<'_>,
        per_case: &mut BTreeMap<String, Vec<Found>>,
    ) -> Result<(), ProposeError> {
        let prefix = format!("{case_name}/");
        for name in self.store.names() {
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            if name.ends_with("@f64") {
                continue;
            }
            let found = if feeds.contains(name) {
                Found::StageInput
            } else if let Some(o) = stage.outputs.iter().find(|o| &o.oracle == name) {
                Found::StageOutput {
                    output: o.name.clone(),
                }
            } else {
                let oracle = self
                    .sources
                    .oracle(name)
                    .map_err(|e| BisectError::Inputs(Box::new(e)))?;
                judge.find(rest, &oracle)
            };
            per_case
                .entry(format!("{{case}}/{rest}"))
                .or_default()
                .push(found);
        }
        Ok(())
    }
}

/// The stage being probed on one case: what a probe error names, and what it runs.
#[derive(Clone, Copy)]
struct Probe<'p> {
    stage: &'p Stage,
    case: &'p parity_spec::Case,
    module: &'p parity_mlir::Module,
    func: &'p parity_mlir::Function,
}

/// A probe failure, naming the stage and the case.
fn probe_error(stage: &Stage, case: &parity_spec::Case, source: BisectError) -> ProposeError {
    ProposeError::Probe {
        stage: stage.name.clone(),
        case: case.name.clone(),
        source: Box::new(source),
    }
}
