//! Text -> [`Module`]: finds the functions (generic `func.func`, or the pretty
//! `module`/`func.func` wrapper that [`crate::emit_slices`] writes) and builds their graphs.

use crate::build::build_function;
use crate::cursor::{unescape, Cursor};
use crate::error::{LineIndex, MlirError};
use crate::ir::Module;
use crate::pretty::pretty_module;
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

/// Parses a module printed in generic form (`--mlir-print-op-generic`), with inline
/// locations (`--mlir-print-debuginfo --mlir-print-local-scope`).
///
/// Also accepts the `module @m { func.func public @f(...) { <generic ops> } }` text that
/// [`crate::emit_slices`] writes. Operations other than `func.func` at module level are
/// skipped; a function body must be a single block.
pub fn parse(text: &str) -> Result<Module, MlirError> {
    let mut cur = Cursor::new(text);
    let mut name = None;
    let mut funcs = Vec::new();
    cur.skip_ws();
    if cur.at_keyword("module") {
        name = pretty_module(&mut cur, &mut funcs)?;
    } else {
        let mut top = Vec::new();
        while {
            cur.skip_ws();
            !cur.at_end()
        } {
            top.push(cur.generic_op(0)?);
        }
        if top.len() == 1 && top[0].name == "builtin.module" {
            let mut only = top.remove(0);
            name = only
                .properties
                .and_then(|p| dict_entry(p, "sym_name"))
                .and_then(string_value);
            if only.regions.len() != 1 {
                return Err(cur.err_at(only.start, "`builtin.module` must have one region"));
            }
            let region = only.regions.remove(0);
            top = single_block(&cur, region, only.start, "builtin.module")?.1;
        }
        for op in top {
            if op.name == "func.func" {
                funcs.push(generic_func(&cur, op)?);
            }
        }
    }
    cur.skip_ws();
    if !cur.at_end() {
        return Err(cur.err(format!("unexpected {} after the module", cur.found())));
    }
    let lines = LineIndex::new(text);
    let functions = funcs
        .into_iter()
        .map(|f| build_function(&cur, &lines, f))
        .collect::<Result<_, _>>()?;
    Ok(Module { name, functions })
}

/// The block arguments and ops of a region that must hold at most one block.
fn single_block<'a>(
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

/// The text of entry `key` in an attribute dictionary `{a = 1, b = "x"}`.
pub(crate) fn dict_entry<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let mut cur = Cursor::new(dict);
    if !cur.eat(b'{') {
        return None;
    }
    loop {
        cur.skip_ws();
        let k = if cur.peek() == Some(b'"') {
            let (s, e) = cur.string_lit().ok()?;
            &dict[s + 1..e - 1]
        } else {
            cur.ident()
        };
        if k.is_empty() {
            return None;
        }
        let value = if cur.eat(b'=') {
            cur.skip_ws();
            let start = cur.pos;
            skip_value(&mut cur)?;
            dict[start..cur.pos].trim()
        } else {
            "unit"
        };
        if k == key {
            return Some(value);
        }
        if !cur.eat(b',') {
            return None;
        }
    }
}

/// Skips an attribute value up to a top-level `,` or `}`.
fn skip_value(cur: &mut Cursor<'_>) -> Option<()> {
    loop {
        match cur.peek()? {
            b',' | b'}' => return Some(()),
            b'"' => {
                cur.string_lit().ok()?;
            }
            b'(' | b'[' | b'{' | b'<' => {
                cur.skip_balanced().ok()?;
            }
            b'-' if cur.peek_at(1) == Some(b'>') => cur.pos += 2,
            _ => cur.pos += 1,
        }
    }
}

/// The decoded contents of a string attribute `"..."`.
pub(crate) fn string_value(v: &str) -> Option<String> {
    let body = v.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(body))
}

pub(crate) fn generic_func<'a>(
    cur: &Cursor<'a>,
    mut op: RawOp<'a>,
) -> Result<FuncSyntax<'a>, MlirError> {
    let props = op.properties.unwrap_or("{}");
    let name = dict_entry(props, "sym_name")
        .and_then(string_value)
        .ok_or_else(|| cur.err_at(op.start, "`func.func` without a `sym_name`"))?;
    let public = dict_entry(props, "sym_visibility")
        .and_then(string_value)
        .is_none_or(|v| v == "public");
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
