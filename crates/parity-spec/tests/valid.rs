//! Valid specs parse into exactly the expected structs; templating and topo order.

mod common;

use common::{Fixture, HEADER};
use parity_spec::{
    Arg, Case, Criterion, DType, Location, MaskSource, MaskSpec, ModuleSource, OutputSpec, Spec,
};
use std::collections::BTreeMap;

const FULL: &str = r#"version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir, flags: ["--iree-opt-level=O2"]}
    pre: {vmfb: subject/prebuilt.vmfb}
  target_backend: llvm-cpu
  driver: local-sync
  flags: ["--iree-input-type=stablehlo"]
weights: [subject/weights.safetensors]
oracle: oracle-dumps/gemma3n
cases:
  - {name: full128, vars: {bucket: 128, clips: 1}}
  - {name: short8, vars: {bucket: 8, clips: 1}}
tolerances:
  f32: &f32tol [{max_ulp: 64}]
  bfloat16: [{rms: 1e-3}, exact]
stages:
  - name: sscp_conv_1
    module: audio
    function: "sscp_conv_1_b{bucket}"
    args:
      - {stage: sscp_conv_0.sscp_conv_0}
    outputs:
      - {name: out, oracle: "{case}/sscp_conv_1", tolerance: *f32tol}
  - name: sscp_conv_0
    module: audio
    function: "sscp_conv_0_b{bucket}"
    args:
      - {oracle: "{case}/mel"}
      - {weight: "audio_tower.conv_0.weight"}
      - {literal: {dtype: i32, shape: [], value: 77}}
      - {literal: {dtype: f32, shape: [2, 2], values: [1, 2.5, -3, .inf]}}
      - {literal: {dtype: bool, shape: [3], value: true}}
    outputs:
      - name: sscp_conv_0
        oracle: "{case}/sscp_conv_0"
        truth: "{case}/sscp_conv_0@f64"
        mask: {oracle: "{case}/mask_sub", axes: [0, 1], padded: true, assert_zero: false}
        tolerance: [{rms: 1e-6}, {max_ulp: 8}]
        ulp_dtype: bf16
      - name: lengths
        oracle: "{case}/lengths_{{raw}}"
        mask: {arg: 4, axes: [0]}
  - name: merge
    module: pre
    function: main
    args: [{stage: sscp_conv_1}, {stage: sscp_conv_0.lengths}]
    outputs: [{name: merged, oracle: "{case}/merged"}]
"#;

