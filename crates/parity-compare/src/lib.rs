//! The pure comparison engine: two tensors (and a mask) in, metrics and a verdict out.

pub mod criterion;
mod elem;
pub mod error;
pub mod histogram;
mod kernel;
pub mod mask;
pub mod metrics;
pub mod ulp;
pub mod verdict;

pub use criterion::Criterion;
pub use error::{CompareError, MaskError};
pub use histogram::{UlpBucket, UlpHistogram};
pub use mask::Mask;
pub use metrics::{compare, CompareOptions, ElementDiff, Metrics, MAX_TOP_K};
pub use ulp::{ulp_distance, UlpDType};
pub use verdict::{
    default_rtol_atol, default_tolerance, evaluate, CriterionResult, TruthErrors, Verdict,
};

#[cfg(test)]
mod tests;
