//! `weight_transforms:` end to end on the basic example: its `scores` stage
//! takes two square 16x16 matrices, so a checkpoint storing `attn.wq`
//! transposed (HF `[out, in]` layout) under another name passes every shape
//! check. With the transform written in the spec the run passes and records
//! it; with only the rename, the untransposed matrix gives wrong numbers and
//! parity catches them as a parity failure (exit 1), not silently.

mod common;

use common::{basic_copy, check, stage};
use parity::run::transform::permute;
use std::path::Path;

/// Replaces `weights.safetensors` by `weights_hf.safetensors`, in which
/// `attn.wq` is stored transposed as `hf.attn.wq`; points the spec at it and
/// prepends `transforms` to it.
fn hf_layout(dir: &Path, transforms: &str) {
    let file = parity_tensor::read_safetensors(dir.join("weights.safetensors")).unwrap();
    let mut tensors = Vec::new();
    for name in file.names() {
        let t = file.get(name).unwrap();
        if name == "attn.wq" {
            assert_eq!(t.shape(), &[16, 16], "the case needs a square matrix");
            tensors.push(("hf.attn.wq".to_string(), permute(&t, &[1, 0]).unwrap()));
        } else {
            tensors.push((name.clone(), t));
        }
    }
    let refs: Vec<(&str, &parity_tensor::Tensor)> =
        tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    parity_tensor::write_safetensors(dir.join("weights_hf.safetensors"), &refs, None).unwrap();
    std::fs::remove_file(dir.join("weights.safetensors")).unwrap();
    let spec = dir.join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let text = text.replacen(
        "weights: [weights.safetensors]\n",
        &format!("weights: [weights_hf.safetensors]\nweight_transforms:\n{transforms}"),
        1,
    );
    std::fs::write(&spec, text).unwrap();
}

#[test]
fn a_transposed_square_weight_passes_with_its_transform_and_fails_without() {
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\", transpose: [1, 0]}\n",
    );
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let applied = record["provenance"]["weight_transforms"]
        .as_array()
        .unwrap();
    assert_eq!(applied.len(), 1, "{applied:?}");
    assert_eq!(applied[0]["weight"], "attn.wq");
    assert_eq!(applied[0]["source"], "hf.attn.wq");
    assert_eq!(applied[0]["transpose"], serde_json::json!([1, 0]));
    assert!(
        applied[0]["rule"]
            .as_str()
            .unwrap()
            .ends_with("stages.yaml:22:5"),
        "{applied:?}"
    );
    assert!(
        stdout.contains("weights transformed at load: 1")
            && stdout.contains("`attn.wq`: read as `hf.attn.wq`, transpose [1, 0]"),
        "{stdout}"
    );

    // The rename alone feeds the square matrix untransposed: every shape
    // check passes, the numbers are wrong, and the run fails on them.
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\"}\n",
    );
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let scores = stage(&record, "scores", "isolated");
    assert_eq!(scores["status"], "fail", "{scores}");
    assert!(scores["outputs"][0]["metrics"]["max_abs"].as_f64().unwrap() > 1e-3);
    assert_eq!(stage(&record, "layer_norm", "isolated")["status"], "pass");
    assert_eq!(record["first_divergence"]["stage"], "scores");
}

#[test]
fn a_transform_of_the_wrong_rank_is_an_input_error_naming_weight_and_entry() {
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\", transpose: [2, 0, 1]}\n",
    );
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let msg = stage(&record, "scores", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("weight `attn.wq` (read as `hf.attn.wq`)")
            && msg.contains("stages.yaml:22:5")
            && msg.contains("has 3 axes but the weight has shape [16, 16]"),
        "{msg}"
    );
}

/// A module whose `scores` takes the query kernel as `[hidden, heads,
/// head_dim]` (16 x 4 x 4), as a JAX/keras attention kernel is laid out, and
/// flattens it back inside; the spec's `scores` stage is pointed at it.
fn heads_module(dir: &Path) {
    std::fs::write(
        dir.join("heads.mlir"),
        r#"module {
  func.func public @scores_heads(%h: tensor<2x4x16xf32>, %wq3: tensor<16x4x4xf32>, %wk: tensor<16x16xf32>) -> tensor<2x4x4xf32> {
    %wq = stablehlo.reshape %wq3 : (tensor<16x4x4xf32>) -> tensor<16x16xf32>
    %q = stablehlo.dot_general %h, %wq, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %k = stablehlo.dot_general %h, %wk, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %s = stablehlo.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
    %scale = stablehlo.constant dense<2.500000e-01> : tensor<2x4x4xf32>
    %out = stablehlo.multiply %s, %scale : tensor<2x4x4xf32>
    return %out : tensor<2x4x4xf32>
  }
}
"#,
    )
    .unwrap();
    let spec = dir.join("stages.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let text = text
        .replacen(
            "    basic: {mlir: model.mlir}\n",
            "    basic: {mlir: model.mlir}\n    heads: {mlir: heads.mlir}\n",
            1,
        )
        .replacen(
            "    module: basic\n    function: scores\n",
            "    module: heads\n    function: scores_heads\n",
            1,
        );
    assert!(text.contains("function: scores_heads"));
    std::fs::write(&spec, text).unwrap();
}

#[test]
fn an_hf_projection_becomes_a_heads_kernel_by_transpose_then_reshape() {
    // HF stores q_proj as [heads * head_dim, hidden]; the module takes
    // [hidden, heads, head_dim]: transpose [1, 0], then reshape [16, 4, 4].
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\", transpose: [1, 0], reshape: [16, 4, 4]}\n",
    );
    heads_module(dir.path());
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let scores = stage(&record, "scores", "isolated");
    assert_eq!(scores["status"], "pass", "{scores}");
    assert_eq!(
        scores["outputs"][0]["metrics"]["max_abs"].as_f64(),
        Some(0.0),
        "{scores}"
    );
    let applied = &record["provenance"]["weight_transforms"][0];
    assert_eq!(
        applied["reshape"],
        serde_json::json!([16, 4, 4]),
        "{applied}"
    );
    assert_eq!(applied["transpose"], serde_json::json!([1, 0]));
    assert!(
        stdout.contains("`attn.wq`: read as `hf.attn.wq`, transpose [1, 0], reshape to [16, 4, 4]"),
        "{stdout}"
    );

    // Reshaped without the transpose: every shape fits, the numbers do not.
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\", reshape: [16, 4, 4]}\n",
    );
    heads_module(dir.path());
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(
        stage(&record.unwrap(), "scores", "isolated")["status"],
        "fail"
    );
}

#[test]
fn a_reshape_of_another_element_count_is_exit_2_naming_weight_entry_and_shapes() {
    let dir = basic_copy();
    hf_layout(
        dir.path(),
        "  - {match: \"attn\\\\.wq\", rename: \"hf.attn.wq\", transpose: [1, 0], reshape: [16, 4, 3]}\n",
    );
    heads_module(dir.path());
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let msg = stage(&record.unwrap(), "scores", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("weight `attn.wq` (read as `hf.attn.wq`)")
            // Line 23: heads_module added a module line above the entry.
            && msg.contains("stages.yaml:23:5")
            && msg.contains("`reshape` [16, 4, 3] has 192 elements but the weight (after any transpose) has shape [16, 16], 256 elements"),
        "{msg}"
    );
}