#[test]
fn full_example_parses_into_expected_structs() {
    let fx = Fixture::new();
    let spec = fx.parse(FULL).unwrap();
    let base = fx.dir.path();
    assert_eq!(spec.path, fx.spec_path());
    assert_eq!(spec.base_dir, base);
    assert_eq!(spec.version, 1);
    assert_eq!(spec.weights, vec![base.join("subject/weights.safetensors")]);
    assert_eq!(spec.oracle, base.join("oracle-dumps/gemma3n"));

    let s = &spec.subject;
    assert_eq!(s.targets.len(), 1);
    assert_eq!(s.targets[0].name, "default");
    assert_eq!(s.targets[0].backend, "llvm-cpu");
    assert_eq!(s.targets[0].device, "local-sync");
    assert_eq!(s.flags, vec!["--iree-input-type=stablehlo"]);
    let audio = &s.modules["audio"];
    assert_eq!(
        audio.source,
        ModuleSource::Mlir(base.join("subject/audio.mlir"))
    );
    assert_eq!(audio.flags, vec!["--iree-opt-level=O2"]);
    assert!(s.modules["pre"].flags.is_empty());
    assert_eq!(audio.location, Location { line: 4, col: 12 });
    assert_eq!(
        s.modules["pre"].source,
        ModuleSource::Vmfb(base.join("subject/prebuilt.vmfb"))
    );

    assert_eq!(
        spec.cases,
        vec![
            Case {
                name: "full128".into(),
                vars: BTreeMap::from([
                    ("bucket".into(), "128".into()),
                    ("clips".into(), "1".into())
                ]),
            },
            Case {
                name: "short8".into(),
                vars: BTreeMap::from([("bucket".into(), "8".into()), ("clips".into(), "1".into())]),
            },
        ]
    );
    assert_eq!(spec.tolerances[&DType::F32], vec![Criterion::MaxUlp(64)]);
    assert_eq!(
        spec.tolerances[&DType::Bf16],
        vec![Criterion::Rms(1e-3), Criterion::Exact]
    );
    assert_eq!(spec.tolerances.len(), 2);

    let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sscp_conv_1", "sscp_conv_0", "merge"]);

    let c1 = &spec.stages[0];
    assert_eq!(c1.location, Location { line: 18, col: 5 });
    assert_eq!(
        c1.args,
        vec![Arg::Stage {
            stage: "sscp_conv_0".into(),
            output: "sscp_conv_0".into()
        }]
    );
    assert_eq!(c1.outputs[0].tolerance, Some(vec![Criterion::MaxUlp(64)]));

    let c0 = &spec.stages[1];
    assert_eq!(c0.module, "audio");
    assert_eq!(c0.function, "sscp_conv_0_b{bucket}");
    assert_eq!(c0.locations.function, Location { line: 27, col: 15 });
    assert_eq!(c0.locations.args[2], Location { line: 31, col: 9 });
    assert_eq!(
        c0.args,
        vec![
            Arg::Oracle("{case}/mel".into()),
            Arg::Weight("audio_tower.conv_0.weight".into()),
            Arg::Literal {
                dtype: DType::I32,
                shape: vec![],
                values: vec![77.0]
            },
            Arg::Literal {
                dtype: DType::F32,
                shape: vec![2, 2],
                values: vec![1.0, 2.5, -3.0, f64::INFINITY]
            },
            Arg::Literal {
                dtype: DType::Bool,
                shape: vec![3],
                values: vec![1.0; 3]
            },
        ]
    );
    assert_eq!(
        c0.outputs[0],
        OutputSpec {
            name: "sscp_conv_0".into(),
            oracle: "{case}/sscp_conv_0".into(),
            truth: Some("{case}/sscp_conv_0@f64".into()),
            mask: Some(MaskSpec {
                source: MaskSource::Oracle("{case}/mask_sub".into()),
                axes: vec![0, 1],
                padded: true,
                assert_zero: false,
            }),
            tolerance: Some(vec![Criterion::Rms(1e-6), Criterion::MaxUlp(8)]),
            ulp_dtype: Some(DType::Bf16),
            equal_nan: false,
            allow_empty: false,
        }
    );
    assert_eq!(
        c0.outputs[1].mask,
        Some(MaskSpec {
            source: MaskSource::Arg(4),
            axes: vec![0],
            padded: true,
            assert_zero: false
        })
    );
    assert_eq!(c0.outputs[1].tolerance, None);
    assert_eq!(c0.outputs[1].ulp_dtype, None);

    let merge = &spec.stages[2];
    assert_eq!(
        merge.args,
        vec![
            Arg::Stage {
                stage: "sscp_conv_1".into(),
                output: "out".into()
            },
            Arg::Stage {
                stage: "sscp_conv_0".into(),
                output: "lengths".into()
            },
        ]
    );
    assert_eq!(merge.dependencies(), vec!["sscp_conv_1", "sscp_conv_0"]);
    assert_eq!(
        spec.stage("merge").map(|s| s.function.as_str()),
        Some("main")
    );
    assert!(spec.stage("nope").is_none());
}

#[test]
fn instantiate_substitutes_case_and_vars_everywhere() {
    let fx = Fixture::new();
    let spec = fx.parse(FULL).unwrap();
    let short = spec.case("short8").unwrap();
    let stages = spec.instantiate(short).unwrap();
    let c0 = &stages[1];
    assert_eq!(c0.function, "sscp_conv_0_b8");
    assert_eq!(c0.args[0], Arg::Oracle("short8/mel".into()));
    assert_eq!(c0.args[1], Arg::Weight("audio_tower.conv_0.weight".into()));
    assert_eq!(c0.outputs[0].oracle, "short8/sscp_conv_0");
    assert_eq!(
        c0.outputs[0].truth.as_deref(),
        Some("short8/sscp_conv_0@f64")
    );
    assert_eq!(
        c0.outputs[0].mask.as_ref().map(|m| &m.source),
        Some(&MaskSource::Oracle("short8/mask_sub".into()))
    );
    assert_eq!(c0.outputs[1].oracle, "short8/lengths_{raw}", "`{{` escapes");
    assert_eq!(stages[0].function, "sscp_conv_1_b8");
    // Instantiation does not touch the templates in the spec itself.
    assert_eq!(spec.stages[1].function, "sscp_conv_0_b{bucket}");
    let full = spec.instantiate(&spec.cases[0]).unwrap();
    assert_eq!(full[1].function, "sscp_conv_0_b128");
}

