//! `parity points MODULE --function F --cuts`: the cuts between consecutive
//! named scopes of F (at `--depth`, default the top level), each with the
//! arguments a `slice:` stage cutting there takes, in the order the runner
//! passes them: its `from` point, then the function arguments the cut still
//! reads, by MLIR name. So a `bind:` list can be written before a run (one
//! list can serve every slice: rules for what a slice does not take are
//! ignored, docs/stages-schema.md).

use parity_mlir::{emit_slices, Function, Module, ScopePoint, SliceArg, SliceRequest};
use serde::Serialize;

/// One cut: a `slice:` stage's `from`/`to`, and what it takes.
#[derive(Serialize)]
pub(super) struct CutJson {
    /// `from` points (none for the cut from the function's own arguments).
    pub from: Vec<String>,
    /// `to` points.
    pub to: Vec<String>,
    /// The slice's arguments in order: the `from` points as written, then
    /// function arguments by MLIR name (SSA name when they have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub takes: Option<Vec<String>>,
    /// Why the cut cannot be made, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The scopes at `depth` (1 = top level; a shallower branch's leaf counts),
/// in program order of the values they cut at.
fn scopes_at<'a>(nodes: &'a [ScopePoint], depth: usize, out: &mut Vec<&'a ScopePoint>) {
    for n in nodes {
        if depth <= 1 || n.children.is_empty() {
            out.push(n);
        } else {
            scopes_at(&n.children, depth - 1, out);
        }
    }
}

/// The cuts between consecutive scopes of `f` at `depth`: from the
/// function's arguments to the first, then from each to the next.
pub(super) fn cuts(module: &Module, f: &Function, depth: usize) -> Vec<CutJson> {
    let tree = f.scope_tree();
    let mut points = Vec::new();
    scopes_at(&tree, depth, &mut points);
    points.retain(|p| !p.shared_key);
    points.sort_by_key(|p| f.op_of(p.value));
    let mut out = Vec::new();
    let mut from: Option<&ScopePoint> = None;
    for to in points {
        let request = SliceRequest {
            name: "cut".into(),
            from: from.map(|p| p.value).into_iter().collect(),
            to: vec![to.value],
        };
        let from_names: Vec<String> = from.map(|p| p.path.clone()).into_iter().collect();
        let (takes, error) = match emit_slices(module, f, "cut", &[request]) {
            Ok((_, infos)) => (
                Some(
                    infos[0]
                        .args
                        .iter()
                        .map(|(arg, v)| match arg {
                            SliceArg::From(i) => from_names[*i].clone(),
                            SliceArg::FuncArg(_) => f.values[*v]
                                .loc
                                .name()
                                .unwrap_or_else(|| f.values[*v].name.clone()),
                        })
                        .collect(),
                ),
                None,
            ),
            Err(e) => (None, Some(e.to_string())),
        };
        out.push(CutJson {
            from: from_names,
            to: vec![to.path.clone()],
            takes,
            error,
        });
        from = Some(to);
    }
    out
}

/// The cuts as lines of the listing, points spelled as a `slice:` takes them.
pub(super) fn listing(cuts: &[CutJson]) -> String {
    use std::fmt::Write as _;
    let spell = |points: &[String]| {
        let spelled: Vec<String> = points.iter().map(|p| parity_mlir::yaml_point(p)).collect();
        format!("[{}]", spelled.join(", "))
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  cuts (slice: {{from, to}}; the arguments it takes, in order: `from` points, then function arguments by name):"
    );
    for c in cuts {
        let what = match (&c.takes, &c.error) {
            (Some(takes), _) => takes
                .iter()
                .map(|t| format!("\"{}\"", t.escape_debug()))
                .collect::<Vec<_>>()
                .join(", "),
            (None, Some(e)) => format!("cannot cut: {e}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            s,
            "    from: {}, to: {}\n      takes: {what}",
            spell(&c.from),
            spell(&c.to)
        );
    }
    s
}
