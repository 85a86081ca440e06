//! A sum over an axis, broadcast back, that the model does not have: a
//! statistic taken over too many axes (a norm's mean and variance over
//! (T, D) where the model takes them per token, over D). Two readings,
//! each an edit of the broadcast: the sum should not be there (`x`), or it
//! is a mean over the extra axis whose divisor counted that axis (`x * n`,
//! so that the divisor the region keeps comes out right). A port makes
//! such a mistake once, in a helper, and the helper runs at each of its
//! call sites: when other broadcasts of the region read a sum of the same
//! form (same axis, types and zero init), the same edit at all of them is
//! one more candidate, reported on the first. Part of the wide catalogue.

use super::text;
use super::{Change, Edit, EditKind, Site, STEM};
use parity_mlir::Function;

/// A broadcast back of a single-axis sum, as the region's text has it.
struct ExtraSum {
    /// The broadcast (index into the function's ops).
    op: usize,
    /// The summed value's name in the text.
    x: String,
    /// The sum's name in the text.
    sum: String,
    /// The summed axis and its size.
    axis: usize,
    /// Its size.
    n: usize,
    /// The result type (the summed value's too).
    ty: String,
    /// What makes two sites the same mistake: axis, types, init.
    form: String,
}

/// Whether a constant op's text is a splat zero.
fn zero_splat(line: &str) -> bool {
    line.contains("\"stablehlo.constant\"")
        && !line.contains("dense<[")
        && line
            .split("dense<")
            .nth(1)
            .and_then(|v| v.split('>').next())
            .and_then(|v| v.trim().parse::<f64>().ok())
            == Some(0.0)
}

/// The sum that op `blocks[pos]` broadcasts back to its operand's type.
fn extra_sum(func: &Function, blocks: &[(usize, &str)], pos: usize) -> Option<ExtraSum> {
    let (o, t) = blocks[pos];
    let op = &func.ops[o];
    if op.name != "stablehlo.broadcast_in_dim" || op.results.len() != 1 {
        return None;
    }
    let p = func.op_of(*op.operands.first()?)?;
    let &(_, pt) = blocks[..pos].iter().find(|(q, _)| *q == p)?;
    let reduce = &func.ops[p];
    if reduce.name != "stablehlo.reduce" || reduce.results.len() != 1 || pt.contains('#') {
        return None;
    }
    let [x, init] = reduce.operands[..] else {
        return None;
    };
    let ty = &func.values[op.results[0]].ty;
    if func.values[x].ty.text != ty.text || !ty.is_float() {
        return None;
    }
    // The body: one add of the two block arguments, then the return.
    let body: Vec<&str> = pt.lines().skip(1).filter(|l| l.contains("= \"")).collect();
    if body.len() != 1 || !body[0].contains("\"stablehlo.add\"") {
        return None;
    }
    if !zero_splat(&func.ops[func.op_of(init)?].text) {
        return None;
    }
    let pline = text::first_line(pt);
    let &[a] = text::array_ints(pline, "dimensions")?.as_slice() else {
        return None;
    };
    let shape = ty.shape()?;
    let axis = usize::try_from(a).ok().filter(|&a| a < shape.len())?;
    // Broadcast back in place: every other axis, in order.
    let kept: Vec<i64> = (0..shape.len() as i64).filter(|&d| d != a).collect();
    if text::array_ints(text::first_line(t), "broadcast_dimensions")? != kept {
        return None;
    }
    let x_name = text::operands(pline)?.first()?.to_string();
    Some(ExtraSum {
        op: o,
        x: x_name,
        sum: text::result_name(pt)?.to_string(),
        axis,
        n: shape[axis],
        ty: ty.text.clone(),
        form: format!(
            "{a} {} {}",
            ty.text,
            func.ops[func.op_of(init)?].text.trim()
        ),
    })
}

