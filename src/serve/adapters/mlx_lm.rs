//! The `mlx-lm` HTTP dialect (`--target-api mlx-lm`), as `mlx_lm.server`
//! 0.32.2 speaks it on `POST /v1/completions` (docs/serving-blackbox.md,
//! "mlx_lm.server"):
//! - the prompt must be text (a list of ids is HTTP 404, "text input must be
//!   of type `str` ..."): parity sends the oracle prompt's words, decoded
//!   through the model's tokenizer.json, and refuses a prompt whose text does
//!   not tokenize back to its ids;
//! - `logprobs` is a boolean (an integer is HTTP 400, "logprobs must be of
//!   type bool"); parity sends `logprobs: true` and no `top_logprobs`: with
//!   `top_logprobs: k` the server fills each entry's `id` from its top-k
//!   candidates (an argpartition), which is the generated token only under
//!   greedy decoding, while without it each entry is the generated token;
//! - a non-streamed answer gives each token's id and logprob in
//!   `choices[0].logprobs.content[] = {id, logprob}`;
//! - a streamed chunk carries text only (no ids, no logprobs): parity
//!   tokenizes the text received so far into ids, and has no logprobs for
//!   the streamed run.

use super::tokenizer::WordLevel;
use super::wire::WireRequest;
use super::Outcome;
use serde::Deserialize;

/// How a black-box HTTP target wants its requests.
#[derive(Clone, Debug)]
pub enum Api {
    /// Parity's OpenAI-style form: token-id prompts, integer `logprobs`,
    /// `token_ids` in every answer and chunk.
    OpenAi,
    /// `mlx_lm.server`'s: text prompts through this tokenizer, boolean `logprobs`.
    MlxLm(WordLevel),
}

/// The request body `mlx_lm.server` takes.
#[derive(serde::Serialize)]
struct Body<'a> {
    prompt: &'a str,
    max_tokens: usize,
    stream: bool,
    logprobs: bool,
    /// Greedy, as the oracle decodes (the server's default temperature is a command-line flag).
    temperature: f64,
}

/// The prompt's text, checked to tokenize back to the same ids.
pub fn prompt_text(t: &WordLevel, prompt: &[i64]) -> Result<String, String> {
    let text = t.decode(prompt)?;
    let back = t.encode(&text)?;
    let same =
        back.len() == prompt.len() && back.iter().zip(prompt).all(|(&a, &b)| i64::from(a) == b);
    if !same {
        let k = (0..back.len().min(prompt.len()))
            .find(|&k| i64::from(back[k]) != prompt[k])
            .unwrap_or(back.len().min(prompt.len()));
        return Err(format!(
            "its prompt's text {text:?} (through {}) tokenizes back to {} ids, not the prompt's {}, first differing at position {k}: the server would see another prompt",
            t.path().display(),
            back.len(),
            prompt.len()
        ));
    }
    Ok(text)
}

/// The JSON body of `request` for `mlx_lm.server`.
pub fn body(t: &WordLevel, request: &WireRequest, stream: bool) -> Result<Vec<u8>, String> {
    let text = prompt_text(t, &request.prompt)?;
    serde_json::to_vec(&Body {
        prompt: &text,
        max_tokens: request.max_tokens,
        stream,
        logprobs: true,
        temperature: 0.0,
    })
    .map_err(|e| e.to_string())
}

#[derive(Deserialize)]
struct Answer {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    index: u32,
    #[serde(default)]
    text: String,
    #[serde(default)]
    logprobs: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    content: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: Option<u32>,
    logprob: Option<f32>,
}

fn one_choice(json: &str, at: &str) -> Result<Choice, String> {
    let a: Answer = serde_json::from_str(json)
        .map_err(|e| format!("{at} is not an mlx-lm completion: {e}: {json:.200}"))?;
    let n = a.choices.len();
    let choice = a
        .choices
        .into_iter()
        .next()
        .filter(|_| n == 1)
        .ok_or_else(|| format!("{at}: {n} choices; parity asks for one (n = 1, index 0)"))?;
    if choice.index != 0 {
        return Err(format!("{at}: its only choice has index {}", choice.index));
    }
    Ok(choice)
}

/// Reads a non-streamed answer into `out`: ids and logprobs from
/// `logprobs.content`, or, without it, the ids of its text.
pub fn answer(t: &WordLevel, json: &str, out: &mut Outcome) -> Result<(), String> {
    let c = one_choice(json, "the answer")?;
    match c.logprobs {
        Some(lp) => {
            for (k, e) in lp.content.iter().enumerate() {
                let (Some(id), Some(lp)) = (e.id, e.logprob) else {
                    return Err(format!(
                        "the answer: logprobs.content[{k}] has no `id` and `logprob`"
                    ));
                };
                out.tokens.push(id);
                out.logprobs.push(lp);
            }
        }
        None => {
            out.tokens = t
                .encode(&c.text)
                .map_err(|e| format!("the answer's text: {e}"))?
        }
    }
    out.finish = c.finish_reason;
    Ok(())
}

