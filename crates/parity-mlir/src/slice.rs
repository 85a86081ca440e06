//! Cutting standalone functions out of a parsed function: given values in, chosen values
//! out, the ops in between copied verbatim.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::error::MlirError;
use crate::ir::{Def, Function, Module, ValueId};

/// One slice to cut: a function `name` taking the `from` values and returning the `to` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceRequest {
    /// Name of the emitted function.
    pub name: String,
    /// Values given as arguments (cut points).
    pub from: Vec<ValueId>,
    /// Values returned, in order.
    pub to: Vec<ValueId>,
}

/// Where an argument of an emitted slice comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceArg {
    /// `req.from[i]`.
    From(usize),
    /// Argument `i` of the original function.
    FuncArg(usize),
}

/// What an emitted slice function takes, returns and contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceInfo {
    /// Name of the emitted function.
    pub name: String,
    /// Its arguments in order: where each comes from, and which original value it stands for.
    pub args: Vec<(SliceArg, ValueId)>,
    /// Original values it returns, in order (= `req.to`).
    pub results: Vec<ValueId>,
    /// Original ops it contains (indices into [`Function::ops`]), program order.
    pub ops: Vec<usize>,
}

/// One standalone module (`module @<module_name> { func.func public @<name>(...) -> (...)
/// { <generic ops> "func.return"(...) } ... }`), one public function per request.
///
/// Args: from-values first (request order, duplicates removed; a from-value that is a
/// function argument is still a From arg), then every other function argument the cone
/// needs, ascending. Ops are copied verbatim (generic text, locations kept) with SSA uses
/// renamed where needed (a `%5#1` cut point becomes the plain argument `%v5_1`).
/// Results = `to` in order. The module's `util.global`s that the slices read
/// come first ([`Module::globals`]). Errors on unknown values and bad or
/// duplicate names.
pub fn emit_slices(
    module: &Module,
    func: &Function,
    module_name: &str,
    reqs: &[SliceRequest],
) -> Result<(String, Vec<SliceInfo>), MlirError> {
    let mut text = String::new();
    // A comment ends at the line's end: names are escaped (a quoted name
    // may hold a newline), so the comment stays one line.
    let source = module
        .name
        .as_deref()
        .map_or(String::new(), |m| format!("@{}::", m.escape_debug()));
    let _ = writeln!(
        text,
        "// Slices of {source}@{}, cut by parity-mlir.",
        func.name.escape_debug()
    );
    let _ = writeln!(text, "module {} {{", symbol(module_name));
    let mut infos = Vec::with_capacity(reqs.len());
    let mut seen = HashSet::new();
    for req in reqs {
        if req.name.is_empty() {
            return Err(MlirError::at_line(
                func.line,
                "slice request with an empty name",
            ));
        }
        if !seen.insert(req.name.as_str()) {
            return Err(MlirError::at_line(
                func.line,
                format!("two slice requests are named `{}`", req.name),
            ));
        }
        let info = plan(func, req)?;
        write_function(&mut text, func, &info);
        infos.push(info);
    }
    text.push_str("}\n");
    // A slice of a function that reads globals (IREE parameters) keeps them.
    Ok((
        crate::parameters::with_globals(text, &module.globals),
        infos,
    ))
}

fn plan(func: &Function, req: &SliceRequest) -> Result<SliceInfo, MlirError> {
    for &v in req.from.iter().chain(&req.to) {
        if v >= func.values.len() {
            return Err(MlirError::at_line(
                func.line,
                format!(
                    "slice `{}`: unknown value id {v} (function @{} has {} values)",
                    req.name,
                    func.name,
                    func.values.len()
                ),
            ));
        }
    }
    let mut args = Vec::new();
    let mut given = HashSet::new();
    for (i, &v) in req.from.iter().enumerate() {
        if given.insert(v) {
            args.push((SliceArg::From(i), v));
        }
    }
    let ops = func.cone(&req.from, &req.to);
    let mut needed_args = vec![false; func.args.len()];
    let mut need = |v: ValueId| {
        if let Def::Arg(k) = func.values[v].def {
            if !given.contains(&v) {
                needed_args[k] = true;
            }
        }
    };
    for &op in &ops {
        func.inputs(op).for_each(&mut need);
    }
    req.to.iter().copied().for_each(&mut need);
    for (k, &needed) in needed_args.iter().enumerate() {
        if needed {
            args.push((SliceArg::FuncArg(k), func.args[k]));
        }
    }
    Ok(SliceInfo {
        name: req.name.clone(),
        args,
        results: req.to.clone(),
        ops,
    })
}

/// Argument names: the original name where it is a plain SSA name, else a fresh one.
fn arg_names(func: &Function, info: &SliceInfo) -> HashMap<ValueId, String> {
    let mut names = HashMap::new();
    let mut taken = HashSet::new();
    for &(_, v) in &info.args {
        let name = &func.values[v].name;
        let Some((base, k)) = name.split_once('#') else {
            continue;
        };
        let stem = format!("%v{}_{k}", base.trim_start_matches('%'));
        let mut fresh = stem.clone();
        let mut n = 0;
        while func.names.contains_key(&fresh) || taken.contains(&fresh) {
            n += 1;
            fresh = format!("{stem}_{n}");
        }
        taken.insert(fresh.clone());
        names.insert(v, fresh);
    }
    names
}

fn write_function(text: &mut String, func: &Function, info: &SliceInfo) {
    let renamed = arg_names(func, info);
    let name_of = |v: ValueId| -> &str {
        renamed
            .get(&v)
            .map_or(func.values[v].name.as_str(), String::as_str)
    };
    let params: Vec<String> = info
        .args
        .iter()
        .map(|&(_, v)| {
            let value = &func.values[v];
            format!("{}: {} {}", name_of(v), value.ty, value.loc)
        })
        .collect();
    let result_types: Vec<&str> = info
        .results
        .iter()
        .map(|&v| func.values[v].ty.text.as_str())
        .collect();
    let _ = writeln!(
        text,
        "  func.func public {}({}) -> ({}) {{",
        symbol(&info.name),
        params.join(", "),
        result_types.join(", ")
    );
    for &op_index in &info.ops {
        let op = &func.ops[op_index];
        text.push_str("    ");
        let mut spans: Vec<&(usize, usize, ValueId)> = op
            .uses
            .iter()
            .filter(|(_, _, v)| renamed.contains_key(v))
            .collect();
        spans.sort_unstable();
        let mut at = 0;
        for &&(start, end, v) in &spans {
            text.push_str(&op.text[at..start]);
            text.push_str(name_of(v));
            at = end;
        }
        text.push_str(&op.text[at..]);
        text.push('\n');
    }
    let results: Vec<&str> = info.results.iter().map(|&v| name_of(v)).collect();
    let _ = writeln!(
        text,
        "    \"func.return\"({}) : ({}) -> ()",
        results.join(", "),
        result_types.join(", ")
    );
    text.push_str("  }\n");
}

/// `@name`, quoted when it is not a bare identifier.
fn symbol(name: &str) -> String {
    let bare = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'));
    if bare {
        format!("@{name}")
    } else {
        let escaped: String = name
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                c => vec![c],
            })
            .collect();
        format!("@\"{escaped}\"")
    }
}
