//! Reading a `cases:` list: the stage cases at the top of the spec and the
//! token cases of `tokens:` are the same shape, read by the one function.

use crate::error::{Scope, SpecError};
use crate::reader::Cx;
use crate::stage_model::Case;
use crate::yaml::Node;
use std::collections::BTreeMap;

const CASE_KEYS: &[&str] = &["name", "vars"];

/// Reads a `cases:` list: unique names, variable names that templates can use.
pub(crate) fn parse_cases(cx: &Cx<'_>, node: &Node) -> Result<Vec<Case>, SpecError> {
    let items = cx.list(node, "cases")?;
    if items.is_empty() {
        return Err(cx.invalid(
            node,
            "`cases` is empty; omit it for a single `default` case".into(),
        ));
    }
    let mut cases: Vec<Case> = Vec::new();
    for item in items {
        let m = cx.map(item, "case", "case", CASE_KEYS)?;
        let name_node = m.req(cx, "name")?;
        let name = cx.name(name_node, "name")?;
        let ccx = cx.with(Scope::Case(name.clone()));
        if cases.iter().any(|c| c.name == name) {
            return Err(ccx.invalid(name_node, format!("duplicate case name `{name}`")));
        }
        let mut vars = BTreeMap::new();
        if let Some(v) = m.opt("vars") {
            for (key, value) in ccx.free_map(v, "vars", "vars")?.entries() {
                let var = ccx.string(key, "variable name")?;
                let valid = var
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid || var == "case" {
                    return Err(ccx.invalid(
                        key,
                        format!("variable name `{var}` must be letters, digits and `_`, not starting with a digit, and not `case`"),
                    ));
                }
                vars.insert(var, ccx.string(value, "variable value")?);
            }
        }
        cases.push(Case { name, vars });
    }
    Ok(cases)
}
