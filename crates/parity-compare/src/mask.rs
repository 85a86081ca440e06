//! Padding masks: a small bool/integer tensor whose dims map onto some axes
//! of the compared tensor and mark elements that must not be compared.

use crate::error::MaskError;
use parity_tensor::{DType, Tensor};

/// A validated mask over a target shape. Element `i` of the target is padded
/// when the mask value at the mapped position equals the padded value.
#[derive(Clone, Debug, PartialEq)]
pub struct Mask {
    /// Per mask element: true when that position is padded.
    padded: Vec<bool>,
    /// Per target axis: the stride into `padded` (0 for unmapped or broadcast axes).
    strides: Vec<usize>,
    /// The shape this mask applies to.
    target_shape: Vec<usize>,
}

/// Row-major strides of `shape` (saturating, so huge bogus shapes cannot overflow).
pub(crate) fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
    }
    strides
}

/// Multi-dimensional index of flat position `flat` in a row-major `shape`.
pub(crate) fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0usize; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[i] = flat % d;
            flat /= d;
        }
    }
    idx
}

impl Mask {
    /// Builds a mask from a bool or integer tensor whose dim `k` maps onto
    /// target axis `axes[k]`; each mask dim must equal that target dim or be 1
    /// (broadcast). An element is padded where the mask equals `padded_value`
    /// (nonzero counts as true).
    pub fn new(
        mask: &Tensor,
        axes: Vec<usize>,
        padded_value: bool,
        target_shape: &[usize],
    ) -> Result<Mask, MaskError> {
        let mshape = mask.shape();
        if mshape.len() != axes.len() {
            return Err(MaskError::AxisCount {
                mask_shape: mshape.to_vec(),
                axes,
            });
        }
        if mshape.len() > target_shape.len() {
            return Err(MaskError::Rank {
                mask_shape: mshape.to_vec(),
                target: target_shape.to_vec(),
            });
        }
        let mut seen = vec![false; target_shape.len()];
        for &axis in &axes {
            if axis >= target_shape.len() {
                return Err(MaskError::AxisOutOfRange {
                    axis,
                    target: target_shape.to_vec(),
                });
            }
            if seen[axis] {
                return Err(MaskError::RepeatedAxis { axis, axes });
            }
            seen[axis] = true;
        }
        for (k, (&m, &axis)) in mshape.iter().zip(&axes).enumerate() {
            if m != target_shape[axis] && m != 1 {
                return Err(MaskError::SizeMismatch {
                    mask_dim: k,
                    mask_size: m,
                    axis,
                    target_size: target_shape[axis],
                    target: target_shape.to_vec(),
                });
            }
        }
        let values = mask_values(mask)?;
        let mstrides = row_major_strides(mshape);
        let mut strides = vec![0usize; target_shape.len()];
        for (k, &axis) in axes.iter().enumerate() {
            if mshape[k] != 1 {
                strides[axis] = mstrides[k];
            }
        }
        Ok(Mask {
            padded: values.into_iter().map(|v| v == padded_value).collect(),
            strides,
            target_shape: target_shape.to_vec(),
        })
    }

    /// The shape this mask applies to.
    pub fn target_shape(&self) -> &[usize] {
        &self.target_shape
    }

    /// True when flat (row-major) element `flat` of the target is padded.
    /// Divides per call: for tests and spot checks, not for hot loops.
    pub fn is_padded(&self, flat: usize) -> bool {
        let idx = unravel(flat, &self.target_shape);
        self.padded[self.offset(&idx)]
    }

    /// Number of padded elements in the whole target (saturating): each
    /// padded mask value stands for every position of the axes it is
    /// broadcast over or does not map.
    pub fn padded_count(&self) -> u64 {
        let padded = self.padded.iter().filter(|&&p| p).count() as u64;
        self.target_shape
            .iter()
            .zip(&self.strides)
            .filter(|(_, &s)| s == 0)
            .fold(padded, |acc, (&d, _)| acc.saturating_mul(d as u64))
    }

    /// Index into the mask values of a target multi-index.
    pub(crate) fn offset(&self, idx: &[usize]) -> usize {
        idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum()
    }

    /// Per-target-axis strides into [`Mask::padded_values`].
    pub(crate) fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Per mask element: true when padded.
    pub(crate) fn padded_values(&self) -> &[bool] {
        &self.padded
    }
}

