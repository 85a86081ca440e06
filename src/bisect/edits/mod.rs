//! The edit catalogue: one-operation mistakes ports make, as edits of a
//! function's generic MLIR text. The repair search applies each edit to the
//! region to see whether it undoes the fault; the fault injector
//! ([`super::inject`]) applies one to make a fault. One catalogue for both,
//! so every kind of fault the injector makes is one the search can undo.
//!
//! Every edit keeps the edited operation's result type: an edit replaces one
//! value of the function by another of the same type, so it can be selected
//! at run time (`select(k == selector, edited, original)`).

mod dims;
pub mod text;

use parity_mlir::Function;
use std::fmt;

/// What kind of mistake an edit makes (or undoes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EditKind {
    /// Two operands swapped (`a - b` for `b - a`; select's branches).
    SwapOperands,
    /// Another comparison direction (`LT` for `LE`, ...).
    Comparison,
    /// Another elementwise binary op (add/subtract, multiply/divide, max/min, and/or/xor).
    WrongBinary,
    /// Another elementwise unary op (exp/log, tanh/logistic, sqrt/rsqrt, abs/negate, ...).
    WrongUnary,
    /// Other transpose / broadcast / reduce / dot_general dimensions, same result type.
    WrongDims,
    /// A slice window shifted by one along a dimension.
    SliceShift,
    /// Padding moved between the two ends of a dimension.
    PadMove,
    /// The integer operand of an integer-to-float convert offset by -4..4.
    ConvertOffset,
    /// The op bypassed: one of its operands (same type) used instead of its result.
    Bypass,
    /// A negate inserted after the op.
    InsertNegate,
    /// A splat float constant times a fitted scale.
    ScaleConstant,
    /// A fitted scalar multiply inserted after the op.
    InsertScale,
    /// A fitted scalar add inserted after the op.
    InsertOffset,
}

impl EditKind {
    /// Short name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            EditKind::SwapOperands => "swapped operands",
            EditKind::Comparison => "comparison direction",
            EditKind::WrongBinary => "wrong binary op",
            EditKind::WrongUnary => "wrong unary op",
            EditKind::WrongDims => "wrong dimensions",
            EditKind::SliceShift => "slice shifted",
            EditKind::PadMove => "pad moved",
            EditKind::ConvertOffset => "convert offset",
            EditKind::Bypass => "op bypassed",
            EditKind::InsertNegate => "negate inserted",
            EditKind::ScaleConstant => "constant fitted",
            EditKind::InsertScale => "scale inserted",
            EditKind::InsertOffset => "offset inserted",
        }
    }

    /// Whether the edit takes the fitted scale argument.
    pub fn fitted(self) -> bool {
        matches!(
            self,
            EditKind::ScaleConstant | EditKind::InsertScale | EditKind::InsertOffset
        )
    }

    /// Rank among equally good repairs: the simpler explanation first (a
    /// rewrite of the op itself before an op added or removed, a fitted
    /// value last: it has a free parameter).
    pub fn simplicity(self) -> u8 {
        match self {
            EditKind::SwapOperands | EditKind::Comparison => 0,
            EditKind::WrongBinary | EditKind::WrongUnary => 1,
            EditKind::SliceShift | EditKind::PadMove | EditKind::WrongDims => 2,
            EditKind::ConvertOffset => 3,
            EditKind::Bypass | EditKind::InsertNegate => 4,
            EditKind::ScaleConstant => 5,
            EditKind::InsertScale | EditKind::InsertOffset => 6,
        }
    }
}

impl fmt::Display for EditKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an edit changes the function.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// The op rewritten: `helpers` (lines defining `%STEM_*` names, placed
    /// before it) and its new text (still defining its own result name).
    Rewrite { helpers: Vec<String>, text: String },
    /// A new op on the original result: negate, times the scale, plus the scale.
    After(AfterOp),
    /// The result replaced by this operand (its name in the op's text).
    Bypass(String),
}

