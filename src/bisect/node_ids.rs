//! Model Explorer's node ids for a function's operations, so the node-data
//! renderer can key per-op values the way the explorer's graph does.
//!
//! Model Explorer's MLIR adapter (google-ai-edge/model-explorer,
//! src/builtin-adapter/adapters/mlir/translate_helpers.cc: `FuncOpToSubgraph`,
//! `AddNode`, `AddNodeInfo`, `MaybeAddNestedRegion`) builds one subgraph per
//! `func.func`, named by its symbol, with a fresh counter: every operation
//! gets the counter's next value as its id (`absl::StrCat(node_counter.increment())`),
//! and the operations of an operation's regions (a `stablehlo.reduce` body)
//! are numbered right after it, before the next top-level operation.
//! Function arguments are `arg<i>` and take no number.

use parity_mlir::ir::Function;

/// The node id of each top-level operation of `func`, by op index.
pub fn model_explorer_ids(func: &Function) -> Vec<String> {
    let mut next = 0usize;
    func.ops
        .iter()
        .map(|op| {
            let id = next;
            next += 1 + if op.has_regions {
                nested_ops(&op.text)
            } else {
                0
            };
            id.to_string()
        })
        .collect()
}

/// Operations nested in a generic-form operation's text: every `"dialect.op"(`
/// after the operation's own.
fn nested_ops(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut count = 0usize;
    let mut i = 0;
    while let Some(start) = text[i..].find('"').map(|k| k + i) {
        let Some(len) = text[start + 1..].find('"') else {
            break;
        };
        let name = &text[start + 1..start + 1 + len];
        let end = start + 1 + len;
        let is_op = bytes.get(end + 1) == Some(&b'(')
            && name.contains('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
        if is_op {
            count += 1;
        }
        i = end + 1;
    }
    count.saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::nested_ops;

    #[test]
    fn a_reduce_body_counts_its_add_and_return() {
        let text = r#"%0 = "stablehlo.reduce"(%a, %b) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %1 = "stablehlo.add"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%1) : (tensor<f32>) -> ()
  }) {dimensions = array<i64: 2>} : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32> loc("x")"#;
        assert_eq!(nested_ops(text), 2);
        assert_eq!(nested_ops(r#"%0 = "stablehlo.add"(%a, %b) : () -> ()"#), 0);
    }
}
