//! Enumerating the edits of one operation.

use super::text::{self, array_ints, set_array_ints};
use super::{binary_swaps, dims, unary_swaps, AfterOp, Change, Edit, EditKind, Width, STEM};
use parity_mlir::Function;

/// Every edit of op `o` whose text (as it stands where it is edited, operand
/// names included) is `op_text`, in the catalogue of `width` (the wide one
/// holds only what the common one does not). `constant[k]`: op k computes a
/// constant only; `named` is where a constant's edit is reported (its consumer).
pub fn edits_of(
    func: &Function,
    o: usize,
    op_text: &str,
    constant: &[bool],
    named: Option<usize>,
    width: Width,
) -> Vec<Edit> {
    let op = &func.ops[o];
    let line = text::first_line(op_text);
    let (Some(&r), 1) = (op.results.first(), op.results.len()) else {
        return Vec::new();
    };
    if text::result_name(op_text).is_none() {
        return Vec::new();
    }
    let rty = func.values[r].ty.text.clone();
    let short = op.name.trim_start_matches("stablehlo.");
    let float = text::float_element(&rty);
    let mut out = Vec::new();
    let mut push = |kind: EditKind, what: String, change: Change| {
        if let Change::Rewrite { text: t, .. } = &change {
            if t == op_text {
                return;
            }
        }
        out.push(Edit {
            op: o,
            named: o,
            kind,
            what,
            change,
        });
    };
    let rewrite = |new_first: String| Change::Rewrite {
        helpers: Vec::new(),
        text: op_text.replacen(line, &new_first, 1),
    };
    if width == Width::Wide {
        let mut consts = Vec::new();
        if let (true, Some(n), Some(k)) = (constant[o], named, splat_int(line, &rty)) {
            for d in [-4i64, -3, -2, -1, 1, 2, 3, 4] {
                // Never a zero: an integer division by it is not defined,
                // and every edit runs on every search run.
                let to = k + d;
                if to == 0 {
                    continue;
                }
                consts.push(Edit {
                    op: o,
                    named: n,
                    kind: EditKind::ConstantOffset,
                    what: format!(
                        "constant {} = {k} should be {to}",
                        text::result_name(op_text).unwrap_or("")
                    ),
                    change: rewrite(line.replacen(
                        &format!("dense<{k}>"),
                        &format!("dense<{to}>"),
                        1,
                    )),
                });
            }
        }
        if let (true, Some(n)) = (constant[o], named) {
            consts.extend(super::band::band_edits(o, op_text, &rty, n));
        }
        if !constant[o] {
            for (kind, what, l) in wrong_ops(func, o, line, float, width) {
                push(kind, what, rewrite(l));
            }
            // A convolution's input or kernel read in another layout of the
            // same type (a square kernel's height and width swapped).
            if short == "convolution" {
                let shape = |i: usize| op.operands.get(i).and_then(|&v| func.values[v].ty.shape());
                for (i, s) in [(0, shape(0)), (1, shape(1))] {
                    for (l, what) in s.map_or_else(Vec::new, |s| dims::convs(line, i, &s)) {
                        push(EditKind::WrongDims, what, rewrite(l));
                    }
                }
            }
        }
        out.extend(consts);
        return out;
    }
    if constant[o] {
        // Only splat float constants, fitted; reported on their consumer.
        if let (Some(v), Some(n)) = (text::splat_value(line), named) {
            if float {
                out.push(Edit {
                    op: o,
                    named: n,
                    kind: EditKind::ScaleConstant,
                    what: format!(
                        "constant {} = {v:e}",
                        text::result_name(op_text).unwrap_or("")
                    ),
                    change: Change::After(AfterOp::Scale),
                });
            }
        }
        return out;
    }
    let names = text::operands(line).unwrap_or_default();
    let ty = |i: usize| op.operands.get(i).map(|&v| func.values[v].ty.text.clone());

    // Swapped operands.
    let swap = match short {
        "subtract" | "divide" | "power" | "remainder" | "atan2" | "compare" => Some((0, 1)),
        "select" => Some((1, 2)),
        _ => None,
    };
    if let Some((i, j)) = swap.filter(|(i, j)| ty(*i).is_some() && ty(*i) == ty(*j)) {
        if names.len() > j && names[i] != names[j] {
            let mut swapped = names.clone();
            swapped.swap(i, j);
            if let Some(l) = text::set_operands(line, &swapped) {
                push(
                    EditKind::SwapOperands,
                    format!("swap operands {i} and {j} ({}, {})", names[i], names[j]),
                    rewrite(l),
                );
            }
        }
    }
    // Comparison direction.
    if short == "compare" {
        let dirs = ["EQ", "NE", "LT", "LE", "GT", "GE"];
        if let Some(cur) = dirs
            .iter()
            .find(|d| line.contains(&format!("comparison_direction {d}>")))
        {
            for d in dirs.iter().filter(|d| *d != cur) {
                let l = line.replacen(
                    &format!("comparison_direction {cur}>"),
                    &format!("comparison_direction {d}>"),
                    1,
                );
                push(
                    EditKind::Comparison,
                    format!("comparison {cur} -> {d}"),
                    rewrite(l),
                );
            }
        }
    }
    for (kind, what, l) in wrong_ops(func, o, line, float, width) {
        push(kind, what, rewrite(l));
    }
    // Dimensions.
    let shape = |v: usize| func.values[v].ty.shape();
    let rshape = func.values[r].ty.shape();
    match (short, op.operands.first().and_then(|&v| shape(v)), &rshape) {
        ("transpose", Some(s), Some(rs)) => {
            if let Some(p) = array_ints(line, "permutation") {
                for alt in dims::transposes(&s, rs, &p) {
                    let l = set_array_ints(line, "permutation", &alt);
                    push(
                        EditKind::WrongDims,
                        format!("permutation {p:?} -> {alt:?}"),
                        rewrite(l),
                    );
                }
            }
        }
        ("broadcast_in_dim", Some(s), Some(rs)) => {
            if let Some(d) = array_ints(line, "broadcast_dimensions") {
                for alt in dims::broadcasts(&s, rs, &d) {
                    let l = set_array_ints(line, "broadcast_dimensions", &alt);
                    push(
                        EditKind::WrongDims,
                        format!("broadcast dimensions {d:?} -> {alt:?}"),
                        rewrite(l),
                    );
                }
            }
        }
        ("reduce", Some(s), Some(rs)) => {
            if let Some(d) = array_ints(line, "dimensions") {
                for alt in dims::reduces(&s, rs, &d) {
                    let l = set_array_ints(line, "dimensions", &alt);
                    push(
                        EditKind::WrongDims,
                        format!("reduce dimensions {d:?} -> {alt:?}"),
                        rewrite(l),
                    );
                }
            }
        }
        ("dot_general", Some(ls), Some(rs)) => {
            let rhs = op.operands.get(1).and_then(|&v| shape(v));
            let key = |k: &str| text::ints(line, &format!("{k} = [")).unwrap_or_default();
            if let Some(rhs) = rhs {
                let d = (
                    key("lhs_batching_dimensions"),
                    key("rhs_batching_dimensions"),
                    key("lhs_contracting_dimensions"),
                    key("rhs_contracting_dimensions"),
                );
                for (lc, rc) in dims::dots(&ls, &rhs, rs, &d) {
                    let l = text::set_ints(line, "lhs_contracting_dimensions = [", &lc);
                    let l = text::set_ints(&l, "rhs_contracting_dimensions = [", &rc);
                    push(
                        EditKind::WrongDims,
                        format!(
                            "contracting dimensions {:?}x{:?} -> {lc:?}x{rc:?}",
                            d.2, d.3
                        ),
                        rewrite(l),
                    );
                }
            }
        }
        _ => {}
    }
    // Off-by-one slices (window kept) and pads (total kept).
    if short == "slice" {
        if let (Some(s), Some(start), Some(limit)) = (
            op.operands.first().and_then(|&v| shape(v)),
            array_ints(line, "start_indices"),
            array_ints(line, "limit_indices"),
        ) {
            for d in 0..start.len().min(s.len()) {
                for delta in [-1i64, 1] {
                    let (a, b) = (start[d] + delta, limit[d] + delta);
                    if a >= 0 && b <= s[d] as i64 {
                        let (mut s2, mut l2) = (start.clone(), limit.clone());
                        s2[d] = a;
                        l2[d] = b;
                        let l = set_array_ints(
                            &set_array_ints(line, "start_indices", &s2),
                            "limit_indices",
                            &l2,
                        );
                        push(
                            EditKind::SliceShift,
                            format!("slice dim {d} shifted by {delta:+}"),
                            rewrite(l),
                        );
                    }
                }
            }
        }
    }
    if short == "pad" {
        if let (Some(low), Some(high)) = (
            array_ints(line, "edge_padding_low"),
            array_ints(line, "edge_padding_high"),
        ) {
            for d in 0..low.len().min(high.len()) {
                // A causal pad written symmetric, an off-by-one: shape kept.
                let total = (low[d] + high[d]).clamp(0, 8);
                for delta in (1..=total).flat_map(|k| [-k, k]) {
                    if low[d] + delta < 0 || high[d] - delta < 0 {
                        continue;
                    }
                    let (mut l2, mut h2) = (low.clone(), high.clone());
                    l2[d] += delta;
                    h2[d] -= delta;
                    let l = set_array_ints(
                        &set_array_ints(line, "edge_padding_low", &l2),
                        "edge_padding_high",
                        &h2,
                    );
                    push(
                        EditKind::PadMove,
                        format!("pad dim {d}: low {delta:+}, high {:+}", -delta),
                        rewrite(l),
                    );
                }
            }
        }
    }
    // Off-by-k integers becoming floats (a position read at the wrong
    // offset, e.g. a rope position taken after a cache advanced it).
    if short == "convert" {
        if let (Some(&x), Some(xn)) = (op.operands.first(), names.first()) {
            let xt = func.values[x].ty.text.clone();
            if text::integer_element(&xt) && float {
                for k in [-4i64, -3, -2, -1, 1, 2, 3, 4] {
                    let helpers = vec![
                        format!("{STEM}_k = \"stablehlo.constant\"() <{{value = dense<{k}> : {xt}}}> : () -> {xt}"),
                        format!("{STEM}_x = \"stablehlo.add\"({xn}, {STEM}_k) : ({xt}, {xt}) -> {xt}"),
                    ];
                    if let Some(l) = text::set_operands(line, &[&format!("{STEM}_x")]) {
                        push(
                            EditKind::ConvertOffset,
                            format!("its integer operand {xn} offset by {k:+}"),
                            Change::Rewrite {
                                helpers,
                                text: op_text.replacen(line, &l, 1),
                            },
                        );
                    }
                }
            }
        }
    }
    // The op bypassed (an extra op in the port): an operand of the result's type.
    let mut seen = Vec::new();
    for (i, &v) in op.operands.iter().enumerate() {
        let Some(name) = names.get(i) else { continue };
        let is_const = func.op_of(v).is_some_and(|p| constant[p]);
        if func.values[v].ty.text == rty && !is_const && !seen.contains(name) {
            seen.push(*name);
            push(
                EditKind::Bypass,
                format!("bypassed: operand {i} ({name}) used instead of its result"),
                Change::Bypass(name.to_string()),
            );
        }
    }
    // A missing op after this one.
    if float {
        push(
            EditKind::InsertNegate,
            "negated".into(),
            Change::After(AfterOp::Negate),
        );
        push(
            EditKind::InsertScale,
            "scaled".into(),
            Change::After(AfterOp::Scale),
        );
        push(
            EditKind::InsertOffset,
            "offset".into(),
            Change::After(AfterOp::Offset),
        );
    }
    out
}