/// An op appended to the original result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterOp {
    /// `-x`.
    Negate,
    /// `x * s`.
    Scale,
    /// `x + s`.
    Offset,
    /// `x` rounded to bf16 and back (`reduce_precision` e8m7): a rounding
    /// fault, for the injector only (the f64 shadow finds these).
    RoundBf16,
}

/// The placeholder for helper names in [`Change::Rewrite`].
pub const STEM: &str = "%STEM";

/// One edit of one operation.
#[derive(Clone, Debug)]
pub struct Edit {
    /// The edited op (index into the function's ops).
    pub op: usize,
    /// The op an edit is reported on: the op itself, or for a constant the
    /// first op using it.
    pub named: usize,
    /// The kind of mistake.
    pub kind: EditKind,
    /// What the edit does, for people.
    pub what: String,
    /// The change.
    pub change: Change,
}

/// The lines that compute an edit's value, and the name holding it.
pub struct Rendered {
    /// Lines to insert (each ends with a newline).
    pub lines: String,
    /// The SSA name of the edited value.
    pub value: String,
}

impl Edit {
    /// Renders the edit of `op_text` (the op as it stands, result `orig`
    /// already computed by it) as lines defining `result`; helpers are named
    /// `{stem}_*`; `scale` names a `tensor<f32>` scalar (fitted edits).
    pub fn render(
        &self,
        op_text: &str,
        ty: &str,
        result: &str,
        orig: &str,
        scale: &str,
        stem: &str,
        indent: &str,
    ) -> Option<Rendered> {
        let loc = text::location(op_text);
        let mut lines = String::new();
        match &self.change {
            Change::Rewrite { helpers, text: t } => {
                for h in helpers {
                    lines.push_str(&format!("{indent}{}\n", h.replace(STEM, stem)));
                }
                let body = text::rename_result(t, result)?.replace(STEM, stem);
                lines.push_str(&format!("{indent}{body}\n"));
            }
            Change::After(after) => {
                let elem = text::element(ty);
                let s = if matches!(after, AfterOp::Scale | AfterOp::Offset) {
                    let mut s = scale.to_string();
                    if elem != "f32" {
                        s = format!("{stem}_sc");
                        lines.push_str(&format!(
                            "{indent}{s} = \"stablehlo.convert\"({scale}) : (tensor<f32>) -> tensor<{elem}> {loc}\n"
                        ));
                    }
                    if ty != format!("tensor<{elem}>") {
                        let b = format!("{stem}_b");
                        lines.push_str(&format!(
                            "{indent}{b} = \"stablehlo.broadcast_in_dim\"({s}) <{{broadcast_dimensions = array<i64>}}> : (tensor<{elem}>) -> {ty} {loc}\n"
                        ));
                        s = b;
                    }
                    s
                } else {
                    String::new()
                };
                let line = match after {
                    AfterOp::Negate => {
                        format!("{result} = \"stablehlo.negate\"({orig}) : ({ty}) -> {ty} {loc}")
                    }
                    AfterOp::Scale => format!(
                        "{result} = \"stablehlo.multiply\"({orig}, {s}) : ({ty}, {ty}) -> {ty} {loc}"
                    ),
                    AfterOp::Offset => format!(
                        "{result} = \"stablehlo.add\"({orig}, {s}) : ({ty}, {ty}) -> {ty} {loc}"
                    ),
                    AfterOp::RoundBf16 => format!(
                        "{result} = \"stablehlo.reduce_precision\"({orig}) <{{exponent_bits = 8 : i32, mantissa_bits = 7 : i32}}> : ({ty}) -> {ty} {loc}"
                    ),
                };
                lines.push_str(&format!("{indent}{line}\n"));
            }
            Change::Bypass(operand) => {
                return Some(Rendered {
                    lines,
                    value: operand.clone(),
                })
            }
        }
        Some(Rendered {
            lines,
            value: result.to_string(),
        })
    }
}

