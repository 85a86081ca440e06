//! Aligning two dispatch sequences: by trace key and order (a longest
//! common subsequence, so dispatches one target added or dropped leave the
//! rest aligned), then what is left by the source operations each holds.

use std::collections::BTreeSet;

/// One aligned pair: reference position, tested position, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// Position in the reference sequence.
    pub reference: usize,
    /// Position in the tested sequence.
    pub target: usize,
    /// True when paired by source operations, not by key.
    pub by_ops: bool,
}

/// Longest common subsequence of the keys, preferring the earliest
/// matches (so a common prefix is always paired position by position).
pub fn by_key(reference: &[String], target: &[String]) -> Vec<Pair> {
    let (n, m) = (reference.len(), target.len());
    // suffix[i][j]: LCS length of reference[i..] and target[j..].
    let mut suffix = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            suffix[i][j] = if reference[i] == target[j] {
                suffix[i + 1][j + 1] + 1
            } else {
                suffix[i + 1][j].max(suffix[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if reference[i] == target[j] && suffix[i][j] == suffix[i + 1][j + 1] + 1 {
            out.push(Pair {
                reference: i,
                target: j,
                by_ops: false,
            });
            i += 1;
            j += 1;
        } else if suffix[i + 1][j] >= suffix[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Pairs the dispatches `by_key` left alone whose (non-empty) sets of
/// source operations are equal (or, second, overlap) and whose results
/// have the same shapes (operations that share a location would pair a
/// conversion with the matmul it feeds otherwise), in order; returns every pair, sorted by
/// reference position.
pub fn with_ops<T: PartialEq>(
    mut pairs: Vec<Pair>,
    reference_ops: &[(BTreeSet<usize>, T)],
    target_ops: &[(BTreeSet<usize>, T)],
) -> Vec<Pair> {
    // Equal operation sets first, then sets that share an operation (a
    // target that splits or fuses differently around the same op).
    let equal = |a: &BTreeSet<usize>, b: &BTreeSet<usize>| a == b;
    let overlap = |a: &BTreeSet<usize>, b: &BTreeSet<usize>| !a.is_disjoint(b);
    for same in [
        &equal as &dyn Fn(&BTreeSet<usize>, &BTreeSet<usize>) -> bool,
        &overlap,
    ] {
        let used_r: BTreeSet<usize> = pairs.iter().map(|p| p.reference).collect();
        let mut used_t: BTreeSet<usize> = pairs.iter().map(|p| p.target).collect();
        for (r, (ops, ty)) in reference_ops.iter().enumerate() {
            if used_r.contains(&r) || ops.is_empty() {
                continue;
            }
            let found = (0..target_ops.len()).find(|t| {
                !used_t.contains(t) && target_ops[*t].1 == *ty && same(ops, &target_ops[*t].0)
            });
            if let Some(t) = found {
                used_t.insert(t);
                pairs.push(Pair {
                    reference: r,
                    target: t,
                    by_ops: true,
                });
            }
        }
    }
    pairs.sort_by_key(|p| p.reference);
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys(s: &str) -> Vec<String> {
        s.chars().map(|c| c.to_string()).collect()
    }

    #[test]
    fn same_sequences_pair_position_by_position() {
        let p = by_key(&keys("abcab"), &keys("abcab"));
        assert_eq!(p.len(), 5);
        assert!(p.iter().all(|p| p.reference == p.target && !p.by_ops));
    }

    #[test]
    fn an_extra_dispatch_leaves_the_rest_aligned() {
        let p = by_key(&keys("abcd"), &keys("abxcd"));
        let got: Vec<(usize, usize)> = p.iter().map(|p| (p.reference, p.target)).collect();
        assert_eq!(got, vec![(0, 0), (1, 1), (2, 3), (3, 4)]);
    }

    #[test]
    fn leftovers_pair_by_equal_operations() {
        let pairs = by_key(&keys("axc"), &keys("ayc"));
        let ops = |v: &[&[usize]]| -> Vec<(BTreeSet<usize>, ())> {
            v.iter()
                .map(|s| (s.iter().copied().collect(), ()))
                .collect()
        };
        let all = with_ops(
            pairs,
            &ops(&[&[0], &[1, 2], &[3]]),
            &ops(&[&[0], &[1, 2], &[3]]),
        );
        assert_eq!(all.len(), 3);
        assert!(all[1].by_ops && all[1].reference == 1 && all[1].target == 1);
        // Disjoint operations: no pair; overlapping ones pair.
        let pairs = by_key(&keys("axc"), &keys("ayc"));
        let none = with_ops(pairs, &ops(&[&[0], &[1], &[3]]), &ops(&[&[0], &[2], &[3]]));
        assert_eq!(none.len(), 2);
        let pairs = by_key(&keys("axc"), &keys("ayc"));
        let some = with_ops(
            pairs,
            &ops(&[&[0], &[1, 2], &[3]]),
            &ops(&[&[0], &[2], &[3]]),
        );
        assert_eq!(some.len(), 3);
        // Same operations, other result types: no pair.
        let pairs = by_key(&keys("axc"), &keys("ayc"));
        let typed = |t: &'static str| vec![(BTreeSet::from([0]), "f32"), (BTreeSet::from([1]), t)];
        assert_eq!(with_ops(pairs, &typed("f32"), &typed("bf16")).len(), 2);
    }

    proptest! {
        /// Pairs are strictly increasing on both sides, pair equal keys, and
        /// number the longest common subsequence's length.
        #[test]
        fn lcs_is_monotone_and_maximal(a in "[abc]{0,12}", b in "[abc]{0,12}") {
            let (ka, kb) = (keys(&a), keys(&b));
            let p = by_key(&ka, &kb);
            for w in p.windows(2) {
                prop_assert!(w[0].reference < w[1].reference && w[0].target < w[1].target);
            }
            for x in &p {
                prop_assert_eq!(&ka[x.reference], &kb[x.target]);
            }
            // Brute-force LCS length.
            let mut dp = vec![vec![0usize; kb.len() + 1]; ka.len() + 1];
            for i in 0..ka.len() {
                for j in 0..kb.len() {
                    dp[i + 1][j + 1] = if ka[i] == kb[j] { dp[i][j] + 1 } else { dp[i][j + 1].max(dp[i + 1][j]) };
                }
            }
            prop_assert_eq!(p.len(), dp[ka.len()][kb.len()]);
        }
    }
}
