//! proptest strategies that generate cases from the `fuzz:` contract: a
//! compiled shape, each clip's valid prefix (at least `min_valid` frames) and
//! where its frames come from, and a write into the padded frames (which
//! clip, which frames, which value: a small integer, ±Inf, NaN or garbage).
//! Shrinking goes to the first shape, the fewest valid frames, source offset
//! 0, the first padded frame only, and the value 1.0.
//!
//! `malformed` generates batches that break the contract in one named way,
//! for the guard's property tests.

use super::case::{Batch, Clip, Fill, MelSources, Write};
use parity_spec::{FuzzShape, FuzzSpec};
use proptest::prelude::*;

/// One drawn case; each invariant reads the parts it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Draw {
    /// The shape (one of the invariant's candidates).
    pub shape: FuzzShape,
    /// One clip per clip of the shape.
    pub clips: Vec<Clip>,
    /// The clip the write goes to.
    pub target: usize,
    /// First written frame, counted from the target's first padded frame.
    pub first: usize,
    /// Frames written.
    pub count: usize,
    /// The value written.
    pub fill: Fill,
}

impl Draw {
    /// The batch with canonical zero padding.
    pub fn batch(&self) -> Batch {
        Batch {
            shape: self.shape,
            clips: self.clips.clone(),
            writes: Vec::new(),
        }
    }

    /// The write into the target clip's padded frames (None when it has none).
    pub fn pad_write(&self) -> Option<Write> {
        let valid = self.clips[self.target].valid;
        let padded = self.shape.bucket.checked_sub(valid).filter(|&p| p > 0)?;
        let start = valid + self.first % padded;
        Some(Write {
            clip: self.target,
            start,
            end: (start + self.count).min(self.shape.bucket),
            fill: self.fill,
        })
    }
}

/// The values written: small integers first (they shrink to 1.0), then the
/// non-finite ones, then garbage.
pub fn fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        (any::<bool>(), 1i16..=1000)
            .prop_map(|(neg, v)| Fill::Value(if neg { -v } else { v } as f32)),
        Just(Fill::Value(f32::NAN)),
        Just(Fill::Value(f32::INFINITY)),
        Just(Fill::Value(f32::NEG_INFINITY)),
        any::<u32>().prop_map(Fill::Garbage),
    ]
}

/// Cases over `shapes` with at most `max_valid` valid frames per clip, and
/// at least one padded frame when `need_pad`.
pub fn draw(
    spec: &FuzzSpec,
    sources: &MelSources,
    shapes: Vec<FuzzShape>,
    max_valid: usize,
    need_pad: bool,
) -> BoxedStrategy<Draw> {
    let min_valid = spec.mask.min_valid;
    let frames: Vec<usize> = (0..sources.clips.len())
        .map(|i| sources.frames(i))
        .collect();
    let n_src = frames.len().max(1);
    let shape_count = shapes.len();
    (0..shape_count)
        .prop_flat_map(move |si| {
            let shape = shapes[si];
            let hi = max_valid
                .min(shape.bucket - usize::from(need_pad))
                .min(frames.iter().copied().min().unwrap_or(0))
                .max(min_valid);
            let frames = frames.clone();
            let clip =
                (min_valid..=hi, 0..n_src, 0usize..4096).prop_map(move |(valid, source, raw)| {
                    let room = frames.get(source).map_or(0, |f| f.saturating_sub(valid));
                    Clip {
                        valid,
                        source,
                        offset: raw % (room + 1),
                    }
                });
            (
                Just(shape),
                proptest::collection::vec(clip, shape.clips),
                0..shape.clips,
                0..shape.bucket,
                1..=shape.bucket,
                fill(),
            )
        })
        .prop_map(|(shape, clips, target, first, count, fill)| Draw {
            shape,
            clips,
            target,
            first,
            count,
            fill,
        })
        .boxed()
}

/// Ways a batch can break the contract (the guard must refuse each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breakage {
    /// A valid frame after a padded one in a prefix mask.
    Hole,
    /// Every frame of a clip padded.
    AllPadded,
    /// A length that is not the mask's valid count.
    LengthDisagrees,
    /// A length over the bucket.
    LengthOverBucket,
    /// A negative length.
    NegativeLength,
    /// The mask in the wrong dtype.
    MaskDtype,
    /// A mel with the wrong feature count.
    MelShape,
    /// More clips than any entry point takes.
    TooManyClips,
}

/// Every breakage.
pub const BREAKAGES: [Breakage; 8] = [
    Breakage::Hole,
    Breakage::AllPadded,
    Breakage::LengthDisagrees,
    Breakage::LengthOverBucket,
    Breakage::NegativeLength,
    Breakage::MaskDtype,
    Breakage::MelShape,
    Breakage::TooManyClips,
];

/// A well-formed draw and one breakage to apply to it.
pub fn malformed(
    spec: &FuzzSpec,
    sources: &MelSources,
) -> impl Strategy<Value = (Draw, Breakage, usize)> {
    (
        draw(spec, sources, spec.shapes.clone(), usize::MAX, true),
        proptest::sample::select(BREAKAGES.to_vec()),
        0usize..4096,
    )
}