/// Another elementwise op of the same arity (same operand and result
/// types): the kind, what it is, and the op's new first line.
fn wrong_ops(
    func: &Function,
    o: usize,
    line: &str,
    float: bool,
    width: Width,
) -> Vec<(EditKind, String, String)> {
    let op = &func.ops[o];
    let Some(&r) = op.results.first() else {
        return Vec::new();
    };
    let rty = &func.values[r].ty.text;
    let short = op.name.trim_start_matches("stablehlo.");
    let all_same = op.operands.iter().all(|&v| func.values[v].ty.text == *rty);
    if !all_same || op.has_regions {
        return Vec::new();
    }
    let (kind, tos) = match op.operands.len() {
        2 => (EditKind::WrongBinary, binary_swaps(short, float, width)),
        1 => (EditKind::WrongUnary, unary_swaps(short, float, width)),
        _ => return Vec::new(),
    };
    tos.into_iter()
        .map(|to| {
            (
                kind,
                format!("{short} -> {to}"),
                text::set_op_name(line, &op.name, &format!("stablehlo.{to}")),
            )
        })
        .collect()
}

/// The value of a splat integer constant (`dense<4> : tensor<i32>`).
fn splat_int(line: &str, ty: &str) -> Option<i64> {
    if !line.contains("\"stablehlo.constant\"") || !text::integer_element(ty) {
        return None;
    }
    line.split("dense<")
        .nth(1)?
        .split('>')
        .next()?
        .trim()
        .parse()
        .ok()
}
