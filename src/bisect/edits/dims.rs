//! Wrong dimensions that keep the result type: other transpose permutations,
//! broadcast_in_dim mappings, reduce dimensions and dot_general contracting
//! dimensions giving the same result shape (a port reading a layout wrongly).

/// Every permutation of `0..n` (n <= 6).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    if n > 6 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, n - 1);
            out.push(q);
        }
    }
    out.sort();
    out
}

/// Other transpose permutations of `operand` giving the same `result` shape.
pub fn transposes(operand: &[usize], result: &[usize], perm: &[i64]) -> Vec<Vec<i64>> {
    permutations(operand.len())
        .into_iter()
        .map(|p| p.into_iter().map(|d| d as i64).collect::<Vec<_>>())
        .filter(|p| p.as_slice() != perm)
        .filter(|p| {
            p.iter()
                .zip(result)
                .all(|(&d, &r)| operand[d as usize] == r)
        })
        .collect()
}

/// Other broadcast_in_dim mappings of `operand` into `result` that move a
/// non-unit dimension (unit dimensions broadcast the same wherever they go).
pub fn broadcasts(operand: &[usize], result: &[usize], dims: &[i64]) -> Vec<Vec<i64>> {
    let n = result.len();
    let moving: Vec<usize> = (0..operand.len()).filter(|&i| operand[i] != 1).collect();
    if moving.len() > 4 || n > 6 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut choice = vec![0usize; moving.len()];
    loop {
        let mut d = dims.to_vec();
        for (k, &i) in moving.iter().enumerate() {
            d[i] = choice[k] as i64;
        }
        let injective = {
            let mut seen = vec![false; n];
            d.iter()
                .all(|&x| !std::mem::replace(&mut seen[x as usize], true))
        };
        let sizes = moving.iter().all(|&i| operand[i] == result[d[i] as usize]);
        // Sorted dimensions: StableHLO allows any order, but a port writes
        // them in order; an unsorted mapping is a transpose in disguise.
        let sorted = d.windows(2).all(|w| w[0] < w[1]);
        if injective && sizes && sorted && d != dims {
            out.push(d);
        }
        let mut k = 0;
        while k < choice.len() {
            choice[k] += 1;
            if choice[k] < n {
                break;
            }
            choice[k] = 0;
            k += 1;
        }
        if k == choice.len() {
            break;
        }
    }
    out
}

/// Other reduce dimensions (as many) leaving the same result shape.
pub fn reduces(operand: &[usize], result: &[usize], dims: &[i64]) -> Vec<Vec<i64>> {
    let n = operand.len();
    if n > 8 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for mask in 0u32..(1 << n) {
        if mask.count_ones() as usize != dims.len() {
            continue;
        }
        let d: Vec<i64> = (0..n)
            .filter(|&i| mask & (1 << i) != 0)
            .map(|i| i as i64)
            .collect();
        let kept: Vec<usize> = (0..n)
            .filter(|&i| mask & (1 << i) == 0)
            .map(|i| operand[i])
            .collect();
        let mut sorted = dims.to_vec();
        sorted.sort_unstable();
        if d != sorted && kept == result {
            out.push(d);
        }
    }
    out
}

/// The result shape of a dot_general.
fn dot_shape(
    lhs: &[usize],
    rhs: &[usize],
    lb: &[i64],
    rb: &[i64],
    lc: &[i64],
    rc: &[i64],
) -> Vec<usize> {
    let has = |s: &[i64], i: usize| s.contains(&(i as i64));
    let mut out: Vec<usize> = lb.iter().map(|&d| lhs[d as usize]).collect();
    out.extend(
        (0..lhs.len())
            .filter(|&i| !has(lb, i) && !has(lc, i))
            .map(|i| lhs[i]),
    );
    out.extend(
        (0..rhs.len())
            .filter(|&i| !has(rb, i) && !has(rc, i))
            .map(|i| rhs[i]),
    );
    out
}

/// The dimension numbers of a dot_general: (lhs batch, rhs batch, lhs
/// contracting, rhs contracting).
pub type DotDims = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

/// Other contracting dimensions (one pair, batch kept) with matching sizes
/// and the same result shape.
pub fn dots(
    lhs: &[usize],
    rhs: &[usize],
    result: &[usize],
    d: &DotDims,
) -> Vec<(Vec<i64>, Vec<i64>)> {
    let (lb, rb, lc, rc) = d;
    if lc.len() != 1 || rc.len() != 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for l in 0..lhs.len() as i64 {
        for r in 0..rhs.len() as i64 {
            if lb.contains(&l) || rb.contains(&r) || (l == lc[0] && r == rc[0]) {
                continue;
            }
            if lhs[l as usize] != rhs[r as usize] {
                continue;
            }
            if dot_shape(lhs, rhs, lb, rb, &[l], &[r]) == result {
                out.push((vec![l], vec![r]));
            }
        }
    }
    out
}

