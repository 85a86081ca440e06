//! The pure comparison engine: two tensors (and a mask) in, metrics and a verdict out.
//!
//! [`compare`] makes one pass over both tensors' bytes (rayon over fixed
//! 256K-element chunks, each f64 sum split into eight lanes by flat index,
//! merged in chunk order, so results do not depend on the thread count or
//! on which of the scalar, AVX2 and AVX-512 paths runs) and returns [`Metrics`]; [`evaluate`] applies a list of
//! [`Criterion`] to them and returns a [`Verdict`] with, per criterion, the
//! loosest setting that would have passed. Conventions:
//! - NaN never equals NaN (PyTorch `assert_close`): NaN on both sides at the
//!   same place is counted apart (`nan_both`) and is a mismatch, for `exact`
//!   too, unless [`CompareOptions::equal_nan`]; equal infinities at the same
//!   place match. Non-finite values stay out of the numeric metrics
//!   (max_abs, rms, ULPs, allclose counts), so every NaN/Inf mismatch fails
//!   every value criterion outright, with `min_passing` +inf and a note.
//! - A comparison of zero elements (all masked, or an empty tensor) fails
//!   every criterion unless [`VerdictOptions::allow_empty`].
//! - `vs_f64` takes [`TruthErrors`]: a non-finite production element where
//!   the (finite) truth is not fails it with observed +inf.
//! - rel_l2 is 0 when both norms are 0 and +inf when only the expected one
//!   is; cosine is 1 for two zero vectors and 0 when exactly one is zero.
//! - ULPs are measured after rounding both sides to one float type
//!   ([`UlpDType`]); integer/bool comparisons have no ULP metrics and use
//!   `exact` (bitwise for equal dtypes, value equality otherwise).

#![warn(missing_docs)]

mod acc;
pub mod baseline;
pub mod criterion;
mod elem;
pub mod error;
pub mod histogram;
mod kernel;
#[cfg(target_arch = "x86_64")]
mod kernel_avx2;
#[cfg(target_arch = "x86_64")]
mod kernel_avx512;
mod kernel_hist;
#[cfg(test)]
mod kernel_reference;
pub mod mask;
pub mod metrics;
mod nonfinite;
mod result;
mod simd;
mod topk;
pub mod ulp;
pub mod verdict;

pub use criterion::Criterion;
pub use error::{CompareError, MaskError};
pub use histogram::{UlpBucket, UlpHistogram};
pub use mask::Mask;
pub use metrics::{compare, CompareOptions, ElementDiff, Metrics, Simd, MAX_TOP_K};
pub use ulp::{ulp_distance, UlpDType};
pub use verdict::{
    default_rtol_atol, default_tolerance, evaluate, evaluate_with, CriterionResult, TruthErrors,
    Verdict, VerdictOptions,
};

#[cfg(test)]
mod tests;
