//! The tokens record (`parity.tokens/1`, docs/tokens.md): a token-level run of
//! a language model against the oracle's tokens and logits, the first
//! divergent token with its verdict, and where that step was localised.

use crate::bisect::Localisation;
use crate::common::{ErrorRecord, Status};
use crate::exit::ExitCode;
use crate::run::{Divergence, RunRecord};
use crate::triangulation_row::TriangulationLabel;
use serde::{Deserialize, Serialize};

/// Schema tag of the tokens record.
pub const TOKENS_SCHEMA: &str = "parity.tokens/1";

/// How decode steps are fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenMode {
    /// Each step takes the production's own previous token.
    Greedy,
    /// Each step takes the oracle's previous token, so every step's logits compare.
    TeacherForced,
}

impl TokenMode {
    /// The kebab-case name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            TokenMode::Greedy => "greedy",
            TokenMode::TeacherForced => "teacher-forced",
        }
    }
}

/// The judgement of a token mismatch (rule in docs/tokens.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenVerdict {
    /// The two tokens' logits are within the measured noise of each other on
    /// both sides (or tie exactly in the oracle): either is valid at this precision.
    NearTie,
    /// The margin is larger than the noise explains: something upstream is wrong.
    Divergent,
}

impl TokenVerdict {
    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            TokenVerdict::NearTie => "near_tie",
            TokenVerdict::Divergent => "divergent",
        }
    }
}

/// Where the reference noise of a case comes from (docs/tokens.md, "The verdict").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    /// The `max_abs` of the spec's `tokens.logits` tolerance (measured on a known-good run).
    Spec,
    /// The oracle's own distance from the f64 truth logits.
    Truth,
    /// Production's own sensitivity: its logits with every floating-point
    /// argument moved by a few ULPs, against its logits unmoved.
    Perturbation,
    /// No source gave a value (the noise is the spec's `noise_floor`, or 0).
    None,
}

impl NoiseSource {
    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            NoiseSource::Spec => "spec",
            NoiseSource::Truth => "truth",
            NoiseSource::Perturbation => "perturbation",
            NoiseSource::None => "none",
        }
    }
}

/// What one noise source measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseMeasurement {
    /// The source.
    pub source: NoiseSource,
    /// The value it gave (a bound on max |Δlogit| between a correct production
    /// and the oracle); null when it gave none (no truth, refused, not measured).
    #[serde(with = "crate::float::option")]
    pub value: Option<f64>,
    /// How it was measured, or why it gave nothing.
    pub detail: String,
}

/// The reference noise of a case: measured on references (the spec's
/// tolerance, the oracle against its truth, production against itself
/// perturbed), never on the production-versus-oracle differences it judges.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceNoise {
    /// The source used: the spec's, else the truth's, else the perturbation's.
    pub source: NoiseSource,
    /// The noise used (raised to the spec's `noise_floor`); null when no
    /// source gave a value and there is no floor.
    #[serde(with = "crate::float::option")]
    pub value: Option<f64>,
    /// Every source, with what it gave.
    pub sources: Vec<NoiseMeasurement>,
}

/// What decided a mismatch's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictRule {
    /// The f64 truth: near_tie when both tokens are within the noise of its
    /// top-1, divergent otherwise.
    Truth,
    /// No truth: the margins against twice the reference noise.
    Margins,
    /// No truth: the oracle's two logits tie exactly.
    ExactTie,
    /// The step's layer was localised and its f64 truth names production wrong.
    Localisation,
}

impl VerdictRule {
    /// The snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            VerdictRule::Truth => "truth",
            VerdictRule::Margins => "margins",
            VerdictRule::ExactTie => "exact_tie",
            VerdictRule::Localisation => "localisation",
        }
    }
}

/// The logits gate of a case: every compared step's logits against the
/// spec's `tokens.logits` tolerance, or, without one, max |Δlogit| against
/// [`NOISE_GATE_FACTOR`] times the reference noise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogitsGate {
    /// The mode whose logits were gated (teacher-forced when it ran; else
    /// greedy, up to and including its first mismatch).
    pub mode: TokenMode,
    /// What each step was held to, in words.
    pub criteria: Vec<String>,
    /// Steps gated.
    pub steps: usize,
    /// Steps whose logits failed.
    pub failed_steps: Vec<usize>,
    /// The first failing step's failed criteria, in words.
    pub first_failure: Option<String>,
}