/// `s`'s broadcast rewritten as its summed value times `c`: the helper
/// line defining the factor, and the op's new text.
fn rewrite(s: &ExtraSum, t: &str, c: usize) -> Option<(Vec<String>, String)> {
    let name = text::result_name(t)?;
    let loc = text::location(text::first_line(t));
    let ty = &s.ty;
    Some((
        vec![format!(
            "{STEM}_n = \"stablehlo.constant\"() <{{value = dense<{c}.0> : {ty}}}> : () -> {ty}"
        )],
        format!(
            "{name} = \"stablehlo.multiply\"({}, {STEM}_n) : ({ty}, {ty}) -> {ty} {loc}",
            s.x
        ),
    ))
}

/// The edits of op `blocks[pos]` when it broadcasts a single-axis sum back
/// to the summed value's type; `in_region` says which ops are the region's
/// (other sites must be).
pub fn extra_sum_edits(
    func: &Function,
    blocks: &[(usize, &str)],
    pos: usize,
    in_region: impl Fn(usize) -> bool,
) -> Vec<Edit> {
    let Some(s) = extra_sum(func, blocks, pos) else {
        return Vec::new();
    };
    let t = blocks[pos].1;
    // The other sites of the same form; the edit at all of them is made
    // once, at the first.
    let sites: Vec<(ExtraSum, &str)> = (0..blocks.len())
        .filter(|&q| q != pos && in_region(blocks[q].0))
        .filter_map(|q| extra_sum(func, blocks, q).map(|e| (e, blocks[q].1)))
        .filter(|(e, _)| e.form == s.form)
        .collect();
    let first = sites.iter().all(|(e, _)| {
        blocks.iter().position(|b| b.0 == e.op) > blocks.iter().position(|b| b.0 == s.op)
    });
    let mut out = Vec::new();
    // (factor, the reading for one site, for several).
    let readings = [
        (1, "should not be there", "should not be there"),
        (
            s.n,
            "is a mean whose divisor counted that dim",
            "are means whose divisor counted that dim",
        ),
    ];
    for (c, one, several) in readings {
        let Some((helpers, text)) = rewrite(&s, t, c) else {
            continue;
        };
        out.push(Edit {
            op: s.op,
            named: s.op,
            kind: EditKind::ExtraReduction,
            what: format!("the sum {} over dim {} {one} (x {c})", s.sum, s.axis),
            change: Change::Rewrite {
                helpers: helpers.clone(),
                text: text.clone(),
            },
        });
        if sites.is_empty() || !first {
            continue;
        }
        let others: Option<Vec<Site>> = sites
            .iter()
            .map(|(e, et)| {
                let (helpers, text) = rewrite(e, et, c)?;
                Some(Site {
                    op: e.op,
                    helpers,
                    text,
                })
            })
            .collect();
        let Some(others) = others else {
            continue;
        };
        let names: Vec<&str> = std::iter::once(s.sum.as_str())
            .chain(sites.iter().map(|(e, _)| e.sum.as_str()))
            .collect();
        let at: Vec<String> = std::iter::once(s.op)
            .chain(sites.iter().map(|(e, _)| e.op))
            .map(|o| format!("#{o}"))
            .collect();
        out.push(Edit {
            op: s.op,
            named: s.op,
            kind: EditKind::ExtraReduction,
            what: format!(
                "the sums {} over dim {} (one mistake at {} sites, broadcast back at {}) \
                 {several} (x {c})",
                names.join(", "),
                s.axis,
                names.len(),
                at.join(", ")
            ),
            change: Change::Sites {
                helpers,
                text,
                others,
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sums over dim 1 broadcast back (`%3`, `%6`, one form), and a
    /// max over dim 1 broadcast back (`%9`, not a sum).
    const MODULE: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<2x8xf32>) -> tensor<2x8xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x8xf32> loc("x")):
    %0 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc("zero")
    %1 = "stablehlo.abs"(%arg0) : (tensor<2x8xf32>) -> tensor<2x8xf32> loc("a")
    %2 = "stablehlo.reduce"(%1, %0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32> loc("p"), %arg2: tensor<f32> loc("q")):
      %10 = "stablehlo.add"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("s")
      "stablehlo.return"(%10) : (tensor<f32>) -> () loc("r")
    }) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2xf32> loc("sum1")
    %3 = "stablehlo.broadcast_in_dim"(%2) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x8xf32> loc("back1")
    %4 = "stablehlo.multiply"(%3, %1) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("m")
    %5 = "stablehlo.reduce"(%4, %0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32> loc("p"), %arg2: tensor<f32> loc("q")):
      %10 = "stablehlo.add"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("s")
      "stablehlo.return"(%10) : (tensor<f32>) -> () loc("r")
    }) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2xf32> loc("sum2")
    %6 = "stablehlo.broadcast_in_dim"(%5) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x8xf32> loc("back2")
    %7 = "stablehlo.add"(%6, %3) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> loc("n")
    %8 = "stablehlo.reduce"(%7, %0) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<f32> loc("p"), %arg2: tensor<f32> loc("q")):
      %10 = "stablehlo.maximum"(%arg1, %arg2) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("s")
      "stablehlo.return"(%10) : (tensor<f32>) -> () loc("r")
    }) : (tensor<2x8xf32>, tensor<f32>) -> tensor<2xf32> loc("max")
    %9 = "stablehlo.broadcast_in_dim"(%8) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x8xf32> loc("back3")
    "func.return"(%9) : (tensor<2x8xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

    fn edits_at(pos_of: usize) -> Vec<Edit> {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        let blocks: Vec<(usize, &str)> = f.ops.iter().map(|o| (o.index, o.text.as_str())).collect();
        let pos = blocks.iter().position(|b| b.0 == pos_of).unwrap();
        extra_sum_edits(f, &blocks, pos, |_| true)
    }

    #[test]
    fn a_sum_broadcast_back_is_undone_alone_and_at_every_site_of_its_form() {
        let m = parity_mlir::parse(MODULE).unwrap();
        let f = m.function("main").unwrap();
        let back1 = f
            .ops
            .iter()
            .position(|o| o.text.contains("loc(\"back1\")"))
            .unwrap();
        let back2 = f
            .ops
            .iter()
            .position(|o| o.text.contains("loc(\"back2\")"))
            .unwrap();
        let edits = edits_at(back1);
        let whats: Vec<&str> = edits.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "the sum %2 over dim 1 should not be there (x 1)",
                "the sums %2, %5 over dim 1 (one mistake at 2 sites, broadcast back at #3, #6) \
                 should not be there (x 1)",
                "the sum %2 over dim 1 is a mean whose divisor counted that dim (x 8)",
                "the sums %2, %5 over dim 1 (one mistake at 2 sites, broadcast back at #3, #6) \
                 are means whose divisor counted that dim (x 8)",
            ]
        );
        let Change::Sites {
            helpers,
            text: t,
            others,
        } = &edits[3].change
        else {
            panic!("{:?}", edits[3].change)
        };
        assert_eq!(
            helpers,
            &["%STEM_n = \"stablehlo.constant\"() <{value = dense<8.0> : tensor<2x8xf32>}> : () -> tensor<2x8xf32>"]
        );
        assert!(
            t.starts_with("%3 = \"stablehlo.multiply\"(%1, %STEM_n)"),
            "{t}"
        );
        assert_eq!(others.len(), 1);
        assert_eq!(others[0].op, back2);
        assert!(others[0]
            .text
            .starts_with("%6 = \"stablehlo.multiply\"(%4, %STEM_n)"));
        // The second site makes no several-site edit of its own (the first
        // does), and a max broadcast back is not a sum.
        assert_eq!(edits_at(back2).len(), 2);
        let back3 = f
            .ops
            .iter()
            .position(|o| o.text.contains("loc(\"back3\")"))
            .unwrap();
        assert!(edits_at(back3).is_empty());
    }
}
