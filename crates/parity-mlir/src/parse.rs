//! Text -> [`Module`]: finds the functions (generic `func.func`, or the pretty
//! `module`/`func.func` wrapper that [`crate::emit_slices`] writes) and builds their graphs.

use crate::attr::{dict_entry, string_value};
use crate::build::build_function;
use crate::cursor::Cursor;
use crate::error::{LineIndex, MlirError};
use crate::func_syntax::{generic_func, single_block};
use crate::ir::Module;
use crate::pretty::pretty_module;

/// Parses a module printed in generic form (`--mlir-print-op-generic`), with inline
/// locations (`--mlir-print-debuginfo --mlir-print-local-scope`).
///
/// Also accepts the `module @m { func.func public @f(...) { <generic ops> } }` text that
/// [`crate::emit_slices`] writes. `util.global`s at module level are kept as
/// text ([`Module::globals`]), other operations besides `func.func` skipped; a
/// function body must be a single block.
pub fn parse(text: &str) -> Result<Module, MlirError> {
    let mut cur = Cursor::new(text);
    let mut name = None;
    let mut funcs = Vec::new();
    let mut globals = Vec::new();
    cur.skip_ws();
    if cur.at_keyword("module") {
        name = pretty_module(&mut cur, &mut funcs, &mut globals)?;
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
            } else if op.name == "util.global" {
                globals.push(text[op.start..op.end].trim_end().to_string());
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
    Ok(Module {
        name,
        functions,
        globals,
    })
}
