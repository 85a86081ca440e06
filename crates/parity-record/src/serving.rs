//! The serving record (`parity.serving/1`, docs/serving.md): per request of a
//! scenario, where and when it ran (slot; admitted, cancelled, finished
//! steps), its tokens, and the verdict of every serving check.

use crate::common::{ErrorRecord, Status};
use crate::exit::ExitCode;
use crate::tokens::DivergentToken;
use crate::triangulation_row::{names_where, TriangulationLabel};
use serde::{Deserialize, Serialize};

/// Schema tag of the serving record.
pub const SERVING_SCHEMA: &str = "parity.serving/1";

/// The whole `parity serve` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingRecord {
    /// Always [`SERVING_SCHEMA`].
    pub schema: String,
    /// pass: every check held; fail: a check failed; error: something errored.
    pub status: Status,
    /// The scenario file.
    pub scenario: String,
    /// The target that ran it (`in-process`, `command`, `http`).
    pub target: String,
    /// The serving module.
    pub module: String,
    /// Slots S.
    pub slots: u32,
    /// Context per slot.
    pub context: u64,
    /// parity's version.
    pub parity_version: String,
    /// IREE compiler revision, when one compiled.
    pub compiler_revision: Option<String>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started: String,
    /// Total wall-clock seconds.
    #[serde(with = "crate::float")]
    pub elapsed_s: f64,
    /// Engine steps the run took (last step + 1).
    pub steps: u64,
    /// One entry per request, in scenario order.
    pub requests: Vec<ServingRequestRecord>,
    /// Errors not tied to one request (scenario, compile, load).
    pub errors: Vec<ErrorRecord>,
    /// Warnings.
    pub warnings: Vec<String>,
    /// The spec targets the scenario ran on, in order, in a run over
    /// several (`--target a,b`); empty for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// Each request failing or erroring on some target, labelled
    /// (`triangulate_serving`); empty for one target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triangulation: Vec<ServingTriangulationRow>,
}

/// One request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingRequestRecord {
    /// Request id.
    pub id: String,
    /// The oracle case it takes its content from.
    pub case: String,
    /// `audio`, `text` or `all_padded`.
    pub kind: String,
    /// pass / fail / error (from its verdicts and errors).
    pub status: Status,
    /// Arrival step.
    pub arrive: u64,
    /// Slot it ran in (null: refused, or a black box that cannot say).
    pub slot: Option<u32>,
    /// Step its prefill ran.
    pub admitted_step: Option<u64>,
    /// Step it was cancelled at.
    pub cancelled_step: Option<u64>,
    /// Step its last token came out.
    pub finished_step: Option<u64>,
    /// Generated tokens.
    pub tokens: Vec<u32>,
    /// Black box: the log-probability the target gave each token (absent
    /// when it gave none; judged by the `logprobs` check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logprobs: Vec<f32>,
    /// Black box: the finish reason the target gave (`length`, `stop`,
    /// `cancelled`; absent when it gave none or parity hung up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<String>,
    /// The oracle's greedy tokens (as many as it has, up to max_new_tokens).
    pub oracle_tokens: Vec<i64>,
    /// The same request run alone.
    pub solo_tokens: Vec<u32>,
    /// Whether every logits row equals the solo run's bit for bit
    /// (null: the target gives no logits).
    pub bitwise_logits: Option<bool>,
    /// The slot's KV length after prefill (in-process only), and the solo run's.
    pub effective_length: Option<u64>,
    /// The solo run's effective length.
    pub solo_effective_length: Option<u64>,
    /// SHA-256 of the dense PLE rows fed to prefill (in-process only).
    pub dense_ple_sha256: Option<String>,
    /// Whether the slot had an earlier occupant in this run.
    pub reused_slot: bool,
    /// The admission refusal, if it was refused.
    pub refused: Option<String>,
    /// An error during its run.
    pub error: Option<String>,
    /// Every check's verdict.
    pub verdicts: Vec<ServingVerdict>,
    /// The spec target it ran on, in a run over several (`--target a,b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// One check of one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingVerdict {
    /// `admission`, `oracle_tokens`, `batch_invariance`, `effective_length`,
    /// `dense_ple`, `slot_reuse`.
    pub check: String,
    /// pass / fail / skipped.
    pub status: Status,
    /// What held or what did not, naming the request, slot and step.
    pub message: String,
    /// The step the failure shows at.
    pub step: Option<u64>,
    /// The slot involved.
    pub slot: Option<u32>,
    /// At a token mismatch against the oracle: the token verdict evidence.
    pub divergent_token: Option<DivergentToken>,
}

