//! The pretty `module @m { func.func public @f(...) {...} }` wrapper that
//! [`crate::emit_slices`] writes around generic ops, so slices parse back.

use crate::attr::string_value;
use crate::cursor::Cursor;
use crate::error::MlirError;
use crate::func_syntax::{generic_func, FuncSyntax};
use crate::syntax::Use;

/// `module @name attributes {..} { ... }` (the cursor is at `module`); returns the name.
pub(crate) fn pretty_module<'a>(
    cur: &mut Cursor<'a>,
    funcs: &mut Vec<FuncSyntax<'a>>,
    globals: &mut Vec<String>,
) -> Result<Option<String>, MlirError> {
    cur.eat_keyword("module");
    cur.skip_ws();
    let name = if cur.peek() == Some(b'@') {
        Some(symbol_text(cur.sigil_name(b'@', "a module name")?))
    } else {
        None
    };
    if cur.eat_keyword("attributes") {
        cur.skip_ws();
        cur.skip_balanced()?;
    }
    cur.expect(b'{', "to open the module body")?;
    loop {
        cur.skip_ws();
        if cur.eat(b'}') {
            break;
        }
        if cur.at_end() {
            return Err(cur.err("unexpected end of input inside the module"));
        }
        if cur.at_keyword("func.func") {
            funcs.push(pretty_func(cur)?);
        } else {
            let op = cur.generic_op(0)?;
            if op.name == "func.func" {
                funcs.push(generic_func(cur, op)?);
            } else if op.name == "util.global" {
                globals.push(cur.src[op.start..op.end].trim_end().to_string());
            }
        }
    }
    cur.opt_loc()?;
    Ok(name)
}

/// `@name` or `@"quoted"` -> the symbol.
fn symbol_text(sym: &str) -> String {
    let s = &sym[1..];
    string_value(s).unwrap_or_else(|| s.to_string())
}

/// `func.func [visibility] @name(%a: T loc(..), ...) [-> results] [attributes {..}] { body }`.
fn pretty_func<'a>(cur: &mut Cursor<'a>) -> Result<FuncSyntax<'a>, MlirError> {
    cur.skip_ws();
    let offset = cur.pos;
    cur.eat_keyword("func.func");
    let mut public = true;
    for vis in ["public", "private", "nested"] {
        if cur.eat_keyword(vis) {
            public = vis == "public";
        }
    }
    let name = symbol_text(cur.sigil_name(b'@', "a function name")?);
    cur.skip_ws();
    let args = cur.block_args()?;
    if cur.eat_str("->") {
        cur.skip_ws();
        if cur.peek() == Some(b'(') {
            cur.skip_balanced()?;
        } else {
            cur.type_text()?;
        }
    }
    if cur.eat_keyword("attributes") {
        cur.skip_ws();
        cur.skip_balanced()?;
    }
    cur.expect(b'{', "to open the function body")?;
    let mut ops = Vec::new();
    let mut ret = None;
    loop {
        cur.skip_ws();
        if cur.eat(b'}') {
            break;
        }
        if cur.at_end() {
            return Err(cur.err(format!("unexpected end of input inside function @{name}")));
        }
        if ret.is_some() {
            return Err(cur.err(format!(
                "function @{name}: {} after the return; only single-block bodies are supported",
                cur.found()
            )));
        }
        if cur.peek() == Some(b'^') {
            return Err(cur.err(format!(
                "function @{name}: block labels are not supported in function bodies"
            )));
        }
        if cur.eat_keyword("return") {
            ret = Some(pretty_return(cur)?);
            continue;
        }
        let op = cur.generic_op(0)?;
        if op.name == "func.return" {
            ret = Some(op.operands);
        } else {
            ops.push(op);
        }
    }
    cur.opt_loc()?;
    Ok(FuncSyntax {
        name,
        public,
        offset,
        args,
        ops,
        ret: ret.unwrap_or_default(),
    })
}

/// The rest of `return %a, %b : T, T loc(..)` after the keyword.
fn pretty_return<'a>(cur: &mut Cursor<'a>) -> Result<Vec<Use<'a>>, MlirError> {
    let mut uses = Vec::new();
    cur.skip_ws();
    if cur.peek() == Some(b'%') {
        loop {
            uses.push(cur.ssa_use()?);
            if !cur.eat(b',') {
                break;
            }
        }
        cur.expect(b':', "before the return types")?;
        for i in 0..uses.len() {
            if i > 0 {
                cur.expect(b',', "between return types")?;
            }
            cur.type_text()?;
        }
    }
    cur.opt_loc()?;
    Ok(uses)
}
