//! Shared helpers: the committed real excerpts.
#![allow(dead_code)]

use parity_mlir::{Function, Module};

pub const GEMMA: &str = include_str!("../data/gemma3n_excerpt.mlir");
pub const MULTI: &str = include_str!("../data/multi_result.mlir");

pub fn gemma() -> Module {
    parity_mlir::parse(GEMMA).expect("the gemma3n excerpt parses")
}

pub fn multi() -> Module {
    parity_mlir::parse(MULTI).expect("the multi-result sample parses")
}

pub fn attention(m: &Module) -> &Function {
    m.function("conformer_1_attention_c1_b128")
        .expect("the excerpt has conformer_1_attention_c1_b128")
}

pub fn value(f: &Function, name: &str) -> usize {
    f.value_by_name(name)
        .unwrap_or_else(|| panic!("no value {name} in @{}", f.name))
}

/// `.venv/bin/iree-opt` of the checkout, when set up.
pub fn iree_opt() -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/iree-opt");
    path.is_file().then_some(path)
}

pub fn names(f: &Function, values: &[usize]) -> Vec<String> {
    values.iter().map(|&v| f.values[v].name.clone()).collect()
}

/// The first result names of ops, to compare op lists readably.
pub fn op_names(f: &Function, ops: &[usize]) -> Vec<String> {
    ops.iter()
        .map(|&o| f.values[f.ops[o].results[0]].name.clone())
        .collect()
}