/// Without a spec tolerance, a step's max |Δlogit| may reach this many times
/// the reference noise (the stage tolerances' policy: 10x measured).
pub const NOISE_GATE_FACTOR: f64 = 10.0;

/// The whole `parity tokens` run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokensRecord {
    /// Always [`TOKENS_SCHEMA`].
    pub schema: String,
    /// pass: every token matches or every mismatch is a near tie (and
    /// `exact_tokens` is off); fail: otherwise; error: anything errored.
    pub status: Status,
    /// The spec file.
    pub spec: String,
    /// parity's version.
    pub parity_version: String,
    /// The IREE compiler revision, when the compiler was loaded.
    pub compiler_revision: Option<String>,
    /// Wall-clock start, RFC 3339 UTC.
    pub started: String,
    /// Total wall-clock seconds.
    #[serde(with = "crate::float")]
    pub elapsed_s: f64,
    /// The modes run, in order.
    pub modes: Vec<TokenMode>,
    /// The spec's `verdict.exact_tokens`.
    pub exact_tokens: bool,
    /// One entry per token case, in spec order.
    pub cases: Vec<TokenCaseRecord>,
    /// The first mismatch of the first case that has one, or null.
    pub first_divergent_token: Option<DivergentToken>,
    /// The step that was localised (the first `divergent` mismatch, else the
    /// first near tie) and what its step-stage run found.
    pub localisation: Option<StepLocalisation>,
    /// The first divergent stage (layer) of the localised step in isolated mode.
    pub first_divergent_layer: Option<Divergence>,
    /// bisect's localisation of that stage: an operation or a region.
    pub first_divergent_op: Option<Localisation>,
    /// Who is wrong at that layer, by its output's f64 truth.
    #[serde(default)]
    pub layer_vs_f64: Option<LayerVsF64>,
    /// Why localisation stopped where it did (no chain, nothing diverges, ...).
    pub notes: Vec<String>,
    /// Every localised step: the first `divergent` mismatch at prefill (step 0)
    /// and the first at decode (steps >= 1), so two causes (one in the prompt's
    /// embedding, one in the decode layers) are two findings; without a
    /// `divergent` mismatch, the first near tie. The first finding is also the
    /// top-level `localisation`, `first_divergent_layer`, `first_divergent_op`.
    #[serde(default)]
    pub findings: Vec<TokenFinding>,
    /// Problems not tied to one step.
    pub errors: Vec<ErrorRecord>,
    /// Problems that did not change the result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The targets run, in order, in a run over several (`--target a,b`):
    /// `cases` then holds every case once per target, each naming its target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The target whose first divergent token and localisation the fields
    /// above describe (the first target, in run order, that has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergence_target: Option<String>,
    /// Each case that fails or errors on some target, labelled with which
    /// side is off ([`triangulate_tokens`](crate::triangulate_tokens)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triangulation: Vec<TokenTriangulationRow>,
}

/// One token case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenCaseRecord {
    /// Token case name.
    pub case: String,
    /// The target it ran on, in a run over several (`--target a,b`); absent
    /// in a run on one target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// pass, fail (a counted mismatch) or error.
    pub status: Status,
    /// Prompt length P.
    pub prompt_length: usize,
    /// The oracle's tokens (the first `max_new_tokens`).
    pub oracle_tokens: Vec<i64>,
    /// The production's greedy tokens (greedy mode; empty otherwise or when it errored at step 0).
    pub greedy_tokens: Vec<i64>,
    /// The production's top-1 at every teacher-forced step (empty when not run).
    pub teacher_forced_tokens: Vec<i64>,
    /// Teacher-forced metrics per step (empty when not run).
    pub steps: Vec<StepMetrics>,
    /// Aggregates of `steps` (none when teacher-forced mode did not run).
    pub summary: Option<TeacherForcedSummary>,
    /// The first mismatch of this case (greedy or teacher-forced; both see the
    /// same inputs up to it), or null.
    pub first_divergent_token: Option<DivergentToken>,
    /// Every teacher-forced mismatch after the first, each with its verdict
    /// (one early flip hides nothing later).
    pub later_mismatches: Vec<DivergentToken>,
    /// The reference noise the verdicts and the gate used.
    #[serde(default)]
    pub reference_noise: Option<ReferenceNoise>,
    /// The logits gate (none when no step was compared).
    #[serde(default)]
    pub logits_gate: Option<LogitsGate>,
    /// Errors of this case (a missing oracle tensor, a failed decode step, ...).
    pub errors: Vec<ErrorRecord>,
}

