//! A banded boolean mask with an edge one off: a local-attention window one
//! key too wide or too narrow, a causal mask that lets a query see itself
//! or not. Such a mask is often a non-splat `i1` constant (the port
//! precomputed it), out of reach of the fitted and integer constants. When
//! the constant's last two dims hold a band, `m[i][j] = lo <= j - i <= hi`
//! (the same for every leading index), each edge is moved by one. Part of
//! the wide catalogue; reported on the constant's first consumer.

use super::text;
use super::{Change, Edit, EditKind};

/// The flattened values of a `dense<[[true, false], ...]>` literal.
fn literal(line: &str) -> Option<Vec<bool>> {
    let rest = line.split("dense<[").nth(1)?;
    let body = &rest[..rest.find("]>")?];
    body.split(',')
        .map(|t| match t.trim().trim_matches(['[', ']']).trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
        .collect()
}

/// `values` (row-major, of `shape`) as a nested MLIR literal.
fn nested(values: &[bool], shape: &[usize]) -> String {
    match shape {
        [] => values
            .first()
            .map_or("false", |b| if *b { "true" } else { "false" })
            .into(),
        [_, rest @ ..] => {
            let inner: usize = rest.iter().product();
            let parts: Vec<String> = values
                .chunks(inner.max(1))
                .map(|c| nested(c, rest))
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// The band `[lo, hi]` of `j - i` the mask holds (every leading index the
/// same), when it is a band that is neither empty nor everything.
pub fn band_of(values: &[bool], shape: &[usize]) -> Option<(i64, i64)> {
    let [.., r, c] = *shape else { return None };
    let plane = r * c;
    if plane == 0 || values.len() != shape.iter().product::<usize>() {
        return None;
    }
    let first = &values[..plane];
    if values.chunks(plane).any(|p| p != first) {
        return None;
    }
    let d = |k: usize| (k % c) as i64 - (k / c) as i64;
    let on: Vec<i64> = (0..plane).filter(|&k| first[k]).map(d).collect();
    let (lo, hi) = (*on.iter().min()?, *on.iter().max()?);
    let band = (0..plane).all(|k| first[k] == (lo..=hi).contains(&d(k)));
    (band && on.len() < plane).then_some((lo, hi))
}

/// `shape`'s mask of the band `[lo, hi]` of `j - i`.
fn mask(shape: &[usize], lo: i64, hi: i64) -> Vec<bool> {
    let c = shape[shape.len() - 1];
    let r = shape[shape.len() - 2];
    let n: usize = shape.iter().product();
    (0..n)
        .map(|k| {
            let k = k % (r * c);
            (lo..=hi).contains(&((k % c) as i64 - (k / c) as i64))
        })
        .collect()
}

/// The edits of constant op `o` (text `op_text`, type `ty`) when it is a
/// band mask: each edge moved by one (a different, non-empty mask),
/// reported on `named`.
pub fn band_edits(o: usize, op_text: &str, ty: &str, named: usize) -> Vec<Edit> {
    let line = text::first_line(op_text);
    let shape = parity_mlir::Type::new(ty).shape();
    let (Some(shape), Some(values), true) = (shape, literal(line), text::element(ty) == "i1")
    else {
        return Vec::new();
    };
    let Some((lo, hi)) = band_of(&values, &shape) else {
        return Vec::new();
    };
    let Some(start) = line.find("dense<[") else {
        return Vec::new();
    };
    let end = start + line[start..].find("]>").unwrap_or(0) + 1;
    let name = text::result_name(op_text).unwrap_or("");
    let mut out = Vec::new();
    for (l2, h2) in [(lo - 1, hi), (lo + 1, hi), (lo, hi - 1), (lo, hi + 1)] {
        let m = mask(&shape, l2, h2);
        if l2 > h2 || m == values || !m.contains(&true) {
            continue;
        }
        let new = format!(
            "{}dense<{}{}",
            &line[..start],
            nested(&m, &shape),
            &line[end..]
        );
        out.push(Edit {
            op: o,
            named,
            kind: EditKind::MaskBand,
            what: format!("mask {name}: the band j - i in [{lo}, {hi}] should be [{l2}, {h2}]"),
            change: Change::Rewrite {
                helpers: Vec::new(),
                text: op_text.replacen(line, &new, 1),
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: &str = "%5 = \"stablehlo.constant\"() <{value = dense<[[true, true, false, false], [true, true, true, false], [false, true, true, true]]> : tensor<3x4xi1>}> : () -> tensor<3x4xi1> loc(\"m\")";

    #[test]
    fn a_window_one_too_wide_is_narrowed_back() {
        let v = literal(WIDE).unwrap();
        assert_eq!(band_of(&v, &[3, 4]), Some((-1, 1)));
        let edits = band_edits(5, WIDE, "tensor<3x4xi1>", 9);
        let whats: Vec<&str> = edits.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "mask %5: the band j - i in [-1, 1] should be [-2, 1]",
                "mask %5: the band j - i in [-1, 1] should be [0, 1]",
                "mask %5: the band j - i in [-1, 1] should be [-1, 0]",
                "mask %5: the band j - i in [-1, 1] should be [-1, 2]",
            ]
        );
        assert_eq!(edits[1].named, 9);
        let Change::Rewrite { text: t, .. } = &edits[1].change else {
            panic!()
        };
        assert_eq!(
            t,
            "%5 = \"stablehlo.constant\"() <{value = dense<[[true, true, false, false], [false, true, true, false], [false, false, true, true]]> : tensor<3x4xi1>}> : () -> tensor<3x4xi1> loc(\"m\")"
        );
    }

    #[test]
    fn only_bands_repeated_over_leading_dims_are_edited() {
        // Not a band: a hole inside a row.
        assert_eq!(band_of(&[true, false, true, true], &[1, 4]), None);
        // All true: no edge to move.
        assert_eq!(band_of(&[true; 4], &[2, 2]), None);
        // A causal 2x2 mask repeated over a leading dim of 2.
        let causal = [true, false, true, true];
        let two: Vec<bool> = causal.iter().chain(&causal).copied().collect();
        assert_eq!(band_of(&two, &[2, 2, 2]), Some((-1, 0)));
        assert_eq!(
            nested(&two, &[2, 2, 2]),
            "[[[true, false], [true, true]], [[true, false], [true, true]]]"
        );
        // Different leading slices: not one band.
        let mixed = [true, false, true, true, true, true, true, true];
        assert_eq!(band_of(&mixed, &[2, 2, 2]), None);
        // Not boolean, or a splat: nothing.
        assert!(band_edits(5, &WIDE.replace("xi1", "xi32"), "tensor<3x4xi32>", 9).is_empty());
        let splat = "%5 = \"stablehlo.constant\"() <{value = dense<true> : tensor<3x4xi1>}> : () -> tensor<3x4xi1>";
        assert!(band_edits(5, splat, "tensor<3x4xi1>", 9).is_empty());
    }
}
