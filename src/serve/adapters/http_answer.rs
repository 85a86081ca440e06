//! The answer side of the HTTP client: a refusal (non-2xx), one JSON
//! answer, or an SSE stream read event by event up to `data: [DONE]`, a
//! token flood or the hang-up; each completion's one choice taken into the
//! outcome.

use super::http::HttpOutcome;
use super::http_io::Call;
use super::mlx_lm::{self, Api};
use super::sse::{SseError, SseEvent, SseReader};
use super::wire::{Completion, ErrorBody};
use super::{AdapterError, MAX_BODY};
use std::io::{BufRead, Read};
use std::net::{Shutdown, TcpStream};

/// The outcome of a non-2xx answer: a 4xx is a refusal, anything else an
/// error; the message is the error body's, else the body's text.
pub(super) fn refusal(api: &Api, status: u16, body: Box<dyn BufRead>) -> HttpOutcome {
    let mut out = HttpOutcome::default();
    let mut text = Vec::new();
    let _ = body.take(1 << 20).read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text);
    let message = serde_json::from_str::<ErrorBody>(&text)
        .map(|b| b.error.message)
        .unwrap_or_else(|_| text.trim().to_string());
    let mut message = format!("HTTP {status}: {message}");
    if let (Api::OpenAi, Some(hint)) = (api, mlx_lm::hint(&message)) {
        message = format!("{message} ({hint})");
    }
    if (400..500).contains(&status) {
        out.refused = Some(message);
    } else {
        out.error = Some(message);
    }
    out
}

/// Reads a non-streamed answer (at most [`MAX_BODY`] bytes) and takes its
/// tokens, at most `limit` of them.
pub(super) fn read_answer(
    call: &Call<'_>,
    api: &Api,
    body: Box<dyn BufRead>,
    length: Option<u64>,
    limit: usize,
) -> Result<HttpOutcome, AdapterError> {
    if let Some(n) = length.filter(|&n| n > MAX_BODY as u64) {
        return Err(call.wire(format!(
            "the answer's Content-Length is {n} bytes; parity reads at most {MAX_BODY} (4 MiB)"
        )));
    }
    let mut raw = Vec::new();
    body.take(MAX_BODY as u64 + 1)
        .read_to_end(&mut raw)
        .map_err(|e| call.io(&e))?;
    if raw.len() > MAX_BODY {
        return Err(call.wire(format!(
            "the answer is longer than {MAX_BODY} bytes (4 MiB, the most parity reads); stopped reading"
        )));
    }
    let text = std::str::from_utf8(&raw).map_err(|_| call.wire("the answer is not UTF-8"))?;
    let mut out = HttpOutcome::default();
    if let Api::MlxLm(t) = api {
        mlx_lm::answer(t, text, &mut out).map_err(|e| call.wire(e))?;
    } else {
        let c: Completion = serde_json::from_str(text)
            .map_err(|e| call.wire(format!("the answer is not a completion object: {e}")))?;
        take_choice(call, &c, "the answer", &mut out)?;
    }
    if out.tokens.len() > limit {
        flooded(&mut out, limit);
    }
    Ok(out)
}

/// Marks `out` as a token flood, keeping its first `limit` tokens (what the checks need).
fn flooded(out: &mut HttpOutcome, limit: usize) {
    out.tokens.truncate(limit);
    out.logprobs.truncate(limit);
    out.token_flood = true;
    out.finish = None;
}

/// A streamed (SSE) answer being read: the socket to hang up on, when to.
pub(super) struct Streamed<'a> {
    /// The connection, shut down to stop the server generating.
    pub(super) stream: &'a TcpStream,
    /// Hang up after this many tokens (the disconnect cancel).
    pub(super) hang_up_after: Option<usize>,
    /// The most tokens read before the answer counts as a flood.
    pub(super) limit: usize,
}

impl Streamed<'_> {
    /// Reads events up to `data: [DONE]`, an error event, a flood or the hang-up.
    pub(super) fn read(
        &self,
        call: &mut Call<'_>,
        api: &Api,
        body: Box<dyn BufRead>,
    ) -> Result<HttpOutcome, AdapterError> {
        let mut out = HttpOutcome::default();
        let mut events = SseReader::new(body);
        let mut n = 0usize;
        // mlx-lm chunks carry text only: the text so far, tokenized at each chunk.
        let mut streamed_text = String::new();
        loop {
            call.phase = format!(
                "reading event {} of the stream (after {} tokens)",
                n + 1,
                out.tokens.len()
            );
            let event = events.next_event().map_err(|e| match e {
                SseError::Io(e) => call.io(&e),
                e => call.wire(e),
            })?;
            n += 1;
            let data = match event {
                None => {
                    return Err(call.wire(format!(
                        "the stream ended after {} event(s) without `data: [DONE]`",
                        n - 1
                    )))
                }
                Some(SseEvent::Done) => return Ok(out),
                Some(SseEvent::Data(d)) => d,
            };
            if let Ok(e) = serde_json::from_str::<ErrorBody>(&data) {
                out.error = Some(format!("error event {n}: {}", e.error.message));
                return Ok(out);
            }
            if let Api::MlxLm(t) = api {
                mlx_lm::chunk(t, &data, n, &mut streamed_text, &mut out)
                    .map_err(|e| call.wire(e))?;
            } else {
                let c: Completion = serde_json::from_str(&data).map_err(|e| {
                    call.wire(format!(
                        "event {n} is not a completion chunk: {e}: {data:.200}"
                    ))
                })?;
                take_choice(call, &c, &format!("event {n}"), &mut out)?;
            }
            if self.stop(&mut out) {
                return Ok(out);
            }
        }
    }

    /// After an event: on a token flood or at the hang-up point, shuts the
    /// socket, marks `out`, and says to stop reading.
    fn stop(&self, out: &mut HttpOutcome) -> bool {
        if out.tokens.len() > self.limit {
            let _ = self.stream.shutdown(Shutdown::Both);
            flooded(out, self.limit);
            return true;
        }
        if self.hang_up_after.is_some_and(|k| out.tokens.len() >= k) {
            let _ = self.stream.shutdown(Shutdown::Both);
            out.hung_up = true;
            out.finish = None;
            return true;
        }
        false
    }
}

/// Takes the one choice of a completion (parity asks for n = 1): exactly
/// one choice, with index 0; its logprobs, when sent, one per token id.
fn take_choice(
    call: &Call<'_>,
    c: &Completion,
    at: &str,
    out: &mut HttpOutcome,
) -> Result<(), AdapterError> {
    let choice = match c.choices.as_slice() {
        [] => return Err(call.wire(format!("{at}: a completion with no choices"))),
        [one] => one,
        more => {
            return Err(call.wire(format!(
                "{at}: {} choices (indices {:?}); parity asks for one (n = 1, index 0)",
                more.len(),
                more.iter().map(|c| c.index).collect::<Vec<_>>()
            )))
        }
    };
    if choice.index != 0 {
        return Err(call.wire(format!(
            "{at}: its only choice has index {}; parity asks for one choice, index 0",
            choice.index
        )));
    }
    if let Some(lp) = &choice.logprobs {
        if lp.token_logprobs.len() != choice.token_ids.len() {
            return Err(call.wire(format!(
                "{at}: {} token ids but {} logprobs",
                choice.token_ids.len(),
                lp.token_logprobs.len()
            )));
        }
        out.logprobs.extend(&lp.token_logprobs);
    }
    out.tokens.extend(&choice.token_ids);
    out.slot = out.slot.or(c.slot);
    if choice.finish_reason.is_some() {
        out.finish.clone_from(&choice.finish_reason);
    }
    Ok(())
}
