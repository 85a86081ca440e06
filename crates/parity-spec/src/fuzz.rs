//! The `fuzz:` section: the padded-batch contract of a production entry point
//! (which arguments are the mel, the mask and the lengths; which value of the
//! mask means padded; the buckets and clip counts compiled; how the valid
//! region of every output follows from the input) and the fuzzer's budget
//! (case count, seed, tolerances per invariant). Parsed in `fuzz_parse`; the
//! executor is `parity::fuzz`. Documented in docs/stages-schema.md ("fuzz").

use crate::stage_model::{Arg, Location};
use parity_tensor::DType;

/// The invariants `parity fuzz` checks; the names are the keys of `fuzz.tolerance`.
/// (`lengths` is an integer rule, always exact.)
pub const INVARIANTS: [&str; 6] = [
    "pad_content",
    "bucket",
    "batch_order",
    "batch_company",
    "history",
    "lengths",
];

/// A validated `fuzz:` section.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzSpec {
    /// Module (in `subject.modules`) holding the entry points.
    pub module: String,
    /// Entry point name, a template over `{clips}` and `{bucket}`.
    pub function: String,
    /// The compiled (clips, bucket) shapes, in file order.
    pub shapes: Vec<FuzzShape>,
    /// Arguments in call order.
    pub args: Vec<FuzzArg>,
    /// The mel (features) input.
    pub mel: MelContract,
    /// The mask contract.
    pub mask: MaskContract,
    /// The lengths input, when the entry point takes one.
    pub lengths: Option<LengthsContract>,
    /// The outputs in result order, with their valid regions.
    pub outputs: Vec<FuzzOutput>,
    /// Tolerance per invariant (`INVARIANTS`); absent = bit for bit.
    pub tolerance: Vec<(String, Tolerance)>,
    /// Generated cases per run (each invariant draws this many).
    pub cases: usize,
    /// The run's seed (`--seed` overrides it).
    pub seed: u64,
    /// File of persisted failing seeds (replayed first, appended to), resolved against the spec's directory.
    pub regressions: Option<std::path::PathBuf>,
    /// Where the section starts.
    pub location: Location,
}

/// One compiled entry point shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuzzShape {
    /// Clips per batch (the leading axis of mel and mask).
    pub clips: usize,
    /// Frames per clip (the bucket).
    pub bucket: usize,
}

/// One argument of the entry point.
#[derive(Clone, Debug, PartialEq)]
pub enum FuzzArg {
    /// The generated mel, f32 [clips, bucket, features].
    Mel,
    /// The generated mask [clips, bucket].
    Mask,
    /// The generated lengths [clips].
    Lengths,
    /// A fixed argument (`weight`, `oracle`, `literal`), the same in every case.
    Fixed(Arg),
}

/// The mel input.
#[derive(Clone, Debug, PartialEq)]
pub struct MelContract {
    /// Element dtype (f32 or f64).
    pub dtype: DType,
    /// Features per frame (the last axis).
    pub features: usize,
    /// Oracle tensors [clips, frames, features] the valid frames are drawn from.
    pub sources: Vec<String>,
}

/// Which masks the model promises to handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskLayout {
    /// Valid frames first, then padded ones: a hole (a valid frame after a padded one) is malformed.
    Prefix,
    /// Any pattern of valid and padded frames.
    Arbitrary,
}

/// The mask contract.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskContract {
    /// bool (or an integer dtype holding 0/1).
    pub dtype: DType,
    /// Prefix or arbitrary.
    pub layout: MaskLayout,
    /// The mask value that means "padded" (`padded: true` = true is padded).
    pub padded: bool,
    /// Fewest valid frames a clip may have (at least 1: all padded is always malformed).
    pub min_valid: usize,
}

/// The lengths input: valid frames per clip, which must agree with the mask.
#[derive(Clone, Debug, PartialEq)]
pub struct LengthsContract {
    /// An integer dtype.
    pub dtype: DType,
}

/// Which part of an output is compared.
#[derive(Clone, Debug, PartialEq)]
pub enum ValidRegion {
    /// Every element (per clip when the output has a clip axis).
    All,
    /// Rows `0..lengths[clip]` of axis 1, `lengths` being another (integer) output.
    Lengths(String),
    /// Rows `0..ceil(valid_frames / n)` of axis 1 (a subsampling rule).
    Stride(usize),
}

/// One output of the entry point.
#[derive(Clone, Debug, PartialEq)]
pub struct FuzzOutput {
    /// Output name.
    pub name: String,
    /// Whether axis 0 is the clip axis (false: one value for the whole batch).
    pub batched: bool,
    /// The valid region.
    pub valid: ValidRegion,
    /// The output must equal `ceil(valid_frames / n)` per clip (a lengths output).
    pub lengths_rule: Option<usize>,
}

/// How close two runs' valid outputs must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit for bit (NaN equal to NaN only with the same bits).
    Exact,
    /// Largest absolute difference at most this (a NaN or Inf that moves is infinite).
    MaxAbs(f64),
}

impl FuzzSpec {
    /// The entry point of one shape (`{clips}`, `{bucket}` substituted).
    pub fn function_for(&self, shape: FuzzShape) -> String {
        self.function
            .replace("{clips}", &shape.clips.to_string())
            .replace("{bucket}", &shape.bucket.to_string())
    }

    /// The tolerance of one invariant (bit for bit when the spec sets none).
    pub fn tolerance_of(&self, invariant: &str) -> Tolerance {
        self.tolerance
            .iter()
            .find(|(k, _)| k == invariant)
            .map_or(Tolerance::Exact, |(_, t)| *t)
    }

    /// The shape with this clip count and bucket, when compiled.
    pub fn shape(&self, clips: usize, bucket: usize) -> Option<FuzzShape> {
        self.shapes
            .iter()
            .copied()
            .find(|s| s.clips == clips && s.bucket == bucket)
    }

    /// The largest clip count compiled.
    pub fn max_clips(&self) -> usize {
        self.shapes.iter().map(|s| s.clips).max().unwrap_or(0)
    }

    /// Output index by name.
    pub fn output_index(&self, name: &str) -> Option<usize> {
        self.outputs.iter().position(|o| o.name == name)
    }
}
