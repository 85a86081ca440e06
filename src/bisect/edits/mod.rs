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
    /// Another activation of the same value (SiLU written ReLU: `max(x, 0)`
    /// for `x * logistic(x)`).
    WrongActivation,
    /// Other transpose / broadcast / reduce / dot_general dimensions, same result type.
    WrongDims,
    /// A slice window shifted by one along a dimension.
    SliceShift,
    /// Padding moved between the two ends of a dimension.
    PadMove,
    /// The integer operand of an integer-to-float convert offset by -4..4.
    ConvertOffset,
    /// A splat integer constant offset by -4..4 (a position or length off
    /// by a few; reported on its first consumer).
    ConstantOffset,
    /// A banded boolean mask constant with an edge moved by one (a window
    /// one too wide; reported on its first consumer).
    MaskBand,
    /// A sum over an axis, broadcast back, that the model does not have
    /// (a norm's statistics over too many axes), at one site or at every
    /// site of the same form.
    ExtraReduction,
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
    /// A binary op inserted after the op, its other operand a value the
    /// region computes (or a sum / max of the op's result over an axis).
    InsertBinary,
    /// A fitted soft cap `c * tanh(x / c)` inserted after the op (logits
    /// left uncapped).
    InsertSoftcap,
    /// An operand pointed at another value of its type the region computes
    /// before the op.
    Redirect,
}

impl EditKind {
    /// Short name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            EditKind::SwapOperands => "swapped operands",
            EditKind::Comparison => "comparison direction",
            EditKind::WrongBinary => "wrong binary op",
            EditKind::WrongUnary => "wrong unary op",
            EditKind::WrongActivation => "wrong activation",
            EditKind::WrongDims => "wrong dimensions",
            EditKind::SliceShift => "slice shifted",
            EditKind::PadMove => "pad moved",
            EditKind::ConvertOffset => "convert offset",
            EditKind::ConstantOffset => "integer constant offset",
            EditKind::MaskBand => "mask band edge",
            EditKind::ExtraReduction => "reduction over an extra axis",
            EditKind::Bypass => "op bypassed",
            EditKind::InsertNegate => "negate inserted",
            EditKind::ScaleConstant => "constant fitted",
            EditKind::InsertScale => "scale inserted",
            EditKind::InsertOffset => "offset inserted",
            EditKind::InsertBinary => "binary op inserted",
            EditKind::InsertSoftcap => "soft cap inserted",
            EditKind::Redirect => "operand redirected",
        }
    }

    /// Whether the edit takes the fitted scale argument.
    pub fn fitted(self) -> bool {
        matches!(
            self,
            EditKind::ScaleConstant
                | EditKind::InsertScale
                | EditKind::InsertOffset
                | EditKind::InsertSoftcap
        )
    }

    /// Rank among equally good repairs: the simpler explanation first (a
    /// rewrite of the op itself before an op added or removed, a fitted
    /// value last: it has a free parameter).
    pub fn simplicity(self) -> u8 {
        match self {
            EditKind::SwapOperands | EditKind::Comparison => 0,
            EditKind::WrongBinary | EditKind::WrongUnary | EditKind::WrongActivation => 1,
            EditKind::SliceShift
            | EditKind::PadMove
            | EditKind::WrongDims
            | EditKind::ExtraReduction => 2,
            EditKind::ConvertOffset | EditKind::ConstantOffset | EditKind::MaskBand => 3,
            EditKind::Bypass
            | EditKind::InsertNegate
            | EditKind::InsertBinary
            | EditKind::Redirect => 4,
            EditKind::ScaleConstant => 5,
            EditKind::InsertScale | EditKind::InsertOffset | EditKind::InsertSoftcap => 6,
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
    Rewrite {
        /// Lines defining `%STEM_*` helper values, placed before the op.
        helpers: Vec<String>,
        /// The op's new text, defining its own result name.
        text: String,
    },
    /// A new op on the original result: negate, times the scale, plus the scale.
    After(AfterOp),
    /// The result replaced by this operand (its name in the op's text).
    Bypass(String),
    /// `op(result, other)`: `helpers` (lines defining `%STEM_*` names from
    /// values before the op and the original result, [`combine::ORIG`])
    /// compute `other`.
    Combine {
        /// The binary op, e.g. `multiply`.
        op: &'static str,
        /// Lines defining `%STEM_*` helper values.
        helpers: Vec<String>,
        /// The other operand: a value's name, or a helper's.
        other: String,
    },
    /// Several ops rewritten together, under one selector value: the edited
    /// op becomes `text` (after its `helpers`), and each of `others` is
    /// rewritten as it says. One mistake made at several places: two slices
    /// of one value that took each other's window; a helper with a mistake,
    /// called at each of its sites.
    Sites {
        /// Lines defining `%STEM_*` helper values, placed before the op.
        helpers: Vec<String>,
        /// The edited op's new text, defining its own result name.
        text: String,
        /// The other ops, each with its new text.
        others: Vec<Site>,
    },
}

/// Another op a [`Change::Sites`] edit rewrites.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// The op (index into the function's ops).
    pub op: usize,
    /// Lines defining `%STEM_*` helper values, placed before it.
    pub helpers: Vec<String>,
    /// Its new text, defining its own result name.
    pub text: String,
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
    /// `s * tanh(x / s)`: a soft cap.
    Softcap,
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

/// The names an edit is rendered with.
pub struct Names<'a> {
    /// The name the edited value gets.
    pub result: &'a str,
    /// The name holding the original op's result (already computed).
    pub orig: &'a str,
    /// A `tensor<f32>` scalar: the fitted value.
    pub scale: &'a str,
    /// Prefix of helper names (`{stem}_*`).
    pub stem: &'a str,
    /// Indentation of every line.
    pub indent: &'a str,
}

