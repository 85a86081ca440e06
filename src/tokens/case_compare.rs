//! The comparison of one token case: the teacher-forced stream's every step
//! gated and judged, the greedy stream's steps up to its first mismatch
//! (when nothing was teacher-forced), and the two streams' first
//! divergences checked against each other.

use super::case::{reference_noise, OracleCase, Stream};
use super::judge::{judge_step, Evidence};
use super::math::{step_stats, top_gap, StepStats};
use super::noise;
use super::session::Session;
use parity_record::{
    ErrorRecord, LogitsGate, ReferenceNoise, Status, StepMetrics, TokenCaseRecord, TokenMode,
};
use parity_spec::Case;

/// Everything measured for one case, turned into its record: the reference
/// noise, every compared step's logits against the gate, every mismatch
/// judged.
pub fn compare_case(
    session: &Session<'_>,
    case: &Case,
    p: usize,
    oracle: &OracleCase,
    greedy: Option<Stream>,
    forced: Option<Stream>,
) -> TokenCaseRecord {
    // The perturbation is measured on the teacher-forced stream when it ran.
    let noise = reference_noise(session, oracle, forced.as_ref().or(greedy.as_ref()));
    let mut rec = TokenCaseRecord {
        oracle_tokens: oracle.tokens.clone(),
        ..TokenCaseRecord::empty(&case.name, Status::Pass, p)
    };
    let comparison = Comparison {
        session,
        case,
        p,
        oracle,
        noise: &noise,
    };
    if let Some(f) = &forced {
        comparison.teacher_forced(&mut rec, f);
    }
    if let Some(g) = &greedy {
        comparison.greedy(&mut rec, g, forced.is_none());
    }
    rec.reference_noise = Some(noise);
    rec.status = if !rec.errors.is_empty() {
        Status::Error
    } else if rec.fails() {
        Status::Fail
    } else {
        Status::Pass
    };
    rec
}

/// One case's oracle side and reference noise, against which each stream is compared.
struct Comparison<'a, 's> {
    /// The tokens session (its spec and tolerances).
    session: &'a Session<'s>,
    /// The case.
    case: &'a Case,
    /// The prompt's length.
    p: usize,
    /// The oracle's tokens and logits.
    oracle: &'a OracleCase,
    /// The case's reference noise.
    noise: &'a ReferenceNoise,
}

impl Comparison<'_, '_> {
    /// The evidence a mismatch of `production`'s logits in `mode` is judged on.
    fn evidence<'e>(&'e self, production: &'e [Vec<f64>], mode: TokenMode) -> Evidence<'e> {
        Evidence {
            session: self.session,
            case: &self.case.name,
            p: self.p,
            oracle: self.oracle,
            production,
            mode,
            noise: self.noise,
        }
    }

    /// The gate's failed criteria for step `s`'s logits `l` (none: it passes).
    fn gate(&self, s: usize, l: &[f64], st: &StepStats) -> Vec<String> {
        let tol = self.session.tokens.logits_tolerance.as_ref();
        let truth = self.oracle.truth.as_ref().map(|t| t[s].as_slice());
        noise::gate_step(tol, self.noise, &self.oracle.logits[s], l, truth, st)
    }

    /// The record of the gate over `steps` steps of `mode`, with the steps that `failed`.
    fn logits_gate(
        &self,
        mode: TokenMode,
        steps: usize,
        failed: Vec<(usize, Vec<String>)>,
    ) -> LogitsGate {
        let tol = self.session.tokens.logits_tolerance.as_ref();
        LogitsGate {
            mode,
            criteria: noise::gate_words(tol, self.noise),
            steps,
            failed_steps: failed.iter().map(|f| f.0).collect(),
            first_failure: failed
                .first()
                .map(|(s, why)| format!("step {s}: {}", why.join("; "))),
        }
    }

