//! A scenario request as a wire request: the oracle case's prompt (audio
//! placeholders included) and, for audio cases, its mel features and mask.

use super::wire::{WireAudio, WireRequest, WireTensor};
use parity_tensor::{DType, OracleStore};

/// Builds the wire request of oracle case `case` with `max_tokens`; with
/// `all_padded`, every frame of the clips is marked padding (a request the
/// target must refuse).
pub fn from_oracle(
    store: &OracleStore,
    case: &str,
    max_tokens: usize,
    all_padded: bool,
) -> Result<WireRequest, String> {
    let get = |name: String| store.get(&name).map_err(|e| e.to_string());
    let prompt = get(format!("{case}/prompt"))?;
    if prompt.dtype().is_float() {
        return Err(format!(
            "oracle tensor `{case}/prompt` is {}, expected integer token ids",
            prompt.dtype()
        ));
    }
    let prompt: Vec<i64> = prompt.to_f64_vec().into_iter().map(|v| v as i64).collect();
    let has_mel = store.contains(&format!("{case}/mel"));
    let audio = if has_mel {
        let mel = get(format!("{case}/mel"))?;
        let mask = get(format!("{case}/mel_mask"))?;
        if mel.dtype() != DType::F32 || mask.dtype() != DType::Bool {
            return Err(format!(
                "oracle tensors `{case}/mel` ({}) and `{case}/mel_mask` ({}): expected f32 and bool",
                mel.dtype(),
                mask.dtype()
            ));
        }
        let values: Vec<f32> = mel.to_f64_vec().into_iter().map(|v| v as f32).collect();
        let flags: Vec<bool> = mask
            .to_f64_vec()
            .into_iter()
            .map(|v| all_padded || v != 0.0)
            .collect();
        Some(WireAudio {
            mel: WireTensor::f32(mel.shape().to_vec(), &values),
            mel_mask: WireTensor::bool(mask.shape().to_vec(), &flags),
        })
    } else {
        None
    };
    Ok(WireRequest {
        prompt,
        audio,
        max_tokens,
        stream: false,
        logprobs: Some(1),
        model: None,
    })
}
