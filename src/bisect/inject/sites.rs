//! Where a fault of each kind can go: the eligible edits of a function.

use super::{FaultKind, Site};
use crate::bisect::edits::{self, text, AfterOp, Change, Edit, EditKind};
use parity_mlir::Function;

/// The eligible places of `func` for `kind`.
pub(super) fn sites_of<'m>(
    func: &'m Function,
    kind: FaultKind,
    exclude: &dyn Fn(&Function, usize) -> bool,
) -> Vec<Site<'m>> {
    let constant = edits::constant_ops(func);
    let users = |o: usize| -> Vec<usize> {
        func.ops[o]
            .results
            .iter()
            .flat_map(|&r| func.users(r))
            .collect()
    };
    let mut out = Vec::new();
    for (o, op) in func.ops.iter().enumerate() {
        if exclude(func, o) || op.results.len() != 1 {
            continue;
        }
        let named = if constant[o] {
            // A constant with one consumer: a wrong value there is that
            // consumer's fault, whatever else the constant feeds.
            let n = edits::consumer(func, o, &constant, |_| true);
            let consumers = n.map(|_| {
                func.ops
                    .iter()
                    .enumerate()
                    .filter(|(k, x)| {
                        !constant[*k]
                            && x.operands.iter().any(|&v| {
                                func.op_of(v).is_some_and(|p| {
                                    p == o || (constant[p] && derives(func, p, o, &constant))
                                })
                            })
                    })
                    .count()
            });
            if consumers != Some(1) || n.is_some_and(|n| exclude(func, n)) {
                continue;
            }
            n
        } else {
            None
        };
        let ty = &func.values[op.results[0]].ty.text;
        let float = text::float_element(ty);
        let all = edits::edits_of(func, o, &op.text, &constant, named, edits::Width::Common);
        let mut take = |edit: Edit| {
            out.push(Site {
                func,
                edit,
                value: 1.0,
            })
        };
        match kind {
            FaultKind::WrongBinary => all
                .into_iter()
                .filter(|e| e.kind == EditKind::WrongBinary)
                .for_each(&mut take),
            FaultKind::WrongUnary => all
                .into_iter()
                .filter(|e| e.kind == EditKind::WrongUnary)
                .for_each(&mut take),
            FaultKind::SwappedOperands => all
                .into_iter()
                .filter(|e| e.kind == EditKind::SwapOperands)
                .for_each(&mut take),
            // Sentinels (a clip bound of 1e10, a -1e9 mask fill) are not
            // hyper-parameters: scaling them changes nothing.
            FaultKind::WrongConstant => all
                .into_iter()
                .filter(|e| e.kind == EditKind::ScaleConstant)
                .filter(|_| {
                    text::splat_value(text::first_line(&op.text)).is_some_and(|v| v.abs() < 1e6)
                })
                .for_each(&mut take),
            FaultKind::SliceOffByOne => all
                .into_iter()
                .filter(|e| e.kind == EditKind::SliceShift)
                .for_each(&mut take),
            FaultKind::PadMoved => all
                .into_iter()
                .filter(|e| e.kind == EditKind::PadMove)
                .for_each(&mut take),
            FaultKind::FlippedComparison => all
                .into_iter()
                .filter(|e| e.kind == EditKind::Comparison)
                .for_each(&mut take),
            FaultKind::WrongDims => all
                .into_iter()
                .filter(|e| e.kind == EditKind::WrongDims)
                .for_each(&mut take),
            FaultKind::MissingOp => {
                // A negate, or a multiply / add / subtract / divide by a
                // constant, whose other operand comes from an op used by it
                // alone and that has one user itself: deleting it leaves a
                // missing op on one edge.
                let short = op.name.trim_start_matches("stablehlo.");
                let with_constant = matches!(short, "multiply" | "add" | "subtract" | "divide")
                    && op
                        .operands
                        .iter()
                        .any(|&v| func.op_of(v).is_some_and(|p| constant[p]));
                if !float
                    || constant[o]
                    || !(short == "negate" || with_constant)
                    || users(o).len() != 1
                {
                    continue;
                }
                for e in all.into_iter().filter(|e| e.kind == EditKind::Bypass) {
                    let Change::Bypass(name) = &e.change else {
                        continue;
                    };
                    let producer = func.value_by_name(name).and_then(|v| func.op_of(v));
                    if producer
                        .is_some_and(|p| !constant[p] && users(p).len() == 1 && !exclude(func, p))
                    {
                        take(e);
                    }
                }
            }
            FaultKind::ExtraOp | FaultKind::Rounding
                if float && !constant[o] && !op.has_regions =>
            {
                let after = match kind {
                    FaultKind::Rounding => AfterOp::RoundBf16,
                    _ if o % 2 == 0 => AfterOp::Negate,
                    _ => AfterOp::Scale,
                };
                if kind == FaultKind::Rounding && text::element(ty) != "f32" {
                    continue;
                }
                take(Edit {
                    op: o,
                    named: o,
                    kind: EditKind::InsertNegate,
                    what: match after {
                        AfterOp::Negate => "a negate added after it".into(),
                        AfterOp::Scale => "a scale by 2 added after it".into(),
                        _ => "a bf16 round trip added after it".into(),
                    },
                    change: Change::After(after),
                });
            }
            FaultKind::NonFinite
                if op.name == "stablehlo.exponential" && text::element(ty) == "f32" =>
            {
                let line = text::first_line(&op.text);
                let Some(x) = text::operands(line).and_then(|v| v.first().map(|s| s.to_string()))
                else {
                    continue;
                };
                let helpers = vec![
                    format!("{0}_c = \"stablehlo.constant\"() <{{value = dense<1.000000e+02> : {ty}}}> : () -> {ty}", edits::STEM),
                    format!("{0}_x = \"stablehlo.add\"({x}, {0}_c) : ({ty}, {ty}) -> {ty}", edits::STEM),
                ];
                let Some(l) = text::set_operands(line, &[&format!("{}_x", edits::STEM)]) else {
                    continue;
                };
                take(Edit {
                    op: o,
                    named: o,
                    kind: EditKind::ConvertOffset,
                    what: format!("its operand {x} plus 100, so exp overflows f32"),
                    change: Change::Rewrite {
                        helpers,
                        text: op.text.replacen(line, &l, 1),
                    },
                });
            }
            _ => {}
        }
    }
    out
}

/// Whether constant op `p` is derived from constant op `o` (through constant-only ops).
fn derives(func: &Function, p: usize, o: usize, constant: &[bool]) -> bool {
    if p == o {
        return true;
    }
    p > o
        && constant[p]
        && func.ops[p]
            .operands
            .iter()
            .any(|&v| func.op_of(v).is_some_and(|q| derives(func, q, o, constant)))
}