    /// The teacher-forced stream: every step's metrics and gate, the
    /// summary, every top-1 mismatch judged.
    fn teacher_forced(&self, rec: &mut TokenCaseRecord, f: &Stream) {
        let oracle = self.oracle;
        rec.teacher_forced_tokens = f.tokens.clone();
        let mut failed = Vec::new();
        for (s, l) in f.logits.iter().enumerate() {
            let st = step_stats(&oracle.logits[s], l, oracle.tokens[s] as usize);
            let why = self.gate(s, l, &st);
            rec.steps.push(StepMetrics {
                step: s,
                oracle_token: oracle.tokens[s],
                production_token: f.tokens[s],
                top1_agree: f.tokens[s] == oracle.tokens[s],
                kl: st.kl,
                delta_p: st.delta_p,
                max_abs_delta_logit: st.max_abs_delta_logit,
                oracle_gap: top_gap(&oracle.logits[s]),
                production_gap: top_gap(l),
                logits_pass: Some(why.is_empty()),
                failed_criteria: why.clone(),
            });
            if !why.is_empty() {
                failed.push((s, why));
            }
        }
        rec.logits_gate = Some(self.logits_gate(TokenMode::TeacherForced, f.logits.len(), failed));
        rec.summary = super::judge::summary(&rec.steps);
        let ev = self.evidence(&f.logits, TokenMode::TeacherForced);
        let mut judged = rec
            .steps
            .iter()
            .filter(|m| !m.top1_agree)
            .map(|m| judge_step(&ev, m.step))
            .collect::<Vec<_>>()
            .into_iter();
        rec.first_divergent_token = judged.next();
        rec.later_mismatches = judged.collect();
        if let Some(e) = &f.error {
            rec.errors.push(e.to_record());
        }
    }

    /// The greedy stream: its gate when `alone` (nothing was teacher-forced),
    /// its first mismatch judged and checked against the teacher-forced one.
    fn greedy(&self, rec: &mut TokenCaseRecord, g: &Stream, alone: bool) {
        let oracle = self.oracle;
        rec.greedy_tokens = g.tokens.clone();
        let first = g
            .tokens
            .iter()
            .zip(&oracle.tokens)
            .position(|(a, b)| a != b);
        if alone {
            // Without teacher forcing, greedy's steps up to its first
            // mismatch saw the oracle's tokens: those are gated.
            let upto = first.map_or(g.logits.len(), |s| s + 1).min(g.logits.len());
            let failed: Vec<(usize, Vec<String>)> = (0..upto)
                .map(|s| {
                    let st = step_stats(&oracle.logits[s], &g.logits[s], oracle.tokens[s] as usize);
                    (s, self.gate(s, &g.logits[s], &st))
                })
                .filter(|f| !f.1.is_empty())
                .collect();
            rec.logits_gate = Some(self.logits_gate(TokenMode::Greedy, upto, failed));
        }
        let name = &self.case.name;
        if let Some(s) = first {
            let from_greedy = judge_step(&self.evidence(&g.logits, TokenMode::Greedy), s);
            match &rec.first_divergent_token {
                None => rec.first_divergent_token = Some(from_greedy),
                Some(tf) if tf.step != s => rec.errors.push(ErrorRecord::execution(format!(
                    "case `{name}`: greedy decoding first differs from the oracle at step {s} but teacher-forced at step {}; up to the first difference both feed the same tokens, so the production is not deterministic",
                    tf.step
                ))),
                Some(_) => {}
            }
        } else if let Some(tf) = rec.first_divergent_token.take() {
            rec.errors.push(ErrorRecord::execution(format!(
                "case `{name}`: teacher-forced top-1 differs from the oracle at step {} but greedy decoding matches it; both feed the same tokens up to there, so the production is not deterministic",
                tf.step
            )));
            rec.first_divergent_token = Some(tf);
        }
        if let Some(e) = &g.error {
            rec.errors.push(e.to_record());
        }
    }
}