#[test]
fn topo_order_puts_producers_first_and_keeps_file_order() {
    let fx = Fixture::new();
    let spec = fx.parse(FULL).unwrap();
    assert_eq!(spec.topo_order(), vec![1, 0, 2]);

    let text = format!(
        "{HEADER}stages:
  - {{name: d, module: audio, function: f, args: [{{stage: b}}, {{stage: a}}], outputs: [{{name: o, oracle: d}}]}}
  - {{name: c, module: audio, function: f, outputs: [{{name: o, oracle: c}}]}}
  - {{name: b, module: audio, function: f, args: [{{stage: e}}], outputs: [{{name: o, oracle: b}}]}}
  - {{name: a, module: audio, function: f, outputs: [{{name: o, oracle: a}}]}}
  - {{name: e, module: audio, function: f, outputs: [{{name: o, oracle: e}}]}}
"
    );
    let spec = fx.parse(&text).unwrap();
    let order: Vec<&str> = spec
        .topo_order()
        .into_iter()
        .map(|i| spec.stages[i].name.as_str())
        .collect();
    // c, a, e are independent and keep file order; b waits for e, d for b and a.
    assert_eq!(order, ["c", "a", "e", "b", "d"]);
}

#[test]
fn defaults_apply_when_keys_are_omitted() {
    let fx = Fixture::new();
    let text = format!(
        "{HEADER}stages:
  - name: s
    module: audio
    function: f
    outputs:
      - {{name: o, oracle: \"{{case}}/o\", mask: {{arg: 0, axes: [1]}}}}
    args: [{{oracle: x}}]
"
    );
    let spec = fx.parse(&text).unwrap();
    assert_eq!(
        spec.cases,
        vec![Case {
            name: "default".into(),
            vars: BTreeMap::new()
        }]
    );
    assert_eq!(spec.subject.targets.len(), 1);
    assert_eq!(spec.subject.targets[0].backend, "llvm-cpu");
    assert_eq!(spec.subject.targets[0].device, "local-task");
    assert!(spec.subject.flags.is_empty());
    assert!(spec.weights.is_empty());
    assert!(spec.tolerances.is_empty());
    let mask = spec.stages[0].outputs[0].mask.clone().unwrap();
    assert!(mask.padded);
    assert!(!mask.assert_zero);
    let stages = spec.instantiate(&spec.cases[0]).unwrap();
    assert_eq!(stages[0].outputs[0].oracle, "default/o");
}

#[test]
fn load_reads_the_file_and_resolves_against_its_directory() {
    let fx = Fixture::new();
    let path = fx.spec_path();
    std::fs::write(&path, FULL).unwrap();
    let loaded = Spec::load(&path).unwrap();
    assert_eq!(loaded, fx.parse(FULL).unwrap());
    assert_eq!(loaded.oracle, fx.dir.path().join("oracle-dumps/gemma3n"));
}

#[test]
fn padded_false_and_assert_zero_are_read() {
    let fx = Fixture::new();
    let text = format!(
        "{HEADER}stages:
  - name: s
    module: audio
    function: f
    args: [{{oracle: m}}]
    outputs:
      - {{name: o, oracle: o, mask: {{arg: 0, axes: [2, 0], padded: false, assert_zero: true}}}}
"
    );
    let spec = fx.parse(&text).unwrap();
    let mask = spec.stages[0].outputs[0].mask.clone().unwrap();
    assert_eq!(mask.axes, vec![2, 0]);
    assert!(!mask.padded);
    assert!(mask.assert_zero);
}

#[test]
fn equal_nan_and_allow_empty_are_read_per_output() {
    let fx = Fixture::new();
    let text = format!(
        "{HEADER}stages:
  - name: s
    module: audio
    function: f
    args: [{{oracle: m}}]
    outputs:
      - {{name: o, oracle: o, equal_nan: true, allow_empty: true}}
      - {{name: p, oracle: p, equal_nan: false}}
      - {{name: q, oracle: q}}
"
    );
    let spec = fx.parse(&text).unwrap();
    let flags: Vec<(bool, bool)> = spec.stages[0]
        .outputs
        .iter()
        .map(|o| (o.equal_nan, o.allow_empty))
        .collect();
    assert_eq!(flags, vec![(true, true), (false, false), (false, false)]);
}

#[test]
fn documented_example_is_valid() {
    // Keeps docs/stages-schema.md honest: its complete example must load.
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/stages-schema.md"
    ))
    .unwrap();
    let after = doc.split("## Complete example").nth(1).unwrap();
    let yaml = after
        .split("```yaml\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let fx = Fixture::new();
    std::fs::write(fx.dir.path().join("subject/gemma3n_audio_f32.mlir"), "").unwrap();
    std::fs::write(fx.dir.path().join("subject/audio_merge.vmfb"), b"\0").unwrap();
    let spec = fx.parse(yaml).unwrap();
    let names: Vec<&str> = spec.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["sscp_conv_0", "sscp_conv_1", "audio_merge"]);
    assert_eq!(spec.topo_order(), vec![0, 1, 2]);
    assert_eq!(
        spec.stages[1].args[0],
        Arg::Stage {
            stage: "sscp_conv_0".into(),
            output: "sscp_conv_0".into()
        }
    );
    let short = spec.instantiate(spec.case("short8").unwrap()).unwrap();
    assert_eq!(short[0].function, "sscp_conv_0_b8");
}