impl Edit {
    /// Renders the edit of `op_text` (the op as it stands, of result type
    /// `ty`) as lines defining `names.result`.
    pub fn render(&self, op_text: &str, ty: &str, names: &Names) -> Option<Rendered> {
        let Names {
            result,
            orig,
            scale,
            stem,
            indent,
        } = *names;
        let loc = text::location(op_text);
        let mut lines = String::new();
        match &self.change {
            Change::After(after) => {
                let elem = text::element(ty);
                let s = if matches!(after, AfterOp::Scale | AfterOp::Offset | AfterOp::Softcap) {
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
                    AfterOp::Softcap => {
                        let (d, t) = (format!("{stem}_d"), format!("{stem}_t"));
                        lines.push_str(&format!(
                            "{indent}{d} = \"stablehlo.divide\"({orig}, {s}) : ({ty}, {ty}) -> {ty} {loc}\n\
                             {indent}{t} = \"stablehlo.tanh\"({d}) : ({ty}) -> {ty} {loc}\n"
                        ));
                        format!(
                            "{result} = \"stablehlo.multiply\"({t}, {s}) : ({ty}, {ty}) -> {ty} {loc}"
                        )
                    }
                    AfterOp::RoundBf16 => format!(
                        "{result} = \"stablehlo.reduce_precision\"({orig}) <{{exponent_bits = 8 : i32, mantissa_bits = 7 : i32}}> : ({ty}) -> {ty} {loc}"
                    ),
                };
                lines.push_str(&format!("{indent}{line}\n"));
            }
            Change::Rewrite { helpers, text: t }
            | Change::Sites {
                helpers, text: t, ..
            } => {
                for h in helpers {
                    lines.push_str(&format!("{indent}{}\n", h.replace(STEM, stem)));
                }
                let body = text::rename_result(t, result)?.replace(STEM, stem);
                lines.push_str(&format!("{indent}{body}\n"));
            }
            Change::Combine { op, helpers, other } => {
                for h in helpers {
                    let h = h.replace(STEM, stem).replace(combine::ORIG, orig);
                    lines.push_str(&format!("{indent}{h}\n"));
                }
                let other = other.replace(STEM, stem);
                lines.push_str(&format!(
                    "{indent}{result} = \"stablehlo.{op}\"({orig}, {other}) : ({ty}, {ty}) -> {ty} {loc}\n"
                ));
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

/// How wide a catalogue to enumerate. The search tries the common
/// confusions first and the wide catalogue only when they find nothing
/// (its cost grows with the edits: every run computes all of them); the
/// injector makes common confusions only, so its seeded faults stay put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// The confusions ports make most (add/subtract, multiply/divide, exp/log, ...).
    Common,
    /// Every other op of the same arity and element class, not in `Common`.
    Wide,
}

/// Binary ops a port confuses with `name`, for an element type: the common
/// confusions.
fn common_binary(name: &str, float: bool) -> &'static [&'static str] {
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

/// Every elementwise binary float op.
const FLOAT_BINARY: [&str; 9] = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "power",
    "remainder",
    "atan2",
];

/// Integer binary ops the wide catalogue swaps among (no new divide or
/// remainder: every edit runs on every search run, and an integer division
/// by zero is not defined).
const INT_BINARY: [&str; 5] = ["add", "subtract", "multiply", "maximum", "minimum"];

/// Binary ops `name` may have been, for an element type and width.
fn binary_swaps(name: &str, float: bool, width: Width) -> Vec<&'static str> {
    let common = common_binary(name, float);
    match width {
        Width::Common => common.to_vec(),
        Width::Wide => {
            let pool: &[&str] = if float { &FLOAT_BINARY } else { &INT_BINARY };
            if !pool.contains(&name) {
                return Vec::new();
            }
            pool.iter()
                .copied()
                .filter(|to| *to != name && !common.contains(to))
                .collect()
        }
    }
}

/// Unary ops a port confuses with `name`, for an element type: the common
/// confusions.
fn common_unary(name: &str, float: bool) -> &'static [&'static str] {
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

/// Every elementwise unary float op of one operand and the same type.
const FLOAT_UNARY: [&str; 17] = [
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "tanh",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sine",
    "cosine",
    "tan",
    "abs",
    "negate",
    "sign",
    "floor",
    "ceil",
];

/// Unary ops `name` may have been, for an element type and width (a
/// missing unary op is the bypass edit).
fn unary_swaps(name: &str, float: bool, width: Width) -> Vec<&'static str> {
    let common = common_unary(name, float);
    match width {
        Width::Common => common.to_vec(),
        Width::Wide if float && FLOAT_UNARY.contains(&name) => FLOAT_UNARY
            .iter()
            .copied()
            .filter(|to| *to != name && !common.contains(to))
            .collect(),
        Width::Wide => Vec::new(),
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

mod places;
pub use places::{decision_partner, downstream_places, upstream_places};

mod catalogue;
pub use catalogue::edits_of;

mod combine;
pub use combine::combine_edits;

mod reaxis;
pub use reaxis::{reaxis_edits, swapped_slices};

mod extra_sum;
pub use extra_sum::extra_sum_edits;

mod band;

mod redirect;
pub use redirect::redirect_edits;

mod activation;
pub use activation::{activation_edits, softcap_edit};
