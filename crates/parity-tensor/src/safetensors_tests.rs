//! Unit tests for the safetensors reader and writer.

use super::*;

fn write_raw(dir: &Path, header: &str, data: &[u8]) -> PathBuf {
    let path = dir.join("raw.safetensors");
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn round_trips_every_dtype_with_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.safetensors");
    let tensors: Vec<(String, Tensor)> = DType::ALL
        .iter()
        .map(|&d| {
            (
                d.name().to_string(),
                Tensor::from_f64_as(d, vec![3, 1], &[0.0, 1.0, -1.5]).unwrap(),
            )
        })
        .collect();
    let refs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    write_safetensors(&path, &refs, Some(&meta)).unwrap();
    let file = read_safetensors(&path).unwrap();
    assert_eq!(file.metadata(), &meta);
    assert_eq!(file.names().len(), DType::ALL.len());
    for (name, t) in &tensors {
        let back = file.get(name).unwrap();
        assert_eq!(
            (back.dtype(), back.shape(), back.bytes()),
            (t.dtype(), t.shape(), t.bytes())
        );
        assert!(back.is_mapped());
    }
}

#[test]
fn rejects_layout_violations() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
            8,
            "overlaps",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
            8,
            "gap",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
            8,
            "data region holds 8",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#,
            4,
            "needs 8 bytes",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}"#,
            4,
            "too large",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
            8,
            "duplicate key",
        ),
        (
            r#"{"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}}"#,
            4,
            "Q7",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}"#,
            4,
            "unknown field",
        ),
    ];
    for (header, data_len, expected) in cases {
        let path = write_raw(dir.path(), header, &vec![0u8; data_len]);
        let err = read_safetensors(&path).unwrap_err().to_string();
        assert!(
            err.contains(expected) && err.contains("raw.safetensors"),
            "{header}: {err}"
        );
    }
    let path = dir.path().join("long.safetensors");
    std::fs::write(&path, 200_000_000u64.to_le_bytes()).unwrap();
    assert!(read_safetensors(&path)
        .unwrap_err()
        .to_string()
        .contains("100 MB"));
    std::fs::write(&path, 16u64.to_le_bytes()).unwrap();
    assert!(read_safetensors(&path)
        .unwrap_err()
        .to_string()
        .contains("past the end"));
}

#[test]
fn unsupported_dtype_fails_only_that_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let header = r#"{"u":{"dtype":"U32","shape":[1],"data_offsets":[0,4]},"f":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    let path = write_raw(dir.path(), header, &[0, 0, 0, 0, 0, 0, 0x80, 0x3f]);
    let file = read_safetensors(&path).unwrap();
    assert_eq!(file.get("f").unwrap().to_f64_vec(), vec![1.0]);
    assert!(file.get("u").unwrap_err().to_string().contains("U32"));
}
