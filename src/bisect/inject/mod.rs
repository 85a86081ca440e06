//! The fault injector: one seeded, deterministic mistake of a chosen kind in
//! a normalised module (MLIR generic form), with the answer `parity bisect`
//! should give. The mistakes come from the repair search's own catalogue
//! ([`super::edits`]), plus the two kinds other evidence finds: a rounding
//! fault (a bf16 round trip, for the f64 shadow) and a non-finite one (an
//! exp made to overflow).

use super::edits::{AfterOp, Change, Edit};
use crate::seed::mix;
use parity_mlir::{Function, Module};
use std::fmt;

/// The kinds of fault the injector makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// add <-> subtract, multiply <-> divide, max <-> min, and/or/xor.
    WrongBinary,
    /// exp/log, tanh/logistic, sqrt/rsqrt, abs/negate, sine/cosine.
    WrongUnary,
    /// The operands of a non-commutative op (or select's branches) swapped.
    SwappedOperands,
    /// A splat float constant scaled (a wrong hyper-parameter).
    WrongConstant,
    /// A slice window one element off.
    SliceOffByOne,
    /// Padding moved between the two ends of a dimension.
    PadMoved,
    /// Another comparison direction.
    FlippedComparison,
    /// A negate, a scale or an offset left out.
    MissingOp,
    /// A negate or a scale by 2 added after an op.
    ExtraOp,
    /// Other transpose / broadcast / reduce / dot_general dimensions.
    WrongDims,
    /// An exp's operand offset by +100, so exp overflows f32.
    NonFinite,
    /// A bf16 round trip after an op.
    Rounding,
}

impl FaultKind {
    /// Every kind, in table order.
    pub const ALL: [FaultKind; 12] = [
        FaultKind::WrongBinary,
        FaultKind::WrongUnary,
        FaultKind::SwappedOperands,
        FaultKind::WrongConstant,
        FaultKind::SliceOffByOne,
        FaultKind::PadMoved,
        FaultKind::FlippedComparison,
        FaultKind::MissingOp,
        FaultKind::ExtraOp,
        FaultKind::WrongDims,
        FaultKind::NonFinite,
        FaultKind::Rounding,
    ];

    /// The kind's name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::WrongBinary => "wrong-binary",
            FaultKind::WrongUnary => "wrong-unary",
            FaultKind::SwappedOperands => "swapped-operands",
            FaultKind::WrongConstant => "wrong-constant",
            FaultKind::SliceOffByOne => "slice-off-by-one",
            FaultKind::PadMoved => "pad-moved",
            FaultKind::FlippedComparison => "flipped-comparison",
            FaultKind::MissingOp => "missing-op",
            FaultKind::ExtraOp => "extra-op",
            FaultKind::WrongDims => "wrong-dims",
            FaultKind::NonFinite => "non-finite",
            FaultKind::Rounding => "rounding",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The evidence bisect should give for this kind: the exp's overflow
    /// (nonfinite), or the injected add when the repair search names it
    /// (repair: the origin yields to a repair upstream).
    pub fn evidence(self) -> &'static [&'static str] {
        match self {
            FaultKind::NonFinite => &["nonfinite", "repair"],
            FaultKind::Rounding => &["inferred"],
            _ => &["repair"],
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why nothing could be injected.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// The module has no such function.
    #[error("the module has no function `{0}`")]
    NoFunction(String),
    /// No op of the functions is eligible for the kind.
    #[error("no operation of {functions} is eligible for a `{kind}` fault")]
    NoSite {
        /// The fault kind.
        kind: FaultKind,
        /// The functions searched.
        functions: String,
    },
    /// The edited text could not be produced or read back.
    #[error("injecting a `{kind}` fault at {site}: {why}")]
    Broken {
        /// The fault kind.
        kind: FaultKind,
        /// Where.
        site: String,
        /// What went wrong.
        why: String,
    },
}

/// An operation bisect may name for an injected fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Index into the faulty function's ops.
    pub op_index: usize,
    /// Its name (`stablehlo.add`).
    pub op_name: String,
}

/// An injected fault.
#[derive(Clone, Debug)]
pub struct Injected {
    /// The faulty module (generic MLIR text).
    pub text: String,
    /// The function that holds the fault.
    pub function: String,
    /// The kind.
    pub kind: FaultKind,
    /// What was done, for people.
    pub what: String,
    /// The location label of the edited op.
    pub loc: String,
    /// The operations bisect may name (any one of them is right).
    pub answers: Vec<Answer>,
    /// Why those are the right answers.
    pub why: String,
}

/// One eligible place: the function, the edit, and a value for fitted edits.
struct Site<'m> {
    func: &'m Function,
    edit: Edit,
    /// The scale a fitted edit applies.
    value: f64,
}

/// Injects one `kind` fault into one of `functions` of `module` (parsed from
/// `text`), chosen by `seed`, skipping ops for which `exclude(func, op)` holds
/// (the committed faults' places).
pub fn inject(
    text: &str,
    module: &Module,
    functions: &[&str],
    kind: FaultKind,
    seed: u64,
    exclude: &dyn Fn(&Function, usize) -> bool,
) -> Result<Injected, InjectError> {
    let mut sites = Vec::new();
    for name in functions {
        let func = module
            .function(name)
            .ok_or_else(|| InjectError::NoFunction(name.to_string()))?;
        sites.extend(sites_of(func, kind, exclude));
    }
    if sites.is_empty() {
        return Err(InjectError::NoSite {
            kind,
            functions: functions.join(", "),
        });
    }
    let r = mix(seed);
    let mut site = sites.swap_remove((r % sites.len() as u64) as usize);
    if kind == FaultKind::WrongConstant {
        let factors = [0.5, 2.0, 10.0, 0.1, 3.0];
        site.value = factors[((r >> 32) % factors.len() as u64) as usize];
    } else if matches!(site.edit.change, Change::After(AfterOp::Scale)) {
        site.value = 2.0;
    }
    apply(text, kind, &site)
}

mod sites;
use sites::sites_of;

/// The answers (indices into `written`, the faulty function as the
/// injector wrote it) as indices into `normalised`, the same function after
/// IREE normalised it again: normalisation may move constants and drops
/// dead ops, and keeps every other op in order, so an op keeps its rank
/// among the live non-constant ops. `None` when a rank or an op name does not line up.
pub fn remap(answers: &[Answer], written: &Function, normalised: &Function) -> Option<Vec<Answer>> {
    let ranks = |f: &Function| -> Vec<usize> {
        // Live ops only: normalisation also drops ops nothing uses (the
        // broadcast of a deleted op's constant).
        let mut live = vec![false; f.ops.len()];
        let mut stack: Vec<usize> = f.results.clone();
        while let Some(v) = stack.pop() {
            if let Some(o) = f.op_of(v) {
                if !std::mem::replace(&mut live[o], true) {
                    stack.extend(f.ops[o].operands.iter().chain(&f.ops[o].captures));
                }
            }
        }
        (0..f.ops.len())
            .filter(|&o| live[o] && f.ops[o].name != "stablehlo.constant")
            .collect()
    };
    let (w, n) = (ranks(written), ranks(normalised));
    answers
        .iter()
        .map(|a| {
            let rank = w.iter().position(|&o| o == a.op_index)?;
            let o = *n.get(rank)?;
            (normalised.ops[o].name == a.op_name).then(|| Answer {
                op_index: o,
                op_name: a.op_name.clone(),
            })
        })
        .collect()
}

mod apply;
use apply::apply;
