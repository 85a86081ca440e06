//! Syntax -> SSA graph: names resolved to value ids, captures found, users indexed.

use std::collections::{HashMap, HashSet};

use crate::cursor::Cursor;
use crate::error::{LineIndex, MlirError};
use crate::func_syntax::FuncSyntax;
use crate::ir::{Def, Function, Op, Value, ValueId};
use crate::location::Location;
use crate::syntax::{Region, Use};
use crate::types::Type;

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

pub(crate) fn build_function(
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
