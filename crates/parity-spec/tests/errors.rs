//! Every error class: the message names the file, line, column and the right names.

mod common;

use common::{assert_err, Fixture, HEADER};
use parity_spec::{Spec, SpecErrorKind};

/// HEADER + `stages:` + the given stage lines (the first stage starts on line 7).
fn with_stages(stages: &str) -> String {
    format!("{HEADER}stages:\n{stages}")
}

/// A one-line stage `name` calling `audio.f` with `args` and one output `o`.
fn stage(name: &str, args: &str) -> String {
    format!("  - {{name: {name}, module: audio, function: f, args: [{args}], outputs: [{{name: o, oracle: x}}]}}\n")
}

#[test]
fn unknown_keys_are_rejected_everywhere() {
    let fx = Fixture::new();
    let msg = fx.err(&format!("{HEADER}colour: red\nstages:\n{}", stage("a", "")));
    assert_err(
        &msg,
        6,
        1,
        &["unknown key `colour`", "the top level", "version"],
    );

    let msg = fx.err(&with_stages(
        "  - name: a\n    module: audio\n    function: f\n    fucntion: g\n    outputs: [{name: o, oracle: x}]\n",
    ));
    assert_err(
        &msg,
        10,
        5,
        &["stage `a`", "unknown key `fucntion`", "in stage"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o, oracle: x, tol: []}]}\n",
    ));
    assert_err(
        &msg,
        7,
        74,
        &["stage `a`: output `o`", "unknown key `tol`", "tolerance"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, args: [{literal: {dtype: f32, valu: 1}}], outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        73,
        &["stage `a`", "unknown key `valu`", "in literal"],
    );

    let msg = fx.err(&format!(
        "version: 1\nsubject:\n  modules: {{audio: {{mlir: subject/audio.mlir}}}}\n  backend: cuda\noracle: d\nstages:\n{}",
        stage("a", "")
    ));
    assert_err(&msg, 4, 3, &["unknown key `backend`", "target_backend"]);
}

#[test]
fn duplicate_keys_are_rejected() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - name: a\n    name: b\n    module: audio\n    function: f\n    outputs: [{name: o, oracle: x}]\n",
    ));
    assert_err(&msg, 8, 5, &["duplicate key `name`", "first at line 7"]);
}

#[test]
fn wrong_types_and_missing_fields() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: [f], outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        40,
        &["stage `a`", "`function` must be a string, found a list"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        5,
        &["stage `a`", "missing required key `function`"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o}]}\n",
    ));
    assert_err(
        &msg,
        7,
        53,
        &["stage `a`: output `o`", "missing required key `oracle`"],
    );

    let msg = fx.err("version: 1\noracle: d\nstages: []\n");
    assert_err(&msg, 1, 1, &["missing required key `subject`"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, args: [{oracle: m}], outputs: [{name: o, oracle: x, mask: {arg: 0, axes: [0], padded: yes}}]}\n",
    ));
    assert_err(
        &msg,
        7,
        129,
        &["`padded` must be a boolean", "found the string `yes`"],
    );

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o, oracle: x, equal_nan: 1}]}
",
    ));
    assert_err(
        &msg,
        7,
        85,
        &["stage `a`: output `o`", "`equal_nan` must be a boolean"],
    );
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o, oracle: x,
      allow_empty: maybe}]}
",
    ));
    assert_err(
        &msg,
        8,
        20,
        &[
            "stage `a`: output `o`",
            "`allow_empty` must be a boolean",
            "`maybe`",
        ],
    );
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o, oracle: x, equal_nans: true}]}
",
    ));
    assert_err(
        &msg,
        7,
        74,
        &["unknown key `equal_nans`", "equal_nan", "allow_empty"],
    );
}

#[test]
fn version_other_than_one() {
    let fx = Fixture::new();
    let text = with_stages(&stage("a", "")).replacen("version: 1", "version: 2", 1);
    assert_err(&fx.err(&text), 1, 10, &["unsupported spec version 2"]);
    let text = with_stages(&stage("a", "")).replacen("version: 1", "version: \"1\"", 1);
    assert_err(&fx.err(&text), 1, 10, &["unsupported spec version 1"]);
}

