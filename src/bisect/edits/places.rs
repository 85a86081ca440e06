//! Where an edit acts: an op inserted after another acts all along the
//! chain of ops it commutes with, and a comparison with the select it alone
//! feeds is one decision. The repair search names the op all surviving
//! edits share; the injector lists these places among its right answers.

use super::{AfterOp, Edit, EditKind};
use parity_mlir::Function;

/// Where an op inserted after op `o` also acts: following single users
/// through ops that commute with it, up to and including the first op that
/// does not. Every op commutes with the layout ops (broadcast, reshape,
/// transpose, slice, a float convert); a negate or a scale (not an offset)
/// also passes through the ops linear in that operand (multiply, a divide's
/// numerator, dot_general, convolution, a reduce that adds), and a fitted
/// offset or scale through the ops that only change its value (a negate, an
/// add; a divide, a power by a constant). `-x` broadcast is
/// `-(x broadcast)`: a negate missing after `x` is missing at the
/// broadcast's user too.
pub fn downstream_places(func: &Function, o: usize, after: AfterOp) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = o;
    while let Some(&r) = func.ops[at].results.first() {
        let [user] = func.users(r)[..] else { break };
        out.push(user);
        let op = &func.ops[user];
        let float = op
            .results
            .first()
            .is_some_and(|&v| func.values[v].ty.is_float());
        let layout = moves_values(&op.name);
        let linear = match op.name.as_str() {
            "stablehlo.multiply" | "stablehlo.dot_general" | "stablehlo.convolution" => true,
            "stablehlo.divide" => op.operands.first() == Some(&r),
            "stablehlo.reduce" => {
                op.operands.first() == Some(&r)
                    && op.text.contains("\"stablehlo.add\"")
                    && !op.text.contains("\"stablehlo.maximum\"")
            }
            _ => false,
        };
        // A fitted value absorbs what the op does to it: `-(x + c)` is
        // `-x + (-c)`, `(x + c) + y` is `(x + y) + c`, `(s x) / y` is
        // `s (x / y)`, `(s x)^p` is `s^p x^p`.
        let fitted = match (after, op.name.as_str()) {
            (AfterOp::Offset, "stablehlo.negate" | "stablehlo.add" | "stablehlo.subtract") => true,
            (
                AfterOp::Scale,
                "stablehlo.negate" | "stablehlo.divide" | "stablehlo.sqrt" | "stablehlo.rsqrt",
            ) => true,
            (AfterOp::Scale, "stablehlo.power") => op
                .operands
                .get(1)
                .is_some_and(|&e| e != r && func.op_of(e).is_some_and(|p| constant_op(func, p))),
            (AfterOp::Negate, "stablehlo.negate") => true,
            _ => false,
        };
        let scales = matches!(after, AfterOp::Negate | AfterOp::Scale);
        if !float || op.results.len() != 1 || !(layout || fitted || (scales && linear)) {
            break;
        }
        at = user;
    }
    out
}

/// Where an op inserted after op `o` also acts, upstream: while `o` is a
/// layout op on a float operand (broadcast, reshape, transpose, slice, a
/// float convert) that is its operand's only user, the producer of that
/// operand (an offset after a broadcast is the offset before it).
pub fn upstream_places(func: &Function, o: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = o;
    loop {
        let op = &func.ops[at];
        let layout = moves_values(&op.name);
        let Some(&x) = op.operands.first() else { break };
        if !layout || !func.values[x].ty.is_float() || func.users(x) != [at] {
            break;
        }
        let Some(q) = func.op_of(x) else { break };
        out.push(q);
        at = q;
    }
    out
}

/// A comparison and the select it alone feeds are one decision: flipping
/// the comparison and swapping the select's branches are the same fix. For
/// such an edit, the other op of the pair.
pub fn decision_partner(func: &Function, e: &Edit) -> Option<usize> {
    let op = &func.ops[e.op];
    match e.kind {
        EditKind::Comparison => {
            let [user] = func.users(*op.results.first()?)[..] else {
                return None;
            };
            let u = &func.ops[user];
            (u.name == "stablehlo.select" && u.operands.first() == op.results.first())
                .then_some(user)
        }
        EditKind::SwapOperands if op.name == "stablehlo.select" => {
            let pred = *op.operands.first()?;
            let c = func.op_of(pred)?;
            (func.ops[c].name == "stablehlo.compare" && func.users(pred) == [e.op]).then_some(c)
        }
        _ => None,
    }
}

/// Whether op `o` computes a constant only (no function argument reaches it).
fn constant_op(func: &Function, o: usize) -> bool {
    let op = &func.ops[o];
    op.operands
        .iter()
        .chain(&op.captures)
        .all(|&v| func.op_of(v).is_some_and(|p| constant_op(func, p)))
}

/// Ops that move or widen values without arithmetic between them: a scale
/// or offset commutes with them (convert: up to rounding).
fn moves_values(name: &str) -> bool {
    matches!(
        name,
        "stablehlo.broadcast_in_dim"
            | "stablehlo.reshape"
            | "stablehlo.transpose"
            | "stablehlo.slice"
            | "stablehlo.convert"
    )
}
