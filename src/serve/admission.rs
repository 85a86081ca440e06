//! What a request holds (its prompt from the oracle store, its clips) and
//! whether it is admitted, decided before anything runs:
//! - every clip must have at least one unpadded mel frame (`mel_mask` false
//!   somewhere; a synthetic `all_padded` request has none);
//! - the expanded length, prompt tokens after audio expansion (each clip's
//!   placeholder expanded to its soft tokens) plus `max_new_tokens`, must not
//!   exceed the context (conservative: the last token's K/V are never
//!   written, but a server cannot know in advance which token is last);
//! - the prompt length must have a prefill bucket (and, text-only, an
//!   `embed_text_p{P}`; audio of a case that is not one of the spec's stage
//!   cases, such as the audio-only prompt, the serving module's
//!   `audio_merge_ple_p{P}_c{C}`).

use super::engine::InProcess;
use super::error::ServeError;
use parity_spec::{Request, RequestInput};
use parity_tensor::Tensor;

/// A request ready for the scheduler.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// Request id.
    pub id: String,
    /// Prompt tokens [1, P] (i32), audio placeholders expanded.
    pub prompt: Tensor,
    /// P.
    pub prompt_len: u64,
    /// The stage case whose clips the audio path encodes (None: text-only).
    pub audio_case: Option<String>,
    /// Prompt positions filled by audio soft tokens.
    pub audio_tokens: u64,
    /// Clips of its audio (0: text-only).
    pub clips: usize,
    /// Why it is refused, if it is.
    pub refusal: Option<String>,
}

/// Reads the request's content and decides admission.
pub fn prepare(t: &InProcess, r: &Request) -> Result<Prepared, ServeError> {
    let case = r.input.case();
    let at = format!("{}:{}: request `{}`", r.location.line, r.location.col, r.id);
    let oracle = |n: &str| t.sources.oracle(n).map_err(|e| ServeError::inputs(&at, e));
    let prompt = oracle(&format!("{case}/prompt"))?;
    let p = match prompt.shape() {
        [1, p] => *p as u64,
        s => {
            return Err(ServeError::Request {
                at,
                message: format!("oracle tensor `{case}/prompt` has shape {s:?}, expected [1, P]"),
            })
        }
    };
    let rows_name = format!("{case}/audio_rows");
    let has_audio = t.sources.oracle(&rows_name).is_ok();
    let mut audio_tokens = 0;
    let mut refusal = None;
    let mut clips = 0;
    if has_audio {
        let rows = oracle(&rows_name)?;
        audio_tokens = rows.to_f64_vec().iter().filter(|&&x| x >= 0.0).count() as u64;
        let mask = oracle(&format!("{case}/mel_mask"))?;
        let (n, frames) = match mask.shape() {
            [n, f] => (*n, *f),
            s => {
                return Err(ServeError::Request {
                    at,
                    message: format!(
                        "oracle tensor `{case}/mel_mask` has shape {s:?}, expected [clips, frames]"
                    ),
                })
            }
        };
        clips = n;
        let padded = mask.to_f64_vec();
        let synthetic = matches!(r.input, RequestInput::AllPadded(_));
        for c in 0..n {
            let all = synthetic
                || padded[c * frames..(c + 1) * frames]
                    .iter()
                    .all(|&x| x != 0.0);
            if all {
                refusal = Some(format!(
                    "request `{}`: clip {c} of case `{case}` is all padding (every one of its {frames} mel frames is masked{}): nothing to encode",
                    r.id,
                    if synthetic { ", synthetic `all_padded`" } else { "" }
                ));
                break;
            }
        }
    } else if matches!(r.input, RequestInput::AllPadded(_)) {
        return Err(ServeError::Request {
            at,
            message: format!(
                "`all_padded: {case}`: case `{case}` has no clips (no `{rows_name}` in the oracle store)"
            ),
        });
    }
    let expanded = p + u64::from(r.max_new_tokens);
    if refusal.is_none() && expanded > t.context {
        refusal = Some(format!(
            "request `{}`: expanded length {p} (prompt {} text + {audio_tokens} audio tokens from {clips} clip(s)) + max_new_tokens {} = {expanded} exceeds the context {}",
            r.id,
            p - audio_tokens,
            r.max_new_tokens,
            t.context
        ));
    }
    if refusal.is_none() {
        let prefill = format!("slot_prefill_p{p}_s{}", t.slots);
        let embed = format!("embed_text_p{p}");
        // A stage case merges through the spec's `audio_merge_ple` stage; any
        // other audio needs the serving module's own merge for its length.
        let merge = format!("audio_merge_ple_p{p}_c{clips}");
        let missing = if !t.slot_module.has(&t.modules, &prefill) {
            Some(prefill)
        } else if !has_audio && !t.slot_module.has(&t.modules, &embed) {
            Some(embed)
        } else if has_audio && t.spec.case(case).is_none() && !t.slot_module.has(&t.modules, &merge)
        {
            Some(merge)
        } else {
            None
        };
        if let Some(f) = missing {
            refusal = Some(format!(
                "request `{}`: prompt length {p} has no bucket in the serving module (no `{f}`)",
                r.id
            ));
        }
    }
    Ok(Prepared {
        id: r.id.clone(),
        prompt,
        prompt_len: p,
        audio_case: has_audio.then(|| case.to_string()),
        audio_tokens,
        clips,
        refusal,
    })
}
