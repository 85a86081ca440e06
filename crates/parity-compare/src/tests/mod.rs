//! Value tests for `compare` and `evaluate`, and property tests across modules.

mod kernel;
mod metrics;
mod nonfinite;
mod props;
mod verdict;

use crate::{compare, CompareOptions, Mask, Metrics};
use parity_tensor::{DType, Tensor};

pub(crate) fn f32t(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape.to_vec(), v).unwrap()
}

pub(crate) fn tensor(dtype: DType, shape: &[usize], v: &[f64]) -> Tensor {
    Tensor::from_f64_as(dtype, shape.to_vec(), v).unwrap()
}

pub(crate) fn run(a: &Tensor, e: &Tensor, mask: Option<&Mask>, top_k: usize) -> Metrics {
    let opts = CompareOptions {
        top_k,
        ..CompareOptions::default()
    };
    compare(a, e, mask, &opts).unwrap()
}
