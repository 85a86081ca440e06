//! A binary op missing after an op: `op(x, v)` where `v` is a value the
//! region already computes (of `x`'s type, or broadcast to it), or a sum or
//! max of `x` itself over one axis, broadcast back (a missing softmax
//! normaliser or max shift). Part of the wide catalogue
//! ([`super::Width::Wide`]).

use super::text;
use super::{Change, Edit, EditKind, STEM};
use parity_mlir::{Function, ValueId};

/// The placeholder for the edited op's original result in
/// [`Change::Combine`] helpers.
pub const ORIG: &str = "%ORIG";

/// Values nearest before the op that are tried as the other operand.
const NEAR: usize = 4;

/// The ops a missing binary op may have been (`x op v`).
const OPS: [&str; 4] = ["multiply", "divide", "add", "subtract"];

/// Combine edits of op `blocks[pos]`, each with its cost rank (0: a
/// reduction of the op's own result, 1: a value of its type, 2: a value
/// broadcast to it). The other operand is a value computed before it
/// (nearest first), or one of the region's `inputs` (its arguments: a
/// weight never multiplied in is a missing op too), each with its own quota.
pub fn combine_edits(
    func: &Function,
    blocks: &[(usize, &str)],
    pos: usize,
    inputs: &[ValueId],
    constant: &[bool],
) -> Vec<(u8, Edit)> {
    let (o, _) = blocks[pos];
    let op = &func.ops[o];
    let (Some(&r), 1) = (op.results.first(), op.results.len()) else {
        return Vec::new();
    };
    let ty = func.values[r].ty.text.clone();
    let (Some(shape), true) = (func.values[r].ty.shape(), text::float_element(&ty)) else {
        return Vec::new();
    };
    let elem = text::element(&ty).to_string();
    let mut out = Vec::new();
    let edit = |op_name: &'static str, what: String, helpers: Vec<String>, other: String| Edit {
        op: o,
        named: o,
        kind: EditKind::InsertBinary,
        what,
        change: Change::Combine {
            op: op_name,
            helpers,
            other,
        },
    };
    // Its own sum (a normaliser) or max (a max shift) over one axis.
    for (a, &n) in shape.iter().enumerate() {
        if n < 2 {
            continue;
        }
        let kept: Vec<usize> = (0..shape.len()).filter(|&d| d != a).collect();
        let rty = tensor_type(&kept.iter().map(|&d| shape[d]).collect::<Vec<_>>(), &elem);
        for (reducer, init, op_name, what) in [
            ("add", zero(&elem), "divide", "a missing normaliser"),
            ("maximum", neg_inf(&elem), "subtract", "a missing max shift"),
        ] {
            let Some(init) = init else { continue };
            let st = format!("tensor<{elem}>");
            let helpers = vec![
                format!("{STEM}_i = \"stablehlo.constant\"() <{{value = dense<{init}> : {st}}}> : () -> {st}"),
                format!(
                    "{STEM}_r = \"stablehlo.reduce\"({ORIG}, {STEM}_i) <{{dimensions = array<i64: {a}>}}> ({{\n\
                     ^bb0({STEM}_a: {st}, {STEM}_c: {st}):\n\
                     {STEM}_s = \"stablehlo.{reducer}\"({STEM}_a, {STEM}_c) : ({st}, {st}) -> {st}\n\
                     \"stablehlo.return\"({STEM}_s) : ({st}) -> ()\n\
                     }}) : ({ty}, {st}) -> {rty}"
                ),
                broadcast(&format!("{STEM}_r"), &rty, &kept, &ty),
            ];
            let by = if reducer == "add" { "sum" } else { "max" };
            out.push((
                0,
                edit(
                    op_name,
                    format!("its result {op_name} its {by} over dim {a} ({what})"),
                    helpers,
                    format!("{STEM}_b"),
                ),
            ));
        }
    }
    // Values computed before it, nearest first; then the inputs.
    let before = blocks[..pos].iter().rev().filter_map(|&(p, t)| {
        let pop = &func.ops[p];
        (!constant[p] && pop.results.len() == 1)
            .then(|| Some((pop.results[0], text::result_name(t)?.to_string())))
            .flatten()
    });
    let given = inputs.iter().map(|&v| (v, func.values[v].name.clone()));
    for values in [before.collect::<Vec<_>>(), given.collect()] {
        let (mut same, mut wider) = (0, 0);
        for (v, name) in values {
            if same >= NEAR && wider >= NEAR {
                break;
            }
            let vty = &func.values[v].ty.text;
            // (rank, how it is read, helpers, the other operand's name).
            let (rank, how, helpers, other) = if *vty == ty {
                if same >= NEAR || v == r {
                    continue;
                }
                same += 1;
                (1, "", Vec::new(), name.clone())
            } else {
                let dims = func.values[v]
                    .ty
                    .shape()
                    .filter(|_| wider < NEAR && text::element(vty) == elem)
                    .and_then(|vshape| broadcast_dims(&vshape, &shape));
                let Some(dims) = dims else { continue };
                wider += 1;
                let helpers = vec![broadcast(&name, vty, &dims, &ty)];
                (2, " broadcast", helpers, format!("{STEM}_b"))
            };
            for op_name in OPS {
                out.push((
                    rank,
                    edit(
                        op_name,
                        format!("its result {op_name} {name}{how} (a missing {op_name})"),
                        helpers.clone(),
                        other.clone(),
                    ),
                ));
            }
        }
    }
    out
}

