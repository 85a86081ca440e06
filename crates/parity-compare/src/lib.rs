//! The pure comparison engine: two tensors (and a mask) in, metrics and a verdict out.

pub mod criterion;

pub use criterion::Criterion;
