//! Where a fault of each kind can go: the eligible edits of a function.

use super::{FaultKind, Site};
use crate::bisect::edits::{self, text, AfterOp, Change, Edit, EditKind};
use parity_mlir::{Function, Op};

/// The eligible places of `func` for `kind`, in op order (the seeded choice
/// depends on this order).
pub(super) fn sites_of<'m>(
    func: &'m Function,
    kind: FaultKind,
    exclude: &dyn Fn(&Function, usize) -> bool,
) -> Vec<Site<'m>> {
    let constant = edits::constant_ops(func);
    let mut out = Vec::new();
    for (o, op) in func.ops.iter().enumerate() {
        if exclude(func, o) || op.results.len() != 1 {
            continue;
        }
        let named = if constant[o] {
            let Some(n) = constant_consumer(func, o, &constant, exclude) else {
                continue;
            };
            Some(n)
        } else {
            None
        };
        let all = edits::edits_of(func, o, &op.text, &constant, named, edits::Width::Common);
        let candidate = Candidate {
            func,
            o,
            op,
            constant: &constant,
            exclude,
        };
        out.extend(candidate.edits(kind, all).into_iter().map(|edit| Site {
            func,
            edit,
            value: 1.0,
        }));
    }
    out
}

/// The one consumer of constant op `o`, where a wrong value there is named;
/// `None` when it has several (or none), or that consumer is excluded.
fn constant_consumer(
    func: &Function,
    o: usize,
    constant: &[bool],
    exclude: &dyn Fn(&Function, usize) -> bool,
) -> Option<usize> {
    // A constant with one consumer: a wrong value there is that
    // consumer's fault, whatever else the constant feeds.
    let n = edits::consumer(func, o, constant, |_| true)?;
    let consumers = func
        .ops
        .iter()
        .enumerate()
        .filter(|(k, x)| {
            !constant[*k]
                && x.operands.iter().any(|&v| {
                    func.op_of(v)
                        .is_some_and(|p| p == o || (constant[p] && derives(func, p, o, constant)))
                })
        })
        .count();
    (consumers == 1 && !exclude(func, n)).then_some(n)
}

/// The catalogue kind whose edits are a fault kind's sites as they are.
fn catalogue_kind(kind: FaultKind) -> Option<EditKind> {
    match kind {
        FaultKind::WrongBinary => Some(EditKind::WrongBinary),
        FaultKind::WrongUnary => Some(EditKind::WrongUnary),
        FaultKind::SwappedOperands => Some(EditKind::SwapOperands),
        FaultKind::SliceOffByOne => Some(EditKind::SliceShift),
        FaultKind::PadMoved => Some(EditKind::PadMove),
        FaultKind::FlippedComparison => Some(EditKind::Comparison),
        FaultKind::WrongDims => Some(EditKind::WrongDims),
        _ => None,
    }
}

/// One op of the function, with what deciding its sites needs.
struct Candidate<'a> {
    func: &'a Function,
    o: usize,
    op: &'a Op,
    constant: &'a [bool],
    exclude: &'a dyn Fn(&Function, usize) -> bool,
}

impl Candidate<'_> {
    /// The op's sites for `kind`, out of `all`, its common-width catalogue edits.
    fn edits(&self, kind: FaultKind, all: Vec<Edit>) -> Vec<Edit> {
        let (o, op) = (self.o, self.op);
        let ty = &self.func.values[op.results[0]].ty.text;
        let float = text::float_element(ty);
        if let Some(k) = catalogue_kind(kind) {
            return all.into_iter().filter(|e| e.kind == k).collect();
        }
        match kind {
            // Sentinels (a clip bound of 1e10, a -1e9 mask fill) are not
            // hyper-parameters: scaling them changes nothing.
            FaultKind::WrongConstant => all
                .into_iter()
                .filter(|e| e.kind == EditKind::ScaleConstant)
                .filter(|_| {
                    text::splat_value(text::first_line(&op.text)).is_some_and(|v| v.abs() < 1e6)
                })
                .collect(),
            FaultKind::MissingOp => self.bypasses(all, float),
            FaultKind::ExtraOp | FaultKind::Rounding
                if float && !self.constant[o] && !op.has_regions =>
            {
                self.added(kind, ty).into_iter().collect()
            }
            FaultKind::NonFinite
                if op.name == "stablehlo.exponential" && text::element(ty) == "f32" =>
            {
                self.overflow(ty).into_iter().collect()
            }
            _ => Vec::new(),
        }
    }

    /// The ops that use op `o`'s results.
    fn users(&self, o: usize) -> Vec<usize> {
        self.func.ops[o]
            .results
            .iter()
            .flat_map(|&r| self.func.users(r))
            .collect()
    }

    /// The bypass edits that leave a missing op on one edge.
    fn bypasses(&self, all: Vec<Edit>, float: bool) -> Vec<Edit> {
        let (func, o, op, constant) = (self.func, self.o, self.op, self.constant);
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
            || self.users(o).len() != 1
        {
            return Vec::new();
        }
        all.into_iter()
            .filter(|e| e.kind == EditKind::Bypass)
            .filter(|e| {
                let Change::Bypass(name) = &e.change else {
                    return false;
                };
                let producer = func.value_by_name(name).and_then(|v| func.op_of(v));
                producer.is_some_and(|p| {
                    !constant[p] && self.users(p).len() == 1 && !(self.exclude)(func, p)
                })
            })
            .collect()
    }

    /// An op added after this one: a bf16 round trip (rounding), else a
    /// negate or a scale by 2 (alternating with the op's index).
    fn added(&self, kind: FaultKind, ty: &str) -> Option<Edit> {
        let o = self.o;
        let after = match kind {
            FaultKind::Rounding => AfterOp::RoundBf16,
            _ if o.is_multiple_of(2) => AfterOp::Negate,
            _ => AfterOp::Scale,
        };
        if kind == FaultKind::Rounding && text::element(ty) != "f32" {
            return None;
        }
        Some(Edit {
            op: o,
            named: o,
            kind: EditKind::InsertNegate,
            what: match after {
                AfterOp::Negate => "a negate added after it".into(),
                AfterOp::Scale => "a scale by 2 added after it".into(),
                _ => "a bf16 round trip added after it".into(),
            },
            change: Change::After(after),
        })
    }

    /// This exp's operand offset by +100, so the exp overflows f32.
    fn overflow(&self, ty: &str) -> Option<Edit> {
        let (o, op) = (self.o, self.op);
        let line = text::first_line(&op.text);
        let x = text::operands(line).and_then(|v| v.first().map(|s| s.to_string()))?;
        let helpers = vec![
            format!("{0}_c = \"stablehlo.constant\"() <{{value = dense<1.000000e+02> : {ty}}}> : () -> {ty}", edits::STEM),
            format!("{0}_x = \"stablehlo.add\"({x}, {0}_c) : ({ty}, {ty}) -> {ty}", edits::STEM),
        ];
        let l = text::set_operands(line, &[&format!("{}_x", edits::STEM)])?;
        Some(Edit {
            op: o,
            named: o,
            kind: EditKind::ConvertOffset,
            what: format!("its operand {x} plus 100, so exp overflows f32"),
            change: Change::Rewrite {
                helpers,
                text: op.text.replacen(line, &l, 1),
            },
        })
    }
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
