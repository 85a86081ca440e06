//! An operand that should be another value already computed: a port that
//! reads the raw logits where the model reads the capped ones, the input
//! of a block where it should read its normalised copy. Each operand of
//! the op is pointed at each of the nearest values of its type the region
//! computes before the op. Part of the wide catalogue, after the missing
//! ops (every op has several operands, so these are many).

use super::text;
use super::{Change, Edit, EditKind};
use parity_mlir::Function;

/// Values nearest before the op tried for each operand.
const NEAR: usize = 4;

/// The edits of op `blocks[pos]` (index into the region's blocks, as
/// emitted): each non-constant operand pointed at one of the [`NEAR`]
/// nearest earlier non-constant results of its type.
pub fn redirect_edits(
    func: &Function,
    blocks: &[(usize, &str)],
    pos: usize,
    constant: &[bool],
) -> Vec<Edit> {
    let (o, t) = blocks[pos];
    let op = &func.ops[o];
    let line = text::first_line(t);
    let (Some(names), false, 1) = (text::operands(line), op.has_regions, op.results.len()) else {
        return Vec::new();
    };
    if names.len() != op.operands.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, &v) in op.operands.iter().enumerate() {
        if func.op_of(v).is_some_and(|p| constant[p]) {
            continue;
        }
        let ty = &func.values[v].ty.text;
        let earlier = blocks[..pos]
            .iter()
            .rev()
            .filter(|(q, _)| !constant[*q] && func.ops[*q].results.len() == 1)
            .filter(|(q, _)| {
                let r = func.ops[*q].results[0];
                r != v && func.values[r].ty.text == *ty
            })
            .filter_map(|(_, qt)| text::result_name(qt))
            .filter(|n| !names.contains(n))
            .take(NEAR);
        for to in earlier {
            let mut renamed = names.clone();
            renamed[i] = to;
            let Some(l) = text::set_operands(line, &renamed) else {
                continue;
            };
            out.push(Edit {
                op: o,
                named: o,
                kind: EditKind::Redirect,
                what: format!("operand {i} ({}) should be {to}", names[i]),
                change: Change::Rewrite {
                    helpers: Vec::new(),
                    text: t.replacen(line, &l, 1),
                },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `%3` = tanh of the scaled `%1`; `%4` selects from the raw `%0`.
    const MODULE: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xi1> loc("m")):
    %0 = "stablehlo.abs"(%arg0) : (tensor<4xf32>) -> tensor<4xf32> loc("raw")
    %1 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32> loc("c")
    %2 = "stablehlo.divide"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("d")
    %3 = "stablehlo.tanh"(%2) : (tensor<4xf32>) -> tensor<4xf32> loc("capped")
    %4 = "stablehlo.select"(%arg1, %0, %arg0) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("sel")
    "func.return"(%4) : (tensor<4xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

    #[test]
    fn an_operand_is_pointed_at_the_nearest_earlier_values_of_its_type() {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        let constant = super::super::constant_ops(f);
        let blocks: Vec<(usize, &str)> = f.ops.iter().map(|o| (o.index, o.text.as_str())).collect();
        let edits = redirect_edits(f, &blocks, 4, &constant);
        let whats: Vec<&str> = edits.iter().map(|e| e.what.as_str()).collect();
        // Operand 1 (%0) may have been %3 or %2 (nearest first; not the
        // constant %1, not %0 itself); operand 2 (%arg0) likewise; the
        // boolean mask has no other value of its type.
        assert_eq!(
            whats,
            [
                "operand 1 (%0) should be %3",
                "operand 1 (%0) should be %2",
                "operand 2 (%arg0) should be %3",
                "operand 2 (%arg0) should be %2",
            ]
        );
        let Change::Rewrite { text: t, .. } = &edits[0].change else {
            panic!()
        };
        assert!(
            t.starts_with("%4 = \"stablehlo.select\"(%arg1, %3, %arg0)"),
            "{t}"
        );
    }
}
