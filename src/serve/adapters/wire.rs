//! The request and response formats parity speaks to black-box serving
//! targets (docs/serving-blackbox.md): one JSON object per request, the same
//! for the HTTP body of `POST /v1/completions` and for a command template's
//! stdin or request file; the JSON lines a command prints; and the
//! OpenAI-style completion objects an HTTP server returns.
//!
//! OpenAI's completions API has no audio field, so the audio payload is
//! parity's own: each tensor as its shape and its little-endian bytes in
//! base64 (f32 for the mel spectrogram, one byte 0/1 per frame for the mask,
//! 1 = padded).

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// One completion request as it goes over the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireRequest {
    /// Prompt token ids, audio placeholders included (the expanded prompt).
    pub prompt: Vec<i64>,
    /// The clips' features, when the prompt has audio placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<WireAudio>,
    /// How many tokens to generate.
    pub max_tokens: usize,
    /// Stream the tokens as server-sent events (HTTP only; a command always streams lines).
    #[serde(default)]
    pub stream: bool,
    /// OpenAI's `logprobs`: 1 asks for the chosen token's log-probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<u32>,
    /// The model name (accepted and ignored; OpenAI clients send one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The audio of a request: `mel` [clips, frames, bins] f32 and `mel_mask`
/// [clips, frames] (1 = padded frame).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireAudio {
    /// Log-mel features.
    pub mel: WireTensor,
    /// Padding mask, one byte per frame.
    pub mel_mask: WireTensor,
}

/// A tensor on the wire: dtype (`f32` or `bool`), shape, base64 little-endian bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireTensor {
    /// `f32` or `bool`.
    pub dtype: String,
    /// Row-major shape.
    pub shape: Vec<usize>,
    /// The bytes, standard base64 with padding.
    pub data: String,
}