#[test]
fn empty_stage_list() {
    let fx = Fixture::new();
    let msg = fx.err(&format!("{HEADER}stages: []\n"));
    assert_err(&msg, 6, 9, &["`stages` is empty"]);
    assert!(matches!(
        fx.parse(&format!("{HEADER}stages: []\n"))
            .unwrap_err()
            .kind(),
        SpecErrorKind::NoStages { .. }
    ));
}

#[test]
fn duplicate_stage_and_output_names() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(&format!(
        "{}{}",
        stage("a", ""),
        stage("a", "")
    )));
    assert_err(&msg, 8, 5, &["stage `a`", "duplicate stage name", "line 7"]);

    let msg = fx.err(&with_stages(
        "  - name: a\n    module: audio\n    function: f\n    outputs:\n      - {name: o, oracle: x}\n      - {name: o, oracle: y}\n",
    ));
    assert_err(&msg, 12, 9, &["stage `a`", "duplicate output name `o`"]);
}

#[test]
fn dangling_stage_and_output_references() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(&format!(
        "{}{}",
        stage("sscp_conv_0", ""),
        stage(
            "sscp_conv_1",
            "{oracle: m}, {oracle: w}, {stage: sscp_conv_9}"
        )
    )));
    assert_err(
        &msg,
        8,
        86,
        &["stage `sscp_conv_1`: argument 2 references unknown stage `sscp_conv_9`"],
    );

    let msg = fx.err(&with_stages(&format!(
        "{}{}",
        stage("a", ""),
        stage("b", "{stage: a.q}")
    )));
    assert_err(
        &msg,
        8,
        50,
        &[
            "stage `b`",
            "output `q` of stage `a`",
            "does not exist",
            "o",
        ],
    );

    let two = "  - {name: a, module: audio, function: f, outputs: [{name: p, oracle: x}, {name: q, oracle: y}]}\n";
    let msg = fx.err(&with_stages(&format!("{two}{}", stage("b", "{stage: a}"))));
    assert_err(&msg, 8, 50, &["stage `b`", "ambiguous", "p, q"]);
}

#[test]
fn dependency_cycles_are_named() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(&format!(
        "{}{}{}{}",
        stage("z", ""),
        stage("a", "{stage: c}"),
        stage("b", "{stage: a}"),
        stage("c", "{stage: b}")
    )));
    assert_err(
        &msg,
        8,
        5,
        &["stage `a`", "dependency cycle: a -> b -> c -> a"],
    );

    let msg = fx.err(&with_stages(&stage("self", "{stage: self}")));
    assert_err(&msg, 7, 5, &["dependency cycle: self -> self"]);
}

#[test]
fn undeclared_modules() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - {name: a, module: video, function: f, outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        23,
        &["stage `a`", "module `video`", "declared: audio"],
    );

    let text = format!(
        "{HEADER}cases: [{{name: c1, vars: {{m: audio}}}}, {{name: c2, vars: {{m: video}}}}]\nstages:\n  - {{name: a, module: \"{{m}}\", function: f, outputs: [{{name: o, oracle: x}}]}}\n"
    );
    assert_err(
        &fx.err(&text),
        8,
        23,
        &["stage `a`", "module `video` (case `c2`)"],
    );
}

#[test]
fn missing_module_files() {
    let fx = Fixture::new();
    let text = with_stages(&stage("a", "")).replace("subject/audio.mlir", "subject/gone.mlir");
    let msg = fx.err(&text);
    assert_err(
        &msg,
        4,
        19,
        &["module `audio`", "gone.mlir", "does not exist"],
    );

    let text =
        "version: 1\nsubject:\n  modules:\n    audio: {vmfb: nope.vmfb}\noracle: d\nstages: []\n";
    assert_err(&fx.err(text), 4, 19, &["module `audio`", "nope.vmfb"]);
}