impl ServingRecord {
    /// An empty record for `scenario` (status pass until derived).
    pub fn new(scenario: String, target: String, parity_version: &str, started: String) -> Self {
        ServingRecord {
            schema: SERVING_SCHEMA.to_string(),
            status: Status::Pass,
            scenario,
            target,
            module: String::new(),
            slots: 0,
            context: 0,
            parity_version: parity_version.to_string(),
            compiler_revision: None,
            started,
            elapsed_s: 0.0,
            steps: 0,
            requests: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            targets: Vec::new(),
            triangulation: Vec::new(),
        }
    }

    fn failed(&self) -> bool {
        self.requests
            .iter()
            .flat_map(|r| &r.verdicts)
            .any(|v| v.status == Status::Fail)
    }

    /// error when anything errored, else fail when a check failed, else pass.
    pub fn derived_status(&self) -> Status {
        if !self.errors.is_empty() || self.requests.iter().any(|r| r.status == Status::Error) {
            Status::Error
        } else if self.failed() {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// Exit code: 0 every check held, 1 a check failed, 2 input error, 3
    /// execution error (2 over 3 over 1). A request's run error is an execution error.
    pub fn exit_code(&self) -> ExitCode {
        let fail = self.failed().then_some(ExitCode::Fail);
        let run = self
            .requests
            .iter()
            .any(|r| r.error.is_some())
            .then_some(ExitCode::Execution);
        ExitCode::combine(
            self.errors
                .iter()
                .map(ErrorRecord::exit_code)
                .chain(run)
                .chain(fail),
        )
    }
}

/// One target's side of a request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingTargetSide {
    /// The target's name.
    pub target: String,
    /// The request's status there (skipped when it did not run).
    pub status: Status,
    /// Its tokens equal the first target's.
    pub same_tokens_as_first: bool,
}

/// One request that failed or errored on at least one target, labelled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingTriangulationRow {
    /// Request id.
    pub request: String,
    /// Which side is off.
    pub label: TriangulationLabel,
    /// The targets the request fails or errors on, in run order.
    pub off: Vec<String>,
    /// Every target's side, in run order.
    pub targets: Vec<ServingTargetSide>,
}

impl ServingTriangulationRow {
    /// One sentence: what the label rests on.
    pub fn explain(&self) -> String {
        let with = |status: Status| {
            names_where(&self.targets, |t| t.target.as_str(), |t| t.status == status)
        };
        match self.label {
            TriangulationLabel::BackendSpecific => format!(
                "{} off, {} pass{} every check: the backend, not the port",
                with(Status::Fail),
                with(Status::Pass),
                if self
                    .targets
                    .iter()
                    .filter(|t| t.status == Status::Pass)
                    .count()
                    == 1
                {
                    "es"
                } else {
                    ""
                }
            ),
            TriangulationLabel::Port => {
                "every target fails it with the same tokens: the port".to_string()
            }
            TriangulationLabel::Undetermined => {
                "every target fails it, with different tokens: not narrowed further".to_string()
            }
            TriangulationLabel::Incomplete => format!(
                "{} errored or did not run it: nothing to triangulate",
                names_where(
                    &self.targets,
                    |t| t.target.as_str(),
                    |t| { matches!(t.status, Status::Error | Status::Skipped) }
                )
            ),
            // Serving has no f64 truth to side with.
            TriangulationLabel::Oracle => "the oracle".to_string(),
        }
    }
}