/// Teacher-forced comparison of one step's logits (llama.cpp's
/// `--kl-divergence` quantities, with the oracle as the base model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Step (0 = prefill).
    pub step: usize,
    /// The oracle's token at this step (teacher forcing feeds it to step + 1).
    pub oracle_token: i64,
    /// The production's top-1.
    pub production_token: i64,
    /// Whether the top-1 tokens agree.
    pub top1_agree: bool,
    /// KL(oracle || production) of the softmax distributions, in nats.
    #[serde(with = "crate::float")]
    pub kl: f64,
    /// Δp: production probability minus oracle probability of the oracle's token.
    #[serde(with = "crate::float")]
    pub delta_p: f64,
    /// max |production logit − oracle logit| over the vocabulary.
    #[serde(with = "crate::float")]
    pub max_abs_delta_logit: f64,
    /// The oracle's top-1 minus top-2 logit.
    #[serde(with = "crate::float")]
    pub oracle_gap: f64,
    /// The production's top-1 minus top-2 logit.
    #[serde(with = "crate::float")]
    pub production_gap: f64,
    /// Whether the step's logits pass the logits gate (null in records
    /// written before the gate existed).
    #[serde(default)]
    pub logits_pass: Option<bool>,
    /// The gate's failed criteria at this step, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_criteria: Vec<String>,
}

/// Aggregates over the teacher-forced steps of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeacherForcedSummary {
    /// Steps compared.
    pub steps: usize,
    /// Fraction of steps whose top-1 agree ("same top p").
    #[serde(with = "crate::float")]
    pub top1_agreement: f64,
    /// Mean KL divergence, nats.
    #[serde(with = "crate::float")]
    pub mean_kl: f64,
    /// Largest KL divergence, nats.
    #[serde(with = "crate::float")]
    pub max_kl: f64,
    /// RMS of Δp.
    #[serde(with = "crate::float")]
    pub rms_delta_p: f64,
    /// Largest |Δp|.
    #[serde(with = "crate::float")]
    pub max_abs_delta_p: f64,
    /// Largest max |Δlogit| over the steps.
    #[serde(with = "crate::float")]
    pub max_abs_delta_logit: f64,
}

/// A token where the production and the oracle part ways, and the evidence for its verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DivergentToken {
    /// Token case.
    pub case: String,
    /// Step (0 = the token chosen from prefill's logits).
    pub step: usize,
    /// The step's position (0 for prefill, P + step − 1 for decode).
    pub position: usize,
    /// The mode whose logits the evidence comes from.
    pub mode: TokenMode,
    /// The production's token (its top-1).
    pub production_token: i64,
    /// The oracle's token.
    pub oracle_token: i64,
    /// The production's top-1 minus top-2 gap, in ULPs of `ulp_dtype`.
    pub production_gap_ulp: u64,
    /// The oracle's top-1 minus top-2 gap, in ULPs of `ulp_dtype`.
    pub oracle_gap_ulp: u64,
    /// The dtype the gaps are counted in.
    pub ulp_dtype: String,
    /// How much the production prefers its token: p[production] − p[oracle] (>= 0).
    #[serde(with = "crate::float")]
    pub production_margin: f64,
    /// How much the oracle prefers its token: o[oracle] − o[production] (>= 0).
    #[serde(with = "crate::float")]
    pub oracle_margin: f64,
    /// The reference noise of the case (the case's `reference_noise.value`);
    /// null when no source gave one.
    #[serde(with = "crate::float::option")]
    pub noise: Option<f64>,
    /// Always empty: the noise is no longer measured on agreeing steps of the
    /// run under test (kept for readers of older records).
    pub noise_steps: Vec<usize>,
    /// Where `noise` comes from.
    #[serde(default)]
    pub noise_source: Option<NoiseSource>,
    /// What decided the verdict.
    #[serde(default)]
    pub rule: Option<VerdictRule>,
    /// The f64 truth's top-1 minus top-2 gap at this step, where a truth exists.
    #[serde(default, with = "crate::float::option")]
    pub truth_gap: Option<f64>,
    /// The truth's logit of the oracle's token minus that of the production's.
    #[serde(default, with = "crate::float::option")]
    pub truth_margin: Option<f64>,
    /// The truth's top-1 token, where a truth exists.
    #[serde(default)]
    pub truth_token: Option<i64>,
    /// The production's top-k (token, logit), best first.
    pub production_top_k: Vec<TokenLogit>,
    /// The oracle's top-k (token, logit), best first.
    pub oracle_top_k: Vec<TokenLogit>,
    /// near_tie or divergent.
    pub verdict: TokenVerdict,
    /// Whether this mismatch fails the run (divergent, or any mismatch under `exact_tokens`).
    pub counted: bool,
}

