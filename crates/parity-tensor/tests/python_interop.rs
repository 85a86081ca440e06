//! Files written by this crate must load in numpy (+ ml_dtypes), MLX and the
//! safetensors library with the intended values.
//!
//! Needs a Python with the pinned packages of tests/data/requirements.txt; set
//! `PARITY_TENSOR_PYTHON` to its interpreter (e.g. /tmp/tensor-venv/bin/python).
//! ci/test.sh sets it to tools/fixtures/.venv/bin/python; under CI (env `CI`
//! set) a missing variable fails the test, elsewhere the test says why it did
//! nothing and passes.

use parity_tensor::{write_npy, write_npz, write_safetensors, DType, Tensor};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Values exact in every dtype; floats include -0.0, inf and nan.
fn sample(dtype: DType) -> (Tensor, Vec<Value>) {
    let vals: Vec<f64> = match dtype {
        DType::Bool => vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
        DType::U8 => vec![0.0, 1.0, 127.0, 128.0, 200.0, 255.0],
        DType::I64 => vec![-9_000_000_003.0, -1.0, 0.0, 1.0, 2.0, 6_000_000_002.0],
        d if d.is_float() => vec![-0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.5, -1.5],
        _ => vec![-128.0, -1.0, 0.0, 1.0, 3.0, 127.0],
    };
    let t = Tensor::from_f64_as(dtype, vec![2, 3], &vals).unwrap();
    let json_vals = vals
        .iter()
        .map(|v| match v {
            v if v.is_nan() => json!("nan"),
            v if v.is_infinite() => json!(if *v > 0.0 { "inf" } else { "-inf" }),
            v => json!(v),
        })
        .collect();
    (t, json_vals)
}

#[test]
fn python_libraries_read_what_we_write() {
    let Some(python) = std::env::var_os("PARITY_TENSOR_PYTHON") else {
        // ci/test.sh always sets it; a CI run without it is misconfigured.
        assert!(
            std::env::var_os("CI").is_none(),
            "PARITY_TENSOR_PYTHON must name a Python with numpy, ml_dtypes, mlx and safetensors in CI"
        );
        eprintln!(
            "PARITY_TENSOR_PYTHON not set: skipping the numpy/MLX/safetensors read-back check"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let samples: Vec<(DType, Tensor, Vec<Value>)> = DType::ALL
        .iter()
        .map(|&d| {
            let (t, v) = sample(d);
            (d, t, v)
        })
        .collect();
    let spec = |d: DType, v: &Vec<Value>| json!({"dtype": d.name(), "shape": [2, 3], "values": v});
    let mut expected = serde_json::Map::new();
    for (d, t, v) in &samples {
        let name = format!("{}.npy", d.name());
        write_npy(dir.path().join(&name), t).unwrap();
        expected.insert(name, json!({"": spec(*d, v)}));
    }
    let all: Vec<(&str, &Tensor)> = samples.iter().map(|(d, t, _)| (d.name(), t)).collect();
    let keyed = |keep: &dyn Fn(DType) -> bool| -> Value {
        samples
            .iter()
            .filter(|(d, _, _)| keep(*d))
            .map(|(d, _, v)| (d.name().to_string(), spec(*d, v)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    write_npz(dir.path().join("stored.npz"), &all, false).unwrap();
    write_npz(dir.path().join("deflated.npz"), &all, true).unwrap();
    expected.insert("stored.npz".into(), keyed(&|_| true));
    expected.insert("deflated.npz".into(), keyed(&|_| true));
    let meta = BTreeMap::from([("writer".to_string(), "parity-tensor".to_string())]);
    for (file, skip) in [
        ("no_f64.safetensors", DType::F64),
        ("no_bf16.safetensors", DType::Bf16),
    ] {
        let subset: Vec<(&str, &Tensor)> = all
            .iter()
            .copied()
            .filter(|(n, _)| *n != skip.name())
            .collect();
        write_safetensors(dir.path().join(file), &subset, Some(&meta)).unwrap();
        expected.insert(file.into(), keyed(&|d| d != skip));
    }
    std::fs::write(
        dir.path().join("expected.json"),
        Value::Object(expected).to_string(),
    )
    .unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/check_rust_written.py");
    let out = Command::new(python)
        .arg(script)
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 10 npy x 2 readers, 2 npz x 10 keys x 2 readers, 9 (MLX) + 9 (safetensors lib).
    assert!(stdout.contains("ok: 78 checks"), "{stdout}");
}
