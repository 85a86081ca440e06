//! The tensor side of `weight_transforms:`: an axis permutation, a reshape
//! and a dtype cast, applied to a weight when it is loaded, and the run record's account
//! of which weight got which transform.

use parity_record::WeightTransformRecord;
use parity_spec::{Arg, Spec, Stage};
use parity_tensor::{DType, Tensor};
use std::collections::BTreeMap;

/// `t` with its axes permuted: result axis `i` is axis `perm[i]` of `t`.
pub fn permute(t: &Tensor, perm: &[usize]) -> Result<Tensor, String> {
    let shape = t.shape();
    if perm.len() != shape.len() {
        return Err(format!(
            "`transpose` {perm:?} has {} axes but the weight has shape {shape:?}",
            perm.len()
        ));
    }
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    // Row-major strides of the source, in elements.
    let mut strides = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1];
    }
    let out_strides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
    let size = t.dtype().size();
    let src = t.bytes();
    let mut bytes = Vec::with_capacity(src.len());
    let mut index = vec![0usize; out_shape.len()];
    for _ in 0..t.numel() {
        let offset: usize = index.iter().zip(&out_strides).map(|(i, s)| i * s).sum();
        bytes.extend_from_slice(&src[offset * size..(offset + 1) * size]);
        // Advance the row-major multi-index of the result.
        for k in (0..index.len()).rev() {
            index[k] += 1;
            if index[k] < out_shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
    Tensor::from_bytes(t.dtype(), out_shape, bytes).map_err(|e| e.to_string())
}

/// `t` with shape `shape` (row-major element order kept); the element
/// counts must agree.
pub fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor, String> {
    let want = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| format!("`reshape` {shape:?} overflows the element count"))?;
    if want != t.numel() {
        return Err(format!(
            "`reshape` {shape:?} has {want} elements but the weight (after any transpose) has shape {:?}, {} elements",
            t.shape(),
            t.numel()
        ));
    }
    Tensor::from_bytes(t.dtype(), shape.to_vec(), t.bytes().to_vec()).map_err(|e| e.to_string())
}

/// `t` converted to `dtype` (through f64: exact for every source value a
/// float target can hold; integers must be integral and in range).
pub fn cast(t: &Tensor, dtype: DType) -> Result<Tensor, String> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    let values = t.to_f64_vec();
    if !dtype.is_float() && dtype != DType::Bool {
        if let Some(v) = values.iter().find(|v| v.fract() != 0.0 || !v.is_finite()) {
            return Err(format!(
                "`cast: {dtype}` from {} would truncate the value {v}",
                t.dtype()
            ));
        }
    }
    Tensor::from_f64_as(dtype, t.shape().to_vec(), &values).map_err(|e| e.to_string())
}

/// Which weight read by the selected stages got which transform, in name order.
pub fn records(
    spec: &Spec,
    cases: &[(&str, Vec<Stage>)],
    selected: &[usize],
) -> Vec<WeightTransformRecord> {
    let mut out: BTreeMap<String, WeightTransformRecord> = BTreeMap::new();
    for (_, stages) in cases {
        for stage in selected.iter().filter_map(|&i| stages.get(i)) {
            for arg in &stage.args {
                let Arg::Weight(name) = arg else { continue };
                if out.contains_key(name) {
                    continue;
                }
                let Some((t, source)) = spec.weight_transform(name) else {
                    continue;
                };
                out.insert(
                    name.clone(),
                    WeightTransformRecord {
                        weight: name.clone(),
                        source,
                        transpose: t.transpose.clone(),
                        reshape: t.reshape.clone(),
                        cast: t.cast.map(|d| d.name().to_string()),
                        rule: format!(
                            "{}:{}:{}",
                            spec.path.display(),
                            t.location.line,
                            t.location.col
                        ),
                    },
                );
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_transposes_and_reorders_axes() {
        let t = Tensor::from_f32(vec![2, 3], &[0., 1., 2., 3., 4., 5.]).unwrap();
        let tt = permute(&t, &[1, 0]).unwrap();
        assert_eq!(tt.shape(), &[3, 2]);
        assert_eq!(tt.to_f64_vec(), vec![0., 3., 1., 4., 2., 5.]);
        let c = Tensor::from_f32(vec![2, 1, 3], &[0., 1., 2., 3., 4., 5.]).unwrap();
        let p = permute(&c, &[2, 0, 1]).unwrap();
        assert_eq!(p.shape(), &[3, 2, 1]);
        assert_eq!(p.to_f64_vec(), vec![0., 3., 1., 4., 2., 5.]);
        assert!(permute(&t, &[0]).unwrap_err().contains("has 1 axes"));
    }

    #[test]
    fn cast_converts_and_refuses_truncation() {
        let t = Tensor::from_f32(vec![2], &[1.5, -2.0]).unwrap();
        let b = cast(&t, DType::Bf16).unwrap();
        assert_eq!(b.dtype(), DType::Bf16);
        assert_eq!(b.to_f64_vec(), vec![1.5, -2.0]);
        assert!(cast(&t, DType::I32).unwrap_err().contains("truncate"));
    }

    #[test]
    fn reshape_keeps_the_order_and_checks_the_count() {
        let t = Tensor::from_f32(
            vec![2, 6],
            &[0., 1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11.],
        )
        .unwrap();
        let r = reshape(&t, &[2, 3, 2]).unwrap();
        assert_eq!(r.shape(), &[2, 3, 2]);
        assert_eq!(r.to_f64_vec(), t.to_f64_vec());
        assert_eq!(
            reshape(&t, &[2, 3, 3]).unwrap_err(),
            "`reshape` [2, 3, 3] has 18 elements but the weight (after any transpose) has shape [2, 6], 12 elements"
        );
        assert!(reshape(&t, &[usize::MAX, 2])
            .unwrap_err()
            .contains("overflows"));
    }
}
