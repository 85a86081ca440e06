//! `slice:` stages on the bundled subject, real IREE: every stage of
//! subject/gemma3n/stages.yaml that lies inside the whole-path function
//! `audio_encode_c1_b128` is re-expressed as a slice of that function (from =
//! the upstream outputs the stage reads, to = the stage's outputs, by the
//! oracle naming convention), run through `parity check`, and compared bit for
//! bit with the stage's own entry function on the same inputs.

mod common;

use common::{cache_dir, check_to, repo};
use parity::run::slices::{self, SlicePlan};
use parity_iree::{ArtifactCache, CacheOutcome, IreeCompiler};
use parity_mlir::SliceArg;
use parity_spec::{Arg, ModuleSource, Spec, Stage};
use parity_tensor::{OracleStore, SafetensorsFile, Tensor};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const CASE: &str = "full128";
const WHOLE: &str = "audio_encode";
const WHOLE_FN: &str = "audio_encode_c{clips}_b{bucket}";

fn subject_dir() -> PathBuf {
    repo().join("subject/gemma3n")
}

/// One `- name:` block of the `stages:` list, as text.
struct Block {
    name: String,
    lines: Vec<String>,
}

impl Block {
    /// The `args:` entries, one YAML line each.
    fn args(&self) -> Vec<String> {
        let start = self
            .lines
            .iter()
            .position(|l| l.trim_end() == "    args:")
            .expect("args");
        self.lines[start + 1..]
            .iter()
            .take_while(|l| l.starts_with("      - "))
            .map(|l| l.trim_start().trim_start_matches("- ").to_string())
            .collect()
    }

    /// The `outputs:` section, keeping only the outputs named in `keep`.
    fn outputs_text(&self, keep: &[String]) -> String {
        let start = self
            .lines
            .iter()
            .position(|l| l.trim_end() == "    outputs:")
            .expect("outputs");
        let mut out = vec![self.lines[start].clone()];
        let mut kept = false;
        for line in &self.lines[start + 1..] {
            if let Some(name) = line.strip_prefix("      - name: ") {
                kept = keep.iter().any(|k| k == name.trim());
            }
            if kept {
                out.push(line.clone());
            }
        }
        out.join("\n")
    }
}

/// The stage blocks of a stages.yaml, in file order, and the text before `stages:`.
fn blocks(text: &str) -> (String, Vec<Block>) {
    let (head, rest) = text.split_once("\nstages:\n").expect("stages:");
    let mut out: Vec<Block> = Vec::new();
    for line in rest.lines() {
        if let Some(name) = line.strip_prefix("  - name: ") {
            out.push(Block {
                name: name.trim().to_string(),
                lines: Vec::new(),
            });
        }
        if let Some(b) = out.last_mut() {
            b.lines.push(line.to_string());
        }
    }
    (head.to_string(), out)
}

