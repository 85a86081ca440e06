//! Checks of a request's answer beyond its tokens (docs/serving.md): the
//! token count against `max_new_tokens` and the finish reason, and a black
//! box's logprobs against the oracle logits' log-softmax.

use super::checks::{show, skipped, verdict, RequestEvidence};
use super::target::Observed;
use parity_record::ServingVerdict;

/// How far a black box's logprob may lie from the oracle's log-softmax at
/// the same step, in nats. Fixed (documented in docs/serving-blackbox.md),
/// never measured on the run it judges: the honest fixture server's f32
/// logprobs lie within 2e-5 of the oracle's, and a numerics bug that
/// matters moves them by far more.
pub const LOGPROB_TOLERANCE: f64 = 0.05;

/// What is wrong with the number of tokens of `o` for `max` tokens, if anything.
fn count_problem(o: &Observed, max: usize) -> Option<String> {
    let n = o.tokens.len();
    if o.token_flood {
        Some(format!(
            "more than {} tokens for max_new_tokens {max}: parity stopped reading after {n} (a token flood)",
            max + super::adapters::TOKEN_MARGIN
        ))
    } else if n > max {
        Some(format!("{n} tokens for max_new_tokens {max}"))
    } else if o.finish.as_deref() == Some("length") && n < max {
        Some(format!(
            "finish reason `length` after {n} of max_new_tokens {max} tokens"
        ))
    } else {
        None
    }
}

/// The token count against `max_new_tokens` and the finish reason, for the
/// request and its solo run: more tokens than asked for, or a `length`
/// finish short of it, is a wrong answer (the shared-prefix comparisons
/// would not see it).
pub(super) fn token_count_check(ev: &RequestEvidence<'_>) -> ServingVerdict {
    let o = ev.observed;
    let id = &ev.request.id;
    let max = ev.request.max_new_tokens as usize;
    let mine =
        count_problem(o, max).map(|p| format!("request `{id}` (slot {}): {p}", show(o.slot)));
    let solo = ev
        .solo
        .filter(|s| s.error.is_none() && s.refused.is_none())
        .and_then(|s| count_problem(s, max))
        .map(|p| format!("request `{id}`, its solo run: {p}"));
    let problems: Vec<String> = mine.into_iter().chain(solo).collect();
    if problems.is_empty() {
        verdict(
            "token_count",
            true,
            format!(
                "{} of max_new_tokens {max}{}",
                o.tokens.len(),
                o.finish
                    .as_deref()
                    .map_or(String::new(), |f| format!(", finish `{f}`"))
            ),
            None,
            o.slot,
        )
    } else {
        verdict("token_count", false, problems.join("; "), None, o.slot)
    }
}

/// `log_softmax(row)[token]`, in f64.
fn log_softmax_at(row: &[f64], token: usize) -> Option<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = row.iter().map(|x| (x - max).exp()).sum();
    row.get(token).map(|x| x - max - sum.ln())
}

/// A black box's logprobs: each finite and at most 0, and, for every token
/// whose prefix equals the oracle's (up to and including the first
/// divergent token), within [`LOGPROB_TOLERANCE`] of the oracle logits'
/// log-softmax at that token. The scenario run's, or, when it sent none
/// (mlx_lm.server streams text only), the solo run's.
pub(super) fn logprobs_check(ev: &RequestEvidence<'_>) -> ServingVerdict {
    let mut v = logprobs_of(ev, ev.observed);
    let solo = ev
        .solo
        .filter(|s| s.error.is_none() && s.refused.is_none() && !s.logprobs.is_empty());
    if let (true, Some(s)) = (ev.observed.logprobs.is_empty(), solo) {
        v = logprobs_of(ev, s);
        v.message = format!("the solo run's (the scenario run sent none): {}", v.message);
    }
    v
}

