//! Breaking a well-formed batch in one named way, and the fragment of the
//! guard's message that must name it. `parity fuzz` checks the guard refuses
//! every generated breakage before IREE; the property tests do the same.

use super::case::Inputs;
use super::strategy::{Breakage, Draw};
use parity_spec::{FuzzSpec, MaskLayout};
use parity_tensor::{DType, Tensor};

fn mask_values(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec()
}

/// `inputs` (laid out from `draw`) broken by `b`, with the message fragment
/// the guard must give; None when the contract makes `b` inapplicable (no
/// lengths input, an arbitrary-layout mask, a one-frame bucket).
pub fn apply(
    spec: &FuzzSpec,
    inputs: &Inputs,
    draw: &Draw,
    b: Breakage,
    raw: usize,
) -> Option<(Inputs, &'static str)> {
    let (clips, bucket) = (draw.shape.clips, draw.shape.bucket);
    let c = raw % clips;
    let valid = draw.clips[c].valid;
    let padded = if spec.mask.padded { 1.0 } else { 0.0 };
    let mut mask = mask_values(&inputs.mask);
    let mut out = Inputs {
        mel: inputs.mel.clone(),
        mask: inputs.mask.clone(),
        lengths: inputs.lengths.clone(),
    };
    let set_mask = |m: &[f64]| Tensor::from_f64_as(spec.mask.dtype, vec![clips, bucket], m).ok();
    let lengths_with = |v: f64| {
        let l = spec.lengths.as_ref()?;
        let mut vals: Vec<f64> = draw.clips.iter().map(|c| c.valid as f64).collect();
        vals[c] = v;
        Tensor::from_f64_as(l.dtype, vec![clips], &vals).ok()
    };
    let fragment = match b {
        Breakage::Hole => {
            if spec.mask.layout != MaskLayout::Prefix || valid < 2 || valid >= bucket {
                return None;
            }
            // One valid frame moved past a padded one: frame valid-1 padded, frame valid valid.
            mask[c * bucket + valid - 1] = padded;
            mask[c * bucket + valid] = 1.0 - padded;
            out.mask = set_mask(&mask)?;
            "hole in a prefix mask"
        }
        Breakage::AllPadded => {
            mask[c * bucket..(c + 1) * bucket].fill(padded);
            out.mask = set_mask(&mask)?;
            "every frame is padded"
        }
        Breakage::LengthDisagrees => {
            let other = if valid > 1 { valid - 1 } else { valid + 1 };
            out.lengths = Some(lengths_with(other as f64)?);
            "disagrees with the mask"
        }
        Breakage::LengthOverBucket => {
            out.lengths = Some(lengths_with((bucket + 1 + raw % 7) as f64)?);
            "exceeds the bucket"
        }
        Breakage::NegativeLength => {
            out.lengths = Some(lengths_with(-1.0 - (raw % 5) as f64)?);
            "is negative"
        }
        Breakage::MaskDtype => {
            let wrong = if spec.mask.dtype == DType::Bool {
                DType::F32
            } else {
                DType::Bool
            };
            out.mask = Tensor::from_f64_as(wrong, vec![clips, bucket], &mask).ok()?;
            "mask: dtype"
        }
        Breakage::MelShape => {
            let f = spec.mel.features + 1;
            out.mel =
                Tensor::from_f32(vec![clips, bucket, f], &vec![0.0; clips * bucket * f]).ok()?;
            "features per frame"
        }
        Breakage::TooManyClips => {
            let n = spec.max_clips() + 1;
            let f = spec.mel.features;
            out.mel = Tensor::from_f32(vec![n, bucket, f], &vec![0.0; n * bucket * f]).ok()?;
            let m: Vec<f64> = (0..n * bucket)
                .map(|i| {
                    if i % bucket == 0 {
                        1.0 - padded
                    } else {
                        padded
                    }
                })
                .collect();
            out.mask = Tensor::from_f64_as(spec.mask.dtype, vec![n, bucket], &m).ok()?;
            if let Some(l) = &spec.lengths {
                out.lengths = Tensor::from_f64_as(l.dtype, vec![n], &vec![1.0; n]).ok();
            }
            "too many clips"
        }
    };
    Some((out, fragment))
}
