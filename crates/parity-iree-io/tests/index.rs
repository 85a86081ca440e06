//! The parameter index over real files, read by IREE's own parsers (the C
//! code build.rs compiles): what a .safetensors file holds, and the errors
//! for a missing, unknown-format or malformed file, each naming it.

use parity_iree_io::{ParameterError, Parameters};
use std::path::{Path, PathBuf};

/// A .safetensors file of f32 tensors (name, shape, values), laid out in order.
fn write_safetensors(path: &Path, tensors: &[(&str, &[usize], &[f32])]) {
    let mut header = Vec::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let start = data.len();
        for v in *values {
            data.extend_from_slice(&v.to_le_bytes());
        }
        header.push(format!(
            "\"{name}\":{{\"dtype\":\"F32\",\"shape\":{shape:?},\"data_offsets\":[{start},{}]}}",
            data.len()
        ));
    }
    let mut text = format!("{{{}}}", header.join(",")).into_bytes();
    while text.len() % 8 != 0 {
        text.push(b' ');
    }
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&text);
    bytes.extend_from_slice(&data);
    std::fs::write(path, bytes).unwrap();
}

fn scopes(files: &[PathBuf]) -> Vec<(String, Vec<PathBuf>)> {
    vec![("model".to_string(), files.to_vec())]
}

#[test]
fn entries_are_what_the_file_holds_and_the_module_can_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.safetensors");
    let b = dir.path().join("b.safetensors");
    write_safetensors(&a, &[("w", &[2, 3], &[1.0; 6]), ("bias", &[3], &[0.5; 3])]);
    write_safetensors(&b, &[("s", &[], &[2.0])]);
    let params = Parameters::open(&scopes(&[a.clone(), b.clone()])).unwrap();
    let mut got: Vec<(String, String, u64, Option<PathBuf>)> = params
        .entries()
        .into_iter()
        .map(|e| (e.scope, e.key, e.length, e.file))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("model".into(), "bias".into(), 12, Some(a.clone())),
            ("model".into(), "s".into(), 4, Some(b.clone())),
            ("model".into(), "w".into(), 24, Some(a.clone())),
        ]
    );
    let w = params.lookup("model", "w").unwrap();
    // The data region starts after the 8-byte length and the padded header.
    let header = u64::from_le_bytes(std::fs::read(&a).unwrap()[..8].try_into().unwrap());
    assert_eq!(w.offset, 8 + header);
    assert_eq!(params.files("model"), vec![a.as_path(), b.as_path()]);
    assert!(params.files("other").is_empty());
    assert!(params.lookup("model", "nope").is_none());
    // IREE's io-parameters module over the index.
    params.module().expect("io-parameters module");
}

#[test]
fn missing_unknown_and_malformed_files_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.irpa");
    match Parameters::open(&scopes(std::slice::from_ref(&gone))) {
        Err(ParameterError::Open {
            scope,
            path,
            message,
        }) => {
            assert_eq!((scope.as_str(), path), ("model", gone));
            assert_eq!(message, "no such file");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a missing file opened"),
    }
    let npz = dir.path().join("w.npz");
    std::fs::write(&npz, b"PK\x03\x04").unwrap();
    let e = Parameters::open(&scopes(std::slice::from_ref(&npz)))
        .err()
        .expect("refused");
    assert!(matches!(e, ParameterError::Parse { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("w.npz") && text.contains("unsupported file format"),
        "{text}"
    );

    let bad = dir.path().join("bad.safetensors");
    std::fs::write(&bad, 4096u64.to_le_bytes()).unwrap();
    let e = Parameters::open(&scopes(std::slice::from_ref(&bad)))
        .err()
        .expect("refused");
    assert!(matches!(e, ParameterError::Parse { .. }), "{e}");
    assert!(e.to_string().contains("bad.safetensors"), "{e}");

    // The same key in two files of one scope: IREE 3.13 keeps both and its
    // lookup takes the first file's, as `lookup` does.
    let a = dir.path().join("a.safetensors");
    let b = dir.path().join("b.safetensors");
    write_safetensors(&a, &[("w", &[1], &[1.0])]);
    write_safetensors(&b, &[("w", &[1], &[2.0])]);
    let p = Parameters::open(&scopes(&[a.clone(), b])).unwrap();
    assert_eq!(p.entries().iter().filter(|e| e.key == "w").count(), 2);
    assert_eq!(p.lookup("model", "w").unwrap().file, Some(a));
}