fn logprobs_of(ev: &RequestEvidence<'_>, o: &Observed) -> ServingVerdict {
    let id = &ev.request.id;
    let sl = show(o.slot);
    if o.logprobs.is_empty() {
        return skipped("logprobs", "the target sent no logprobs".into());
    }
    if o.logprobs.len() != o.tokens.len() {
        return skipped(
            "logprobs",
            format!(
                "{} logprobs for {} tokens: not every token has one",
                o.logprobs.len(),
                o.tokens.len()
            ),
        );
    }
    if let Some(k) = o
        .logprobs
        .iter()
        .position(|lp| !lp.is_finite() || *lp > 1e-6)
    {
        return verdict(
            "logprobs",
            false,
            format!(
                "request `{id}` (slot {sl}): the logprob of token {k} is {}, not a log-probability (finite, at most 0)",
                o.logprobs[k]
            ),
            None,
            o.slot,
        );
    }
    let Some(oracle) = ev.oracle else {
        return skipped(
            "logprobs",
            "no token oracle: logprobs checked for range only".into(),
        );
    };
    let shared = o
        .tokens
        .len()
        .min(oracle.tokens.len())
        .min(oracle.logits.len());
    let judged = (0..shared)
        .find(|&k| i64::from(o.tokens[k]) != oracle.tokens[k])
        .map_or(shared, |k| k + 1);
    let mut worst: Option<(usize, f64, f64)> = None;
    for k in 0..judged {
        let Some(want) = log_softmax_at(&oracle.logits[k], o.tokens[k] as usize) else {
            continue;
        };
        let got = f64::from(o.logprobs[k]);
        if worst.is_none_or(|(_, g, w)| (got - want).abs() > (g - w).abs()) {
            worst = Some((k, got, want));
        }
    }
    match worst {
        None => skipped(
            "logprobs",
            "no token to judge against the oracle's logits".into(),
        ),
        Some((k, got, want)) if (got - want).abs() > LOGPROB_TOLERANCE => verdict(
            "logprobs",
            false,
            format!(
                "request `{id}` (slot {sl}): the logprob of token {k} is {got:.6}, the oracle's log-softmax gives {want:.6} (off by {:.3e}, tolerance {LOGPROB_TOLERANCE})",
                (got - want).abs()
            ),
            None,
            o.slot,
        ),
        Some((k, got, want)) => verdict(
            "logprobs",
            true,
            format!(
                "{judged} logprobs within {LOGPROB_TOLERANCE} of the oracle's log-softmax (largest difference {:.3e}, token {k})",
                (got - want).abs()
            ),
            None,
            o.slot,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn answer(n: usize, finish: Option<&str>, flood: bool) -> Observed {
        Observed {
            tokens: vec![7; n],
            finish: finish.map(str::to_string),
            token_flood: flood,
            ..Observed::default()
        }
    }

    #[test]
    fn counts_are_judged_against_max_tokens_and_the_finish_reason() {
        assert_eq!(count_problem(&answer(8, Some("length"), false), 8), None);
        assert_eq!(count_problem(&answer(3, Some("stop"), false), 8), None);
        assert_eq!(count_problem(&answer(3, None, false), 8), None);
        assert_eq!(
            count_problem(&answer(1, Some("length"), false), 8).as_deref(),
            Some("finish reason `length` after 1 of max_new_tokens 8 tokens")
        );
        assert_eq!(
            count_problem(&answer(24, Some("length"), false), 8).as_deref(),
            Some("24 tokens for max_new_tokens 8")
        );
        assert!(count_problem(&answer(24, None, true), 8)
            .is_some_and(|m| m.contains("more than 24 tokens") && m.contains("token flood")));
    }

    proptest! {
        #[test]
        fn log_softmax_is_a_log_distribution(row in proptest::collection::vec(-80.0f64..80.0, 2..64)) {
            let lps: Vec<f64> = (0..row.len()).filter_map(|t| log_softmax_at(&row, t)).collect();
            prop_assert_eq!(lps.len(), row.len());
            prop_assert!(lps.iter().all(|lp| *lp <= 1e-12));
            let total: f64 = lps.iter().map(|lp| lp.exp()).sum();
            prop_assert!((total - 1.0).abs() < 1e-9, "{}", total);
            prop_assert_eq!(log_softmax_at(&row, row.len()), None);
        }
    }
}
