//! Text -> [`Module`]: finds the functions (generic `func.func`, or the pretty
//! `module`/`func.func` wrapper that [`crate::emit_slices`] writes) and builds their graphs.

use std::collections::{HashMap, HashSet};

use crate::cursor::{unescape, Cursor};
use crate::error::{LineIndex, MlirError};
use crate::ir::{Def, Function, Module, Op, Value, ValueId};
use crate::location::Location;
use crate::syntax::{BlockArg, RawOp, Region, Use};
use crate::types::Type;

/// A function before graph building.
struct FuncSyntax<'a> {
    name: String,
    public: bool,
    offset: usize,
    args: Vec<BlockArg<'a>>,
    ops: Vec<RawOp<'a>>,
    ret: Vec<Use<'a>>,
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
fn string_value(v: &str) -> Option<String> {
    let body = v.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(body))
}

fn generic_func<'a>(cur: &Cursor<'a>, mut op: RawOp<'a>) -> Result<FuncSyntax<'a>, MlirError> {
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

/// `module @name attributes {..} { ... }` (the cursor is at `module`); returns the name.
fn pretty_module<'a>(
    cur: &mut Cursor<'a>,
    funcs: &mut Vec<FuncSyntax<'a>>,
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

/// Name resolution for one function: base name -> (first value, count).
struct Scope<'a> {
    cur: &'a Cursor<'a>,
    names: HashMap<String, (ValueId, usize)>,
}

impl Scope<'_> {
    fn define(
        &mut self,
        name: &str,
        offset: usize,
        first: ValueId,
        count: usize,
    ) -> Result<(), MlirError> {
        if self
            .names
            .insert(name.to_string(), (first, count))
            .is_some()
        {
            return Err(self.cur.err_at(offset, format!("redefinition of {name}")));
        }
        Ok(())
    }

    fn resolve(&self, u: &Use<'_>) -> Result<ValueId, MlirError> {
        let Some(&(first, count)) = self.names.get(u.base) else {
            return Err(self
                .cur
                .err_at(u.start, format!("use of undefined value {}", u.base)));
        };
        match u.index {
            None if count == 1 => Ok(first),
            None => Err(self.cur.err_at(
                u.start,
                format!("{} has {count} results; name one as {}#k", u.base, u.base),
            )),
            Some(k) if k < count => Ok(first + k),
            Some(k) => Err(self.cur.err_at(
                u.start,
                format!("{}#{k} is out of range: it has {count} results", u.base),
            )),
        }
    }
}

fn loc_of(loc: Option<&str>) -> Location {
    loc.map_or_else(Location::unknown, Location::new)
}

fn build_function(
    cur: &Cursor<'_>,
    lines: &LineIndex,
    f: FuncSyntax<'_>,
) -> Result<Function, MlirError> {
    let mut scope = Scope {
        cur,
        names: HashMap::new(),
    };
    let mut values = Vec::with_capacity(f.args.len() + f.ops.len());
    let mut args = Vec::with_capacity(f.args.len());
    for (i, a) in f.args.iter().enumerate() {
        scope.define(a.name, a.offset, values.len(), 1)?;
        args.push(values.len());
        values.push(Value {
            name: a.name.to_string(),
            ty: Type::new(a.ty),
            def: Def::Arg(i),
            loc: loc_of(a.loc),
        });
    }
    let mut ops = Vec::with_capacity(f.ops.len());
    for (index, raw) in f.ops.iter().enumerate() {
        if raw.has_successors {
            return Err(cur.err_at(
                raw.start,
                format!(
                    "`{}` in function @{} has successors; only single-block bodies are supported",
                    raw.name, f.name
                ),
            ));
        }
        let loc = loc_of(raw.loc);
        let mut uses = Vec::new();
        let mut operands = Vec::with_capacity(raw.operands.len());
        for u in &raw.operands {
            let v = scope.resolve(u)?;
            operands.push(v);
            uses.push((u.start - raw.start, u.end - raw.start, v));
        }
        let mut captures = Vec::new();
        if !raw.regions.is_empty() {
            let mut local = HashSet::new();
            for region in &raw.regions {
                region_names(region, &mut local);
            }
            for region in &raw.regions {
                region_captures(&scope, region, &local, raw.start, &mut captures, &mut uses)?;
            }
        }
        let mut results = Vec::with_capacity(raw.result_count());
        let mut ty_index = 0;
        for group in &raw.results {
            scope.define(group.name, group.offset, values.len(), group.count)?;
            for k in 0..group.count {
                let name = if group.count == 1 {
                    group.name.to_string()
                } else {
                    format!("{}#{k}", group.name)
                };
                results.push(values.len());
                values.push(Value {
                    name,
                    ty: Type::new(raw.result_types[ty_index]),
                    def: Def::Op {
                        op: index,
                        result: ty_index,
                    },
                    loc: loc.clone(),
                });
                ty_index += 1;
            }
        }
        ops.push(Op {
            index,
            name: raw.name.to_string(),
            operands,
            captures,
            results,
            loc,
            text: cur.src[raw.start..raw.end].to_string(),
            line: lines.line(raw.start),
            has_regions: !raw.regions.is_empty(),
            uses,
        });
    }
    let results = f
        .ret
        .iter()
        .map(|u| scope.resolve(u))
        .collect::<Result<Vec<_>, _>>()?;
    let mut users = vec![Vec::new(); values.len()];
    for op in &ops {
        for &v in op.operands.iter().chain(&op.captures) {
            if users[v].last() != Some(&op.index) {
                users[v].push(op.index);
            }
        }
    }
    Ok(Function {
        name: f.name,
        public: f.public,
        values,
        args,
        ops,
        results,
        line: lines.line(f.offset),
        names: scope.names,
        users,
    })
}

/// Every name defined inside a region (block arguments and op results, nested included).
fn region_names<'a>(region: &Region<'a>, out: &mut HashSet<&'a str>) {
    for block in &region.blocks {
        out.extend(block.args.iter().map(|a| a.name));
        for op in &block.ops {
            out.extend(op.results.iter().map(|r| r.name));
            for inner in &op.regions {
                region_names(inner, out);
            }
        }
    }
}

/// Records uses inside `region` of values defined at the function's top level.
fn region_captures(
    scope: &Scope<'_>,
    region: &Region<'_>,
    local: &HashSet<&str>,
    op_start: usize,
    captures: &mut Vec<ValueId>,
    uses: &mut Vec<(usize, usize, ValueId)>,
) -> Result<(), MlirError> {
    for block in &region.blocks {
        for op in &block.ops {
            for u in &op.operands {
                if local.contains(u.base) {
                    continue;
                }
                let v = scope.resolve(u)?;
                if !captures.contains(&v) {
                    captures.push(v);
                }
                uses.push((u.start - op_start, u.end - op_start, v));
            }
            for inner in &op.regions {
                region_captures(scope, inner, local, op_start, captures, uses)?;
            }
        }
    }
    Ok(())
}
