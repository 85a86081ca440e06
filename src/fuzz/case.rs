//! A fuzz case as data: which clips make up a batch (valid frames drawn from
//! a real mel tensor, a prefix of the bucket or, for an arbitrary-mask
//! contract, runs separated by padded holes), and how the padded frames are
//! filled. Building the
//! entry point's mel, mask and lengths tensors from it, in the contract's
//! dtypes and mask polarity.

use super::error::FuzzError;
use parity_spec::{FuzzShape, FuzzSpec};
use parity_tensor::{DType, Tensor};

/// One clip of a batch: `valid` frames taken from a source clip at `offset`,
/// laid out from frame 0 with the padded `holes` between them.
#[derive(Clone, Debug, PartialEq)]
pub struct Clip {
    /// Valid frames.
    pub valid: usize,
    /// Index into [`MelSources::clips`].
    pub source: usize,
    /// First source frame used.
    pub offset: usize,
    /// Padded frames inside the valid ones (empty: a prefix mask).
    pub holes: Vec<Hole>,
}

/// `len` padded frames just before valid frame `before` (counted among the valid ones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hole {
    /// The valid frame the hole precedes (0: the clip starts padded).
    pub before: usize,
    /// Padded frames in the hole (at least 1).
    pub len: usize,
}

impl Clip {
    /// A clip with a prefix mask.
    pub fn prefix(valid: usize, source: usize, offset: usize) -> Clip {
        Clip {
            valid,
            source,
            offset,
            holes: Vec::new(),
        }
    }

    /// Bucket positions of the valid frames, in order.
    pub fn frames(&self) -> Vec<usize> {
        let mut at = 0;
        (0..self.valid)
            .map(|i| {
                at += self
                    .holes
                    .iter()
                    .filter(|h| h.before == i)
                    .map(|h| h.len)
                    .sum::<usize>();
                at += 1;
                at - 1
            })
            .collect()
    }

    /// Frames from the first to one past the last valid one.
    pub fn span(&self) -> usize {
        self.frames().last().map_or(0, |&l| l + 1)
    }

    /// The padded frames of this clip in a `bucket`-frame batch, in order.
    pub fn padded(&self, bucket: usize) -> Vec<usize> {
        let valid = self.frames();
        (0..bucket).filter(|t| !valid.contains(t)).collect()
    }
}

/// `[0, 1, 2, 5]` as "0..3, 5..6".
pub fn runs(frames: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let mut j = i;
        while j + 1 < frames.len() && frames[j + 1] == frames[j] + 1 {
            j += 1;
        }
        out.push(format!("{}..{}", frames[i], frames[j] + 1));
        i = j + 1;
    }
    out.join(", ")
}

/// What padded (or, for a negative control, valid) frames are set to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fill {
    /// One value in every element of the frames.
    Value(f32),
    /// Deterministic garbage in [-1000, 1000) from this seed.
    Garbage(u32),
}

impl Fill {
    /// The value of element `i` of the filled region.
    pub fn at(self, i: usize) -> f32 {
        match self {
            Fill::Value(v) => v,
            Fill::Garbage(seed) => {
                let mut x = (seed as u64) << 32 | i as u64;
                x = crate::seed::mix(x);
                ((x >> 40) as f32 / (1u64 << 24) as f32) * 2000.0 - 1000.0
            }
        }
    }

    /// "1.0", "NaN", "+inf", "garbage (seed 7)".
    pub fn describe(self) -> String {
        match self {
            Fill::Value(v) if v.is_nan() => "NaN".into(),
            Fill::Value(v) if v.is_infinite() => (if v > 0.0 { "+inf" } else { "-inf" }).into(),
            Fill::Value(v) => format!("{v}"),
            Fill::Garbage(s) => format!("garbage in [-1000, 1000) (seed {s})"),
        }
    }
}

/// Frames `start..end` of clip `clip` written with `fill` (every feature).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Write {
    /// The clip.
    pub clip: usize,
    /// First frame.
    pub start: usize,
    /// One past the last frame.
    pub end: usize,
    /// The values.
    pub fill: Fill,
}

impl Write {
    /// Writes covering exactly `frames` (ascending) of clip `clip`, one per contiguous run.
    pub fn covering(clip: usize, frames: &[usize], fill: Fill) -> Vec<Write> {
        let mut out: Vec<Write> = Vec::new();
        for &t in frames {
            match out.last_mut() {
                Some(w) if w.end == t => w.end += 1,
                _ => out.push(Write {
                    clip,
                    start: t,
                    end: t + 1,
                    fill,
                }),
            }
        }
        out
    }
}

/// A batch: a compiled shape and its clips (canonical zero padding unless `writes` say otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// The entry point shape.
    pub shape: FuzzShape,
    /// One per clip of the shape.
    pub clips: Vec<Clip>,
    /// Frames overwritten after the clips are laid out.
    pub writes: Vec<Write>,
}

