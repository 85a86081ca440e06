//! The SSA graph of a parsed module: functions, their values and top-level operations.

use std::collections::HashMap;

use crate::location::Location;
use crate::types::Type;

/// A parsed module: its name and its functions, in source order.
#[derive(Debug, Clone)]
pub struct Module {
    /// `sym_name` of the module, if it has one.
    pub name: Option<String>,
    /// Every `func.func` of the module, in source order.
    pub functions: Vec<Function>,
    /// The module's `util.global` declarations (IREE parameters and other
    /// globals), as written; [`crate::emit_slices`] keeps the ones a slice reads.
    pub globals: Vec<String>,
}

impl Module {
    /// The function called `name`, if any.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// Index of a value in [`Function::values`].
pub type ValueId = usize;

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Def {
    /// The function argument with this position.
    Arg(usize),
    /// Result `result` of the top-level operation `op` (an index into [`Function::ops`]).
    Op {
        /// Index into [`Function::ops`].
        op: usize,
        /// Which result of that operation.
        result: usize,
    },
}

/// A value visible at the top level of a function body: an argument or a result of a
/// top-level operation. Values defined inside regions are not listed.
#[derive(Debug, Clone)]
pub struct Value {
    /// The name as printed: `%12`, `%5#1`, `%arg3`.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// What defines it.
    pub def: Def,
    /// The location of its argument, or of the operation that defines it.
    pub loc: Location,
}

/// A top-level operation of a function body.
#[derive(Debug, Clone)]
pub struct Op {
    /// Position in [`Function::ops`].
    pub index: usize,
    /// The operation name: `stablehlo.add`.
    pub name: String,
    /// Operands, in order (a value may appear more than once).
    pub operands: Vec<ValueId>,
    /// Values defined outside the operation and used inside its regions, first use first.
    pub captures: Vec<ValueId>,
    /// Results, in order.
    pub results: Vec<ValueId>,
    /// Its location.
    pub loc: Location,
    /// The exact generic text, from the result names through the location, regions included.
    pub text: String,
    /// 1-based line where the operation starts.
    pub line: usize,
    /// Whether it has regions (`stablehlo.reduce`, `stablehlo.while`, ...).
    pub has_regions: bool,
    /// Byte spans of `text` that name top-level values (operands and captures), for renaming.
    pub(crate) uses: Vec<(usize, usize, ValueId)>,
}

/// A function: its arguments, its body's top-level operations and what it returns.
#[derive(Debug, Clone)]
pub struct Function {
    /// `sym_name`.
    pub name: String,
    /// Whether `sym_visibility` is public (or absent).
    pub public: bool,
    /// Every top-level value: arguments first, then operation results in program order.
    pub values: Vec<Value>,
    /// The arguments, in order.
    pub args: Vec<ValueId>,
    /// Top-level operations of the body in program order, without the `func.return`.
    pub ops: Vec<Op>,
    /// The operands of `func.return`.
    pub results: Vec<ValueId>,
    /// 1-based line of the `func.func`.
    pub line: usize,
    /// Base name (`%5`) -> (first value, result count).
    pub(crate) names: HashMap<String, (ValueId, usize)>,
    /// Value -> operations using it (operands or captures), ascending, no duplicates.
    pub(crate) users: Vec<Vec<usize>>,
}

impl Function {
    /// The value printed as `ssa` (`%12`, `%5#1`, `%arg3`); `%5#0` also names a single result.
    pub fn value_by_name(&self, ssa: &str) -> Option<ValueId> {
        let (base, index) = match ssa.split_once('#') {
            Some((base, k)) => (base, Some(k.parse::<usize>().ok()?)),
            None => (ssa, None),
        };
        let &(first, count) = self.names.get(base)?;
        match index {
            None if count == 1 => Some(first),
            None => None,
            Some(k) if k < count => Some(first + k),
            Some(_) => None,
        }
    }

    /// The operation defining `v`, or `None` for an argument (or an unknown id).
    pub fn op_of(&self, v: ValueId) -> Option<usize> {
        match self.values.get(v)?.def {
            Def::Op { op, .. } => Some(op),
            Def::Arg(_) => None,
        }
    }

    /// Operations using `v` as an operand or inside their regions, ascending.
    pub fn users(&self, v: ValueId) -> Vec<usize> {
        self.users.get(v).cloned().unwrap_or_default()
    }

    /// Values an operation reads: operands, then captures.
    pub(crate) fn inputs(&self, op: usize) -> impl Iterator<Item = ValueId> + '_ {
        let op = &self.ops[op];
        op.operands.iter().chain(op.captures.iter()).copied()
    }
}