/// The top of a spec in `dir` running the subject with absolute paths, case full128 only.
fn header(head: &str) -> String {
    let sub = subject_dir();
    let mut out = String::new();
    for line in head.lines() {
        let line = if line.starts_with("    audio: {mlir: ") {
            format!(
                "    audio: {{mlir: {}}}",
                sub.join("gemma3n_audio_f32.mlir.gz").display()
            )
        } else if line.starts_with("    text: {mlir: ") {
            // The language model's module (the slices cut the audio path only).
            format!(
                "    text: {{mlir: {}}}",
                sub.join("gemma3n_text_f32.mlir.gz").display()
            )
        } else if line.starts_with("weights: ") {
            format!("weights: [{}]", sub.join("weights.safetensors").display())
        } else if line.starts_with("oracle: ") {
            format!(
                "oracle: {}",
                sub.join("../../oracle-dumps/gemma3n").display()
            )
        } else if line.starts_with("  - {name: ") && !line.contains(&format!("name: {CASE},")) {
            continue;
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The point of the whole-path function that an output (by name) is. By the
/// naming convention the output name is a scope; three outputs are not:
/// - `encoded_reduced` (the f32 subsampled encoding) and `mask_reduced` are the
///   two `stablehlo.slice` ops of scope `encoded_reduced`, whose scope value is
///   the last op (the mask), so the f32 one is named by its SSA value;
/// - `hard_audio` is the value the whole path returns, scope `hard_post_norm`.
fn point_for(name: &str, func: &parity_mlir::Function) -> String {
    match name {
        "encoded_reduced" => {
            let op = func
                .ops
                .iter()
                .find(|op| op.loc.path().as_deref() == Some("encoded_reduced/slice"))
                .expect("encoded_reduced/slice op");
            func.values[op.results[0]].name.clone()
        }
        "mask_reduced" => "encoded_reduced".to_string(),
        "hard_audio" => "hard_post_norm".to_string(),
        other => other.to_string(),
    }
}

/// `{stage: up.out}` -> `out`.
fn stage_ref_output(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix("{stage: ")?.strip_suffix('}')?;
    Some(
        inner
            .split_once('.')
            .expect("qualified stage ref")
            .1
            .to_string(),
    )
}

/// A slice stage for `block`: from its upstream outputs to its outputs, with `args` as given.
fn slice_block(
    block: &Block,
    func: &parity_mlir::Function,
    outputs: &[String],
    from_args: &[String],
    args: &[String],
) -> String {
    let points = |v: &[String]| {
        v.iter()
            .map(|p| format!("\"{}\"", point_for(p, func)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let from: Vec<String> = from_args
        .iter()
        .filter_map(|a| stage_ref_output(a))
        .collect();
    let mut text = format!(
        "  - name: {}\n    module: audio\n    slice:\n      function: \"{WHOLE_FN}\"\n      from: [{}]\n      to: [{}]\n",
        block.name,
        points(&from),
        points(outputs)
    );
    if !args.is_empty() {
        text.push_str("    args:\n");
        for a in args {
            text.push_str(&format!("      - {a}\n"));
        }
    }
    text.push_str(&block.outputs_text(outputs));
    text.push('\n');
    text
}

/// The tensors a stage gets in isolated mode: oracle tensors, weights, upstream oracles.
fn isolated_args(
    stage: &Stage,
    stages: &[Stage],
    store: &OracleStore,
    weights: &SafetensorsFile,
) -> Vec<Tensor> {
    stage
        .args
        .iter()
        .map(|arg| match arg {
            Arg::Oracle(name) => store.get(name).expect("oracle tensor"),
            Arg::Weight(name) => weights.get(name).expect("weight"),
            Arg::Stage { stage: up, output } => {
                let up = stages.iter().find(|s| &s.name == up).expect("upstream");
                let o = up
                    .outputs
                    .iter()
                    .find(|o| &o.name == output)
                    .expect("output");
                store.get(&o.oracle).expect("upstream oracle")
            }
            Arg::Literal { .. } => panic!("stage `{}`: literals not expected", stage.name),
        })
        .collect()
}

/// The plan the runner makes for `spec` in case full128 with every stage selected.
fn plan_for(spec: &Spec, compiler: &IreeCompiler) -> (SlicePlan, Vec<Stage>) {
    let case = spec.case(CASE).expect("case");
    let mut cases = vec![(CASE, spec.instantiate(case).expect("instantiate"))];
    let plan = slices::plan(spec, Ok(compiler), &cases, &spec.topo_order());
    plan.retarget(&mut cases);
    (plan, cases.pop().expect("one case").1)
}

fn vmfb(compiler: &IreeCompiler, spec: &Spec, mlir: &[u8], name: &str) -> (Vec<u8>, CacheOutcome) {
    let target = parity::target::Target::select(spec, None).expect("default target");
    let options = target.module_options(spec, "audio");
    ArtifactCache::new(cache_dir())
        .get_or_compile(compiler, name, mlir, &options)
        .map(|c| (c.vmfb, c.outcome))
        .expect("compile")
}

/// Max |a - b| over elements and how many elements differ in their bytes.
fn diff(a: &Tensor, b: &Tensor) -> (f64, usize) {
    let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
    let width = a.dtype().size();
    let differing = a
        .bytes()
        .chunks(width)
        .zip(b.bytes().chunks(width))
        .filter(|(p, q)| p != q)
        .count();
    let max = x
        .iter()
        .zip(&y)
        .map(|(p, q)| (p - q).abs())
        .fold(0.0f64, f64::max);
    (max, differing)
}

#[test]
fn slicing_the_whole_path_at_every_stage_boundary_reproduces_the_stage_functions_bit_for_bit() {
    let text = std::fs::read_to_string(subject_dir().join("stages.yaml")).expect("stages.yaml");
    let original = Spec::load(subject_dir().join("stages.yaml")).expect("subject spec");
    let (head, blocks) = blocks(&text);
    let whole = blocks
        .iter()
        .find(|b| b.name == WHOLE)
        .expect("audio_encode");
    let whole_args = whole.args();
    let compiler = IreeCompiler::load(None).expect("IREE compiler");

    // Which stages lie inside the whole-path function: every output is a point of it.
    let source = parity_tensor::read_module_bytes(&subject_dir().join("gemma3n_audio_f32.mlir.gz"))
        .expect("mlir");
    let normal = compiler
        .normalize("gemma3n_audio_f32.mlir", &source)
        .expect("normalize");
    let module = parity_mlir::parse(&normal).expect("parse");
    let func = module.function("audio_encode_c1_b128").expect("whole path");
    let stage_outputs = |name: &str| -> Vec<String> {
        original
            .stage(name)
            .expect("stage")
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .collect()
    };
    let inside: Vec<&Block> = blocks
        .iter()
        .filter(|b| b.name != WHOLE)
        .filter(|b| {
            stage_outputs(&b.name)
                .iter()
                .all(|o| func.resolve_point(&point_for(o, func)).is_ok())
        })
        .collect();
    let outside: Vec<&str> = blocks
        .iter()
        .filter(|b| b.name != WHOLE && !inside.iter().any(|i| i.name == b.name))
        .map(|b| b.name.as_str())
        .collect();
    println!(
        "{} stages lie inside {WHOLE}; not sliced (outputs not in it): {}",
        inside.len(),
        outside.join(", ")
    );
    assert_eq!(inside.len(), 18, "{outside:?}");

    // Outputs the whole path holds only in another layout: the per-stage
    // functions squeeze [1, C, 1, 1] statistics to [1, C] for export; the
    // whole path never does (it broadcasts them on). Same elements, same order.
    let store = OracleStore::open(&original.oracle).expect("oracle store");
    let per_stage = original
        .instantiate(original.case(CASE).expect("case"))
        .expect("instantiate");
    let mut relaid: Vec<String> = Vec::new();
    for b in &inside {
        let own = per_stage.iter().find(|s| s.name == b.name).expect("stage");
        for o in &own.outputs {
            let v = func
                .resolve_point(&point_for(&o.name, func))
                .expect("point");
            let in_path = func.values[v].ty.shape().expect("static shape");
            let oracle = store.get(&o.oracle).expect("oracle");
            if in_path != oracle.shape() {
                assert_eq!(
                    squeeze(&in_path),
                    squeeze(oracle.shape()),
                    "{}: {in_path:?} vs {:?}",
                    o.name,
                    oracle.shape()
                );
                relaid.push(o.name.clone());
            }
        }
    }
    let expected_relaid: Vec<String> = ["sscp_conv_0", "sscp_conv_1"]
        .iter()
        .flat_map(|s| {
            ["cumulative_sum", "mean", "variance", "inverse_stddev"]
                .iter()
                .map(move |o| format!("{s}_{o}"))
        })
        .collect();
    assert_eq!(relaid, expected_relaid);

    // Spec A, run through parity: every inside stage as a slice, every output
    // but the re-laid ones (the oracle has them squeezed).
    let dir = tempfile::tempdir().expect("tempdir");
    let keep_a = |name: &str| -> Vec<String> {
        stage_outputs(name)
            .into_iter()
            .filter(|o| !relaid.contains(o))
            .collect()
    };
    let stages_a: Vec<(&Block, Vec<String>)> =
        inside.iter().map(|b| (*b, keep_a(&b.name))).collect();
    let (path_a, spec_a, plan_a, stages_of_a) = slice_spec(
        &compiler,
        &head,
        func,
        &whole_args,
        &dir.path().join("slices.yaml"),
        &stages_a,
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr, record) = check_to(
        dir.path(),
        path_a.to_str().expect("utf8"),
        &out,
        &["--case", CASE],
    );
    let record: Value = record.expect("run.json");
    let records = record["stages"].as_array().expect("stages");
    assert_eq!(records.len(), 2 * inside.len(), "{stdout}\n{stderr}");
    for s in records {
        assert_eq!(
            s["function"],
            format!(
                "audio#slices.{}__audio_encode_c1_b128",
                s["name"].as_str().unwrap()
            ),
        );
    }
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (vmfb_a, outcome) = vmfb(&compiler, &spec_a, plan_a.modules[0].mlir.as_bytes(), "a");
    assert_eq!(
        outcome,
        CacheOutcome::Hit,
        "the run compiled this very slice module"
    );

    // Spec B, in process only: the stages with re-laid outputs, every output.
    let stages_b: Vec<(&Block, Vec<String>)> = inside
        .iter()
        .filter(|b| stage_outputs(&b.name).iter().any(|o| relaid.contains(o)))
        .map(|b| (*b, stage_outputs(&b.name)))
        .collect();
    let (_, spec_b, plan_b, stages_of_b) = slice_spec(
        &compiler,
        &head,
        func,
        &whole_args,
        &dir.path().join("relaid.yaml"),
        &stages_b,
    );
    let (vmfb_b, _) = vmfb(&compiler, &spec_b, plan_b.modules[0].mlir.as_bytes(), "b");

    // Every stage function against its slice, on the same isolated inputs.
    let ModuleSource::Mlir(path) = &original.subject.modules["audio"].source else {
        panic!("mlir module")
    };
    let (parent_vmfb, _) = vmfb(&compiler, &original, &source, &path.display().to_string());
    let runtime = parity::target::Target::select(&original, None)
        .expect("default target")
        .runtime()
        .expect("runtime");
    let parent = runtime.load(&parent_vmfb, "audio").expect("load parent");
    let slices_a = runtime.load(&vmfb_a, "a").expect("load slices");
    let slices_b = runtime.load(&vmfb_b, "b").expect("load slices");
    let weights =
        parity_tensor::read_safetensors(&original.weights[0]).expect("weights.safetensors");

    println!(
        "{:<30} {:>7} {:>13}  note",
        "stage", "outputs", "bit-identical"
    );
    let mut differing: Vec<String> = Vec::new();
    for b in &inside {
        let own = per_stage.iter().find(|s| s.name == b.name).expect("stage");
        let want = parent
            .invoke(
                &own.function,
                &isolated_args(own, &per_stage, &store, &weights),
            )
            .expect("stage function");
        let (loaded, cut_stages) = if stages_b.iter().any(|(s, _)| s.name == b.name) {
            (&slices_b, &stages_of_b)
        } else {
            (&slices_a, &stages_of_a)
        };
        let cut = cut_stages.iter().find(|s| s.name == b.name).expect("slice");
        let got = loaded
            .invoke(
                &cut.function,
                &isolated_args(cut, cut_stages, &store, &weights),
            )
            .expect("slice function");
        assert_eq!(got.len(), want.len(), "stage {}", b.name);
        let mut same = 0;
        let mut notes = Vec::new();
        for ((g, w), o) in got.iter().zip(&want).zip(&own.outputs) {
            assert_eq!(g.dtype(), w.dtype(), "{}", o.name);
            if g.shape() != w.shape() {
                assert!(
                    relaid.contains(&o.name),
                    "{}: {:?} vs {:?}",
                    o.name,
                    g.shape(),
                    w.shape()
                );
                notes.push(format!("{} as {:?}", o.name, g.shape()));
            }
            let (max, n) = diff(g, w);
            if n == 0 {
                same += 1;
            } else {
                differing.push(format!(
                    "{}.{}: {n} elements, max |d| {max:e}",
                    b.name, o.name
                ));
            }
        }
        println!(
            "{:<30} {:>7} {:>13}  {}",
            b.name,
            want.len(),
            format!("{same}/{}", want.len()),
            notes.join(", ")
        );
    }
    assert!(differing.is_empty(), "not bit-identical: {differing:#?}");
}

/// Shape without unit dimensions.
fn squeeze(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// Writes a spec of slice stages (each block with the listed outputs) at `path`:
/// a first pass with the from-points' arguments only learns from the
/// runner's own plan which arguments of the whole function each slice needs,
/// the second gives them. Returns the path, the spec, its plan and its stages
/// as the runner retargets them.
fn slice_spec(
    compiler: &IreeCompiler,
    head: &str,
    func: &parity_mlir::Function,
    whole_args: &[String],
    path: &Path,
    stages: &[(&Block, Vec<String>)],
) -> (PathBuf, Spec, SlicePlan, Vec<Stage>) {
    let from_args = |b: &Block| -> Vec<String> {
        b.args()
            .into_iter()
            .filter(|a| stage_ref_output(a).is_some())
            .collect()
    };
    let mut draft = format!("{}\nstages:\n", header(head));
    for (b, outputs) in stages {
        let fa = from_args(b);
        draft.push_str(&slice_block(b, func, outputs, &fa, &fa));
    }
    std::fs::write(path, &draft).expect("write draft");
    let draft_spec = Spec::load(path).expect("draft spec parses");
    let (draft_plan, _) = plan_for(&draft_spec, compiler);
    assert_eq!(draft_plan.modules.len(), 1, "{:?}", draft_plan.run_errors);
    // Only argument counts may be wrong in the draft: every point resolved.
    for (key, error) in &draft_plan.errors {
        assert!(
            error.message.contains("arguments but the stage gives"),
            "{key:?}: {error}"
        );
    }
    let infos: BTreeMap<&str, _> = draft_plan.modules[0]
        .infos
        .iter()
        .map(|i| (i.name.as_str(), i))
        .collect();
    let mut text = format!("{}\nstages:\n", header(head));
    for (b, outputs) in stages {
        let fa = from_args(b);
        let info = infos[format!("{}__audio_encode_c1_b128", b.name).as_str()];
        let args: Vec<String> = info
            .args
            .iter()
            .map(|(from, _)| match from {
                SliceArg::From(i) => fa[*i].clone(),
                SliceArg::FuncArg(k) => whole_args[*k].clone(),
            })
            .collect();
        text.push_str(&slice_block(b, func, outputs, &fa, &args));
    }
    std::fs::write(path, &text).expect("write spec");
    let spec = Spec::load(path).expect("slice spec parses");
    let (plan, stages) = plan_for(&spec, compiler);
    assert!(plan.errors.is_empty(), "{:?}", plan.errors);
    assert_eq!(plan.modules.len(), 1);
    (path.to_path_buf(), spec, plan, stages)
}

#[test]
fn an_unknown_slice_point_errors_that_stage_only() {
    let sub = subject_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "version: 1
subject:
  modules:
    audio: {{mlir: {mlir}}}
  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]
weights: [{weights}]
oracle: {oracle}
cases:
  - {{name: full128, vars: {{clips: \"1\", bucket: \"128\"}}}}
stages:
  - name: mask_subsampled
    module: audio
    slice: {{function: \"audio_encode_c{{clips}}_b{{bucket}}\", to: [mask_subsampled]}}
    args: [{{oracle: \"{{case}}/mel_mask\"}}]
    outputs: [{{name: mask_subsampled, oracle: \"{{case}}/mask_subsampled\", tolerance: [exact]}}]
  - name: typo
    module: audio
    slice:
      function: \"audio_encode_c{{clips}}_b{{bucket}}\"
      from: [mask_subsampled]
      to: [conformer_0/atention/rel_shift]
    args: [{{stage: mask_subsampled}}]
    outputs: [{{name: rel_shift, oracle: \"{{case}}/conformer_0_attention_rel_shift\"}}]
  - name: too_few_args
    module: audio
    slice: {{function: \"audio_encode_c{{clips}}_b{{bucket}}\", to: [sscp_conv_0_convolution]}}
    args: [{{oracle: \"{{case}}/mel\"}}]
    outputs: [{{name: c, oracle: \"{{case}}/sscp_conv_0_convolution\"}}]
  - name: plain
    module: audio
    function: \"mask_subsampled_c{{clips}}_b{{bucket}}\"
    args: [{{oracle: \"{{case}}/mel_mask\"}}]
    outputs: [{{name: mask_subsampled, oracle: \"{{case}}/mask_subsampled\", tolerance: [exact]}}]
",
        mlir = sub.join("gemma3n_audio_f32.mlir.gz").display(),
        weights = sub.join("weights.safetensors").display(),
        oracle = sub.join("../../oracle-dumps/gemma3n").display(),
    );
    let spec_path = dir.path().join("typo.yaml");
    std::fs::write(&spec_path, text).expect("write spec");
    let out = dir.path().join("out");
    let (code, stdout, stderr, record) = check_to(
        dir.path(),
        spec_path.to_str().unwrap(),
        &out,
        &["--mode", "isolated"],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let record = record.expect("run.json");
    let by_name = |n: &str| common::stage(&record, n, "isolated").clone();

    let typo = by_name("typo");
    assert_eq!(typo["status"], "error");
    assert_eq!(typo["error"]["kind"], "input");
    let message = typo["error"]["message"].as_str().unwrap();
    let spec_file = spec_path.display().to_string();
    for needle in [
        &format!("{spec_file}:21:"),
        "stage `typo` (full128)",
        "slice to point `conformer_0/atention/rel_shift`",
        "no named scope",
        "conformer_0_attention_rel_shift",
    ] {
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }

    let few = by_name("too_few_args");
    assert_eq!(few["status"], "error");
    let message = few["error"]["message"].as_str().unwrap();
    for needle in [
        "stage `too_few_args` (full128)",
        "arguments but the stage gives 1",
        "audio_tower__subsample_conv_projection__conv_0__conv__weight",
    ] {
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }

    for name in ["mask_subsampled", "plain"] {
        assert_eq!(by_name(name)["status"], "pass", "{name}: {stdout}");
    }
    assert_eq!(
        by_name("mask_subsampled")["function"],
        "audio#slices.mask_subsampled__audio_encode_c1_b128"
    );
    assert!(
        stdout.contains("typo") && stdout.contains("ERROR"),
        "{stdout}"
    );
}
