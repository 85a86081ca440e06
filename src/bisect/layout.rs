//! How a production value can hold an oracle tensor's numbers: the same
//! shape (up to size-1 axes), a transpose of it, or only the same elements
//! in row-major order (a reshape). Used by `parity points --propose-map`.

use parity_tensor::Tensor;
use serde::Serialize;

/// At most this many transposes are tried per (value, oracle tensor) pair.
pub const MAX_PERMUTATIONS: usize = 24;

/// How the production value is laid out relative to the oracle tensor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Layout {
    /// Same shape once size-1 axes are dropped.
    Same,
    /// The production value's (squeezed) axes permuted by `perm` give the
    /// oracle's (squeezed) shape: `oracle[i0, i1, ..] = value[.., i_k at axis perm[k], ..]`.
    Transpose {
        /// Output axis k is the value's squeezed axis `perm[k]`.
        perm: Vec<usize>,
    },
    /// Same number of elements, another shape; compared in row-major order.
    Reshape,
}

impl Layout {
    /// Preference order: same shape, then transpose, then reshape.
    pub fn rank(&self) -> u8 {
        match self {
            Layout::Same => 0,
            Layout::Transpose { .. } => 1,
            Layout::Reshape => 2,
        }
    }

    /// As the proposal prints it.
    pub fn describe(&self) -> String {
        match self {
            Layout::Same => "same shape".into(),
            Layout::Transpose { perm } => format!("transposed {perm:?}"),
            Layout::Reshape => "reshaped".into(),
        }
    }
}

/// `shape` without its size-1 axes.
pub fn squeezed(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// The layouts under which a value of shape `value` can be compared with an
/// oracle tensor of shape `oracle`, most natural first; empty when the
/// element counts differ. Transposes are the non-identity permutations of
/// the squeezed axes that map the shapes onto each other (at most
/// [`MAX_PERMUTATIONS`]).
pub fn layouts(value: &[usize], oracle: &[usize]) -> Vec<Layout> {
    let n = |s: &[usize]| s.iter().product::<usize>();
    if n(value) != n(oracle) {
        return Vec::new();
    }
    let (v, o) = (squeezed(value), squeezed(oracle));
    let mut out = Vec::new();
    if v == o {
        out.push(Layout::Same);
    }
    if v.len() == o.len() {
        let mut perms = Vec::new();
        permutations(&v, &o, &mut Vec::new(), &mut perms);
        out.extend(
            perms
                .into_iter()
                .filter(|p| p.iter().enumerate().any(|(i, &a)| i != a))
                .map(|perm| Layout::Transpose { perm }),
        );
    }
    if v != o {
        out.push(Layout::Reshape);
    }
    out
}

fn permutations(v: &[usize], o: &[usize], prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if out.len() >= MAX_PERMUTATIONS {
        return;
    }
    let k = prefix.len();
    if k == o.len() {
        out.push(prefix.clone());
        return;
    }
    for a in 0..v.len() {
        if v[a] == o[k] && !prefix.contains(&a) {
            prefix.push(a);
            permutations(v, o, prefix, out);
            prefix.pop();
        }
    }
}

/// `value` rearranged by `layout` into `oracle_shape`, in its own dtype (exact).
pub fn arrange(value: &Tensor, layout: &Layout, oracle_shape: &[usize]) -> Option<Tensor> {
    match layout {
        Layout::Same | Layout::Reshape => value.reshaped(oracle_shape.to_vec()),
        Layout::Transpose { perm } => {
            let dims = squeezed(value.shape());
            let mut strides = vec![1usize; dims.len()];
            for i in (0..dims.len().saturating_sub(1)).rev() {
                strides[i] = strides[i + 1] * dims[i + 1];
            }
            let out_dims: Vec<usize> = perm.iter().map(|&a| dims[a]).collect();
            let src = value.to_f64_vec();
            let mut data = Vec::with_capacity(src.len());
            let mut index = vec![0usize; out_dims.len()];
            for _ in 0..src.len() {
                let offset: usize = index.iter().zip(perm).map(|(&i, &a)| i * strides[a]).sum();
                data.push(src[offset]);
                for k in (0..index.len()).rev() {
                    index[k] += 1;
                    if index[k] < out_dims[k] {
                        break;
                    }
                    index[k] = 0;
                }
            }
            Tensor::from_f64_as(value.dtype(), oracle_shape.to_vec(), &data).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_list_same_then_transposes_then_reshape() {
        assert_eq!(layouts(&[1, 4, 8], &[4, 8]), vec![Layout::Same]);
        assert_eq!(
            layouts(&[4, 8], &[8, 4]),
            vec![Layout::Transpose { perm: vec![1, 0] }, Layout::Reshape]
        );
        // Square: the identity is `Same`, the swap a transpose.
        assert_eq!(
            layouts(&[3, 3], &[3, 3]),
            vec![Layout::Same, Layout::Transpose { perm: vec![1, 0] }]
        );
        assert_eq!(layouts(&[2, 6], &[3, 4]), vec![Layout::Reshape]);
        assert!(layouts(&[2, 6], &[3, 5]).is_empty());
    }

    #[test]
    fn arrange_transposes_into_the_oracle_layout() {
        // value [2, 3] = [[0, 1, 2], [3, 4, 5]]; its transpose [3, 2] is [[0, 3], [1, 4], [2, 5]].
        let v = Tensor::from_f32(vec![2, 3], &[0., 1., 2., 3., 4., 5.]).unwrap();
        let t = arrange(&v, &Layout::Transpose { perm: vec![1, 0] }, &[1, 3, 2]).unwrap();
        assert_eq!(t.shape(), &[1, 3, 2]);
        assert_eq!(t.to_f64_vec(), vec![0., 3., 1., 4., 2., 5.]);
        let r = arrange(&v, &Layout::Reshape, &[3, 2]).unwrap();
        assert_eq!(r.to_f64_vec(), vec![0., 1., 2., 3., 4., 5.]);
    }
}