#[test]
fn targets_parse_in_order_with_their_flags() {
    let fx = Fixture::new();
    let text = "version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir, flags: [--m]}
  flags: [--s]
  targets:
    vulkan: {backend: vulkan-spirv, device: vulkan}
    cpu: {backend: llvm-cpu, device: local-task}
    gb10: {backend: cuda, device: \"cuda://1\", flags: [--iree-cuda-target=sm_121]}
oracle: dumps
stages:
  - {name: s, module: audio, function: f, args: [{oracle: x}], outputs: [{name: o, oracle: y}]}
";
    let spec = fx.parse(text).unwrap();
    let t = &spec.subject.targets;
    let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["vulkan", "cpu", "gb10"]);
    assert_eq!(t[2].backend, "cuda");
    assert_eq!(t[2].device, "cuda://1");
    assert_eq!(t[2].flags, ["--iree-cuda-target=sm_121"]);
    assert_eq!(t[2].location, Location { line: 9, col: 11 });
    assert!(t[0].flags.is_empty());
    assert_eq!(spec.subject.flags, ["--s"]);
    // The first target is the default; names select.
    assert_eq!(spec.subject.target(None).unwrap().name, "vulkan");
    assert_eq!(
        spec.subject.target(Some("cpu")).unwrap().device,
        "local-task"
    );
    assert!(spec.subject.target(Some("rocm")).is_none());
}

#[test]
fn a_target_gives_its_own_prebuilt_vmfbs() {
    let fx = Fixture::new();
    std::fs::write(fx.dir.path().join("subject/audio.cuda.vmfb"), b"\0").unwrap();
    let text = "version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir}
    text: {vmfb: subject/prebuilt.vmfb}
  targets:
    cpu: {backend: llvm-cpu, device: local-task}
    gb10:
      backend: cuda
      device: cuda
      modules: {audio: subject/audio.cuda.vmfb}
oracle: dumps
stages:
  - {name: s, module: audio, function: f, args: [{oracle: x}], outputs: [{name: o, oracle: y}]}
";
    let spec = fx.parse(text).unwrap();
    let (cpu, gb10) = (&spec.subject.targets[0], &spec.subject.targets[1]);
    assert!(cpu.modules.is_empty());
    let audio = &gb10.modules["audio"];
    assert_eq!(
        audio.source,
        ModuleSource::Vmfb(fx.dir.path().join("subject/audio.cuda.vmfb"))
    );
    assert_eq!(audio.location, Location { line: 11, col: 24 });
}

#[test]
fn a_target_tolerance_replaces_an_outputs_tolerance_on_that_target() {
    let fx = Fixture::new();
    let text = "version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir}
  targets:
    cpu: {backend: llvm-cpu, device: local-task}
    vulkan:
      backend: vulkan-spirv
      device: vulkan
      tolerances:
        o: [{max_abs: 1.0e-4}, {rms: 2.0e-5}]
oracle: dumps
stages:
  - {name: s, module: audio, function: f, args: [{oracle: x}], outputs: [{name: o, oracle: y, tolerance: [{max_abs: 1.0e-6}]}]}
";
    let spec = fx.parse(text).unwrap();
    assert!(spec.subject.targets[0].tolerances.is_empty());
    let t = &spec.subject.targets[1].tolerances["o"];
    assert_eq!(t.criteria.len(), 2);
    assert_eq!(t.location, Location { line: 11, col: 9 });
    assert_eq!(t.criteria[0], parity_spec::Criterion::MaxAbs(1.0e-4));
    // The output's own tolerance is unchanged: the override is the target's.
    assert_eq!(
        spec.stages[0].outputs[0].tolerance,
        Some(vec![parity_spec::Criterion::MaxAbs(1.0e-6)])
    );
}