#[test]
fn mask_errors() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(
        "  - name: a\n    module: audio\n    function: f\n    args: [{oracle: m}]\n    outputs:\n      - {name: o, oracle: x, mask: {arg: 1, axes: [0]}}\n",
    ));
    assert_err(
        &msg,
        12,
        42,
        &["stage `a`: output `o`: mask argument index 1 is out of range (stage has 1 arguments)"],
    );

    let msg = fx.err(&with_stages(
        "  - name: a\n    module: audio\n    function: f\n    outputs:\n      - {name: o, oracle: x, mask: {oracle: m, axes: [0, 2, 0]}}\n",
    ));
    assert_err(
        &msg,
        11,
        61,
        &["stage `a`: output `o`: mask axis 0 is repeated"],
    );
}

#[test]
fn literal_value_count_and_dtypes() {
    let fx = Fixture::new();
    let msg = fx.err(&with_stages(&stage(
        "a",
        "{literal: {dtype: f32, shape: [2, 3], values: [1, 2, 3]}}",
    )));
    assert_err(
        &msg,
        7,
        96,
        &["stage `a`: argument 0", "3 values", "[2, 3]", "needs 6"],
    );

    let msg = fx.err(&with_stages(&stage(
        "a",
        "{literal: {dtype: f33, value: 1}}",
    )));
    assert_err(&msg, 7, 68, &["stage `a`", "unknown dtype `f33`"]);

    let msg = fx.err(&with_stages(&stage(
        "a",
        "{literal: {dtype: i8, value: 300}}",
    )));
    assert_err(&msg, 7, 79, &["stage `a`", "300 is not a valid i8"]);

    let msg = fx.err(&with_stages(&stage(
        "a",
        "{literal: {dtype: i32, shape: [65536, 65536], value: 0}}",
    )));
    assert_err(
        &msg,
        7,
        60,
        &["stage `a`", "at most 1048576 elements together"],
    );

    // The budget is spec-wide: many medium literals cannot add up to a huge allocation.
    let big = "{literal: {dtype: f32, shape: [600000], value: 0}}";
    let msg = fx.err(&with_stages(&format!(
        "{}{}",
        stage("a", big),
        stage("b", big)
    )));
    assert_err(&msg, 8, 60, &["stage `b`", "too large", "(448576 left)"]);

    let msg = fx.err(&format!(
        "{HEADER}tolerances: {{f128: [exact]}}\nstages:\n{}",
        stage("a", "")
    ));
    assert_err(&msg, 6, 14, &["unknown dtype `f128`"]);

    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, outputs: [{name: o, oracle: x, ulp_dtype: i32}]}\n",
    ));
    assert_err(&msg, 7, 85, &["output `o`", "must be a float dtype"]);
}

#[test]
fn template_errors() {
    let fx = Fixture::new();
    let text = format!(
        "{HEADER}cases: [{{name: c1, vars: {{bucket: 8}}}}]\nstages:\n  - {{name: a, module: audio, function: \"f_{{bukcet}}\", outputs: [{{name: o, oracle: x}}]}}\n"
    );
    assert_err(
        &fx.err(&text),
        8,
        40,
        &[
            "stage `a`",
            "`f_{bukcet}` uses unknown variable `bukcet` in case `c1`",
            "case, bucket",
        ],
    );
    let msg = fx.err(&with_stages(
        "  - {name: a, module: audio, function: f, args: [{oracle: \"{case\"}], outputs: [{name: o, oracle: x}]}\n",
    ));
    assert_err(
        &msg,
        7,
        59,
        &["stage `a`", "bad template `{case`", "not closed"],
    );
}

#[test]
fn yaml_syntax_and_size_limits() {
    let fx = Fixture::new();
    let msg = fx.err("version: 1\nstages: [a, b\n");
    assert!(
        msg.contains("stages.yaml:") && msg.contains("YAML syntax error"),
        "{msg}"
    );

    let big = "#".repeat(16 * 1024 * 1024 + 1);
    let msg = fx.err(&big);
    assert!(
        msg.contains("stages.yaml") && msg.contains("larger than"),
        "{msg}"
    );

    let path = fx.dir.path().join("big.yaml");
    std::fs::write(&path, &big).unwrap();
    let msg = Spec::load(&path).unwrap_err().to_string();
    assert!(
        msg.contains("big.yaml") && msg.contains("16777216-byte limit"),
        "{msg}"
    );

    let msg = Spec::load(fx.dir.path().join("missing.yaml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing.yaml: cannot read spec"), "{msg}");

    let path = fx.dir.path().join("latin1.yaml");
    std::fs::write(&path, b"version: 1\noracle: \xe9\n").unwrap();
    let msg = Spec::load(&path).unwrap_err().to_string();
    assert!(msg.contains("not UTF-8"), "{msg}");

    assert_err(&fx.err(""), 1, 1, &["empty"]);
}

