//! `subject.parameters`: scopes -> parameter files, resolved against the
//! spec's directory; a missing file, an unknown format or an empty scope is
//! an error at its line naming the scope and the file.

mod common;

use common::{assert_err, Fixture};

/// A spec whose subject has `parameters` (the mapping's lines, indented
/// under `parameters:` on line 5) and one stage.
fn spec(parameters: &str) -> String {
    format!(
        "version: 1
subject:
  modules:
    audio: {{mlir: subject/audio.mlir}}
  parameters:
{parameters}oracle: dumps
stages:
  - {{name: a, module: audio, function: f, outputs: [{{name: o, oracle: x}}]}}
"
    )
}

#[test]
fn scopes_and_files_in_order_relative_to_the_spec() {
    let fx = Fixture::new();
    for f in ["subject/w.irpa", "subject/x.safetensors", "subject/g.GGUF"] {
        std::fs::write(fx.dir.path().join(f), b"").unwrap();
    }
    let s = fx
        .parse(&spec(
            "    model: [subject/w.irpa, subject/x.safetensors]\n    \"\": subject/g.GGUF\n",
        ))
        .unwrap();
    let got: Vec<(&str, Vec<std::path::PathBuf>, usize)> = s
        .subject
        .parameters
        .iter()
        .map(|p| (p.scope.as_str(), p.files.clone(), p.location.line))
        .collect();
    let d = fx.dir.path();
    assert_eq!(
        got,
        vec![
            (
                "model",
                vec![d.join("subject/w.irpa"), d.join("subject/x.safetensors")],
                6
            ),
            ("", vec![d.join("subject/g.GGUF")], 7),
        ]
    );
    // Without the key: no parameters.
    let s = fx
        .parse(&spec("    {}\n").replace("  parameters:\n    {}\n", ""))
        .unwrap();
    assert!(s.subject.parameters.is_empty());
}

#[test]
fn missing_files_other_formats_and_empty_scopes_are_errors_at_their_line() {
    let fx = Fixture::new();
    std::fs::write(fx.dir.path().join("subject/w.npz"), b"").unwrap();
    let msg = fx.err(&spec("    model: [subject/gone.irpa]\n"));
    assert_err(
        &msg,
        6,
        13,
        &["parameter scope `model`", "gone.irpa does not exist"],
    );
    let msg = fx.err(&spec("    model: subject/w.npz\n"));
    assert_err(
        &msg,
        6,
        12,
        &[
            "parameter file subject/w.npz (scope `model`)",
            ".irpa, .safetensors and .gguf",
        ],
    );
    let msg = fx.err(&spec("    model: []\n"));
    assert_err(&msg, 6, 12, &["parameter scope `model` lists no files"]);
    let msg = fx.err(&spec("    model: {a: b}\n"));
    assert_err(&msg, 6, 12, &["parameter files"]);
}
