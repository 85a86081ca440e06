//! Tolerance criteria: each is one condition that a comparison must satisfy.

use parity_tensor::DType;
use serde::{Deserialize, Serialize};

/// One pass/fail condition on a comparison. A tolerance is a list of
/// criteria that must all hold.
///
/// The serde form is the one `stages.yaml` uses, e.g. `{max_abs: 1e-5}`,
/// `{allclose: {atol: 1e-5, rtol: 1.3e-6, max_fraction: 0}}`, or `exact`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Criterion {
    /// Largest absolute difference over unmasked elements must be <= this.
    MaxAbs(f64),
    /// Root mean square of the difference must be <= this.
    Rms(f64),
    /// ||actual - expected||_2 / ||expected||_2 must be <= this.
    RelL2(f64),
    /// Cosine similarity must be >= this.
    CosineMin(f64),
    /// |a - e| <= atol + rtol * |e| must hold for all but `max_fraction` of elements.
    Allclose {
        /// Absolute tolerance.
        atol: f64,
        /// Relative tolerance.
        rtol: f64,
        /// Largest allowed fraction of violating elements (default 0).
        #[serde(default)]
        max_fraction: f64,
    },
    /// Largest ULP distance (in the comparison's ULP dtype) must be <= this.
    MaxUlp(u64),
    /// The `q` quantile of the ULP distances must be <= `max`.
    UlpQuantile {
        /// Quantile in [0, 1].
        q: f64,
        /// Largest allowed ULP distance at that quantile.
        max: u64,
    },
    /// Bitwise equality of every unmasked element (the default for integers and bools).
    Exact,
    /// err(actual, truth) <= factor * err(expected, truth) + tol, where err is
    /// the RMS difference and truth is the oracle's f64 tensor.
    VsF64 {
        /// Multiplier on the oracle's own error against the truth.
        factor: f64,
        /// Additive slack.
        #[serde(default)]
        tol: f64,
    },
}

/// PyTorch `assert_close` defaults as (rtol, atol); (0, 0) for integers and bool.
pub fn default_rtol_atol(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (1e-3, 1e-5),
        DType::Bf16 => (1.6e-2, 1e-5),
        DType::F32 => (1.3e-6, 1e-5),
        DType::F64 => (1e-7, 1e-7),
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => (0.0, 0.0),
    }
}
