//! Error types of the comparison engine. Messages name shapes, dtypes and
//! indices; callers add the file, stage and tensor they were comparing.

use parity_tensor::DType;

/// Why two tensors could not be compared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// The actual and expected tensors have different shapes.
    #[error("shape mismatch: actual has shape {actual:?}, expected has shape {expected:?}")]
    ShapeMismatch {
        /// Shape of the actual (production) tensor.
        actual: Vec<usize>,
        /// Shape of the expected (oracle) tensor.
        expected: Vec<usize>,
    },
    /// The mask was built for a different shape than the compared tensors.
    #[error(
        "mask was built for shape {mask_target:?} but the compared tensors have shape {tensor:?}"
    )]
    MaskShape {
        /// The target shape the mask was built for.
        mask_target: Vec<usize>,
        /// The shape of the compared tensors.
        tensor: Vec<usize>,
    },
    /// A ULP dtype was requested that ULP distances cannot be measured in.
    #[error("ULP distance can only be measured in bf16, f16 or f32, not {0}")]
    UlpDType(DType),
    /// `top_k` is larger than the engine is willing to track per chunk.
    #[error("top_k {requested} is larger than the supported maximum {max}")]
    TopKTooLarge {
        /// The requested K.
        requested: usize,
        /// The largest supported K.
        max: usize,
    },
    /// A tolerance option is negative or not finite.
    #[error("comparison option {name} must be finite and >= 0, got {value}")]
    BadOption {
        /// The option's name (`atol`, `rtol`).
        name: &'static str,
        /// The offending value.
        value: f64,
    },
}

/// Why a mask tensor could not be applied to a target shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaskError {
    /// The number of listed axes differs from the mask's rank.
    #[error("mask of shape {mask_shape:?} has rank {} but {} axes were given ({axes:?})", mask_shape.len(), axes.len())]
    AxisCount {
        /// Shape of the mask tensor.
        mask_shape: Vec<usize>,
        /// The axes it should map onto.
        axes: Vec<usize>,
    },
    /// The mask has more dimensions than the tensor it masks.
    #[error("mask of shape {mask_shape:?} has higher rank than the target shape {target:?}")]
    Rank {
        /// Shape of the mask tensor.
        mask_shape: Vec<usize>,
        /// Shape of the masked tensor.
        target: Vec<usize>,
    },
    /// An axis is not a dimension of the target shape.
    #[error("mask axis {axis} is out of range for target shape {target:?} (rank {})", target.len())]
    AxisOutOfRange {
        /// The offending axis.
        axis: usize,
        /// Shape of the masked tensor.
        target: Vec<usize>,
    },
    /// The same axis was listed twice.
    #[error("mask axis {axis} is listed more than once in {axes:?}")]
    RepeatedAxis {
        /// The repeated axis.
        axis: usize,
        /// All listed axes.
        axes: Vec<usize>,
    },
    /// A mask dimension neither equals the target dimension nor is 1.
    #[error("mask dim {mask_dim} (size {mask_size}) maps to axis {axis} of target shape {target:?} (size {target_size}); sizes must match or the mask dim must be 1")]
    SizeMismatch {
        /// Index of the mask dimension.
        mask_dim: usize,
        /// Its size.
        mask_size: usize,
        /// The target axis it maps to.
        axis: usize,
        /// The target axis' size.
        target_size: usize,
        /// Shape of the masked tensor.
        target: Vec<usize>,
    },
    /// The mask has a floating-point dtype.
    #[error("mask must have a bool or integer dtype, got {0}")]
    DType(DType),
    /// An integer mask holds values other than 0 and 1.
    #[error(
        "integer mask holds {count} values other than 0/1; first is {value} at index {index:?}"
    )]
    NonBinary {
        /// How many elements are neither 0 nor 1.
        count: usize,
        /// Multi-dimensional index of the first such element.
        index: Vec<usize>,
        /// Its value.
        value: i64,
    },
}
