//! The guard in front of IREE: an input batch (mel, mask, lengths) is checked
//! against the `fuzz:` contract before the entry point sees it. Holes in a
//! prefix mask, a clip with every frame padded (or fewer valid frames than
//! `min_valid`), lengths that disagree with the mask, are negative or exceed
//! the bucket, a wrong dtype or shape, too many clips or a bucket with no
//! entry point are refused, each with a message naming the clip and frame.

use parity_spec::{FuzzShape, FuzzSpec, MaskLayout};
use parity_tensor::{DType, Tensor};

/// Why a batch is refused (an input error: exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Malformed {
    /// dtype or rank/shape of an input is wrong.
    #[error("{input}: {message}")]
    Layout {
        /// `mel`, `mask` or `lengths`.
        input: &'static str,
        /// What is wrong.
        message: String,
    },
    /// More clips than any compiled entry point takes.
    #[error("too many clips: {clips} (the entry points take at most {max})")]
    TooManyClips {
        /// Clips in the batch.
        clips: usize,
        /// Largest compiled clip count.
        max: usize,
    },
    /// No compiled entry point for this (clips, bucket).
    #[error("no entry point for {clips} clip(s) of {bucket} frames (compiled: {compiled})")]
    NoShape {
        /// Clips.
        clips: usize,
        /// Frames.
        bucket: usize,
        /// The compiled shapes.
        compiled: String,
    },
    /// A problem with one clip's mask or length.
    #[error("clip {clip}: {message}")]
    Clip {
        /// The clip.
        clip: usize,
        /// What is wrong.
        message: String,
    },
}

