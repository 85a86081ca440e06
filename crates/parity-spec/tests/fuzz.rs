//! The `fuzz:` section: the bundled specs parse with the contract they
//! state, and a bad contract fails at its file:line:col.

use parity_spec::{FuzzArg, FuzzTolerance, MaskLayout, Spec, ValidRegion};
use std::path::Path;

fn repo(p: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

#[test]
fn the_bundled_fuzz_spec_states_the_audio_contract() {
    let spec = Spec::load(repo("subject/gemma3n/fuzz.yaml")).unwrap();
    assert!(spec.stages.is_empty());
    let f = spec.fuzz.unwrap();
    assert_eq!(f.shapes.len(), 4);
    assert_eq!(f.max_clips(), 2);
    assert_eq!(f.args[0], FuzzArg::Mel);
    assert_eq!(f.args[1], FuzzArg::Mask);
    assert_eq!(f.args.len(), 55);
    assert_eq!(f.mask.layout, MaskLayout::Prefix);
    assert!(f.mask.padded);
    assert_eq!(f.mask.min_valid, 1);
    assert_eq!(
        f.outputs[0].valid,
        ValidRegion::Lengths("projected_lengths".into())
    );
    assert!(!f.outputs[1].batched);
    assert_eq!(f.outputs[2].lengths_rule, Some(16));
    assert_eq!(f.tolerance_of("pad_content"), FuzzTolerance::Exact);
    assert_eq!(f.function_for(f.shapes[3]), "audio_encode_c2_b128");
    assert!(f
        .regressions
        .unwrap()
        .ends_with("fuzz-regressions/audio_encode.seeds"));
}

fn with_fuzz(body: &str) -> String {
    let module = repo("subject/gemma3n/gemma3n_audio_f32.mlir.gz");
    format!(
        "version: 1\nsubject:\n  modules:\n    m: {{mlir: \"{}\"}}\noracle: o\nfuzz:\n  module: m\n  function: \"f_c{{clips}}_b{{bucket}}\"\n  shapes: [{{clips: 1, bucket: 8}}]\n  args: [{{input: mel}}, {{input: mask}}]\n  mel: {{features: 4, sources: [\"a/mel\"]}}\n{body}",
        module.display()
    )
}

#[test]
fn bad_contracts_fail_at_their_position() {
    let cases = [
        (
            "  mask: {layout: suffix, padded: true}\n  outputs: [{name: y}]\n",
            "s.yaml:12:18: fuzz: ",
            "unknown mask layout `suffix`",
        ),
        (
            "  mask: {layout: prefix, padded: true}\n  outputs: [{name: y}]\n  tolerance: {pad_content: [{rms: 1.0}]}\n",
            "s.yaml:14:28: fuzz: ",
            "takes `[exact]` or `[{max_abs: X}]`",
        ),
        (
            "  mask: {layout: prefix, padded: true}\n  outputs: [{name: y, valid: {lengths: n}}]\n",
            "s.yaml:13:12: fuzz: ",
            "`valid.lengths` names `n`",
        ),
        (
            "  mask: {layout: prefix, padded: true}\n  outputs: [{name: y}]\n  tolerance: {bukket: [exact]}\n",
            "s.yaml:14:",
            "bukket",
        ),
    ];
    for (body, at, what) in cases {
        let e = Spec::parse_str(&with_fuzz(body), "s.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(at) && e.contains(what), "{e}");
    }
}
