//! Which source operations each dispatch holds, read from the locations in
//! the flow-phase IR of a traced compile: an operation of the stage
//! function belongs to an executable when its location appears there
//! (alone or inside a fused location).

use parity_mlir::Function;
use std::collections::{BTreeMap, BTreeSet};

/// Executable name (`main_dispatch_0`) to the stage function's operations
/// (indices into `func.ops`, among `ops`) whose locations it holds.
pub fn executable_ops(
    flow_ir: &str,
    func: &Function,
    ops: &[usize],
) -> BTreeMap<String, BTreeSet<usize>> {
    let bodies = executables(flow_ir);
    let mut out: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for (name, body) in &bodies {
        let held = ops
            .iter()
            .copied()
            // Constants are cloned into every dispatch that reads them.
            .filter(|&o| func.ops[o].name != "stablehlo.constant")
            .filter(|&o| {
                let raw = &func.ops[o].loc.raw;
                let inner = raw
                    .strip_prefix("loc(")
                    .and_then(|r| r.strip_suffix(')'))
                    .unwrap_or("");
                !inner.is_empty() && inner != "unknown" && contains_bounded(body, inner)
            })
            .collect();
        out.insert(name.clone(), held);
    }
    out
}

/// The `flow.executable` ops of the module (generic or pretty form): name
/// and text, each up to the next executable or the first function.
pub fn executables(flow_ir: &str) -> Vec<(String, &str)> {
    let starts: Vec<usize> = flow_ir
        .match_indices("flow.executable\"()")
        .map(|(i, _)| i)
        .chain(
            flow_ir
                .match_indices("flow.executable private @")
                .map(|(i, _)| i),
        )
        .chain(
            flow_ir
                .match_indices("flow.executable public @")
                .map(|(i, _)| i),
        )
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let next = starts.get(k + 1).copied().unwrap_or(flow_ir.len());
        let mut body = &flow_ir[s..next];
        if k + 1 == starts.len() {
            // The last executable ends where the program's functions begin.
            let end = ["\"util.func\"", "util.func public", "util.func private"]
                .iter()
                .filter_map(|m| body.find(m))
                .min()
                .unwrap_or(body.len());
            body = &body[..end];
        }
        if let Some(name) = executable_name(body) {
            out.push((name, body));
        }
    }
    out
}

fn executable_name(body: &str) -> Option<String> {
    if let Some(i) = body.find("sym_name = \"") {
        let rest = &body[i + "sym_name = \"".len()..];
        return rest.split('"').next().map(str::to_string);
    }
    let i = body.find('@')?;
    let rest = &body[i + 1..];
    let end = rest.find(|c: char| c.is_whitespace() || c == '{')?;
    Some(rest[..end].to_string())
}

/// `needle` occurs in `hay` as a whole location: preceded by `(`, `[`, `,`
/// or a space, and followed by `)`, `]`, `,` or ` at` (IREE wraps a
/// location as `callsite(LOC at CALLER)` when it inlines the ABI wrapper).
fn contains_bounded(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        matches!(before, Some('(' | '[' | ',' | ' '))
            && (matches!(after, Some(')' | ']' | ','))
                || hay[i + needle.len()..].starts_with(" at "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOW: &str = r#""builtin.module"() ({
  "flow.executable"() <{sym_name = "main_dispatch_0", sym_visibility = "private"}> ({
    "arith.mulf"(%a, %b) : (f32, f32) -> f32 loc(fused["s.mlir":3:8, "s.mlir":4:8])
  }) : () -> () loc("s.mlir":3:8)
  "flow.executable"() <{sym_name = "main_dispatch_1", sym_visibility = "private"}> ({
    "arith.addf"(%a, %b) : (f32, f32) -> f32 loc("jit(f)/add"("s.mlir":12:3))
  }) : () -> () loc("s.mlir":12:3)
  "util.func"() ({ "flow.dispatch"() loc("s.mlir":30:1) }) : () -> ()
}) : () -> ()"#;

    #[test]
    fn finds_each_executable_and_its_text() {
        let e = executables(FLOW);
        let names: Vec<&str> = e.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["main_dispatch_0", "main_dispatch_1"]);
        assert!(
            !e[1].1.contains("flow.dispatch"),
            "the last body stops at the function"
        );
    }

    #[test]
    fn a_location_matches_whole_not_as_a_prefix() {
        let body = executables(FLOW)[0].1;
        assert!(contains_bounded(body, "\"s.mlir\":4:8"));
        assert!(!contains_bounded(body, "\"s.mlir\":4:"));
        assert!(!contains_bounded(body, "\"s.mlir\":12:3"));
        assert!(contains_bounded("callsite(\"a\" at \"b\":3:3)", "\"a\""));
    }

    #[test]
    fn pretty_form_names_too() {
        let e = executables("flow.executable private @ex_0 {\n}\nutil.func public @main() {}");
        assert_eq!(e[0].0, "ex_0");
    }
}
