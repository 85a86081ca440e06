//! Every request of a served scenario judged (`checks`) into the record:
//! what the target did, its solo run, the admission decision and the
//! oracle's tokens, whichever target ran it and wherever the oracle came
//! from (a spec's `tokens:` section or an oracle-only store).

use super::admission::Prepared;
use super::checks::{check_request, RequestEvidence};
use super::target::Observed;
use crate::tokens::case::OracleCase;
use crate::tokens::session::Session;
use parity_record::{ErrorRecord, ServingRecord, ServingRequestRecord, Status};
use parity_spec::{RequestInput, Scenario};

/// What was gathered for the scenario's requests, index for index.
pub struct Gathered<'a> {
    /// Admission decisions and prompt lengths.
    pub prepared: &'a [Prepared],
    /// What the target did in the scenario.
    pub observed: &'a [Observed],
    /// Each admitted request run alone.
    pub solos: &'a [Option<Observed>],
    /// The oracle's tokens and logits, where the case has them.
    pub oracles: &'a [Option<OracleCase>],
    /// The in-process engine's logits rows (empty for a black box).
    pub logits: &'a [Vec<Vec<f32>>],
    /// The token verdict rules' session (None: no spec, e.g. an oracle-only scenario).
    pub session: Option<&'a Session<'a>>,
    /// Whether a black box ran the requests.
    pub black_box: bool,
}

/// Judges every request and appends it to `record`.
pub fn record_requests(scenario: &Scenario, g: &Gathered<'_>, record: &mut ServingRecord) {
    record.steps = g
        .observed
        .iter()
        .filter_map(|o| o.finished_step.or(o.cancelled_step).or(o.admitted_step))
        .max()
        .map_or(0, |s| s + 1);
    for (i, r) in scenario.requests.iter().enumerate() {
        let o = &g.observed[i];
        let p = &g.prepared[i];
        // Bad input met while the request ran (a weight missing at prefill): exit 2.
        if let (true, Some(e)) = (o.error_is_input, &o.error) {
            record.errors.push(ErrorRecord::input(e.clone()));
        }
        let oracle = g.oracles[i].as_ref();
        // The slot's earlier occupant: the last request that left it before this one was admitted.
        let previous = o.slot.zip(o.admitted_step).and_then(|(slot, at)| {
            g.observed
                .iter()
                .filter(|x| x.slot == Some(slot) && x.id != o.id)
                .filter_map(|x| {
                    x.finished_step
                        .or(x.cancelled_step)
                        .map(|l| (x.id.as_str(), l))
                })
                .filter(|(_, l)| *l <= at)
                .max_by_key(|(_, l)| *l)
        });
        let ev = RequestEvidence {
            request: r,
            expected_refusal: p.refusal.as_deref(),
            observed: o,
            logits: g.logits.get(i).map_or(&[], Vec::as_slice),
            solo: g.solos[i].as_ref(),
            oracle,
            prompt_len: p.prompt_len as usize,
            previous,
            bitwise_claimed: !g.black_box,
            black_box: g.black_box,
        };
        let verdicts = check_request(&ev, g.session);
        // A failed solo reference run is the request's execution error (exit 3), never hidden.
        let error = o
            .error
            .clone()
            .or_else(|| g.solos[i].as_ref().and_then(|s| s.error.clone()));
        let status = if error.is_some() {
            Status::Error
        } else if verdicts.iter().any(|v| v.status == Status::Fail) {
            Status::Fail
        } else {
            Status::Pass
        };
        let solo = g.solos[i].as_ref();
        record.requests.push(ServingRequestRecord {
            id: r.id.clone(),
            case: r.input.case().to_string(),
            kind: match (&r.input, &p.audio_case) {
                (RequestInput::AllPadded(_), _) => "all_padded",
                (_, Some(_)) => "audio",
                _ => "text",
            }
            .to_string(),
            status,
            arrive: r.arrive,
            slot: o.slot,
            admitted_step: o.admitted_step,
            cancelled_step: o.cancelled_step,
            finished_step: o.finished_step,
            tokens: o.tokens.clone(),
            logprobs: o.logprobs.clone(),
            finish: o.finish.clone(),
            oracle_tokens: oracle.map(|x| x.tokens.clone()).unwrap_or_default(),
            solo_tokens: solo.map(|s| s.tokens.clone()).unwrap_or_default(),
            bitwise_logits: solo.filter(|_| !o.logits_sha256.is_empty()).map(|s| {
                o.logits_sha256
                    .iter()
                    .zip(&s.logits_sha256)
                    .all(|(a, b)| a == b)
            }),
            effective_length: o.effective_length,
            solo_effective_length: solo.and_then(|s| s.effective_length),
            dense_ple_sha256: o.dense_ple_sha256.clone(),
            reused_slot: previous.is_some(),
            refused: o.refused.clone(),
            error,
            verdicts,
            target: None,
        });
    }
}
