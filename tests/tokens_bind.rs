//! `tokens.prefill` / `tokens.decode` from their own modules and with `bind:`
//! (weights bound by the functions' MLIR argument names, the decode inputs
//! by explicit `arg:` rules), end to end on examples/tokens: real IREE.

mod common;

use common::{example_copy, parity};
use serde_json::Value;
use std::path::Path;

/// examples/tokens' weights in the order its functions take them (`ws[i]`).
const WEIGHTS: [&str; 19] = [
    "emb",
    "pos_emb",
    "layers.0.ln1",
    "layers.0.wq",
    "layers.0.wk",
    "layers.0.wv",
    "layers.0.wo",
    "layers.0.ln2",
    "layers.0.w_up",
    "layers.0.w_down",
    "layers.1.ln1",
    "layers.1.wq",
    "layers.1.wk",
    "layers.1.wv",
    "layers.1.wo",
    "layers.1.ln2",
    "layers.1.w_up",
    "layers.1.w_down",
    "final_norm",
];

/// A spec over examples/tokens' model.mlir declared twice (`prefill_mod`,
/// `decode_mod`): each call names its module and binds its arguments;
/// `decode_first` are decode's first bind rules (the decode inputs).
fn spec(decode_first: &str, extra_decode: &str) -> String {
    let weights: String = WEIGHTS
        .iter()
        .enumerate()
        .map(|(i, w)| format!("      - {{arg: \"ws[{i}]\", weight: {w}}}\n"))
        .collect();
    format!(
        "version: 1
subject:
  modules:
    prefill_mod: {{mlir: model.mlir}}
    decode_mod: {{mlir: model.mlir}}
  target_backend: llvm-cpu
  driver: local-task
  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]
weights: [weights.safetensors]
oracle: oracle
tokens:
  max_new_tokens: 16
  prompt_length: \"4\"
  cases: [{{name: clean_a}}, {{name: near_tie}}]
  prefill:
    module: prefill_mod
    function: prefill_p4
    bind:
      - {{arg: prompt, oracle: \"{{case}}/prompt\"}}
{weights}    outputs: [logits, k_cache, v_cache]
  decode:
    module: decode_mod
    function: decode
    bind:
{decode_first}{weights}{extra_decode}    outputs: [logits, k_cache, v_cache]
  oracle: {{truth_logits: \"{{case}}/logits@f64\"}}
"
    )
}

const DECODE_INPUTS: &str = "      - {arg: token, token: {dtype: i32, shape: [1, 1]}}
      - {arg: pos, position: {dtype: i32}}
      - {arg: kc, state: k_cache}
      - {arg: vc, state: v_cache}
";

fn run(dir: &Path, text: &str) -> (i32, String, Value) {
    std::fs::write(dir.join("bound.yaml"), text).unwrap();
    let out = dir.join("out");
    let o = parity(
        dir,
        &[
            "tokens",
            "bound.yaml",
            "--out-dir",
            out.to_str().unwrap(),
            "--no-localise",
        ],
    );
    // The text report (stdout) and anything on stderr.
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("tokens.json")).unwrap_or_default();
    let record = serde_json::from_str(&text).unwrap_or(Value::Null);
    (o.status.code().unwrap_or(-1), stderr, record)
}

/// The bound spec decodes exactly what stages.yaml's `args:` lists decode:
/// the same tokens and the same logits differences, step for step.
#[test]
fn bound_calls_from_two_modules_decode_as_the_listed_args_do() {
    let dir = example_copy("tokens");
    let (code, stderr, bound) = run(dir.path(), &spec(DECODE_INPUTS, ""));
    assert_eq!(code, 0, "{stderr}");
    let out = dir.path().join("listed");
    let o = parity(
        dir.path(),
        &[
            "tokens",
            "stages.yaml",
            "--case",
            "clean_a",
            "--case",
            "near_tie",
            "--out-dir",
            out.to_str().unwrap(),
            "--no-localise",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let listed: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tokens.json")).unwrap()).unwrap();
    for i in 0..2 {
        let (b, l) = (&bound["cases"][i], &listed["cases"][i]);
        assert_eq!(b["case"], l["case"]);
        assert_eq!(b["oracle_tokens"].as_array().unwrap().len(), 16);
        for key in ["greedy_tokens", "teacher_forced_tokens", "status"] {
            assert_eq!(b[key], l[key], "{key} of {}", b["case"]);
        }
        let deltas = |r: &Value| -> Vec<f64> {
            r["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["max_abs_delta_logit"].as_f64().unwrap())
                .collect()
        };
        assert_eq!(deltas(b), deltas(l), "bit-identical logits, {}", b["case"]);
    }
    // near_tie's step-2 flip is still the near tie it is with `args:`.
    assert_eq!(bound["first_divergent_token"]["step"], 2);
    assert_eq!(bound["first_divergent_token"]["verdict"], "near_tie");
}

/// Mistakes in the calls' modules and binds are exit 2 naming the spec
/// position, the call and what is wrong.
#[test]
fn module_and_bind_mistakes_are_exit_2_at_their_spec_position() {
    let dir = example_copy("tokens");
    // A module no `subject.modules` declares: refused when the spec loads.
    let text = spec(DECODE_INPUTS, "").replace("module: decode_mod", "module: decoder");
    let (code, stderr, _) = run(dir.path(), &text);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bound.yaml:41:13")
            && stderr.contains("module `decoder` is not declared")
            && stderr.contains("the module of `decode`"),
        "{stderr}"
    );
    // A function the named module does not have.
    let text = spec(DECODE_INPUTS, "").replace("function: decode\n", "function: decode_x\n");
    let (code, stderr, r) = run(dir.path(), &text);
    assert_eq!(code, 2, "{stderr}");
    let msg = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("bound.yaml:42:15")
            && msg.contains("tokens.decode")
            && msg.contains("module `decode_mod` has no function `decode_x`"),
        "{msg}"
    );
    // A decode input left out: its argument is unbound, named by index and MLIR name.
    let text = spec(
        &DECODE_INPUTS.replace("      - {arg: vc, state: v_cache}\n", ""),
        "",
    );
    let (code, stderr, r) = run(dir.path(), &text);
    assert_eq!(code, 2, "{stderr}");
    let msg = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("bound.yaml:44:7")
            && msg.contains("tokens.decode")
            && msg.contains("argument 3 (`vc`)")
            && msg.contains("bound by no `bind` rule"),
        "{msg}"
    );
    // A pattern matching nothing is a typo, as in a stage's `bind:`.
    let text = spec(
        DECODE_INPUTS,
        "      - {match: \"nothing_here\", weight: x}\n",
    );
    let (code, _, r) = run(dir.path(), &text);
    assert_eq!(code, 2);
    let msg = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("`match: nothing_here` matches no argument"),
        "{msg}"
    );
    // A rule on a decode input's argument (by index) is a double binding.
    let text = spec(DECODE_INPUTS, "      - {arg: 1, oracle: \"{case}/pos\"}\n");
    let (code, _, r) = run(dir.path(), &text);
    assert_eq!(code, 2);
    let msg = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("argument 1 (`pos`)") && msg.contains("bound twice"),
        "{msg}"
    );
}