/// One entry of a top-k list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenLogit {
    /// Token id.
    pub token: i64,
    /// Its logit.
    #[serde(with = "crate::float")]
    pub logit: f64,
}

/// One localised mismatching step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenFinding {
    /// Token case.
    pub case: String,
    /// Step.
    pub step: usize,
    /// The mismatch's verdict (`divergent` for a step localised because its
    /// logits failed the gate).
    pub verdict: TokenVerdict,
    /// Localised because the step's logits failed the gate, not for a token flip.
    #[serde(default)]
    pub logits_gate: bool,
    /// The step-stage run, when the spec has a chain for the step.
    pub localisation: Option<StepLocalisation>,
    /// The first divergent stage (layer) of that run, isolated mode.
    pub first_divergent_layer: Option<Divergence>,
    /// bisect's localisation of that stage.
    pub first_divergent_op: Option<Localisation>,
    /// Who is wrong at that layer, by its output's f64 truth (isolated mode).
    #[serde(default)]
    pub layer_vs_f64: Option<LayerVsF64>,
    /// Why localisation stopped where it did.
    pub notes: Vec<String>,
    /// Whether the step chain reproduces the production call's logits bit
    /// for bit; when it does not, the layer and op above are the chain's, not
    /// necessarily the call's (absent in records written before the check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_check: Option<crate::ChainCheck>,
}

/// Which side the f64 truth of the first divergent layer's output sides
/// with: RMS distance of production and of the oracle from the truth, on the
/// same (the oracle's) inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerVsF64 {
    /// The stage (layer).
    pub stage: String,
    /// Its output.
    pub output: String,
    /// The truth tensor.
    pub truth: String,
    /// RMS(production - truth).
    #[serde(with = "crate::float")]
    pub production_vs_truth: f64,
    /// RMS(oracle - truth).
    #[serde(with = "crate::float")]
    pub oracle_vs_truth: f64,
    /// The side at least [`LAYER_ARBITER_RATIO`] times further from the truth
    /// than the other, or `undecided`.
    pub wrong: WrongSide,
}

/// How much further from the truth one side must be to be called wrong.
pub const LAYER_ARBITER_RATIO: f64 = 10.0;

/// Which side the truth says is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WrongSide {
    /// The oracle is at least 10x further from the truth than production.
    Oracle,
    /// Production is at least 10x further from the truth than the oracle.
    Production,
    /// Neither is 10x further than the other.
    Undecided,
}

impl WrongSide {
    /// From the two distances (NaN counts as infinitely far).
    pub fn judge(production: f64, oracle: f64) -> Self {
        let far = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
        let (p, o) = (far(production), far(oracle));
        if o > LAYER_ARBITER_RATIO * p {
            WrongSide::Oracle
        } else if p > LAYER_ARBITER_RATIO * o {
            WrongSide::Production
        } else {
            WrongSide::Undecided
        }
    }

    /// The lowercase name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            WrongSide::Oracle => "oracle",
            WrongSide::Production => "production",
            WrongSide::Undecided => "undecided",
        }
    }
}

/// The step-stage run of the localised step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepLocalisation {
    /// Token case.
    pub case: String,
    /// Step.
    pub step: usize,
    /// The step case the chain ran as (`<case>.s<NN>`).
    pub step_case: String,
    /// Per case: the first stage in chained mode over its tolerance.
    pub chained_divergence: Vec<Divergence>,
    /// The run record of the chain (isolated and chained), as `parity check` writes it.
    pub run: Box<RunRecord>,
}