/// The mask's elements as booleans (nonzero = true), rejecting float dtypes
/// and integer values other than 0 and 1.
fn mask_values(mask: &Tensor) -> Result<Vec<bool>, MaskError> {
    let dtype = mask.dtype();
    if dtype.is_float() {
        return Err(MaskError::DType(dtype));
    }
    let size = dtype.size();
    let mut out = Vec::with_capacity(mask.numel());
    let mut bad: Option<(usize, i64)> = None;
    let mut bad_count = 0usize;
    for (i, b) in mask.bytes().chunks_exact(size).enumerate() {
        let v: i64 = match dtype {
            DType::Bool => (b[0] != 0) as i64,
            DType::U8 => b[0] as i64,
            DType::I8 => b[0] as i8 as i64,
            DType::I16 => i16::from_le_bytes([b[0], b[1]]) as i64,
            DType::I32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            DType::I64 => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            DType::F16 | DType::Bf16 | DType::F32 | DType::F64 => {
                return Err(MaskError::DType(dtype))
            }
        };
        if v != 0 && v != 1 {
            bad_count += 1;
            bad.get_or_insert((i, v));
        }
        out.push(v != 0);
    }
    match bad {
        Some((i, value)) => Err(MaskError::NonBinary {
            count: bad_count,
            index: unravel(i, mask.shape()),
            value,
        }),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bool_mask(shape: Vec<usize>, v: &[u8]) -> Tensor {
        Tensor::from_bytes(DType::Bool, shape, v.to_vec()).unwrap()
    }

    #[test]
    fn batch_time_mask_over_bth() {
        // mask [B=2, T=3], padded = true, over [2, 3, 4]
        let m = bool_mask(vec![2, 3], &[0, 0, 1, 0, 1, 1]);
        let mask = Mask::new(&m, vec![0, 1], true, &[2, 3, 4]).unwrap();
        let padded: Vec<bool> = (0..24).map(|i| mask.is_padded(i)).collect();
        let expect: Vec<bool> = (0..24).map(|i| [0, 0, 1, 0, 1, 1][i / 4] == 1).collect();
        assert_eq!(padded, expect);
        assert_eq!(mask.padded_count(), 12);
    }

    #[test]
    fn time_mask_on_axis_1_and_padded_false() {
        // mask [T=3] on axis 1 of [2, 3, 2]; valid-mask convention: 1 = valid, so padded = false.
        let m = Tensor::from_f64_as(DType::I32, vec![3], &[1.0, 1.0, 0.0]).unwrap();
        let mask = Mask::new(&m, vec![1], false, &[2, 3, 2]).unwrap();
        let padded: Vec<usize> = (0..12).filter(|&i| mask.is_padded(i)).collect();
        assert_eq!(padded, vec![4, 5, 10, 11]);
    }

    #[test]
    fn broadcast_dim_and_reordered_axes() {
        // mask [T=2, B=1] mapped onto axes [1, 0] of [3, 2]: broadcast over B.
        let m = bool_mask(vec![2, 1], &[1, 0]);
        let mask = Mask::new(&m, vec![1, 0], true, &[3, 2]).unwrap();
        let padded: Vec<usize> = (0..6).filter(|&i| mask.is_padded(i)).collect();
        assert_eq!(padded, vec![0, 2, 4]);
    }

    #[test]
    fn malformed_masks_are_errors() {
        let m = bool_mask(vec![2, 3], &[0; 6]);
        let err = Mask::new(&m, vec![0], true, &[2, 3]).unwrap_err();
        assert!(matches!(err, MaskError::AxisCount { .. }), "{err}");
        let err = Mask::new(&m, vec![0, 1], true, &[6]).unwrap_err();
        assert!(matches!(err, MaskError::Rank { .. }), "{err}");
        let err = Mask::new(&m, vec![0, 5], true, &[2, 3, 4]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "mask axis 5 is out of range for target shape [2, 3, 4] (rank 3)"
        );
        let err = Mask::new(&m, vec![1, 1], true, &[2, 3, 4]).unwrap_err();
        assert!(
            matches!(err, MaskError::RepeatedAxis { axis: 1, .. }),
            "{err}"
        );
        let err = Mask::new(&m, vec![0, 2], true, &[2, 3, 4]).unwrap_err();
        assert!(
            err.to_string()
                .contains("mask dim 1 (size 3) maps to axis 2"),
            "{err}"
        );
        let f = Tensor::from_f32(vec![2, 3], &[0.0; 6]).unwrap();
        assert_eq!(
            Mask::new(&f, vec![0, 1], true, &[2, 3]).unwrap_err(),
            MaskError::DType(DType::F32)
        );
        let i =
            Tensor::from_f64_as(DType::I64, vec![2, 3], &[0.0, 1.0, 2.0, 1.0, -1.0, 0.0]).unwrap();
        let err = Mask::new(&i, vec![0, 1], true, &[2, 3]).unwrap_err();
        assert_eq!(
            err,
            MaskError::NonBinary {
                count: 2,
                index: vec![0, 2],
                value: 2
            }
        );
        assert!(err
            .to_string()
            .contains("2 values other than 0/1; first is 2 at index [0, 2]"));
    }

    #[test]
    fn bool_bytes_other_than_one_count_as_true() {
        let m = bool_mask(vec![2], &[0, 7]);
        let mask = Mask::new(&m, vec![0], true, &[2]).unwrap();
        assert!(!mask.is_padded(0) && mask.is_padded(1));
    }

    proptest! {
        #[test]
        fn construction_never_panics(
            mshape in proptest::collection::vec(0usize..4, 0..4),
            axes in proptest::collection::vec(0usize..6, 0..5),
            target in proptest::collection::vec(0usize..4, 0..5),
            vals in proptest::collection::vec(-2i64..3, 0..64),
            padded in any::<bool>(),
        ) {
            let n: usize = mshape.iter().product();
            let v: Vec<f64> = (0..n).map(|i| vals.get(i).copied().unwrap_or(0) as f64).collect();
            let m = Tensor::from_f64_as(DType::I8, mshape, &v).unwrap();
            if let Ok(mask) = Mask::new(&m, axes, padded, &target) {
                let total: usize = target.iter().product();
                let by_index = (0..total).filter(|&i| mask.is_padded(i)).count() as u64;
                prop_assert_eq!(mask.padded_count(), by_index);
            }
        }
    }
}
