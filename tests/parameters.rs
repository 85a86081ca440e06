//! IREE parameters end to end: a module whose weights are `util.global`s
//! initialised from `#flow.parameter.named<"model"::...>`
//! (tests/data/parameters/model.mlir) runs with `subject.parameters` from an
//! `.irpa`, a `.safetensors` and a `.gguf` file through IREE's io-parameters module
//! (real IREE compiler and runtime), and a wrong file, a missing key, a
//! missing file or a missing scope is exit 2 naming the parameter, the file,
//! the module and the stage, before anything runs.
//!
//! The files are generated into a temp dir by tests/data/parameters/
//! make_fixture.py (deterministic) with the Python that has IREE's runtime:
//! `EERIE_PYTHON`, else the checkout's `.venv`.

mod common;

use common::{check, parity, repo, stage};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A Python with numpy and iree.runtime (iree-base-runtime 3.13).
fn python() -> PathBuf {
    std::env::var_os("EERIE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

/// The fixture in a fresh temp dir: model.mlir, the parameter files, an
/// oracle store (indexed by `parity oracle index`).
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = repo().join("tests/data/parameters");
    std::fs::copy(data.join("model.mlir"), dir.path().join("model.mlir")).expect("copy");
    let out = Command::new(python())
        .arg(data.join("make_fixture.py"))
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {:?} (set EERIE_PYTHON): {e}", python()));
    assert!(
        out.status.success(),
        "make_fixture.py failed (EERIE_PYTHON needs numpy and iree-base-runtime):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let indexed = parity(dir.path(), &["oracle", "index", "oracle"]);
    assert_eq!(indexed.status.code(), Some(0), "{indexed:?}");
    dir
}

/// A spec over the fixture whose scope `model` reads `files` (none: no
/// `parameters:` at all).
fn write_spec(dir: &Path, name: &str, files: &[&str]) -> String {
    write_spec_for(dir, name, "mlir: model.mlir", files)
}

/// [`write_spec`] with the module given as `source` (`mlir: ...` or `vmfb: ...`).
fn write_spec_for(dir: &Path, name: &str, source: &str, files: &[&str]) -> String {
    let parameters = if files.is_empty() {
        String::new()
    } else {
        format!("  parameters:\n    model: [{}]\n", files.join(", "))
    };
    // Flags compile MLIR; on a prebuilt vmfb they are refused.
    let flags = if source.starts_with("mlir") {
        "  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]\n"
    } else {
        ""
    };
    let spec = format!(
        "version: 1
subject:
  modules:
    params: {{{source}}}
  target_backend: llvm-cpu
  driver: local-task
{flags}{parameters}oracle: oracle
tolerances:
  f32: [{{max_abs: 0.0}}]
stages:
  - name: affine
    module: params
    function: affine
    args: [{{oracle: x}}]
    outputs: [{{name: y, oracle: y}}]
  - name: scale
    module: params
    function: scale
    args: [{{stage: affine.y}}]
    outputs: [{{name: z, oracle: z}}]
"
    );
    std::fs::write(dir.join(name), spec).expect("write spec");
    name.to_string()
}

/// stdout and stderr of a run, together.
fn said(stdout: &str, stderr: &str) -> String {
    format!("{stdout}\n{stderr}")
}

#[test]
fn runs_from_irpa_and_from_safetensors_match_the_oracle_exactly() {
    let dir = fixture();
    for file in ["weights.irpa", "weights.safetensors"] {
        let spec = write_spec(dir.path(), &format!("{file}.yaml"), &[file]);
        let (code, stdout, stderr, record) = check(dir.path(), &spec, &[]);
        assert_eq!(code, 0, "{file}:\n{}", said(&stdout, &stderr));
        let record = record.expect("run.json");
        for (name, output) in [("affine", "y"), ("scale", "z")] {
            for mode in ["isolated", "chained"] {
                let s = stage(&record, name, mode);
                assert_eq!(s["status"], "pass", "{file} {name} {mode}: {s:#}");
                let out = &s["outputs"][0];
                assert_eq!(out["name"], output);
                // Every value is exact in f32: the weights were read as written.
                assert_eq!(out["metrics"]["max_abs"], 0.0, "{file} {name} {mode}");
                assert_eq!(out["metrics"]["count"], 6, "{file} {name} {mode}");
            }
        }
    }
}

#[test]
fn a_run_from_gguf_matches_the_oracle_and_loads_the_module_once() {
    let dir = fixture();
    let spec = write_spec(dir.path(), "gguf.yaml", &["weights.gguf"]);
    // One whole-module artifact: its parameters are read when it loads.
    let out = Command::new(env!("CARGO_BIN_EXE_parity"))
        .args(["check", &spec, "--out-dir", "out"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("PARITY_CACHE_DIR", common::cache_dir())
        .env("PARITY_ARTIFACTS", "module")
        .output()
        .expect("spawn parity");
    let text = said(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/run.json")).unwrap())
            .unwrap();
    for (name, output) in [("affine", "y"), ("scale", "z")] {
        for mode in ["isolated", "chained"] {
            let s = stage(&record, name, mode);
            assert_eq!(s["status"], "pass", "{name} {mode}: {s:#}");
            assert_eq!(s["outputs"][0]["name"], output);
            assert_eq!(s["outputs"][0]["metrics"]["max_abs"], 0.0, "{name} {mode}");
            assert_eq!(s["outputs"][0]["metrics"]["count"], 6, "{name} {mode}");
        }
    }
    // Both modes' threads share the target's runtime: the module loads
    // (and reads its parameters) once, not once per mode.
    let uploads = &record["provenance"]["uploads"][0];
    assert_eq!(uploads["runtimes"], 1, "{uploads}");
    assert_eq!(uploads["parameter_loads"], 1, "{uploads}");
    assert_eq!(uploads["weight_uploads"], 0, "{uploads}");
    // A .gguf stores bytes only: a longer entry is refused by its size.
    let spec = write_spec(dir.path(), "long_gguf.yaml", &["long_w.gguf"]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("long_w.gguf holds 64 bytes for it, the global needs 48 (f32[4, 3])"),
        "{text}"
    );
}

#[test]
fn a_file_that_holds_a_parameter_in_another_shape_or_size_is_exit_2_naming_it() {
    let dir = fixture();
    let spec = write_spec(dir.path(), "shape.yaml", &["wrong_shape.safetensors"]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    for part in [
        "parameter `model::w`",
        "wrong_shape.safetensors",
        "module `params`",
        "stage `affine`",
        "`w` is f32[3, 4] there, the global is f32[4, 3]",
    ] {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
    // IREE itself would read the first 48 of these 64 bytes without a word.
    let spec = write_spec(dir.path(), "long.yaml", &["long_w.irpa"]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    for part in [
        "parameter `model::w` (@w, tensor<4x3xf32>)",
        "long_w.irpa holds 64 bytes for it, the global needs 48 (f32[4, 3])",
        "stage `affine`",
    ] {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
    // Not a parameter format: refused when the spec is read, naming the file.
    std::fs::write(dir.path().join("weights.npz"), b"PK").unwrap();
    let spec = write_spec(dir.path(), "npz.yaml", &["weights.npz"]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("parameter file weights.npz (scope `model`)"),
        "{text}"
    );
}

#[test]
fn a_missing_key_file_or_scope_is_exit_2_before_anything_runs() {
    let dir = fixture();
    let spec = write_spec(dir.path(), "no_b.yaml", &["no_b.irpa"]);
    let (code, stdout, stderr, record) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    for part in [
        "parameter `model::b` (@b, tensor<3xf32>)",
        "key `b` is not in scope `model`'s files",
        "no_b.irpa",
        "module `params` (stage `affine`)",
        "keys: s, w",
    ] {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
    // Before anything runs: no stage has a record.
    if let Some(record) = record {
        assert!(
            record["stages"].as_array().is_none_or(Vec::is_empty),
            "{record:#}"
        );
    }

    let spec = write_spec(dir.path(), "gone.yaml", &["nothere.irpa"]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("parameter scope `model`: file"), "{text}");
    assert!(text.contains("nothere.irpa does not exist"), "{text}");

    let spec = write_spec(dir.path(), "none.yaml", &[]);
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("the spec gives no files for scope `model`"),
        "{text}"
    );
}

#[test]
fn points_lists_the_parameters_a_module_reads() {
    let dir = fixture();
    let out = parity(dir.path(), &["points", "model.mlir", "--json", "-"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("points JSON");
    let listed: Vec<(String, String, String)> = json["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| {
            (
                format!(
                    "{}::{}",
                    p["scope"].as_str().unwrap(),
                    p["key"].as_str().unwrap()
                ),
                p["global"].as_str().unwrap().to_string(),
                p["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("model::w", "w", "tensor<4x3xf32>"),
        ("model::b", "b", "tensor<3xf32>"),
        ("model::s", "s", "tensor<3xf32>"),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
    assert_eq!(listed, want);
    let text = parity(dir.path(), &["points", "model.mlir"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("\"model\"::\"w\"  @w  tensor<4x3xf32>"),
        "{text}"
    );
}

#[test]
fn a_prebuilt_module_reads_its_parameters_and_a_missing_key_is_exit_2_at_load() {
    let dir = fixture();
    let spec = write_spec_for(
        dir.path(),
        "vmfb.yaml",
        "vmfb: model.vmfb",
        &["weights.irpa"],
    );
    let (code, stdout, stderr, record) = check(dir.path(), &spec, &[]);
    assert_eq!(code, 0, "{}", said(&stdout, &stderr));
    let record = record.expect("run.json");
    let z = &stage(&record, "scale", "chained")["outputs"][0]["metrics"];
    assert_eq!(z["max_abs"], 0.0, "{z:#}");
    // parity cannot read a vmfb's declarations: IREE refuses the key when the
    // module loads, and that is still the input's fault (exit 2), naming it.
    let spec = write_spec_for(
        dir.path(),
        "vmfb-no-b.yaml",
        "vmfb: model.vmfb",
        &["no_b.irpa"],
    );
    let (code, stdout, stderr, _) = check(dir.path(), &spec, &[]);
    let text = said(&stdout, &stderr);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("no parameter found in index with key 'b'"),
        "{text}"
    );
    assert!(text.contains("module `params`"), "{text}");
    assert!(
        text.contains("parameter files: scope `model`: ./no_b.irpa"),
        "{text}"
    );
}

#[test]
fn slices_of_a_parameterised_function_keep_the_globals_they_read() {
    let dir = fixture();
    let spec = "version: 1
subject:
  modules:
    params: {mlir: model.mlir}
  target_backend: llvm-cpu
  driver: local-task
  flags: [\"--iree-input-type=stablehlo\", \"--iree-llvmcpu-target-cpu=generic\"]
  parameters:
    model: weights.safetensors
oracle: oracle
tolerances:
  f32: [{max_abs: 0.0}]
stages:
  # x @ w: reads @w only.
  - name: xw
    module: params
    slice: {function: affine, from: [], to: [\"%5\"]}
    args: [{oracle: x}]
    outputs: [{name: xw, oracle: xw}]
  # + b: reads @b only.
  - name: plus_b
    module: params
    slice: {function: affine, from: [\"%5\"], to: [\"%7\"]}
    args: [{stage: xw.xw}]
    outputs: [{name: y, oracle: y}]
";
    std::fs::write(dir.path().join("slices.yaml"), spec).unwrap();
    let (code, stdout, stderr, record) = check(dir.path(), "slices.yaml", &[]);
    assert_eq!(code, 0, "{}", said(&stdout, &stderr));
    let record = record.expect("run.json");
    for (name, output) in [("xw", "xw"), ("plus_b", "y")] {
        for mode in ["isolated", "chained"] {
            let out = &stage(&record, name, mode)["outputs"][0];
            assert_eq!(out["name"], output);
            assert_eq!(out["metrics"]["max_abs"], 0.0, "{name} {mode}: {out:#}");
            assert_eq!(out["metrics"]["count"], 6, "{name} {mode}");
        }
    }
}

#[test]
fn the_f64_shadow_of_a_parameterised_slice_reads_the_stored_values_exactly() {
    let dir = fixture();
    let compiler = parity_iree::IreeCompiler::load(None).expect("IREE compiler (EERIE_PYTHON)");
    let (module, _) =
        parity::run::slices::read_normalised(&compiler, &dir.path().join("model.mlir"))
            .expect("module normalises");
    let func = module.function("affine").expect("affine");
    let request = parity_mlir::SliceRequest {
        name: "shadow_affine".into(),
        from: Vec::new(),
        to: func.results.clone(),
    };
    // The slice keeps the globals it reads (as bisect's probes cut it).
    let (text, _) = parity_mlir::emit_slices(&module, func, "shadow", &[request]).unwrap();
    let text = parity_mlir::promote_to_f64(&text).unwrap();
    // The globals (and so the parameter files) keep their f32 type; the
    // loads are widened after them.
    assert!(text.contains("type = tensor<4x3xf32>"), "{text}");
    assert!(text.contains("\"stablehlo.convert\"(%param_"), "{text}");
    let options = parity_iree::CompileOptions {
        target_backend: "llvm-cpu".into(),
        flags: [
            "--iree-input-type=stablehlo",
            "--iree-llvmcpu-target-cpu=generic",
            // What bisect's f64 shadow compiles with (src/bisect/probe.rs).
            "--iree-input-demote-f64-to-f32=false",
            "--iree-llvmcpu-link-embedded=false",
            "--iree-opt-const-eval=false",
        ]
        .map(String::from)
        .to_vec(),
    };
    let vmfb = compiler
        .compile("shadow.mlir", text.as_bytes(), &options)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let runtime = parity_iree::IreeRuntime::with_parameters(
        "local-task",
        &[("model".into(), vec![dir.path().join("weights.irpa")])],
    )
    .unwrap();
    let loaded = runtime.load(&vmfb, "shadow").unwrap();
    let x = [1.0, 2.0, 3.0, 4.0, -4.0, 0.5, 0.0, 1.5];
    let x = parity_tensor::Tensor::from_f64(vec![2, 4], &x).unwrap();
    let out = loaded.invoke("shadow_affine", &[x]).unwrap();
    assert_eq!(out[0].dtype(), parity_tensor::DType::F64);
    let y = parity_tensor::read_npy(dir.path().join("oracle/y.npy")).unwrap();
    assert_eq!(out[0].to_f64_vec(), y.to_f64_vec());
}

#[test]
fn bisect_localises_a_fault_in_a_parameterised_function_to_its_op() {
    let dir = fixture();
    // The committed module with one fault: `y = xw - b` instead of `+ b`.
    let model = std::fs::read_to_string(dir.path().join("model.mlir")).unwrap();
    let faulty = model.replace(
        "%y = stablehlo.add %xw, %bb",
        "%y = stablehlo.subtract %xw, %bb",
    );
    assert_ne!(faulty, model);
    std::fs::write(dir.path().join("model.mlir"), faulty).unwrap();
    let spec = write_spec(dir.path(), "bisect.yaml", &["weights.irpa"]);
    let json = dir.path().join("bisect.json");
    let out = parity(
        dir.path(),
        &["bisect", &spec, "--json", json.to_str().unwrap()],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{text}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("bisect.json")).unwrap();
    let text_of = |v: &serde_json::Value| v.to_string();
    let found = text_of(&record);
    // Localised to the subtract, by the repair that makes it an add; the
    // probes and the f64 shadow read the same parameters.
    assert!(text.contains("first divergent operation"), "{text}");
    assert!(text.contains("stablehlo.subtract"), "{text}");
    assert!(text.contains("subtract -> add"), "{text}");
    assert!(found.contains("stablehlo.subtract"), "{found}");
    // The reproducer reads the same parameter file, by absolute path: its
    // run.sh fails on the mismatch, not on a missing parameter provider, and
    // its stages.yaml fails the check (exit 1), not the input (exit 2).
    let repro = dir.path().join("reports/bisect");
    let irpa = std::fs::canonicalize(dir.path().join("weights.irpa")).unwrap();
    let sh = std::fs::read_to_string(repro.join("run.sh")).unwrap();
    assert!(
        sh.contains(&format!("--parameters=model={}", irpa.display())),
        "{sh}"
    );
    let (code, said_sh) = common::run_sh(&repro);
    assert_ne!(code, 0, "{said_sh}");
    assert!(!said_sh.contains("no provider registered"), "{said_sh}");
    assert!(said_sh.contains("[FAILED]"), "{said_sh}");
    let (code, stdout, stderr, _) =
        common::check_to(&repro, "stages.yaml", &dir.path().join("repro-out"), &[]);
    assert_eq!(code, 1, "{}", said(&stdout, &stderr));
}
