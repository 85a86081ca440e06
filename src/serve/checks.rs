//! The per-request serving checks, the same for every target
//! (SERVING-CONTRACT.md): admission, tokens against the oracle's greedy
//! tokens under the token verdict rules (src/tokens/judge.rs), batch
//! invariance against the solo run (bitwise logits where the target claims
//! it), effective length and dense PLE against the solo run, and slot reuse;
//! the answer's token count and logprobs (`answer`).

use super::answer::{logprobs_check, token_count_check};
use super::target::Observed;
use crate::tokens::case::{reference_noise, OracleCase};
use crate::tokens::judge::{judge_step, Evidence};
use crate::tokens::session::Session;
use parity_record::{ServingVerdict, Status, TokenMode};
use parity_spec::Request;

/// Everything the checks of one request look at.
pub struct RequestEvidence<'a> {
    /// The request.
    pub request: &'a Request,
    /// The refusal the admission rules call for (None: it must run).
    pub expected_refusal: Option<&'a str>,
    /// What the target did in the scenario.
    pub observed: &'a Observed,
    /// Its logits rows in the scenario (empty when the target gives none).
    pub logits: &'a [Vec<f32>],
    /// The request run alone (None: not run, e.g. refused).
    pub solo: Option<&'a Observed>,
    /// The oracle's tokens and logits (None: the case has no token oracle).
    pub oracle: Option<&'a OracleCase>,
    /// Prompt length P.
    pub prompt_len: usize,
    /// The earlier occupant of its slot, if the slot was reused: (id, step it left).
    pub previous: Option<(&'a str, u64)>,
    /// Whether the target claims bitwise batch invariance (logits compared bit for bit).
    pub bitwise_claimed: bool,
    /// Whether the target is a black box (it reports logprobs, not logits).
    pub black_box: bool,
}

pub(super) fn verdict(
    check: &str,
    ok: bool,
    message: String,
    step: Option<u64>,
    slot: Option<u32>,
) -> ServingVerdict {
    ServingVerdict {
        check: check.to_string(),
        status: if ok { Status::Pass } else { Status::Fail },
        message,
        step,
        slot,
        divergent_token: None,
    }
}

pub(super) fn skipped(check: &str, why: String) -> ServingVerdict {
    ServingVerdict {
        check: check.to_string(),
        status: Status::Skipped,
        message: why,
        step: None,
        slot: None,
        divergent_token: None,
    }
}

