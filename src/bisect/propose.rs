//! `parity points --propose-map`: which production value is each oracle
//! tensor? The stage runs once per case on its isolated-mode inputs, in one
//! build with every candidate value tapped (bisect's mark-all probe,
//! [`Prober`]); each oracle tensor of the case is then compared with every
//! tapped value of the same element count, as the same shape, a transpose
//! or a reshape ([`layout`](super::layout)), under the stage's tolerance.
//! The result is a `checkpoints:` map to review and paste into the spec.

pub use super::layout::Layout;
use super::matching::agree;
use super::BisectError;
use crate::run::RunOptions;
use parity_compare::Criterion;
use parity_spec::{Spec, Stage};
use serde::Serialize;
use std::collections::BTreeMap;

mod case;
use case::Setup;

/// Schema identifier of `parity points --propose-map --json`.
pub const PROPOSAL_SCHEMA: &str = "parity.map-proposal/1";

/// Why no proposal could be made. Exit 2 for input, 3 for IREE.
#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    /// The stage could not be set up as bisect sets it up.
    #[error(transparent)]
    Setup(Box<BisectError>),
    /// No stage of that name.
    #[error("{spec}: no stage `{stage}` (stages: {available})")]
    NoStage {
        /// The spec file.
        spec: String,
        /// The stage asked for.
        stage: String,
        /// The spec's stages.
        available: String,
    },
    /// No case of that name, or a case whose templates do not render.
    #[error("{spec}: case `{case}`: {why}")]
    Case {
        /// The spec file.
        spec: String,
        /// The case.
        case: String,
        /// What is wrong.
        why: String,
    },
    /// The stage's module is not the MODULE given on the command line.
    #[error("stage `{stage}` runs {actual}, not {given}: drop MODULE or name the stage's module")]
    OtherModule {
        /// The stage.
        stage: String,
        /// Its module's MLIR file.
        actual: String,
        /// MODULE as given.
        given: String,
    },
    /// The IREE compiler or runtime failed, or the probe could not be cut.
    #[error("stage `{stage}` ({case}): {source}")]
    Probe {
        /// The stage.
        stage: String,
        /// The case (or the cases, comma separated).
        case: String,
        /// Why (its kind decides the exit code).
        #[source]
        source: Box<BisectError>,
    },
}

impl From<BisectError> for ProposeError {
    fn from(e: BisectError) -> Self {
        ProposeError::Setup(Box::new(e))
    }
}

impl ProposeError {
    /// Exit code: 3 for IREE failures, 2 otherwise.
    pub fn exit_code(&self) -> parity_record::ExitCode {
        match self {
            ProposeError::Setup(e) | ProposeError::Probe { source: e, .. } => e.exit_code(),
            ProposeError::NoStage { .. }
            | ProposeError::Case { .. }
            | ProposeError::OtherModule { .. } => parity_record::ExitCode::Input,
        }
    }
}

/// The proposal for one stage.
#[derive(Clone, Debug, Serialize)]
pub struct Proposal {
    /// [`PROPOSAL_SCHEMA`].
    pub schema: &'static str,
    /// The stage.
    pub stage: String,
    /// The function its values belong to.
    pub function: String,
    /// The cases run.
    pub cases: Vec<String>,
    /// The criteria a match must pass (the stage's first output's tolerance).
    pub tolerance: Vec<Criterion>,
    /// Candidate values tapped (per case).
    pub tapped: usize,
    /// Candidate values left untapped because all taps together would pass
    /// bisect's 512 MiB mark-all bound (named scopes are tapped first).
    pub untapped: usize,
    /// One entry per oracle tensor (as a `{case}` template), in name order.
    pub entries: Vec<Entry>,
}

/// What one oracle tensor matched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// The oracle tensor, `{case}/...`.
    pub oracle: String,
    /// What was found.
    #[serde(flatten)]
    pub found: Found,
}

/// How a proposal chose among values holding the same numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tie {
    /// Its scope is named as the oracle tensor (`encoder/subsampled_mask`
    /// for `subsampled_mask`), and no other tied value's is.
    ScopeName,
    /// No single tied value's scope names the tensor: the last of them in
    /// program order, nearest its consumers. Ambiguous: review it.
    Last,
}