#[test]
fn alias_bomb_is_refused_with_position() {
    let fx = Fixture::new();
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        let refs = vec![format!("*a{p}"); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let msg = fx.err(&text);
    assert!(
        msg.contains("stages.yaml:") && msg.contains("alias bomb"),
        "{msg}"
    );
}

#[test]
fn bad_cases() {
    let fx = Fixture::new();
    let msg = fx.err(&format!(
        "{HEADER}cases: [{{name: c}}, {{name: c}}]\nstages:\n{}",
        stage("a", "")
    ));
    assert_err(&msg, 6, 27, &["case `c`", "duplicate case name"]);
    let msg = fx.err(&format!(
        "{HEADER}cases: [{{name: c, vars: {{case: x}}}}]\nstages:\n{}",
        stage("a", "")
    ));
    assert_err(&msg, 6, 26, &["case `c`", "variable name `case`"]);
}

#[test]
fn a_fifo_spec_is_refused_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stages.yaml");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Spec::load(&p).map(|_| ()).unwrap_err().to_string());
    });
    let msg = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("Spec::load blocked on a FIFO");
    assert!(
        msg.contains("stages.yaml") && msg.contains("not a regular file (it is a FIFO)"),
        "{msg}"
    );
}

#[test]
fn baseline_section_is_read_and_checked() {
    let fx = Fixture::new();
    let spec = fx
        .parse(&format!(
            "{HEADER}baseline: {{band: 0.25, band_abs: 1.0e-9, metrics: [max_abs, cosine]}}\nstages:\n{}",
            stage("a", "")
        ))
        .unwrap();
    assert_eq!(spec.baseline.band, Some(0.25));
    assert_eq!(spec.baseline.band_abs, Some(1e-9));
    assert_eq!(
        spec.baseline.metrics,
        Some(vec!["max_abs".to_string(), "cosine".to_string()])
    );
    let none = fx
        .parse(&format!("{HEADER}stages:\n{}", stage("a", "")))
        .unwrap();
    assert_eq!(none.baseline, parity_spec::BaselineSpec::default());
    for (section, want) in [
        ("{metrics: [maxabs]}", "unknown baseline metric `maxabs`"),
        ("{metrics: []}", "must name at least one metric"),
        (
            "{band: -0.1}",
            "`baseline.band` must be a finite number >= 0",
        ),
        (
            "{band_abs: .inf}",
            "`baseline.band_abs` must be a finite number >= 0",
        ),
        ("{bnad: 0.1}", "unknown key `bnad`"),
    ] {
        let msg = fx.err(&format!(
            "{HEADER}baseline: {section}\nstages:\n{}",
            stage("a", "")
        ));
        assert!(msg.contains(want), "{section}: {msg}");
    }
}

#[test]
fn target_errors() {
    let fx = Fixture::new();
    let body = "oracle: d\nstages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: y}]}\n";
    let spec = |subject_tail: &str| {
        format!("version: 1\nsubject:\n  modules:\n    audio: {{mlir: subject/audio.mlir}}\n{subject_tail}{body}")
    };
    // Both forms at once: which backend would win is not guessed.
    let msg = fx.err(&spec(
        "  target_backend: cuda\n  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n",
    ));
    assert_err(
        &msg,
        5,
        19,
        &["`target_backend` / `driver` and `targets` both given"],
    );
    let msg = fx.err(&spec("  targets: {}\n"));
    assert_err(&msg, 5, 12, &["`subject.targets` is empty"]);
    let msg = fx.err(&spec(
        "  targets:\n    \"a,b\": {backend: llvm-cpu, device: local-task}\n",
    ));
    assert_err(&msg, 6, 5, &["target name `a,b`", "comma"]);
    let msg = fx.err(&spec("  targets:\n    cpu: {device: local-task}\n"));
    assert!(msg.contains("backend"), "{msg}");
    assert!(msg.contains("stages.yaml:6:"), "{msg}");
    let msg = fx.err(&spec(
        "  targets:\n    cpu: {backend: llvm-cpu, device: local-task, driver: x}\n",
    ));
    assert!(msg.contains("driver"), "{msg}");
}