impl TokenCaseRecord {
    /// A case of `prompt_length` prompt tokens with `status` and nothing
    /// measured yet.
    pub fn empty(case: &str, status: Status, prompt_length: usize) -> Self {
        TokenCaseRecord {
            case: case.to_string(),
            target: None,
            status,
            prompt_length,
            oracle_tokens: Vec::new(),
            greedy_tokens: Vec::new(),
            teacher_forced_tokens: Vec::new(),
            steps: Vec::new(),
            summary: None,
            first_divergent_token: None,
            later_mismatches: Vec::new(),
            reference_noise: None,
            logits_gate: None,
            errors: Vec::new(),
        }
    }

    /// Whether the case fails: a counted mismatch or a step beyond the logits gate.
    pub fn fails(&self) -> bool {
        self.first_divergent_token
            .iter()
            .chain(&self.later_mismatches)
            .any(|t| t.counted)
            || self
                .logits_gate
                .as_ref()
                .is_some_and(|g| !g.failed_steps.is_empty())
    }
}

impl TokensRecord {
    /// An empty record of a run of `spec` that started at `started`.
    pub fn new(
        spec: impl Into<String>,
        parity_version: impl Into<String>,
        started: String,
    ) -> Self {
        TokensRecord {
            schema: TOKENS_SCHEMA.to_string(),
            status: Status::Pass,
            spec: spec.into(),
            parity_version: parity_version.into(),
            compiler_revision: None,
            started,
            elapsed_s: 0.0,
            modes: Vec::new(),
            exact_tokens: false,
            cases: Vec::new(),
            first_divergent_token: None,
            localisation: None,
            first_divergent_layer: None,
            first_divergent_op: None,
            layer_vs_f64: None,
            notes: Vec::new(),
            findings: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            targets: Vec::new(),
            divergence_target: None,
            triangulation: Vec::new(),
        }
    }

    /// Every error: run-level, then per case, then the localisation run's.
    pub fn all_errors(&self) -> impl Iterator<Item = &ErrorRecord> {
        self.errors
            .iter()
            .chain(self.cases.iter().flat_map(|c| c.errors.iter()))
            .chain(self.localisation.iter().flat_map(|l| l.run.all_errors()))
            // The first finding is the top-level localisation, already counted.
            .chain(
                self.findings
                    .iter()
                    .skip(1)
                    .flat_map(|f| f.localisation.iter().flat_map(|l| l.run.all_errors())),
            )
    }

    /// Whether something counts against the run: a counted mismatch, a step
    /// whose logits failed the gate, or a finding whose layer's f64 truth
    /// names production wrong.
    pub fn has_counted_mismatch(&self) -> bool {
        self.cases.iter().any(TokenCaseRecord::fails)
            || self
                .findings
                .iter()
                .any(|f| matches!(&f.layer_vs_f64, Some(v) if v.wrong == WrongSide::Production))
    }

    /// The status the contents imply: error, else fail on a counted mismatch, else pass.
    pub fn derived_status(&self) -> Status {
        if self.all_errors().next().is_some() {
            Status::Error
        } else if self.has_counted_mismatch() {
            Status::Fail
        } else {
            Status::Pass
        }
    }

    /// Exit code: 0 tokens match (near ties allowed unless exact), 1 a counted
    /// mismatch, 2 input error, 3 execution error (2 over 3 over 1).
    pub fn exit_code(&self) -> ExitCode {
        let fail = self.has_counted_mismatch().then_some(ExitCode::Fail);
        ExitCode::combine(self.all_errors().map(ErrorRecord::exit_code).chain(fail))
    }
}

#[cfg(test)]
mod arbiter_tests {
    use super::*;

