//! Why one output of a stage could not be compared.

/// Why one output could not be compared (an input error: the message is
/// prefixed with the stage, case, output and oracle tensor by the caller).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The oracle, mask or truth tensor could not be read.
    #[error(transparent)]
    Input(#[from] super::inputs::InputError),
    /// `mask: {arg: i}` names an argument the stage does not have.
    #[error("mask argument index {0} out of range")]
    MaskArgument(usize),
    /// The mask does not fit the output.
    #[error("mask: {0}")]
    Mask(#[from] parity_compare::MaskError),
    /// The production and oracle tensors cannot be compared (shape, dtype).
    #[error(transparent)]
    Compare(#[from] parity_compare::CompareError),
    /// The f64 truth holds a NaN or an infinity where it is compared.
    #[error("f64 truth `{name}` holds {value} at index {index:?}: a ground truth must be finite")]
    NonFiniteTruth {
        /// The truth tensor.
        name: String,
        /// The value found.
        value: f64,
        /// Its multi-dimensional index.
        index: Vec<usize>,
    },
    /// A side cannot be compared with the truth.
    #[error("vs truth `{name}`: {source}")]
    VsTruth {
        /// The truth tensor.
        name: String,
        /// Why.
        source: parity_compare::CompareError,
    },
}
