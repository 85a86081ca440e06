//! Comparing the valid region of two runs' outputs, one clip of each: the
//! rows the spec's `valid:` rule keeps (from a lengths output of the
//! reference run, or a subsampling stride), bit for bit or within a
//! `max_abs` tolerance. A NaN or infinity that appears or moves is an
//! infinite difference, and so is a NaN on both sides: the contract has no
//! NaN-equals-NaN rule, and a NaN output hides whatever else leaked into it.

use parity_record::MovedElement;
use parity_spec::{FuzzSpec, FuzzTolerance, ValidRegion};
use parity_tensor::Tensor;

/// The outcome of one comparison.
#[derive(Clone, Debug, Default)]
pub struct Diff {
    /// Largest difference over every compared element (0 when bit for bit).
    pub max_diff: f64,
    /// The first element outside the tolerance, when any.
    pub moved: Option<MovedElement>,
}

impl Diff {
    /// Whether everything was within the tolerance.
    pub fn holds(&self) -> bool {
        self.moved.is_none()
    }

    /// Both comparisons: the larger difference, the first violation.
    pub fn and(mut self, other: Diff) -> Diff {
        self.max_diff = self.max_diff.max(other.max_diff);
        if self.moved.is_none() {
            self.moved = other.moved;
        }
        self
    }
}

fn element_diff(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::INFINITY
    } else if a.to_bits() == b.to_bits() {
        0.0
    } else if a.is_finite() && b.is_finite() {
        (a - b).abs()
    } else {
        f64::INFINITY
    }
}

/// Valid rows (axis 1) of clip `clip` of output `index` of a run.
fn valid_rows(spec: &FuzzSpec, outs: &[Tensor], index: usize, clip: usize, frames: usize) -> usize {
    let rows = outs[index].shape().get(1).copied().unwrap_or(1);
    let n = match &spec.outputs[index].valid {
        ValidRegion::All => rows,
        ValidRegion::Stride(s) => frames.div_ceil(*s),
        ValidRegion::Lengths(name) => match spec.output_index(name) {
            Some(li) if clip < outs[li].numel() => {
                let v = outs[li].get_f64(clip);
                if v.is_finite() && v > 0.0 {
                    v as usize
                } else {
                    0
                }
            }
            _ => rows,
        },
    };
    n.min(rows)
}

/// Compares clip `rc` of the reference run `r` (whose clip has `frames` valid
/// frames) with clip `cc` of run `c`, over every output's valid region
/// (unbatched outputs whole).
pub fn compare_clip(
    spec: &FuzzSpec,
    tolerance: FuzzTolerance,
    r: &[Tensor],
    rc: usize,
    frames: usize,
    c: &[Tensor],
    cc: usize,
) -> Diff {
    let mut diff = Diff::default();
    for (i, o) in spec.outputs.iter().enumerate() {
        let (a, b) = (&r[i], &c[i]);
        let shape = a.shape();
        let (start_a, start_b, per_clip) = if o.batched && !shape.is_empty() {
            let per: usize = shape[1..].iter().product();
            (rc * per, cc * per, per)
        } else {
            (0, 0, a.numel())
        };
        let row_len: usize = if shape.len() >= 2 {
            shape[2..].iter().product()
        } else {
            1
        };
        let n = if o.batched && shape.len() >= 2 {
            valid_rows(spec, r, i, rc, frames) * row_len
        } else {
            per_clip
        };
        let same_layout = if o.batched {
            b.shape().get(1..) == shape.get(1..)
        } else {
            b.shape() == shape
        };
        if !same_layout || start_a + n > a.numel() || start_b + n > b.numel() {
            diff.max_diff = f64::INFINITY;
            diff.moved.get_or_insert(MovedElement {
                output: o.name.clone(),
                index: Vec::new(),
                expected: f64::NAN,
                actual: f64::NAN,
                max_diff: f64::INFINITY,
                differing: n,
            });
            continue;
        }
        let (mut worst, mut first, mut count) = (0f64, None, 0usize);
        for k in 0..n {
            let (x, y) = (a.get_f64(start_a + k), b.get_f64(start_b + k));
            let d = element_diff(x, y);
            let bad = match tolerance {
                FuzzTolerance::Exact => d != 0.0 || x.to_bits() != y.to_bits(),
                FuzzTolerance::MaxAbs(t) => d > t,
            };
            worst = worst.max(d);
            if bad {
                count += 1;
                first.get_or_insert((k, x, y));
            }
        }
        diff.max_diff = diff.max_diff.max(worst);
        if let Some((k, x, y)) = first {
            diff.moved.get_or_insert(MovedElement {
                output: o.name.clone(),
                index: unravel(shape, start_a + k),
                expected: x,
                actual: y,
                max_diff: worst,
                differing: count,
            });
        }
    }
    diff
}

/// Row-major multi-index of flat index `i`.
pub fn unravel(shape: &[usize], mut i: usize) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            idx[d] = i % n;
            i /= n;
        }
    }
    idx
}

/// `lengths_rule` violations of a run: the first output that is not
/// `ceil(valid / n)` for some clip, as (output, clip, got, want).
pub fn lengths_rule(
    spec: &FuzzSpec,
    outs: &[Tensor],
    valid: &[usize],
) -> Option<(String, usize, f64, usize)> {
    for (i, o) in spec.outputs.iter().enumerate() {
        let Some(n) = o.lengths_rule else { continue };
        for (c, &v) in valid.iter().enumerate() {
            let want = v.div_ceil(n);
            let got = if c < outs[i].numel() {
                outs[i].get_f64(c)
            } else {
                f64::NAN
            };
            if got != want as f64 {
                return Some((o.name.clone(), c, got, want));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unravel_is_row_major() {
        assert_eq!(unravel(&[2, 8, 48], 48 * 8 + 49), vec![1, 1, 1]);
        assert_eq!(unravel(&[3], 2), vec![2]);
    }

    #[test]
    fn non_finite_moves_are_infinite() {
        assert_eq!(element_diff(1.0, f64::NAN), f64::INFINITY);
        // NaN never equals NaN, not even bit for bit (issue 28: NaN outputs
        // on both sides hid a leak from a padded hole).
        assert_eq!(element_diff(f64::NAN, f64::NAN), f64::INFINITY);
        assert_eq!(element_diff(f64::INFINITY, f64::INFINITY), 0.0);
        assert_eq!(element_diff(1.0, 1.5), 0.5);
    }
}