/// The compiled shape a (clips, bucket) batch calls, or why there is none.
pub fn shape_for(spec: &FuzzSpec, clips: usize, bucket: usize) -> Result<FuzzShape, Malformed> {
    if clips > spec.max_clips() {
        return Err(Malformed::TooManyClips {
            clips,
            max: spec.max_clips(),
        });
    }
    spec.shape(clips, bucket).ok_or_else(|| Malformed::NoShape {
        clips,
        bucket,
        compiled: spec
            .shapes
            .iter()
            .map(|s| format!("c{} b{}", s.clips, s.bucket))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn layout(input: &'static str, message: String) -> Malformed {
    Malformed::Layout { input, message }
}

/// Checks a batch; returns its shape and the valid frames per clip.
pub fn validate(
    spec: &FuzzSpec,
    mel: &Tensor,
    mask: &Tensor,
    lengths: Option<&Tensor>,
) -> Result<(FuzzShape, Vec<usize>), Malformed> {
    let (clips, bucket) = check_layout(spec, mel, mask)?;
    let shape = shape_for(spec, clips, bucket)?;
    let valid = (0..clips)
        .map(|c| valid_frames(spec, mask, c, bucket))
        .collect::<Result<Vec<usize>, Malformed>>()?;
    check_lengths(spec, lengths, &valid, bucket)?;
    Ok((shape, valid))
}

/// Checks mel's and mask's dtypes and shapes; returns (clips, bucket).
fn check_layout(spec: &FuzzSpec, mel: &Tensor, mask: &Tensor) -> Result<(usize, usize), Malformed> {
    if mel.dtype() != spec.mel.dtype {
        return Err(layout(
            "mel",
            format!(
                "dtype {} (the contract says {})",
                mel.dtype(),
                spec.mel.dtype
            ),
        ));
    }
    let &[clips, bucket, features] = mel.shape() else {
        return Err(layout(
            "mel",
            format!(
                "shape {:?} is not [clips, frames, {}]",
                mel.shape(),
                spec.mel.features
            ),
        ));
    };
    if features != spec.mel.features {
        return Err(layout(
            "mel",
            format!(
                "{features} features per frame (the contract says {})",
                spec.mel.features
            ),
        ));
    }
    if mask.dtype() != spec.mask.dtype {
        return Err(layout(
            "mask",
            format!(
                "dtype {} (the contract says {})",
                mask.dtype(),
                spec.mask.dtype
            ),
        ));
    }
    if mask.shape() != [clips, bucket] {
        return Err(layout(
            "mask",
            format!(
                "shape {:?} does not match mel's [clips, frames] = [{clips}, {bucket}]",
                mask.shape()
            ),
        ));
    }
    Ok((clips, bucket))
}

/// Clip `c`'s valid frames, after checking its mask: 0/1 values, some
/// frame valid, no hole in a prefix mask, at least `min_valid` valid.
fn valid_frames(
    spec: &FuzzSpec,
    mask: &Tensor,
    c: usize,
    bucket: usize,
) -> Result<usize, Malformed> {
    let padded_value = if spec.mask.padded { 1.0 } else { 0.0 };
    let padded: Vec<bool> = (0..bucket)
        .map(|t| mask.get_f64(c * bucket + t) == padded_value)
        .collect();
    if mask.dtype() != DType::Bool {
        if let Some(t) = (0..bucket)
            .find(|&t| !matches!(mask.get_f64(c * bucket + t), v if v == 0.0 || v == 1.0))
        {
            return Err(Malformed::Clip {
                clip: c,
                message: format!(
                    "mask frame {t} is {}, not 0 or 1",
                    mask.get_f64(c * bucket + t)
                ),
            });
        }
    }
    let n_valid = padded.iter().filter(|p| !**p).count();
    if n_valid == 0 {
        return Err(Malformed::Clip {
            clip: c,
            message: format!(
                "every frame is padded (the mask is all {})",
                spec.mask.padded
            ),
        });
    }
    if spec.mask.layout == MaskLayout::Prefix {
        if let Some(hole) = (1..bucket).find(|&t| padded[t - 1] && !padded[t]) {
            return Err(Malformed::Clip {
                clip: c,
                message: format!("hole in a prefix mask: frame {} is padded but frame {hole} is valid (the contract promises valid frames first)", hole - 1),
            });
        }
    }
    if n_valid < spec.mask.min_valid {
        return Err(Malformed::Clip {
            clip: c,
            message: format!(
                "{n_valid} valid frame(s), fewer than the contract's min_valid {}",
                spec.mask.min_valid
            ),
        });
    }
    Ok(n_valid)
}

/// Checks the lengths input against the contract and the mask's `valid`
/// frames: present when the contract has one, its dtype and shape, each
/// length within the bucket and equal to the clip's valid frames.
fn check_lengths(
    spec: &FuzzSpec,
    lengths: Option<&Tensor>,
    valid: &[usize],
    bucket: usize,
) -> Result<(), Malformed> {
    let clips = valid.len();
    let (Some(contract), Some(lengths)) = (&spec.lengths, lengths) else {
        if spec.lengths.is_some() {
            return Err(layout(
                "lengths",
                "missing (the contract has a lengths input)".into(),
            ));
        }
        return Ok(());
    };
    if lengths.dtype() != contract.dtype {
        return Err(layout(
            "lengths",
            format!(
                "dtype {} (the contract says {})",
                lengths.dtype(),
                contract.dtype
            ),
        ));
    }
    if lengths.shape() != [clips] {
        return Err(layout(
            "lengths",
            format!("shape {:?} is not [clips] = [{clips}]", lengths.shape()),
        ));
    }
    for (c, &n) in valid.iter().enumerate() {
        let l = lengths.get_f64(c);
        if l < 0.0 {
            return Err(Malformed::Clip {
                clip: c,
                message: format!("length {l} is negative"),
            });
        }
        if l > bucket as f64 {
            return Err(Malformed::Clip {
                clip: c,
                message: format!("length {l} exceeds the bucket ({bucket} frames)"),
            });
        }
        if l != n as f64 {
            return Err(Malformed::Clip {
                clip: c,
                message: format!("length {l} disagrees with the mask ({n} valid frames)"),
            });
        }
    }
    Ok(())
}
