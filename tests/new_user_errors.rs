//! Error messages a new user met onboarding a model (issue 33), through the
//! real binary on the basic example: a weight in the other layout, a spec
//! without `cases:` over a store that has cases, and a mistake reached
//! through a YAML alias.

mod common;

use common::{basic_copy, check, stage};
use std::path::Path;

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// `proj.weight` ([16, 8]) stored transposed, under its own name.
fn transpose_proj_weight(dir: &Path) {
    let path = dir.join("weights.safetensors");
    let file = parity_tensor::read_safetensors(&path).unwrap();
    let tensors: Vec<(String, parity_tensor::Tensor)> = file
        .names()
        .iter()
        .map(|name| {
            let t = file.get(name).unwrap();
            let t = if name == "proj.weight" {
                parity::run::transform::permute(&t, &[1, 0]).unwrap()
            } else {
                t
            };
            (name.clone(), t)
        })
        .collect();
    drop(file);
    let refs: Vec<(&str, &parity_tensor::Tensor)> =
        tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    parity_tensor::write_safetensors(&path, &refs, None).unwrap();
}

#[test]
fn a_weight_in_the_other_layout_is_named_with_the_transform_that_fits() {
    let dir = basic_copy();
    transpose_proj_weight(dir.path());
    let args = ["--mode", "isolated", "--stage", "proj_bf16"];
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &args);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let msg = stage(&record, "proj_bf16", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains(
            "argument 1 of `basic.proj_bf16` (weight `proj.weight`): shape [8, 16] but the \
             function takes tensor<16x8xbf16>; its axes permuted fit: add \
             `weight_transforms: [{match: \"proj\\\\.weight\", transpose: [1, 0]}]`"
        ),
        "{msg}"
    );
    // The suggested entry, pasted as given, makes the stage pass.
    edit(
        &dir.path().join("stages.yaml"),
        "weights: [weights.safetensors]\n",
        "weights: [weights.safetensors]\nweight_transforms: [{match: \"proj\\\\.weight\", transpose: [1, 0]}]\n",
    );
    let (code, stdout, stderr, _) = check(dir.path(), "stages.yaml", &args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[test]
fn a_case_the_store_lacks_lists_the_cases_it_has() {
    let dir = basic_copy();
    // The store holds `x` under two cases; the spec has no `cases:`, so it
    // runs one case, `default`.
    let manifest = dir.path().join("oracle/manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let tensors = m["tensors"].as_object_mut().unwrap();
    let x = tensors.remove("x").unwrap();
    tensors.insert("full/x".into(), x.clone());
    tensors.insert("partial/x".into(), x);
    std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    edit(
        &dir.path().join("stages.yaml"),
        "      - {oracle: x}\n",
        "      - {oracle: \"{case}/x\"}\n",
    );
    let args = ["--mode", "isolated", "--stage", "layer_norm"];
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &args);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let msg = stage(&record, "layer_norm", "isolated")["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains(
            "no tensor named `default/x`; the store has no case `default` (`default` is the \
             one case of a spec without `cases:`: list the store's cases under `cases:`); its \
             cases: full, partial"
        ),
        "{msg}"
    );
}

#[test]
fn a_mistake_reached_through_an_alias_points_at_the_use_and_names_the_anchor() {
    let dir = basic_copy();
    let spec = dir.path().join("stages.yaml");
    // A valid mask, anchored where it is written, then used as an argument,
    // where `axes` and `padded` are no keys.
    edit(
        &spec,
        "        mask: {oracle: mask, axes: [0, 1], padded: true}\n",
        "        mask: &m {oracle: mask, axes: [0, 1], padded: true}\n",
    );
    edit(
        &spec,
        "      - {weight: conv.weight}\n",
        "      - {weight: conv.weight}\n      - *m\n",
    );
    let text = std::fs::read_to_string(&spec).unwrap();
    let line_of = |needle: &str| 1 + text.lines().position(|l| l.contains(needle)).unwrap();
    let (anchor, used) = (line_of("&m"), line_of("- *m"));
    let (code, _, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 2, "{stderr}");
    let expected = format!("stages.yaml:{used}:9: in alias `*m` (anchor `&m` at {anchor}:15, this part at {anchor}:33)");
    assert!(stderr.contains(&expected), "{expected}\n{stderr}");
    assert!(stderr.contains("unknown key `axes`"), "{stderr}");
    let error = &record.unwrap()["errors"][0];
    assert_eq!(error["location"]["line"], used as u64, "{error}");
}