/// Why a wire tensor cannot be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WireError {
    /// The base64 text does not decode.
    #[error("`{field}`: data is not base64: {message}")]
    Base64 {
        /// Which tensor.
        field: String,
        /// The decoder's message.
        message: String,
    },
    /// The byte count does not match dtype and shape.
    #[error("`{field}`: {dtype} {shape:?} needs {expected} bytes, the data has {actual}")]
    Length {
        /// Which tensor.
        field: String,
        /// Declared dtype.
        dtype: String,
        /// Declared shape.
        shape: Vec<usize>,
        /// Bytes the shape needs.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// A dtype other than the one the field needs.
    #[error("`{field}`: dtype `{dtype}`, expected `{expected}`")]
    DType {
        /// Which tensor.
        field: String,
        /// Declared dtype.
        dtype: String,
        /// The dtype the field takes.
        expected: &'static str,
    },
    /// A value the field cannot hold (a mask byte other than 0/1, a non-finite mel value).
    #[error("`{field}`: element {index}: {message}")]
    Value {
        /// Which tensor.
        field: String,
        /// Flat element index.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

impl WireTensor {
    /// An f32 tensor.
    pub fn f32(shape: Vec<usize>, values: &[f32]) -> WireTensor {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        WireTensor {
            dtype: "f32".to_string(),
            shape,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// A bool tensor, one byte per element.
    pub fn bool(shape: Vec<usize>, values: &[bool]) -> WireTensor {
        let bytes: Vec<u8> = values.iter().map(|&b| u8::from(b)).collect();
        WireTensor {
            dtype: "bool".to_string(),
            shape,
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    fn bytes(
        &self,
        field: &str,
        expected_dtype: &'static str,
        size: usize,
    ) -> Result<Vec<u8>, WireError> {
        if self.dtype != expected_dtype {
            return Err(WireError::DType {
                field: field.to_string(),
                dtype: self.dtype.clone(),
                expected: expected_dtype,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.data.as_bytes())
            .map_err(|e| WireError::Base64 {
                field: field.to_string(),
                message: e.to_string(),
            })?;
        let expected = self
            .shape
            .iter()
            .try_fold(size, |acc, &d| acc.checked_mul(d))
            .unwrap_or(usize::MAX);
        if bytes.len() != expected {
            return Err(WireError::Length {
                field: field.to_string(),
                dtype: self.dtype.clone(),
                shape: self.shape.clone(),
                expected,
                actual: bytes.len(),
            });
        }
        Ok(bytes)
    }

    /// The values of an `f32` tensor, every one finite.
    pub fn to_f32(&self, field: &str) -> Result<Vec<f32>, WireError> {
        let bytes = self.bytes(field, "f32", 4)?;
        let values: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(WireError::Value {
                field: field.to_string(),
                index,
                message: format!("{} is not finite", values[index]),
            });
        }
        Ok(values)
    }

    /// The values of a `bool` tensor (bytes 0 or 1).
    pub fn to_bool(&self, field: &str) -> Result<Vec<bool>, WireError> {
        let bytes = self.bytes(field, "bool", 1)?;
        if let Some(index) = bytes.iter().position(|&b| b > 1) {
            return Err(WireError::Value {
                field: field.to_string(),
                index,
                message: format!("mask byte {}, expected 0 or 1", bytes[index]),
            });
        }
        Ok(bytes.into_iter().map(|b| b == 1).collect())
    }
}

/// One line a command template prints (and what parity reads back): a
/// token, the end, a refusal or an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CommandLine {
    /// A generated token and its log-probability.
    Token {
        /// Token id.
        token: u32,
        /// Natural-log probability of the token under the step's softmax.
        logprob: f32,
    },
    /// The end of the stream.
    Done {
        /// Always true.
        done: bool,
        /// `length` (max tokens reached), `stop` (an end token) or `cancelled`.
        reason: String,
    },
    /// The request was refused at admission, before anything ran (too
    /// long for the context, an all-padded clip, ...); the command exits non-zero.
    Refused {
        /// Why.
        refused: String,
    },
    /// A failure while running; the command also exits non-zero.
    Error {
        /// What went wrong.
        error: String,
    },
}

/// The OpenAI-style error body (`{"error": {"message", "type"}}`), also
/// sent as an SSE event when a stream fails.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The inside of an [`ErrorBody`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// What went wrong.
    pub message: String,
    /// `invalid_request_error` (the request was refused), `server_error` or `server_busy`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A completion object (non-streaming) or one streamed chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Request id the server assigned.
    pub id: String,
    /// `text_completion`.
    pub object: String,
    /// One choice (n = 1).
    pub choices: Vec<Choice>,
}

/// One choice of a [`Completion`]. `token_ids` is the vLLM-style extension
/// that carries token ids (this fixture has no tokenizer; `text` is empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// Always 0.
    pub index: u32,
    /// Empty: the fixture has no tokenizer.
    #[serde(default)]
    pub text: String,
    /// The generated token ids (all of them, or this chunk's).
    pub token_ids: Vec<u32>,
    /// Log-probabilities of `token_ids`, when asked for.
    #[serde(default)]
    pub logprobs: Option<Logprobs>,
    /// `length`, `stop`, or null in a stream's intermediate chunks.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// OpenAI's `logprobs` object, reduced to what token ids need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Logprobs {
    /// One per token id.
    pub token_logprobs: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tensors_round_trip_and_bad_lengths_are_named() {
        let t = WireTensor::f32(vec![1, 2], &[1.5, -2.0]);
        assert_eq!(t.to_f32("mel").unwrap(), vec![1.5, -2.0]);
        let short = WireTensor {
            shape: vec![1, 3],
            ..t.clone()
        };
        let e = short.to_f32("mel").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`mel`: f32 [1, 3] needs 12 bytes, the data has 8"
        );
        assert!(matches!(t.to_bool("mask"), Err(WireError::DType { .. })));
        let nan = WireTensor::f32(vec![2], &[0.0, f32::NAN]);
        assert!(matches!(
            nan.to_f32("mel"),
            Err(WireError::Value { index: 1, .. })
        ));
        let mask = WireTensor::bool(vec![3], &[true, false, true]);
        assert_eq!(mask.to_bool("mel_mask").unwrap(), vec![true, false, true]);
    }

    #[test]
    fn command_lines_parse_by_shape() {
        let parse = |s: &str| serde_json::from_str::<CommandLine>(s).ok();
        assert_eq!(
            parse(r#"{"token": 7, "logprob": -0.25}"#),
            Some(CommandLine::Token {
                token: 7,
                logprob: -0.25
            })
        );
        assert_eq!(
            parse(r#"{"done": true, "reason": "length"}"#),
            Some(CommandLine::Done {
                done: true,
                reason: "length".into()
            })
        );
        assert_eq!(
            parse(r#"{"error": "boom"}"#),
            Some(CommandLine::Error {
                error: "boom".into()
            })
        );
        assert_eq!(parse(r#"{"token": -1, "logprob": 0}"#), None);
        assert_eq!(parse(r#"{"tokn": 1}"#), None);
    }

    proptest! {
        #[test]
        fn any_f32_tensor_round_trips(values in proptest::collection::vec(-1e6f32..1e6, 0..64)) {
            let t = WireTensor::f32(vec![values.len()], &values);
            let json = serde_json::to_string(&t).unwrap();
            let back: WireTensor = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back.to_f32("x").unwrap(), values);
        }

        #[test]
        fn arbitrary_data_never_panics(data in ".{0,40}", n in 0usize..8) {
            let t = WireTensor { dtype: "f32".into(), shape: vec![n], data };
            let _ = t.to_f32("x");
            let t = WireTensor { dtype: "bool".into(), ..t };
            let _ = t.to_bool("x");
        }
    }
}