/// The real mel clips valid frames are drawn from (every frame of every
/// clip of the `mel.sources` tensors, as f32).
pub struct MelSources {
    /// (label, frames x features values) per clip.
    pub clips: Vec<(String, Vec<f32>)>,
    /// Features per frame.
    pub features: usize,
}

impl MelSources {
    /// Frames of source clip `i`.
    pub fn frames(&self, i: usize) -> usize {
        self.clips[i].1.len() / self.features
    }

    /// Fewest frames of any source clip.
    pub fn min_frames(&self) -> usize {
        (0..self.clips.len())
            .map(|i| self.frames(i))
            .min()
            .unwrap_or(0)
    }
}

/// The three generated inputs of one call.
pub struct Inputs {
    /// f32/f64 [clips, bucket, features].
    pub mel: Tensor,
    /// [clips, bucket] in the contract's dtype and polarity.
    pub mask: Tensor,
    /// [clips] valid frames, when the contract has lengths.
    pub lengths: Option<Tensor>,
}

impl Batch {
    /// Lays the batch out as the entry point's inputs.
    pub fn inputs(&self, spec: &FuzzSpec, sources: &MelSources) -> Result<Inputs, FuzzError> {
        let (b, t, f) = (self.shape.clips, self.shape.bucket, sources.features);
        let mut mel = vec![0f32; b * t * f];
        let mut padded = vec![true; b * t];
        for (c, clip) in self.clips.iter().enumerate() {
            let (label, src) = sources
                .clips
                .get(clip.source)
                .ok_or_else(|| FuzzError::Layout {
                    clip: c,
                    problem: format!("no source clip {}", clip.source),
                })?;
            if clip.span() > t || clip.offset + clip.valid > src.len() / f {
                return Err(FuzzError::Layout {
                    clip: c,
                    problem: format!(
                        "{} frames (spanning {}) at offset {} do not fit bucket {t} / source {label}",
                        clip.valid,
                        clip.span(),
                        clip.offset
                    ),
                });
            }
            for (i, at) in clip.frames().into_iter().enumerate() {
                let from = &src[(clip.offset + i) * f..(clip.offset + i + 1) * f];
                mel[(c * t + at) * f..(c * t + at + 1) * f].copy_from_slice(from);
                padded[c * t + at] = false;
            }
        }
        for w in &self.writes {
            let (start, end) = (w.start.min(t), w.end.min(t));
            for (i, x) in mel[(w.clip * t + start) * f..(w.clip * t + end) * f]
                .iter_mut()
                .enumerate()
            {
                *x = w.fill.at(i);
            }
        }
        let mel = match spec.mel.dtype {
            DType::F64 => {
                let v: Vec<f64> = mel.iter().map(|&x| x as f64).collect();
                Tensor::from_f64(vec![b, t, f], &v)
            }
            _ => Tensor::from_f32(vec![b, t, f], &mel),
        }
        .map_err(|source| FuzzError::Tensor {
            input: "mel",
            source,
        })?;
        let mask: Vec<f64> = padded
            .iter()
            .map(|&p| if p == spec.mask.padded { 1.0 } else { 0.0 })
            .collect();
        let mask = Tensor::from_f64_as(spec.mask.dtype, vec![b, t], &mask).map_err(|source| {
            FuzzError::Tensor {
                input: "mask",
                source,
            }
        })?;
        let lengths = match &spec.lengths {
            Some(l) => {
                let v: Vec<f64> = self.clips.iter().map(|c| c.valid as f64).collect();
                Some(Tensor::from_f64_as(l.dtype, vec![b], &v).map_err(|source| {
                    FuzzError::Tensor {
                        input: "lengths",
                        source,
                    }
                })?)
            }
            None => None,
        };
        Ok(Inputs { mel, mask, lengths })
    }

    /// Valid frames per clip.
    pub fn valid(&self) -> Vec<usize> {
        self.clips.iter().map(|c| c.valid).collect()
    }

    /// `full128/mel[0] frames 0..31` per clip.
    pub fn sources(&self, sources: &MelSources) -> Vec<String> {
        self.clips
            .iter()
            .map(|c| {
                let label = sources.clips.get(c.source).map_or("?", |s| s.0.as_str());
                format!("{label} frames {}..{}", c.offset, c.offset + c.valid)
            })
            .collect()
    }

    /// Each clip's valid frames in the bucket, as runs ("0..3, 5..6").
    pub fn valid_frames(&self) -> Vec<String> {
        self.clips.iter().map(|c| runs(&c.frames())).collect()
    }

    /// "clip 0: frames 31..32 = 1.0" for every write.
    pub fn describe_writes(&self) -> String {
        self.writes
            .iter()
            .map(|w| {
                let frames = if w.end == w.start + 1 {
                    format!("frame {}", w.start)
                } else {
                    format!("frames {}..{}", w.start, w.end)
                };
                format!(
                    "clip {}: {frames} (every feature) = {}",
                    w.clip,
                    w.fill.describe()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}
