//! The scope tree `parity points` prints: on the real attention excerpt and on a
//! Keras-style module whose top-level ops carry bare names (`gather`, `mul`).

mod common;

use common::{attention, gemma};
use parity_mlir::{Function, ScopePoint};

/// Every point of the tree resolves, by path and by key, to the value it lists.
fn assert_all_resolve(f: &Function) -> usize {
    let points = f.scope_points();
    for p in &points {
        if p.shared_key {
            continue;
        }
        assert_eq!(f.resolve_point(&p.path).unwrap(), p.value, "{}", p.path);
        assert_eq!(f.resolve_point(&p.key).unwrap(), p.value, "{}", p.key);
    }
    points.len()
}

fn find<'a>(nodes: &'a [ScopePoint], path: &str) -> &'a ScopePoint {
    for n in nodes {
        if n.path == path {
            return n;
        }
        if path.starts_with(&format!("{}/", n.path)) {
            return find(&n.children, path);
        }
    }
    panic!("no scope {path}")
}

#[test]
fn attention_tree_has_counts_values_and_resolves() {
    let m = gemma();
    let f = attention(&m);
    let tree = f.scope_tree();
    assert_eq!(tree.len(), 1, "one root: conformer_1");
    let root = &tree[0];
    assert_eq!(root.path, "conformer_1");
    // The root counts every top-level op with a named scope and results.
    let named = f
        .ops
        .iter()
        .filter(|op| !op.results.is_empty() && op.loc.path().is_some())
        .count();
    assert_eq!(root.ops, named);
    assert_eq!(f.values[root.value].name, "%7925");
    let rel = find(&tree, "conformer_1/attention/rel_shift");
    assert_eq!(rel.key, "conformer_1_attention_rel_shift");
    assert_eq!(f.values[rel.value].name, "%7864");
    let children: Vec<&str> = rel.children.iter().map(|c| c.path.as_str()).collect();
    assert!(
        children.contains(&"conformer_1/attention/rel_shift/padded")
            && children.contains(&"conformer_1/attention/rel_shift/sliced"),
        "{children:?}"
    );
    // A parent counts at least the sum of its children.
    let sum: usize = rel.children.iter().map(|c| c.ops).sum();
    assert!(rel.ops >= sum && sum > 0, "{} < {sum}", rel.ops);
    // The tree lists exactly the keys of scope_outputs, and all resolve.
    let n = assert_all_resolve(f);
    assert_eq!(n, f.scope_outputs().len());
}

/// Keras 3 on JAX names top-level ops after the op (`gather`, `mul`) with no scope.
const KERAS: &str = r#""builtin.module"() <{sym_name = "keras"}> ({
  "func.func"() <{function_type = (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xf32> loc("params['w']")):
    %0 = "stablehlo.multiply"(%arg0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("mul")
    %1 = "stablehlo.add"(%0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(main)/dense/add")
    %2 = "stablehlo.multiply"(%1, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("mul"("model.py":3:1))
    %3 = "stablehlo.negate"(%2) : (tensor<4xf32>) -> tensor<4xf32> loc("a/b_c")
    %4 = "stablehlo.abs"(%3) : (tensor<4xf32>) -> tensor<4xf32> loc("a_b/c")
    "func.return"(%4) : (tensor<4xf32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
}) : () -> () loc(unknown)
"#;

#[test]
fn bare_keras_names_are_top_level_points() {
    let m = parity_mlir::parse(KERAS).unwrap();
    let f = m.function("main").unwrap();
    let tree = f.scope_tree();
    let roots: Vec<(&str, usize)> = tree.iter().map(|n| (n.path.as_str(), n.ops)).collect();
    assert_eq!(roots, [("mul", 2), ("dense", 1), ("a", 1), ("a_b", 1)]);
    // `mul` cuts at its last op, as resolve_point does.
    assert_eq!(f.values[tree[0].value].name, "%2");
    assert_eq!(f.resolve_point("mul").unwrap(), tree[0].value);
    assert_eq!(f.values[find(&tree, "dense/add").value].name, "%1");
    // `a/b_c` and `a_b/c` share the key `a_b_c`: flagged, and both list the value it resolves to.
    let (x, y) = (find(&tree, "a/b_c"), find(&tree, "a_b/c"));
    assert!(x.shared_key && y.shared_key);
    assert_eq!(x.value, y.value);
    assert_eq!(f.resolve_point("a/b_c").unwrap(), x.value);
    assert!(!tree[0].shared_key);
    assert_all_resolve(f);
}