/// An optional number for a message (`?` when unknown).
pub(super) fn show<T: std::fmt::Display>(x: Option<T>) -> String {
    x.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// The engine step of token `k` of an observation.
fn step_of(o: &Observed, k: usize) -> Option<u64> {
    o.admitted_step.map(|a| a + k as u64)
}

/// Every check of one request.
pub fn check_request(
    ev: &RequestEvidence<'_>,
    session: Option<&Session<'_>>,
) -> Vec<ServingVerdict> {
    let o = ev.observed;
    let id = &ev.request.id;
    let slot = o.slot;
    let sl = show(slot);
    let (admission, refused) = admission_check(ev);
    let mut out = vec![admission];
    if refused || o.error.is_some() {
        return out;
    }
    out.push(oracle_check(ev, session));
    out.push(token_count_check(ev));
    if ev.black_box {
        out.push(logprobs_check(ev));
    }
    let Some(solo) = ev.solo else {
        out.push(skipped("batch_invariance", "no solo run".into()));
        return out;
    };
    if solo.error.is_some() {
        // The request's error (exit 3) says why; there is nothing to compare with.
        out.push(skipped(
            "batch_invariance",
            "the solo reference run failed (see the request's error)".into(),
        ));
        return out;
    }
    if let Some(text) = &solo.refused {
        out.push(verdict(
            "batch_invariance",
            false,
            format!("request `{id}` ran in the scenario, but alone it was refused: {text}"),
            None,
            slot,
        ));
        return out;
    }
    let inv = batch_invariance(ev, solo);
    let inv_ok = inv.status == Status::Pass;
    out.push(inv);
    let (state, state_ok) = slot_state(ev, solo);
    out.extend(state);
    if let Some((prev, left)) = ev.previous {
        let ok = inv_ok && state_ok;
        out.push(verdict(
            "slot_reuse",
            ok,
            if ok {
                format!("slot {sl} reused after `{prev}` left it at step {left}: the solo result")
            } else {
                format!("request `{id}` in slot {sl}, reused after `{prev}` left it at step {left}: state survived the reuse (see batch_invariance / effective_length)")
            },
            (!ok).then_some(o.admitted_step).flatten(),
            slot,
        ));
    }
    out
}

/// The admission verdict, and whether the request was refused (or must
/// have been): then nothing else about it is judged.
fn admission_check(ev: &RequestEvidence<'_>) -> (ServingVerdict, bool) {
    let o = ev.observed;
    let id = &ev.request.id;
    let slot = o.slot;
    let sl = show(slot);
    match (ev.expected_refusal, &o.refused) {
        (Some(_), Some(text)) => {
            let ran = o.slot.is_some() || !o.tokens.is_empty();
            let v = verdict(
                "admission",
                !ran,
                if ran {
                    format!(
                        "request `{id}` was refused but still ran (slot {sl}, {} tokens)",
                        o.tokens.len()
                    )
                } else {
                    format!("refused at admission, before anything ran: {text}")
                },
                Some(ev.request.arrive),
                None,
            );
            (v, true)
        }
        (Some(why), None) => (
            verdict(
                "admission",
                false,
                format!(
                    "request `{id}` must be refused at admission ({why}) but ran (slot {sl}, admitted at step {})",
                    show(o.admitted_step)
                ),
                o.admitted_step,
                slot,
            ),
            true,
        ),
        (None, Some(text)) => (
            verdict(
                "admission",
                false,
                format!("request `{id}` was refused: {text}"),
                Some(ev.request.arrive),
                None,
            ),
            true,
        ),
        // A black box reports no step (and maybe no slot): it was admitted when it gave tokens.
        (None, None) if o.admitted_step.is_none() && !o.tokens.is_empty() => (verdict(
            "admission",
            true,
            match o.slot {
                Some(s) => format!(
                    "admitted into slot {s} ({} tokens; the target reports no step)",
                    o.tokens.len()
                ),
                None => format!(
                    "admitted ({} tokens; the target reports no step or slot)",
                    o.tokens.len()
                ),
            },
            None,
            slot,
        ), false),
        (None, None) => (verdict(
            "admission",
            o.admitted_step.is_some() || o.error.is_some(),
            format!("admitted at step {} into slot {sl}", show(o.admitted_step)),
            o.admitted_step,
            slot,
        ), false),
    }
}

/// Batch invariance: tokens (and logits, where claimed) equal the solo
/// run's, over the shared prefix; an uncancelled request gives as many as alone.
fn batch_invariance(ev: &RequestEvidence<'_>, solo: &Observed) -> ServingVerdict {
    let o = ev.observed;
    let id = &ev.request.id;
    let slot = o.slot;
    let sl = show(slot);
    let n = o.tokens.len().min(solo.tokens.len());
    let first_token = (0..n).find(|&k| o.tokens[k] != solo.tokens[k]);
    let cut = ev.request.cancel.is_some() || o.cancelled_step.is_some() || o.token_flood;
    let lengths_differ = !cut && !solo.token_flood && o.tokens.len() != solo.tokens.len();
    let bitwise =
        o.logits_sha256.len() >= n && solo.logits_sha256.len() >= n && !o.logits_sha256.is_empty();
    let first_bits = bitwise
        .then(|| (0..n).find(|&k| o.logits_sha256[k] != solo.logits_sha256[k]))
        .flatten();
    match (first_token, first_bits) {
        (Some(k), _) => verdict(
            "batch_invariance",
            false,
            format!(
                "request `{id}` (slot {sl}): token {k} at step {} is {}, alone it is {}",
                show(step_of(o, k)),
                o.tokens[k],
                solo.tokens[k]
            ),
            step_of(o, k),
            slot,
        ),
        (None, _) if lengths_differ => verdict(
            "batch_invariance",
            false,
            format!(
                "request `{id}` (slot {sl}): {} tokens, alone {} (the first {n} are equal)",
                o.tokens.len(),
                solo.tokens.len()
            ),
            None,
            slot,
        ),
        (None, Some(k)) if ev.bitwise_claimed => verdict(
            "batch_invariance",
            false,
            format!(
                "request `{id}` (slot {sl}): tokens equal the solo run's, but the logits of token {k} (step {}) differ bitwise, and production claims bitwise batch invariance",
                show(step_of(o, k))
            ),
            step_of(o, k),
            slot,
        ),
        (None, bits) => verdict(
            "batch_invariance",
            true,
            format!(
                "{n} tokens equal the solo run's; logits {}",
                if !bitwise {
                    "not available (compared tokens only)".to_string()
                } else if bits.is_none() {
                    "bit for bit equal".to_string()
                } else {
                    "differ bitwise (not claimed)".to_string()
                }
            ),
            None,
            slot,
        ),
    }
}

/// The slot state the request left against its solo run's: its effective
/// length and dense PLE (each skipped when the target does not report it),
/// and whether both held.
fn slot_state(ev: &RequestEvidence<'_>, solo: &Observed) -> (Vec<ServingVerdict>, bool) {
    let o = ev.observed;
    let id = &ev.request.id;
    let slot = o.slot;
    let sl = show(slot);
    let mut out = Vec::new();
    let mut state_ok = true;
    match (o.effective_length, solo.effective_length) {
        (Some(a), Some(b)) => {
            state_ok &= a == b;
            out.push(verdict(
                "effective_length",
                a == b,
                if a == b {
                    format!("{a}, as in the solo run")
                } else {
                    format!("request `{id}` (slot {sl}): effective length {a} after prefill at step {}, alone {b}", show(o.admitted_step))
                },
                (a != b).then_some(o.admitted_step).flatten(),
                slot,
            ));
        }
        _ => out.push(skipped(
            "effective_length",
            "the target does not report it".into(),
        )),
    }
    match (&o.dense_ple_sha256, &solo.dense_ple_sha256) {
        (Some(a), Some(b)) => {
            state_ok &= a == b;
            out.push(verdict(
                "dense_ple",
                a == b,
                if a == b {
                    "the dense PLE rows equal the solo run's bit for bit".to_string()
                } else {
                    format!("request `{id}` (slot {sl}): dense PLE at step {} differs from the solo run's", show(o.admitted_step))
                },
                (a != b).then_some(o.admitted_step).flatten(),
                slot,
            ));
        }
        _ => out.push(skipped("dense_ple", "the target does not report it".into())),
    }
    (out, state_ok)
}

/// Tokens against the oracle's greedy tokens; a mismatch is judged with the
/// token verdict rules when the target gave logits.
fn oracle_check(ev: &RequestEvidence<'_>, session: Option<&Session<'_>>) -> ServingVerdict {
    let o = ev.observed;
    let id = &ev.request.id;
    let Some(oracle) = ev.oracle else {
        return skipped(
            "oracle_tokens",
            format!("case `{}` has no token oracle", ev.request.input.case()),
        );
    };
    let n = o.tokens.len().min(oracle.tokens.len());
    let beyond = o.tokens.len().saturating_sub(n);
    let note = if beyond > 0 {
        format!(" ({beyond} tokens beyond the oracle's are not judged)")
    } else {
        String::new()
    };
    let Some(k) = (0..n).find(|&k| i64::from(o.tokens[k]) != oracle.tokens[k]) else {
        return verdict(
            "oracle_tokens",
            true,
            format!("{n} tokens equal the oracle's{note}"),
            None,
            o.slot,
        );
    };
    let step = step_of(o, k);
    let mut v = verdict(
        "oracle_tokens",
        false,
        format!(
            "request `{id}` (slot {}): token {k} at step {} is {}, the oracle's is {}",
            show(o.slot),
            show(step),
            o.tokens[k],
            oracle.tokens[k]
        ),
        step,
        o.slot,
    );
    if let (Some(session), true) = (session, ev.logits.len() > k) {
        let production: Vec<Vec<f64>> = ev.logits[..=k]
            .iter()
            .map(|r| r.iter().map(|&x| f64::from(x)).collect())
            .collect();
        // The reference noise from the spec or the truth: a serving target's
        // own sensitivity is not measured.
        let noise = reference_noise(session, oracle, None);
        let judged = judge_step(
            &Evidence {
                session,
                case: ev.request.input.case(),
                p: ev.prompt_len,
                oracle,
                production: &production,
                mode: TokenMode::Greedy,
                noise: &noise,
            },
            k,
        );
        if !judged.counted {
            v.status = Status::Pass;
        }
        v.message = format!(
            "{} ({}{})",
            v.message,
            judged.verdict.name(),
            if judged.counted { "" } else { ": not counted" }
        );
        v.divergent_token = Some(judged);
    }
    v
}