/// Reads streamed chunk `n` into `out`: its text appended to `text`, and
/// the ids of all the text so far as the tokens (a chunk has no ids).
pub fn chunk(
    t: &WordLevel,
    json: &str,
    n: usize,
    text: &mut String,
    out: &mut Outcome,
) -> Result<(), String> {
    let c = one_choice(json, &format!("event {n}"))?;
    text.push_str(&c.text);
    out.tokens = t
        .encode(text)
        .map_err(|e| format!("event {n}: the streamed text: {e}"))?;
    if c.finish_reason.is_some() {
        out.finish = c.finish_reason;
    }
    Ok(())
}

/// A hint for a refusal that reads like mlx_lm.server's answer to parity's
/// default (OpenAI-style) request.
pub fn hint(message: &str) -> Option<&'static str> {
    (message.contains("text input must be of type `str`")
        || message.contains("logprobs must be of type bool"))
    .then_some(
        "this server wants a text prompt and boolean logprobs, as mlx_lm.server does: run with --target-api mlx-lm and a scenario `tokenizer:` (docs/serving-blackbox.md, \"mlx_lm.server\")",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::adapters::tokenizer::tests::fixture;
    use std::path::Path;

    #[test]
    fn the_body_is_text_with_boolean_logprobs() {
        let request = WireRequest {
            prompt: vec![21, 48, 21, 5, 15],
            audio: None,
            max_tokens: 3,
            stream: false,
            logprobs: Some(1),
            model: None,
        };
        let b = body(&fixture(), &request, true).unwrap();
        assert_eq!(
            String::from_utf8(b).unwrap(),
            r#"{"prompt":"w17 w44 w17 w1 w11","max_tokens":3,"stream":true,"logprobs":true,"temperature":0.0}"#
        );
    }

    #[test]
    fn a_prompt_that_does_not_round_trip_is_refused_with_where() {
        // Id 0 is <unk>: its text `<unk>` tokenizes back to 0, but a word the
        // vocabulary lacks cannot be made; an id outside it cannot be decoded.
        let t = fixture();
        assert!(prompt_text(&t, &[64]).unwrap_err().contains("id 64"));
        let json = r#"{"model": {"type": "WordLevel", "vocab": {"a": 0, "b c": 1}, "unk_token": "a"}, "pre_tokenizer": {"type": "Whitespace"}}"#;
        let spaced = WordLevel::parse(json, Path::new("t.json")).unwrap();
        let e = prompt_text(&spaced, &[1, 0]).unwrap_err();
        assert!(
            e.contains("\"b c a\" (through t.json) tokenizes back to 3 ids, not the prompt's 2, first differing at position 0"),
            "{e}"
        );
    }

    #[test]
    fn answers_and_chunks_read_as_the_server_writes_them() {
        let t = fixture();
        let mut out = Outcome::default();
        answer(
            &t,
            r#"{"id": "c", "object": "text_completion", "choices": [{"index": 0, "finish_reason": "length", "logprobs": {"content": [{"id": 25, "logprob": -1.5}, {"id": 40, "logprob": -0.25}]}, "text": "w21 w36"}]}"#,
            &mut out,
        )
        .unwrap();
        assert_eq!(
            (out.tokens.as_slice(), out.logprobs.as_slice()),
            (&[25, 40][..], &[-1.5f32, -0.25][..])
        );
        assert_eq!(out.finish.as_deref(), Some("length"));
        let mut s = Outcome::default();
        let mut text = String::new();
        for (n, piece) in ["w21", " w36", ""].iter().enumerate() {
            let finish = if n == 2 { "\"length\"" } else { "null" };
            let json = format!(
                r#"{{"choices": [{{"index": 0, "finish_reason": {finish}, "text": "{piece}"}}]}}"#
            );
            chunk(&t, &json, n + 1, &mut text, &mut s).unwrap();
        }
        assert_eq!(
            (s.tokens, s.logprobs.len(), s.finish.as_deref()),
            (vec![25, 40], 0, Some("length"))
        );
        let e = answer(&t, r#"{"choices": []}"#, &mut Outcome::default()).unwrap_err();
        assert_eq!(
            e,
            "the answer: 0 choices; parity asks for one (n = 1, index 0)"
        );
    }

    #[test]
    fn mlx_lm_refusals_get_the_hint() {
        assert!(hint(r#"{"error": "logprobs must be of type bool"}"#).is_some());
        assert!(hint(
            "HTTP 404: {\"error\": \"text input must be of type `str` (single example)\"}"
        )
        .is_some());
        assert!(hint("context overflow").is_none());
    }
}
