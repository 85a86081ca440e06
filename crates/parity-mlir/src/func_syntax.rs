//! A `func.func` operation as syntax: its name, visibility, block arguments,
//! operations and returned values, before the graph is built (`build`).
//! Read from generic form here and from the pretty wrapper in `pretty`.

use crate::attr::{dict_entry, string_value};
use crate::cursor::Cursor;
use crate::error::MlirError;
use crate::syntax::{BlockArg, RawOp, Region, Use};

/// A function before graph building.
pub(crate) struct FuncSyntax<'a> {
    pub(crate) name: String,
    pub(crate) public: bool,
    pub(crate) offset: usize,
    pub(crate) args: Vec<BlockArg<'a>>,
    pub(crate) ops: Vec<RawOp<'a>>,
    pub(crate) ret: Vec<Use<'a>>,
}

/// The block arguments and ops of a region that must hold at most one block.
pub(crate) fn single_block<'a>(
    cur: &Cursor<'a>,
    region: Region<'a>,
    offset: usize,
    what: &str,
) -> Result<(Vec<BlockArg<'a>>, Vec<RawOp<'a>>), MlirError> {
    let count = region.blocks.len();
    let mut blocks = region.blocks.into_iter();
    match (blocks.next(), count) {
        (None, _) => Ok((Vec::new(), Vec::new())),
        (Some(block), 1) => Ok((block.args, block.ops)),
        _ => Err(cur.err_at(
            offset,
            format!("{what} has {count} blocks; only single-block bodies are supported"),
        )),
    }
}

/// A generic-form `func.func` operation's name and whether it is public
/// (no `sym_visibility`, or `"public"`).
pub(crate) fn func_name(cur: &Cursor<'_>, op: &RawOp<'_>) -> Result<(String, bool), MlirError> {
    let props = op.properties.unwrap_or("{}");
    let name = dict_entry(props, "sym_name")
        .and_then(string_value)
        .ok_or_else(|| cur.err_at(op.start, "`func.func` without a `sym_name`"))?;
    let public = dict_entry(props, "sym_visibility")
        .and_then(string_value)
        .is_none_or(|v| v == "public");
    Ok((name, public))
}

/// A generic-form `func.func` operation as a [`FuncSyntax`].
pub(crate) fn generic_func<'a>(
    cur: &Cursor<'a>,
    mut op: RawOp<'a>,
) -> Result<FuncSyntax<'a>, MlirError> {
    let (name, public) = func_name(cur, &op)?;
    if op.regions.len() != 1 {
        return Err(cur.err_at(op.start, format!("function @{name} needs one body region")));
    }
    let what = format!("function @{name}");
    let (args, mut ops) = single_block(cur, op.regions.remove(0), op.start, &what)?;
    let ret = match ops.pop() {
        Some(last) if last.name == "func.return" => last.operands,
        Some(last) => {
            return Err(cur.err_at(
                last.start,
                format!("{what} ends with `{}`, not `func.return`", last.name),
            ))
        }
        None => Vec::new(),
    };
    Ok(FuncSyntax {
        name,
        public,
        offset: op.start,
        args,
        ops,
        ret,
    })
}
