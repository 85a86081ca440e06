//! `bind:` on the bundled subject, through the real binary, IREE compiler and
//! runtime: a stage whose arguments are bound by their MLIR names
//! (`loc("mel")`, `loc("audio_tower__..._weight")`) runs exactly as the same
//! stage with its `args` listed, and binding mistakes are exit 2 naming the
//! stage, the argument and the spec's `file:line:col`.

mod common;

use common::{check, repo, stage};
use std::path::Path;

/// The subject's `sscp_conv_0` stage block, as stages.yaml has it.
fn sscp_conv_0_block() -> String {
    let text = std::fs::read_to_string(repo().join("subject/gemma3n/stages.yaml")).unwrap();
    let start = text
        .find("  - name: sscp_conv_0\n")
        .expect("stage sscp_conv_0");
    let len = text[start + 1..]
        .find("\n  - name: ")
        .expect("a stage after it");
    text[start..start + 1 + len + 1].to_string()
}

/// A spec with the audio module only (absolute paths), case full128, and `stages`.
fn spec_text(stages: &str) -> String {
    let sub = repo().join("subject/gemma3n");
    format!(
        "version: 1
subject:
  modules:
    audio: {{mlir: {}}}
  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]
weights: [{}]
oracle: {}
cases:
  - {{name: full128, vars: {{clips: \"1\", bucket: \"128\"}}}}
stages:
{stages}",
        sub.join("gemma3n_audio_f32.mlir.gz").display(),
        sub.join("weights.safetensors").display(),
        sub.join("../../oracle-dumps/gemma3n").display(),
    )
}

/// `block` with its `args:` list replaced by `bind` and its name by `name`.
fn bound(block: &str, name: &str, bind: &str) -> String {
    let mut out = String::new();
    let mut in_args = false;
    for line in block.lines() {
        if line == "    args:" {
            in_args = true;
            out.push_str("    bind:\n");
            out.push_str(bind);
            continue;
        }
        if in_args && line.starts_with("      - {") {
            continue;
        }
        in_args = false;
        out.push_str(line);
        out.push('\n');
    }
    out.replacen("  - name: sscp_conv_0\n", &format!("  - name: {name}\n"), 1)
}

const RULES: &str = "      - {arg: mel, oracle: \"{case}/mel\"}
      - {match: \"audio_tower__(.*)\", weight: \"model.audio_tower.$1\", replace: {\"__\": \".\"}}
";

fn write(dir: &Path, text: &str) {
    std::fs::write(dir.join("stages.yaml"), text).unwrap();
}

#[test]
fn a_bound_stage_gives_the_same_run_as_the_explicit_argument_list() {
    let block = sscp_conv_0_block();
    assert!(
        block.contains("    args:\n      - {oracle: \"{case}/mel\"}"),
        "{block}"
    );
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &spec_text(&format!(
            "{block}{}",
            bound(&block, "sscp_conv_0_bound", RULES)
        )),
    );
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let record = record.unwrap();
    for mode in ["isolated", "chained"] {
        let explicit = stage(&record, "sscp_conv_0", mode);
        let by_name = stage(&record, "sscp_conv_0_bound", mode);
        assert_eq!(by_name["status"], "pass", "{by_name}");
        assert_eq!(explicit["function"], by_name["function"]);
        let outputs = explicit["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), 7, "{explicit}");
        // Same function, same inputs: the same numbers, output by output.
        assert_eq!(explicit["outputs"], by_name["outputs"], "{mode}");
    }
}

#[test]
fn unbound_and_doubly_bound_arguments_are_exit_2_with_positions() {
    let block = sscp_conv_0_block();
    let dir = tempfile::tempdir().unwrap();
    // No rule for `mel`, and `..._norm__weight` matched twice.
    let rules = "      - {match: \"audio_tower__(.*)\", weight: \"model.audio_tower.$1\", replace: {\"__\": \".\"}}
";
    let doubly = "      - {arg: mel, oracle: \"{case}/mel\"}
      - {match: \"audio_tower__(.*)\", weight: \"model.audio_tower.$1\", replace: {\"__\": \".\"}}
      - {match: \"(.*)__norm__weight\", weight: \"x\"}
";
    let text = spec_text(&format!(
        "{}{}",
        bound(&block, "unbound", rules),
        bound(&block, "doubly", doubly)
    ));
    write(dir.path(), &text);
    let line_of = |needle: &str, nth: usize| {
        text.lines()
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .nth(nth)
            .map(|(i, _)| i + 1)
            .unwrap()
    };
    let (code, stdout, stderr, record) = check(dir.path(), "stages.yaml", &["--mode", "isolated"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.unwrap();
    let unbound = stage(&record, "unbound", "isolated");
    let msg = unbound["error"]["message"].as_str().unwrap();
    let bind_list = line_of("    bind:", 0) + 1;
    assert!(
        msg.contains(&format!("stages.yaml:{bind_list}:7: stage `unbound`:"))
            && msg
                .contains("argument 0 (`mel`) of `sscp_conv_0_c1_b128` is bound by no `bind` rule"),
        "{msg}"
    );
    assert_eq!(unbound["error"]["kind"], "input");
    let doubly = stage(&record, "doubly", "isolated");
    let msg = doubly["error"]["message"].as_str().unwrap();
    let second = line_of("(.*)__norm__weight", 0);
    assert!(
        msg.contains(&format!("stages.yaml:{second}:9: stage `doubly`"))
            && msg.contains(
                "argument 2 (`audio_tower__subsample_conv_projection__conv_0__norm__weight`)"
            )
            && msg.contains("bound twice"),
        "{msg}"
    );
    // `-q` shows both errors' text.
    let out = common::parity(
        dir.path(),
        &[
            "check",
            "stages.yaml",
            "--mode",
            "isolated",
            "-q",
            "--out-dir",
            "out2",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("is bound by no `bind` rule") && stdout.contains("bound twice"),
        "{stdout}"
    );
}