/// The outcome for one oracle tensor.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Found {
    /// One production value (or several holding the same numbers) matches.
    Matched {
        /// The point to write in `checkpoints:` (scope path, else SSA name).
        point: String,
        /// Its SSA value.
        value: String,
        /// How it is laid out against the oracle tensor.
        layout: Layout,
        /// The criteria results, e.g. `max_abs 2.4e-07 <= 1e-05`.
        metric: String,
        /// Other points holding bitwise the same numbers on the case(s) run.
        also: Vec<String>,
        /// When `also` is not empty, how `point` was chosen among them; a
        /// tie is flagged, since values equal on these cases (a mask gathered,
        /// then selected) may differ on others.
        #[serde(skip_serializing_if = "Option::is_none")]
        tie: Option<Tie>,
    },
    /// Several values with different numbers all pass: no guess.
    Ambiguous {
        /// The candidate points.
        points: Vec<String>,
    },
    /// No tapped value of the same element count passes.
    NoMatch {
        /// The value closest by max_abs error, if any had the element count.
        closest: Option<String>,
        /// Its max_abs error.
        closest_max_abs: Option<f64>,
    },
    /// The tensor feeds the stage (an argument), so it is no checkpoint.
    StageInput,
    /// The tensor is the oracle of a stage output, already compared by `parity check`.
    StageOutput {
        /// The output's name.
        output: String,
    },
}

/// Proposes the oracle tensor -> point map of `stage` over the spec's cases
/// (or `run.cases`); `module` (when given) must be the stage's MLIR file.
pub fn propose(
    spec: &Spec,
    run: &RunOptions,
    stage_name: &str,
    module: Option<&std::path::Path>,
) -> Result<Proposal, ProposeError> {
    let template = find_stage(spec, stage_name)?;
    check_module(spec, template, stage_name, module)?;
    let cases: Vec<String> = if run.cases.is_empty() {
        spec.cases.iter().map(|c| c.name.clone()).collect()
    } else {
        run.cases.clone()
    };
    let setup = Setup::open(spec, run, stage_name, &cases)?;
    let mut proposal = Proposal {
        schema: PROPOSAL_SCHEMA,
        stage: stage_name.to_string(),
        function: String::new(),
        cases: cases.clone(),
        tolerance: Vec::new(),
        tapped: 0,
        untapped: 0,
        entries: Vec::new(),
    };
    let mut per_case: BTreeMap<String, Vec<Found>> = BTreeMap::new();
    for case_name in &cases {
        setup.propose_case(case_name, &mut proposal, &mut per_case)?;
    }
    proposal.entries = per_case
        .into_iter()
        .map(|(oracle, found)| Entry {
            oracle,
            found: agree(found),
        })
        .collect();
    Ok(proposal)
}

/// The spec's stage `stage_name`, as written (before any case).
fn find_stage<'s>(spec: &'s Spec, stage_name: &str) -> Result<&'s Stage, ProposeError> {
    spec.stages
        .iter()
        .find(|s| s.name == stage_name)
        .ok_or_else(|| ProposeError::NoStage {
            spec: spec.path.display().to_string(),
            stage: stage_name.to_string(),
            available: spec
                .stages
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Refuses a `module` given on the command line that is not the stage's MLIR file.
fn check_module(
    spec: &Spec,
    template: &Stage,
    stage_name: &str,
    module: Option<&std::path::Path>,
) -> Result<(), ProposeError> {
    if let (Some(given), Some(parity_spec::ModuleSource::Mlir(actual))) = (
        module,
        spec.subject
            .modules
            .get(&template.module)
            .map(|m| &m.source),
    ) {
        let same = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        if same(given).is_none() || same(given) != same(actual) {
            return Err(ProposeError::OtherModule {
                stage: stage_name.to_string(),
                actual: actual.display().to_string(),
                given: given.display().to_string(),
            });
        }
    }
    Ok(())
}
