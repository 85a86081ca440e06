//! Reads files written by numpy, numpy + ml_dtypes, MLX and the safetensors
//! library (tests/data/make_fixtures.py) and checks every element against
//! tests/data/expected.json, which the same script wrote from the source arrays.

use parity_tensor::{
    load_tensor, read_npy, read_npz, read_safetensors, write_npy, write_npz, write_safetensors,
    DType, Tensor,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn fixture(name: &str) -> PathBuf {
    data_dir().join("fixtures").join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(data_dir().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// JSON number, or "nan" / "inf" / "-inf".
fn expected_value(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse::<f64>().unwrap(),
        other => other.as_f64().unwrap(),
    }
}

/// Equal as values, with NaN equal to NaN and the sign of zero significant.
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
}

fn assert_matches(t: &Tensor, spec: &Value, what: &str) {
    assert_eq!(
        t.dtype().name(),
        spec["dtype"].as_str().unwrap(),
        "{what}: dtype"
    );
    let shape: Vec<usize> = serde_json::from_value(spec["shape"].clone()).unwrap();
    assert_eq!(t.shape(), shape.as_slice(), "{what}: shape");
    let want: Vec<f64> = spec["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(expected_value)
        .collect();
    let got = t.to_f64_vec();
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(same(*g, *w), "{what}: element {i} is {g}, expected {w}");
    }
}

#[test]
fn every_fixture_matches_its_expected_values() {
    let exp = expected();
    let files = exp["files"].as_object().unwrap();
    let mut checked = 0;
    for (file, keys) in files {
        for (key, spec) in keys.as_object().unwrap() {
            let key = (!key.is_empty()).then_some(key.as_str());
            let t =
                load_tensor(fixture(file), key).unwrap_or_else(|e| panic!("{file} [{key:?}]: {e}"));
            assert_matches(&t, spec, &format!("{file} [{key:?}]"));
            checked += 1;
        }
    }
    // 13 npy + 2x11 numpy npz + 2x10 mlx npz + 9 mlx safetensors + 10 safetensors-lib.
    assert_eq!(checked, 13 + 22 + 20 + 9 + 10);
    // Every committed fixture is covered by expected.json.
    for entry in std::fs::read_dir(data_dir().join("fixtures")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(files.contains_key(&name), "{name} has no expected values");
    }
}

#[test]
fn little_endian_c_order_data_is_mapped_and_the_rest_owned() {
    assert!(read_npy(fixture("np_v1_f32.npy")).unwrap().is_mapped());
    assert!(read_npy(fixture("np_v3_i16.npy")).unwrap().is_mapped());
    // MLX marks 1-d arrays Fortran order; that layout equals C order, so no copy.
    assert!(read_npy(fixture("mlx_bf16.npy")).unwrap().is_mapped());
    assert!(!read_npy(fixture("np_fortran_f32.npy")).unwrap().is_mapped());
    assert!(!read_npy(fixture("np_bigendian_f64.npy"))
        .unwrap()
        .is_mapped());
    let stored = read_npz(fixture("np_savez.npz")).unwrap();
    assert!(stored.get("f32").unwrap().is_mapped());
    assert!(!read_npz(fixture("np_savez_compressed.npz"))
        .unwrap()
        .get("f32")
        .unwrap()
        .is_mapped());
    assert!(read_safetensors(fixture("mlx.safetensors"))
        .unwrap()
        .get("bf16")
        .unwrap()
        .is_mapped());
}

#[test]
fn spot_values_and_metadata() {
    // np.asfortranarray(...) of a (2, 3, 4) sequence (i - 12) * 0.5: element [1, 2, 3] is flat 23.
    let f = read_npy(fixture("np_fortran_f32.npy")).unwrap();
    assert_eq!(f.get_f64(23), 5.5);
    // mx.save of x.T for x of shape (3, 4): shape (4, 3), element [0, 1] is x[1, 0] = (4 - 6) * 0.5.
    let t = read_npy(fixture("mlx_transposed_f32.npy")).unwrap();
    assert_eq!((t.shape(), t.get_f64(1)), (&[4usize, 3][..], -1.0));
    let i64s = read_npy(fixture("np_bigendian_fortran_i64.npy")).unwrap();
    assert_eq!(i64s.get_f64(0), -9_000_000_003.0);
    let exp = expected();
    for file in ["mlx.safetensors", "st_numpy.safetensors"] {
        let want: BTreeMap<String, String> =
            serde_json::from_value(exp["metadata"][file].clone()).unwrap();
        assert_eq!(
            read_safetensors(fixture(file)).unwrap().metadata(),
            &want,
            "{file}"
        );
    }
    let npz = read_npz(fixture("np_savez.npz")).unwrap();
    let mut keys = npz.keys().to_vec();
    keys.sort();
    let mut want: Vec<String> = DType::ALL.iter().map(|d| d.name().to_string()).collect();
    want.push("scalar".into());
    want.sort();
    assert_eq!(keys, want);
}

#[test]
fn rewriting_fixtures_with_our_writers_preserves_them() {
    let dir = tempfile::tempdir().unwrap();
    let exp = expected();
    let spec = &exp["files"]["np_savez.npz"];
    let npz = read_npz(fixture("np_savez.npz")).unwrap();
    let tensors: Vec<(String, Tensor)> = npz
        .keys()
        .iter()
        .map(|k| (k.clone(), npz.get(k).unwrap()))
        .collect();
    let refs: Vec<(&str, &Tensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    for compressed in [false, true] {
        let out = dir.path().join(format!("re{compressed}.npz"));
        write_npz(&out, &refs, compressed).unwrap();
        let back = read_npz(&out).unwrap();
        for (k, _) in &refs {
            assert_matches(
                &back.get(k).unwrap(),
                &spec[*k],
                &format!("rewritten npz {k}"),
            );
        }
    }
    let st_out = dir.path().join("re.safetensors");
    write_safetensors(&st_out, &refs, None).unwrap();
    let st = read_safetensors(&st_out).unwrap();
    for (k, _) in &refs {
        assert_matches(
            &st.get(k).unwrap(),
            &spec[*k],
            &format!("rewritten safetensors {k}"),
        );
    }
    // Fortran + big-endian in, plain little-endian C order out.
    let src = read_npy(fixture("np_bigendian_fortran_i64.npy")).unwrap();
    let npy_out = dir.path().join("re.npy");
    write_npy(&npy_out, &src).unwrap();
    let back = read_npy(&npy_out).unwrap();
    assert!(back.is_mapped());
    assert_matches(
        &back,
        &exp["files"]["np_bigendian_fortran_i64.npy"][""],
        "rewritten npy",
    );
}

#[test]
fn a_null_metadata_as_mlx_writes_it_is_no_metadata() {
    // `mx.save_safetensors` writes `"__metadata__":null` when there is none.
    let header = r#"{"__metadata__":null,"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mlx.safetensors");
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(1.5f32.to_le_bytes());
    bytes.extend((-2.0f32).to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
    let st = parity_tensor::read_safetensors(&path).unwrap();
    assert!(st.metadata().is_empty());
    assert_eq!(st.get("w").unwrap().to_f64_vec(), vec![1.5, -2.0]);
    // A metadata value that is neither a map nor null is still refused.
    let bad = header.replace("null", "3");
    let mut bytes = (bad.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(bad.as_bytes());
    bytes.extend([0u8; 8]);
    std::fs::write(&path, bytes).unwrap();
    let err = parity_tensor::read_safetensors(&path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("must map strings to strings"), "{err}");
}