#[test]
fn target_module_errors_name_the_target_and_module() {
    let fx = Fixture::new();
    let body = "oracle: d\nstages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: y}]}\n";
    let spec = |modules: &str| {
        format!("version: 1\nsubject:\n  modules:\n    audio: {{mlir: subject/audio.mlir}}\n  targets:\n    gb10: {{backend: cuda, device: cuda, modules: {modules}}}\n{body}")
    };
    let msg = fx.err(&spec("{video: subject/prebuilt.vmfb}"));
    assert_err(
        &msg,
        6,
        51,
        &[
            "target `gb10`",
            "no module named `video`",
            "declared: audio",
        ],
    );
    let msg = fx.err(&spec("{audio: subject/missing.vmfb}"));
    assert_err(
        &msg,
        6,
        58,
        &[
            "target `gb10`: module `audio`",
            "missing.vmfb does not exist",
        ],
    );
    let msg = fx.err(&spec("{audio: {vmfb: subject/prebuilt.vmfb}}"));
    assert!(msg.contains("path of a prebuilt .vmfb"), "{msg}");
    let msg = fx.err(&spec("[subject/prebuilt.vmfb]"));
    assert!(msg.contains("a mapping"), "{msg}");
}

#[test]
fn a_target_tolerance_for_an_output_no_stage_has_is_an_error() {
    let fx = Fixture::new();
    let text = "version: 1\nsubject:\n  modules:\n    audio: {mlir: subject/audio.mlir}\n  targets:\n    vulkan: {backend: vulkan-spirv, device: vulkan, tolerances: {oo: [{max_abs: 1.0}]}}\noracle: d\nstages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: y}]}\n";
    let msg = fx.err(text);
    assert_err(
        &msg,
        6,
        66,
        &["target `vulkan`: tolerances: no stage has an output named `oo`"],
    );
}

#[test]
fn a_substituted_executables_file_must_exist_and_resolves_against_the_spec() {
    let fx = Fixture::new();
    let body = "oracle: d\nstages:\n  - {name: s, module: audio, function: f, outputs: [{name: o, oracle: y}]}\n";
    let spec = |flag: &str| {
        format!("version: 1\nsubject:\n  modules:\n    audio: {{mlir: subject/audio.mlir}}\n  targets:\n    sub: {{backend: llvm-cpu, device: local-task, flags: [\"{flag}\"]}}\n{body}")
    };
    let msg = fx.err(&spec(
        "--iree-hal-substitute-executable-source=f_dispatch_0=subject/nope.mlir",
    ));
    assert_err(
        &msg,
        6,
        57,
        &[
            "target `sub`",
            "executable `f_dispatch_0`",
            "nope.mlir does not exist",
        ],
    );
    let msg = fx.err(&spec(
        "--iree-hal-substitute-executable-source=f_dispatch_0",
    ));
    assert!(msg.contains("is not `EXECUTABLE=FILE.mlir`"), "{msg}");
    // An existing file, given relative to the spec, is made absolute.
    let parsed = fx
        .parse(&spec(
            "--iree-hal-substitute-executable-source=f_dispatch_0=subject/audio.mlir",
        ))
        .unwrap();
    let flag = &parsed.subject.targets[0].flags[0];
    let file = flag
        .strip_prefix("--iree-hal-substitute-executable-source=f_dispatch_0=")
        .unwrap();
    assert!(
        file.starts_with(&*fx.dir.path().to_string_lossy()),
        "{flag}"
    );
    assert!(
        file.ends_with("subject/audio.mlir") && std::path::Path::new(file).is_file(),
        "{flag}"
    );
}
