//! The evidence at a mismatching step: both sides' top-k, gaps in ULPs, the
//! reference noise of the case, the truth's gap, and the verdict.

use super::case::OracleCase;
use super::math::{argmax, judge, top_gap, top_gap_ulp, top_k};
use super::session::Session;
use parity_compare::UlpDType;
use parity_record::{
    DivergentToken, ReferenceNoise, StepMetrics, TeacherForcedSummary, TokenLogit, TokenMode,
    TokenVerdict,
};
use parity_spec::TokensSpec;

/// A mode's logits beside the oracle's, for judging its mismatches.
pub struct Evidence<'a> {
    /// The run (verdict options).
    pub session: &'a Session<'a>,
    /// Token case name.
    pub case: &'a str,
    /// Prompt length.
    pub p: usize,
    /// The oracle's side.
    pub oracle: &'a OracleCase,
    /// The production's logits per step.
    pub production: &'a [Vec<f64>],
    /// The mode they come from.
    pub mode: TokenMode,
    /// The case's reference noise (never measured on `production`'s
    /// differences from the oracle).
    pub noise: &'a ReferenceNoise,
}

fn listed(l: &[f64], k: usize) -> Vec<TokenLogit> {
    top_k(l, k)
        .into_iter()
        .map(|(token, logit)| TokenLogit {
            token: token as i64,
            logit,
        })
        .collect()
}

/// Judges the mismatch at `step` (the production's top-1 differs from the oracle's token).
pub fn judge_step(ev: &Evidence<'_>, step: usize) -> DivergentToken {
    let verdict_spec = &ev.session.tokens.verdict;
    let prod = &ev.production[step];
    let orc = &ev.oracle.logits[step];
    let prod_tok = argmax(prod).unwrap_or(0);
    let oracle_tok = ev.oracle.tokens[step] as usize;
    let truth = ev.oracle.truth.as_ref().and_then(|t| t.get(step));
    let noise = ev.noise.value;
    let j = judge(
        prod,
        orc,
        prod_tok,
        oracle_tok,
        noise,
        truth.map(Vec::as_slice),
    );
    let ulp = verdict_spec
        .ulp_dtype
        .and_then(UlpDType::from_dtype)
        .unwrap_or(UlpDType::F32);
    let counted = verdict_spec.exact_tokens || j.verdict == TokenVerdict::Divergent;
    DivergentToken {
        case: ev.case.to_string(),
        step,
        position: TokensSpec::position(ev.p, step),
        mode: ev.mode,
        production_token: prod_tok as i64,
        oracle_token: oracle_tok as i64,
        production_gap_ulp: top_gap_ulp(prod, ulp),
        oracle_gap_ulp: top_gap_ulp(orc, ulp),
        ulp_dtype: ulp.dtype().name().to_string(),
        production_margin: j.production_margin,
        oracle_margin: j.oracle_margin,
        noise,
        noise_steps: Vec::new(),
        noise_source: Some(ev.noise.source),
        rule: Some(j.rule),
        truth_gap: truth.map(|t| top_gap(t)),
        truth_margin: truth.map(|t| t[oracle_tok] - t[prod_tok]),
        truth_token: truth.and_then(|t| argmax(t)).map(|t| t as i64),
        production_top_k: listed(prod, verdict_spec.top_k),
        oracle_top_k: listed(orc, verdict_spec.top_k),
        verdict: j.verdict,
        counted,
    }
}

/// Aggregates of the teacher-forced steps (None when there are none).
pub fn summary(steps: &[StepMetrics]) -> Option<TeacherForcedSummary> {
    if steps.is_empty() {
        return None;
    }
    let n = steps.len() as f64;
    let max = |f: fn(&StepMetrics) -> f64| steps.iter().map(f).fold(0.0, f64::max);
    Some(TeacherForcedSummary {
        steps: steps.len(),
        top1_agreement: steps.iter().filter(|s| s.top1_agree).count() as f64 / n,
        mean_kl: steps.iter().map(|s| s.kl).sum::<f64>() / n,
        max_kl: max(|s| s.kl),
        rms_delta_p: (steps.iter().map(|s| s.delta_p * s.delta_p).sum::<f64>() / n).sqrt(),
        max_abs_delta_p: max(|s| s.delta_p.abs()),
        max_abs_delta_logit: max(|s| s.max_abs_delta_logit),
    })
}