/// Binary ops a port confuses with `name`, for an element type.
fn binary_swaps(name: &str, float: bool) -> &'static [&'static str] {
    match (name, float) {
        ("add", _) => &["subtract"],
        ("subtract", _) => &["add"],
        ("multiply", _) => &["divide"],
        ("divide", _) => &["multiply"],
        ("maximum", _) => &["minimum"],
        ("minimum", _) => &["maximum"],
        ("and", false) => &["or"],
        ("or", false) => &["and", "xor"],
        ("xor", false) => &["or"],
        _ => &[],
    }
}

/// Unary ops a port confuses with `name`, for an element type.
fn unary_swaps(name: &str, float: bool) -> &'static [&'static str] {
    match (name, float) {
        ("exponential", true) => &["log", "exponential_minus_one"],
        ("exponential_minus_one", true) => &["exponential"],
        ("log", true) => &["exponential", "log_plus_one"],
        ("log_plus_one", true) => &["log"],
        ("tanh", true) => &["logistic"],
        ("logistic", true) => &["tanh"],
        ("sqrt", true) => &["rsqrt"],
        ("rsqrt", true) => &["sqrt"],
        ("sine", true) => &["cosine"],
        ("cosine", true) => &["sine"],
        ("abs", _) => &["negate"],
        ("negate", _) => &["abs"],
        _ => &[],
    }
}

/// The first op using op `o`'s result, directly or through constant-only ops
/// (a `broadcast_in_dim` of a constant), among `eligible`.
pub fn consumer(
    func: &Function,
    o: usize,
    constant: &[bool],
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let mut derived: std::collections::HashSet<usize> =
        func.ops[o].results.iter().copied().collect();
    for (k, op) in func.ops.iter().enumerate().skip(o + 1) {
        if !op
            .operands
            .iter()
            .chain(&op.captures)
            .any(|v| derived.contains(v))
        {
            continue;
        }
        if !constant[k] && eligible(k) {
            return Some(k);
        }
        if constant[k] {
            derived.extend(op.results.iter().copied());
        }
    }
    None
}

/// Which ops compute constants only (no function argument reaches them).
pub fn constant_ops(func: &Function) -> Vec<bool> {
    let mut depends = vec![false; func.values.len()];
    for &a in &func.args {
        depends[a] = true;
    }
    let mut out = vec![true; func.ops.len()];
    for (k, op) in func.ops.iter().enumerate() {
        let d = op.operands.iter().chain(&op.captures).any(|&v| depends[v]);
        for &r in &op.results {
            depends[r] = d;
        }
        out[k] = !d;
    }
    out
}

/// Where an op inserted after op `o` also acts: following single users
/// through ops that commute with it, up to and including the first op that
/// does not. Every op commutes with the layout ops (broadcast, reshape,
/// transpose, slice, a float convert); a negate or a scale (not an offset)
/// also passes through the ops linear in that operand (multiply, a divide's
/// numerator, dot_general, convolution, a reduce that adds). `-x`
/// broadcast is `-(x broadcast)`: a negate missing after `x` is missing at
/// the broadcast's user too.
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
        let layout = matches!(
            op.name.as_str(),
            "stablehlo.broadcast_in_dim"
                | "stablehlo.reshape"
                | "stablehlo.transpose"
                | "stablehlo.slice"
                | "stablehlo.convert"
        );
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
        let scales = matches!(after, AfterOp::Negate | AfterOp::Scale);
        if !float || op.results.len() != 1 || !(layout || (scales && linear)) {
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
        let layout = matches!(
            op.name.as_str(),
            "stablehlo.broadcast_in_dim"
                | "stablehlo.reshape"
                | "stablehlo.transpose"
                | "stablehlo.slice"
                | "stablehlo.convert"
        );
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

mod catalogue;
pub use catalogue::edits_of;
