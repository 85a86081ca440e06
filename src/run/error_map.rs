//! Computes a failing output's [`ErrorMap`] (the record type lives in
//! parity-record): the largest |production - oracle| per cell over the
//! tensor's two main axes, with the padding mask's share of each cell.

use parity_compare::Mask;
use parity_tensor::Tensor;

pub use parity_record::error_map::{ErrorMap, MAX_CELLS};

/// Computes the map of `actual` against `expected` (same shape, checked by
/// the comparison that ran before). `None` for empty or rank-0 tensors or a
/// shape mismatch.
pub fn compute(actual: &Tensor, expected: &Tensor, mask: Option<&Mask>) -> Option<ErrorMap> {
    let shape = actual.shape();
    if shape.is_empty() || shape != expected.shape() || actual.numel() == 0 {
        return None;
    }
    let axes = main_axes(shape);
    let dims = [shape[axes[0]], shape[axes[1]]];
    // Each cell spans `span` positions; the last cell of an axis may be short.
    let span = dims.map(|d| d.div_ceil(MAX_CELLS).max(1));
    let cells = if axes[0] == axes[1] {
        [1, dims[1].div_ceil(span[1])]
    } else {
        [dims[0].div_ceil(span[0]), dims[1].div_ceil(span[1])]
    };
    let n = cells[0] * cells[1];
    let mut max_abs: Vec<Option<f64>> = vec![None; n];
    let mut padded = vec![0u64; n];
    let mut total = vec![0u64; n];
    let mut nonfinite = vec![0u64; n];
    let mut index = vec![0usize; shape.len()];
    for flat in 0..actual.numel() {
        let (r, c) = if axes[0] == axes[1] {
            (0, index[axes[1]] / span[1])
        } else {
            (index[axes[0]] / span[0], index[axes[1]] / span[1])
        };
        let cell = r * cells[1] + c;
        total[cell] += 1;
        if mask.is_some_and(|m| m.is_padded(flat)) {
            padded[cell] += 1;
        } else {
            let (a, e) = (actual.get_f64(flat), expected.get_f64(flat));
            let same_nonfinite = a.is_nan() && e.is_nan() || a.is_infinite() && a == e;
            let d = (a - e).abs();
            if same_nonfinite {
                max_abs[cell] = Some(max_abs[cell].unwrap_or(0.0));
            } else if d.is_finite() {
                max_abs[cell] = Some(max_abs[cell].map_or(d, |m| m.max(d)));
            } else {
                nonfinite[cell] += 1;
            }
        }
        increment(&mut index, shape);
    }
    Some(ErrorMap {
        axes,
        dims,
        cells,
        max_abs,
        // Three decimals are plenty for shading and keep the JSON small.
        padded: padded
            .iter()
            .zip(&total)
            .map(|(&p, &t)| (p as f64 / t.max(1) as f64 * 1000.0).round() / 1000.0)
            .collect(),
        nonfinite,
    })
}

/// The two largest axes, in axis order (ties go to the later axis, which
/// keeps a `[batch, seq, hidden]` tensor on seq x hidden).
fn main_axes(shape: &[usize]) -> [usize; 2] {
    if shape.len() == 1 {
        return [0, 0];
    }
    let mut order: Vec<usize> = (0..shape.len()).collect();
    order.sort_by(|&a, &b| shape[b].cmp(&shape[a]).then(b.cmp(&a)));
    let (a, b) = (order[0].min(order[1]), order[0].max(order[1]));
    [a, b]
}

/// Advances a row-major multi-index by one.
fn increment(index: &mut [usize], shape: &[usize]) {
    for axis in (0..shape.len()).rev() {
        index[axis] += 1;
        if index[axis] < shape[axis] {
            return;
        }
        index[axis] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_hold_the_largest_error_and_padding_is_marked() {
        // 2 x 3: errors 0, 1, 2 / 3, 4, 5; the second row padded.
        let a = Tensor::from_f32(vec![2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let e = Tensor::from_f32(vec![2, 3], &[0.0; 6]).unwrap();
        let m = Tensor::from_f64_as(parity_tensor::DType::I32, vec![2], &[0.0, 1.0]).unwrap();
        let mask = Mask::new(&m, vec![0], true, &[2, 3]).unwrap();
        let map = compute(&a, &e, Some(&mask)).unwrap();
        assert_eq!(map.axes, [0, 1]);
        assert_eq!(map.cells, [2, 3]);
        assert_eq!(
            map.max_abs,
            vec![Some(0.0), Some(1.0), Some(2.0), None, None, None]
        );
        assert_eq!(map.padded, vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn large_axes_are_downsampled_to_at_most_64_cells_keeping_the_max() {
        let n = 130;
        let mut values = vec![0.0f32; n * 3];
        values[(n - 1) * 3 + 2] = 7.0; // last row, last column
        let a = Tensor::from_f32(vec![n, 3], &values).unwrap();
        let e = Tensor::from_f32(vec![n, 3], &vec![0.0; n * 3]).unwrap();
        let map = compute(&a, &e, None).unwrap();
        // 130 rows in cells of 3: 44 cells, the last holding rows 129 only.
        assert_eq!(map.cells, [44, 3]);
        assert_eq!(map.max_abs.len(), 44 * 3);
        assert_eq!(map.max_abs[44 * 3 - 1], Some(7.0));
        assert_eq!(
            map.max_abs.iter().flatten().filter(|&&v| v > 0.0).count(),
            1
        );
    }

    #[test]
    fn the_two_largest_axes_are_drawn_and_nan_counts_as_nonfinite() {
        let mut values = vec![0.0f32; 2 * 8 * 16];
        values[5] = f32::NAN;
        let a = Tensor::from_f32(vec![2, 8, 16], &values).unwrap();
        let e = Tensor::from_f32(vec![2, 8, 16], &vec![0.0; 256]).unwrap();
        let map = compute(&a, &e, None).unwrap();
        assert_eq!(map.axes, [1, 2]);
        assert_eq!(map.dims, [8, 16]);
        assert_eq!(map.nonfinite[5], 1);
        assert_eq!(map.nonfinite.iter().sum::<u64>(), 1);
    }

    #[test]
    fn a_reduced_axis_padded_in_one_batch_gives_partly_padded_cells() {
        // [2, 4, 8]: axes 1 x 2 drawn, batch reduced; batch 1 pads frames 2 and 3.
        let a = Tensor::from_f32(vec![2, 4, 8], &[1.0; 64]).unwrap();
        let e = Tensor::from_f32(vec![2, 4, 8], &[0.0; 64]).unwrap();
        let m = Tensor::from_f64_as(
            parity_tensor::DType::I32,
            vec![2, 4],
            &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0],
        )
        .unwrap();
        let mask = Mask::new(&m, vec![0, 1], true, &[2, 4, 8]).unwrap();
        let map = compute(&a, &e, Some(&mask)).unwrap();
        assert_eq!(map.axes, [1, 2]);
        assert_eq!(map.padded[0], 0.0);
        assert_eq!(map.padded[2 * 8], 0.5);
        assert_eq!(map.max_abs[3 * 8 + 7], Some(1.0));
    }
}