/// How `from` broadcasts to `to` by `broadcast_in_dim`: the same rank with
/// size-1 dims (kept dims of a reduction), or fewer dims matched in order to
/// the last dims of `to` that have their sizes. None when it does not, or
/// when it is `to` itself.
fn broadcast_dims(from: &[usize], to: &[usize]) -> Option<Vec<usize>> {
    if from == to || from.len() > to.len() {
        return None;
    }
    if from.len() == to.len() {
        let ok = from.iter().zip(to).all(|(a, b)| a == b || *a == 1);
        return ok.then(|| (0..to.len()).collect());
    }
    // Match from's dims to to's, right to left, each to the nearest dim of
    // its size (a reduction drops dims; what remains keeps its order).
    let mut dims = vec![0; from.len()];
    let mut at = to.len();
    for (i, &n) in from.iter().enumerate().rev() {
        at = (0..at).rev().find(|&d| to[d] == n)?;
        dims[i] = at;
    }
    Some(dims)
}

/// `%STEM_b = broadcast_in_dim(value)` to `to`.
fn broadcast(value: &str, from: &str, dims: &[usize], to: &str) -> String {
    let d = if dims.is_empty() {
        "array<i64>".to_string()
    } else {
        format!(
            "array<i64: {}>",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "{STEM}_b = \"stablehlo.broadcast_in_dim\"({value}) <{{broadcast_dimensions = {d}}}> : ({from}) -> {to}"
    )
}

fn tensor_type(shape: &[usize], elem: &str) -> String {
    let mut s = String::from("tensor<");
    for d in shape {
        s.push_str(&format!("{d}x"));
    }
    s.push_str(elem);
    s.push('>');
    s
}

fn zero(elem: &str) -> Option<&'static str> {
    matches!(elem, "f32" | "f16" | "bf16" | "f64").then_some("0.000000e+00")
}

/// -inf as MLIR's hex literal for the element type.
fn neg_inf(elem: &str) -> Option<&'static str> {
    match elem {
        "f32" => Some("0xFF800000"),
        "f16" => Some("0xFC00"),
        "bf16" => Some("0xFF80"),
        "f64" => Some("0xFFF0000000000000"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_dims_match_kept_and_dropped_dims() {
        assert_eq!(broadcast_dims(&[2, 1], &[2, 5]), Some(vec![0, 1]));
        assert_eq!(broadcast_dims(&[2], &[2, 5]), Some(vec![0]));
        assert_eq!(broadcast_dims(&[5], &[2, 5]), Some(vec![1]));
        assert_eq!(broadcast_dims(&[2, 5], &[2, 3, 5]), Some(vec![0, 2]));
        assert_eq!(broadcast_dims(&[], &[2, 5]), Some(vec![]));
        assert_eq!(broadcast_dims(&[3], &[2, 5]), None);
        assert_eq!(broadcast_dims(&[2, 5], &[2, 5]), None);
        assert_eq!(broadcast_dims(&[2, 3], &[2, 5]), None);
    }

    #[test]
    fn tensor_types_and_broadcasts_are_mlir() {
        assert_eq!(tensor_type(&[2, 5], "f32"), "tensor<2x5xf32>");
        assert_eq!(tensor_type(&[], "bf16"), "tensor<bf16>");
        assert_eq!(
            broadcast("%3", "tensor<2xf32>", &[0], "tensor<2x5xf32>"),
            "%STEM_b = \"stablehlo.broadcast_in_dim\"(%3) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x5xf32>"
        );
    }
}