/// The three layouts of a convolution's `#stablehlo.conv<[lhs]x[rhs]->[out]>`
/// dimension numbers, as their tokens (`b`, `f`, `i`, `o`, spatial digits).
pub fn conv_layouts(line: &str) -> Option<[Vec<String>; 3]> {
    let rest = &line[line.find("#stablehlo.conv<")? + "#stablehlo.conv<".len()..];
    let body = &rest[..rest.find(">,").or_else(|| rest.find(">}"))?];
    let (lhs, rest) = body.split_once("]x[")?;
    let (rhs, out) = rest.split_once("]->[")?;
    let toks = |s: &str| -> Vec<String> {
        s.trim_matches(['[', ']'])
            .split(',')
            .map(|t| t.trim().to_string())
            .collect()
    };
    Some([toks(lhs), toks(rhs), toks(out)])
}

/// Other layouts of one convolution operand (`which` 0: the input, 1: the
/// kernel) that read it with the same result type: its tokens permuted among
/// positions of equal size (a kernel's height and width swapped when it is
/// square, its in and out channels when they are equal). Each is the op's new
/// line and what changed.
pub fn convs(line: &str, which: usize, shape: &[usize]) -> Vec<(String, String)> {
    let Some(layouts) = conv_layouts(line) else {
        return Vec::new();
    };
    let cur = &layouts[which];
    if cur.len() != shape.len() {
        return Vec::new();
    }
    let old = format!(
        "[{}]x[{}]->[{}]",
        layouts[0].join(", "),
        layouts[1].join(", "),
        layouts[2].join(", ")
    );
    if !line.contains(&old) {
        return Vec::new();
    }
    permutations(cur.len())
        .into_iter()
        .filter(|p| p.iter().enumerate().any(|(k, &d)| d != k))
        .filter(|p| p.iter().enumerate().all(|(k, &d)| shape[k] == shape[d]))
        // Unit dims read the same wherever they go.
        .filter(|p| p.iter().enumerate().all(|(k, &d)| shape[k] > 1 || d == k))
        .map(|p| {
            let mut l = layouts.clone();
            l[which] = p.iter().map(|&d| cur[d].clone()).collect();
            let new = format!(
                "[{}]x[{}]->[{}]",
                l[0].join(", "),
                l[1].join(", "),
                l[2].join(", ")
            );
            let what = format!(
                "{} layout [{}] -> [{}]",
                ["input", "kernel"][which],
                cur.join(", "),
                l[which].join(", ")
            );
            (line.replacen(&old, &new, 1), what)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_keep_the_result_shape() {
        // [2, 4, 4] -> [2, 4, 4] by (0, 2, 1): (0, 1, 2) also gives [2, 4, 4].
        assert_eq!(
            transposes(&[2, 4, 4], &[2, 4, 4], &[0, 2, 1]),
            vec![vec![0, 1, 2]]
        );
        assert!(transposes(&[2, 3, 4], &[2, 4, 3], &[0, 2, 1]).is_empty());
    }

    #[test]
    fn broadcasts_move_only_non_unit_dims() {
        // [4] into [4, 4]: dims [0] -> [1].
        assert_eq!(broadcasts(&[4], &[4, 4], &[0]), vec![vec![1]]);
        assert!(broadcasts(&[1], &[4, 4], &[0]).is_empty());
        assert!(broadcasts(&[2, 8], &[2, 8, 16], &[0, 1]).is_empty());
    }

    #[test]
    fn reduces_and_dots_keep_the_result_shape() {
        assert_eq!(reduces(&[2, 8, 8], &[2, 8], &[2]), vec![vec![1]]);
        assert!(reduces(&[2, 8, 16], &[2, 8], &[2]).is_empty());
        // q k^T over [2,4,16] x [2,4,16] batch 0: contracting (2,2); (1,1)
        // gives [2,16,16], not the result [2,4,4].
        let d = (vec![0], vec![0], vec![2], vec![2]);
        assert!(dots(&[2, 4, 16], &[2, 4, 16], &[2, 4, 4], &d).is_empty());
        let d = (vec![0], vec![0], vec![2], vec![2]);
        assert_eq!(
            dots(&[2, 4, 4], &[2, 4, 4], &[2, 4, 4], &d),
            vec![(vec![1], vec![1]), (vec![1], vec![2]), (vec![2], vec![1])]
        );
    }
    #[test]
    fn a_square_kernel_may_have_been_read_with_height_and_width_swapped() {
        let line = "%3 = \"stablehlo.convolution\"(%1, %2) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[o, i, 0, 1]->[b, 0, 1, f]>, feature_group_count = 1 : i64}> : (tensor<1x8x8x1xf32>, tensor<4x1x3x3xf32>) -> tensor<1x6x6x4xf32>";
        let alts = convs(line, 1, &[4, 1, 3, 3]);
        assert_eq!(alts.len(), 1, "{alts:?}");
        assert!(alts[0]
            .0
            .contains("[b, 0, 1, f]x[o, i, 1, 0]->[b, 0, 1, f]>,"));
        assert_eq!(alts[0].1, "kernel layout [o, i, 0, 1] -> [o, i, 1, 0]");
        // A 3x5 kernel: no swap keeps the type; channels 4 and 4 may swap.
        assert!(convs(line, 1, &[4, 1, 3, 5]).is_empty());
        assert_eq!(convs(line, 1, &[4, 4, 3, 5]).len(), 1);
        // The input's 8x8 spatial dims swapped (a transposed image).
        let input = convs(line, 0, &[1, 8, 8, 1]);
        assert_eq!(input.len(), 1, "{input:?}");
        assert!(input[0].0.contains("[b, 1, 0, f]x[o, i, 0, 1]"));
    }
}
