//! Faults that span two ops, undone by one edit. A reduction over the
//! wrong axis, broadcast back: `broadcast(reduce_a(x))`
//! where the model has `broadcast(reduce_b(x))`. The fault spans two ops (the
//! reduce's dimensions and the broadcast's), so neither op's own edits undo
//! it; this edit rewrites the broadcast to read a copy of the reduce over
//! another axis. Only axes of the same size: the types then stay, which is
//! when such a port runs silently (a square attention matrix) instead of
//! failing on a shape. Part of the wide catalogue.

use super::text;
use super::{Change, Edit, EditKind, Site, STEM};
use parity_mlir::Function;

/// The edits of op `blocks[pos]` when it broadcasts a single-axis reduce
/// (in `blocks` before it) back to the reduce's operand type.
pub fn reaxis_edits(func: &Function, blocks: &[(usize, &str)], pos: usize) -> Vec<Edit> {
    let (o, t) = blocks[pos];
    let op = &func.ops[o];
    if op.name != "stablehlo.broadcast_in_dim" || op.results.len() != 1 {
        return Vec::new();
    }
    let Some(&v) = op.operands.first() else {
        return Vec::new();
    };
    let Some(p) = func.op_of(v) else {
        return Vec::new();
    };
    let Some(&(_, pt)) = blocks[..pos].iter().find(|(q, _)| *q == p) else {
        return Vec::new();
    };
    let reduce = &func.ops[p];
    let (Some(&x), 1, 2) = (
        reduce.operands.first(),
        reduce.results.len(),
        reduce.operands.len(),
    ) else {
        return Vec::new();
    };
    let rty = &func.values[op.results[0]].ty.text;
    if reduce.name != "stablehlo.reduce" || func.values[x].ty.text != *rty {
        return Vec::new();
    }
    let (Some(shape), Some(pname)) = (func.values[x].ty.shape(), text::result_name(pt)) else {
        return Vec::new();
    };
    let pline = text::first_line(pt);
    let line = text::first_line(t);
    let Some(&[a]) = text::array_ints(pline, "dimensions").as_deref() else {
        return Vec::new();
    };
    let a = a as usize;
    if a >= shape.len() || pt.contains('#') {
        return Vec::new();
    }
    let mut out = Vec::new();
    for b in (0..shape.len()).filter(|&b| b != a && shape[b] == shape[a]) {
        // The reduce copied under a helper name, over dim b (same type).
        let Some(copy) = text::rename_result(pt.trim_end(), &format!("{STEM}_r")) else {
            continue;
        };
        let first = text::first_line(&copy);
        let copy = copy.replacen(
            first,
            &text::set_array_ints(first, "dimensions", &[b as i64]),
            1,
        );
        let kept: Vec<i64> = (0..shape.len())
            .filter(|&d| d != b)
            .map(|d| d as i64)
            .collect();
        let Some(l) = text::set_operands(line, &[&format!("{STEM}_r")]) else {
            continue;
        };
        let l = text::set_array_ints(&l, "broadcast_dimensions", &kept);
        out.push(Edit {
            op: o,
            named: o,
            kind: EditKind::WrongDims,
            what: format!("the reduction {pname} over dim {b} instead of {a}, broadcast back"),
            change: Change::Rewrite {
                helpers: vec![copy],
                text: t.replacen(line, &l, 1),
            },
        });
    }
    out
}

/// Two slices of one value with the same type and strides but other
/// windows, taken the other way round (a GLU's or a split's halves
/// swapped): one edit rewrites both, each to the other's window. Edits of
/// op `blocks[pos]`, paired with every such slice after it.
pub fn swapped_slices(func: &Function, blocks: &[(usize, &str)], pos: usize) -> Vec<Edit> {
    let (o, t) = blocks[pos];
    let op = &func.ops[o];
    if op.name != "stablehlo.slice" || op.results.len() != 1 {
        return Vec::new();
    }
    let window = |line: &str| {
        Some((
            text::array_ints(line, "start_indices")?,
            text::array_ints(line, "limit_indices")?,
            text::array_ints(line, "strides")?,
        ))
    };
    let line = text::first_line(t);
    let Some((start, limit, strides)) = window(line) else {
        return Vec::new();
    };
    let ty = &func.values[op.results[0]].ty.text;
    let mut out = Vec::new();
    for &(q, qt) in &blocks[pos + 1..] {
        let other = &func.ops[q];
        let qline = text::first_line(qt);
        let same_source = other.name == op.name
            && other.operands.first() == op.operands.first()
            && other.results.len() == 1
            && func.values[other.results[0]].ty.text == *ty;
        let Some((qs, ql, qst)) = window(qline).filter(|_| same_source) else {
            continue;
        };
        if qst != strides || qs == start {
            continue;
        }
        let set = |l: &str, s: &[i64], e: &[i64]| {
            text::set_array_ints(
                &text::set_array_ints(l, "start_indices", s),
                "limit_indices",
                e,
            )
        };
        let (a, b) = (
            text::result_name(t).unwrap_or(""),
            text::result_name(qt).unwrap_or(""),
        );
        out.push(Edit {
            op: o,
            named: o,
            kind: EditKind::WrongDims,
            what: format!(
                "slices {a} and {b} of one value swapped (each takes the other's window)"
            ),
            change: Change::Sites {
                helpers: Vec::new(),
                text: t.trim_end().replacen(line, &set(line, &qs, &ql), 1),
                others: vec![Site {
                    op: q,
                    helpers: Vec::new(),
                    text: qt
                        .trim_end()
                        .replacen(qline, &set(qline, &start, &limit), 1),
                }],
            },
        });
    }
    out
}
