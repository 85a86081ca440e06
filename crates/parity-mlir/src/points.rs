//! Where a function can be cut: its named scopes as a tree, each with the value a
//! `slice:` point of that name resolves to (for `parity points`).
//!
//! The tree follows [`Function::scope_outputs`] exactly, so every listed point
//! resolves through [`Function::resolve_point`] to the listed value: a scope's
//! value is the first result of the last top-level operation (with results) in
//! it. Keras-style bare names (`loc("gather")`, `loc("mul")`) are one-segment
//! scopes at the top of the tree.

use std::collections::{BTreeMap, HashMap};

use crate::ir::{Function, ValueId};

/// One named scope of a function: a point a `slice:` stage can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopePoint {
    /// The scope path, segments joined by `/` (`conformer_0/attention`): a valid point.
    pub path: String,
    /// The `_` form of the path (`conformer_0_attention`): the oracle naming key, also a valid point.
    pub key: String,
    /// Top-level operations (with results) in this scope or below it.
    pub ops: usize,
    /// The value [`Function::resolve_point`] gives for `path`.
    pub value: ValueId,
    /// Another scope path has the same `_` form, so this point resolves to the value
    /// of whichever of them has the last operation; name the value by SSA to be sure.
    pub shared_key: bool,
    /// Sub-scopes, in order of their first operation.
    pub children: Vec<ScopePoint>,
}

/// Builder node: children by segment, kept in first-seen order.
#[derive(Default)]
struct Node {
    path: String,
    key: String,
    ops: usize,
    order: Vec<String>,
    children: HashMap<String, Node>,
}

impl Function {
    /// The function's named scopes as a tree, roots in order of their first operation.
    pub fn scope_tree(&self) -> Vec<ScopePoint> {
        let outputs = self.scope_outputs();
        let mut root = Node::default();
        // `_` key -> distinct paths with that key, to flag collisions.
        let mut paths_of_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for op in &self.ops {
            if op.results.is_empty() {
                continue;
            }
            let Some(segments) = op.loc.path_segments() else {
                continue;
            };
            let mut node = &mut root;
            for segment in &segments {
                if !node.children.contains_key(segment) {
                    node.order.push(segment.clone());
                }
                let (parent_path, parent_key) = (node.path.clone(), node.key.clone());
                node = node.children.entry(segment.clone()).or_insert_with(|| {
                    let join = |base: &str, sep: char, seg: &str| {
                        if base.is_empty() {
                            seg.to_string()
                        } else {
                            format!("{base}{sep}{seg}")
                        }
                    };
                    let path = join(&parent_path, '/', segment);
                    let key = join(&parent_key, '_', &segment.replace('/', "_"));
                    let paths = paths_of_key.entry(key.clone()).or_default();
                    paths.push(path.clone());
                    Node {
                        path,
                        key,
                        ..Node::default()
                    }
                });
                node.ops += 1;
            }
        }
        freeze(&root, &outputs, &paths_of_key)
    }

    /// Every point of [`Function::scope_tree`], depth first (parents before children).
    pub fn scope_points(&self) -> Vec<ScopePoint> {
        fn walk(nodes: &[ScopePoint], out: &mut Vec<ScopePoint>) {
            for n in nodes {
                out.push(ScopePoint {
                    children: Vec::new(),
                    ..n.clone()
                });
                walk(&n.children, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.scope_tree(), &mut out);
        out
    }
}

fn freeze(
    node: &Node,
    outputs: &BTreeMap<String, ValueId>,
    paths_of_key: &BTreeMap<String, Vec<String>>,
) -> Vec<ScopePoint> {
    node.order
        .iter()
        .filter_map(|segment| {
            let child = node.children.get(segment)?;
            // Every node was made from an op with results, so its key is in `outputs`.
            let &value = outputs.get(&child.key)?;
            Some(ScopePoint {
                path: child.path.clone(),
                key: child.key.clone(),
                ops: child.ops,
                value,
                shared_key: paths_of_key.get(&child.key).is_some_and(|p| p.len() > 1),
                children: freeze(child, outputs, paths_of_key),
            })
        })
        .collect()
}

/// `point` spelled so it can go in a YAML flow list (`from: [a, b]`) unchanged:
/// bare when it is only letters, digits and `_ / . % # -`, else double-quoted.
pub fn yaml_point(point: &str) -> String {
    let bare = !point.is_empty()
        && point.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b'.' | b'%' | b'#' | b'-')
        })
        && !point.starts_with(['-', '%', '#']);
    if bare {
        return point.to_string();
    }
    let mut out = String::from("\"");
    for c in point.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::yaml_point;

    #[test]
    fn yaml_spelling() {
        assert_eq!(yaml_point("conformer_0/attention"), "conformer_0/attention");
        assert_eq!(yaml_point("%12"), "\"%12\"");
        assert_eq!(yaml_point("a/b,c->d"), "\"a/b,c->d\"");
        assert_eq!(yaml_point("x\"y"), "\"x\\\"y\"");
    }
}