    #[test]
    fn a_finding_that_names_production_wrong_never_exits_0() {
        let mut r = TokensRecord::new("s.yaml", "0", String::new());
        assert_eq!(r.exit_code(), ExitCode::Pass);
        r.findings.push(TokenFinding {
            case: "c".into(),
            step: 3,
            verdict: TokenVerdict::NearTie,
            logits_gate: false,
            localisation: None,
            first_divergent_layer: None,
            first_divergent_op: None,
            layer_vs_f64: Some(LayerVsF64 {
                stage: "layer_1".into(),
                output: "hidden".into(),
                truth: "t".into(),
                production_vs_truth: 0.16,
                oracle_vs_truth: 2.2e-7,
                wrong: WrongSide::judge(0.16, 2.2e-7),
            }),
            notes: Vec::new(),
            chain_check: None,
        });
        assert_eq!(r.exit_code(), ExitCode::Fail);
        assert_eq!(r.derived_status(), Status::Fail);
        r.findings[0].layer_vs_f64.as_mut().unwrap().wrong = WrongSide::Oracle;
        assert_eq!(r.exit_code(), ExitCode::Pass);
    }

    #[test]
    fn a_case_beyond_its_logits_gate_fails_without_a_flip() {
        let mut r = TokensRecord::new("s.yaml", "0", String::new());
        let mut c = TokenCaseRecord {
            case: "c".into(),
            target: None,
            status: Status::Pass,
            prompt_length: 4,
            oracle_tokens: vec![1, 2],
            greedy_tokens: vec![1, 2],
            teacher_forced_tokens: vec![1, 2],
            steps: Vec::new(),
            summary: None,
            first_divergent_token: None,
            later_mismatches: Vec::new(),
            reference_noise: None,
            logits_gate: Some(LogitsGate {
                mode: TokenMode::TeacherForced,
                criteria: Vec::new(),
                steps: 2,
                failed_steps: Vec::new(),
                first_failure: None,
            }),
            errors: Vec::new(),
        };
        assert!(!c.fails());
        c.logits_gate.as_mut().unwrap().failed_steps.push(0);
        assert!(c.fails());
        r.cases.push(c);
        assert_eq!(r.exit_code(), ExitCode::Fail);
    }

    #[test]
    fn the_side_ten_times_further_from_the_truth_is_wrong() {
        assert_eq!(WrongSide::judge(2.35e-6, 0.469), WrongSide::Oracle);
        assert_eq!(WrongSide::judge(0.469, 2.35e-6), WrongSide::Production);
        assert_eq!(WrongSide::judge(1e-6, 9e-6), WrongSide::Undecided);
        assert_eq!(WrongSide::judge(f64::NAN, 1e-6), WrongSide::Production);
        assert_eq!(WrongSide::judge(0.0, 0.0), WrongSide::Undecided);
    }
}

/// One target's side of a token case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenTargetSide {
    /// The target's name.
    pub target: String,
    /// The case's status on it (skipped when it did not run the case).
    pub status: Status,
    /// Its first mismatching step, if any.
    pub step: Option<usize>,
    /// Its token at that step.
    pub production_token: Option<i64>,
    /// That mismatch's verdict.
    pub verdict: Option<TokenVerdict>,
}

/// One token case that failed or errored on at least one target, labelled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenTriangulationRow {
    /// Token case.
    pub case: String,
    /// Which side is off.
    pub label: TriangulationLabel,
    /// The targets on which the case fails, in run order.
    pub off: Vec<String>,
    /// Every target's side, in run order.
    pub targets: Vec<TokenTargetSide>,
}

impl TokenTriangulationRow {
    /// One sentence: what the label rests on.
    pub fn explain(&self) -> String {
        let names = |status: Status| {
            crate::triangulation::names_where(
                &self.targets,
                |t| t.target.as_str(),
                |t| t.status == status,
            )
        };
        match self.label {
            TriangulationLabel::BackendSpecific => format!(
                "{} off, {} match{} the oracle's tokens: the backend, not the port",
                names(Status::Fail),
                names(Status::Pass),
                if self.targets.iter().filter(|t| t.status == Status::Pass).count() == 1 {
                    "es"
                } else {
                    ""
                }
            ),
            TriangulationLabel::Port => {
                "every target misses the oracle with the same tokens: the port".to_string()
            }
            TriangulationLabel::Oracle => {
                "every target misses the oracle, and the f64 truth picks production's token on each: the oracle".to_string()
            }
            TriangulationLabel::Undetermined => {
                "every target misses the oracle, with different tokens: not narrowed further"
                    .to_string()
            }
            TriangulationLabel::Incomplete => format!(
                "{} errored or did not run the case: nothing to triangulate",
                self.targets
                    .iter()
                    .filter(|t| matches!(t.status, Status::Error | Status::Skipped))
                    .map(|t| t.target.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}
