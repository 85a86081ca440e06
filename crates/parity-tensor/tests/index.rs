//! `index_dir` on real dumps: the committed gemma3n store re-indexed, the f64
//! pairing by file and by key, `.npy` directories, bad and clashing files.

use parity_tensor::index::{index_dir, naming::CasePattern, parse_provenance, IndexOptions};
use parity_tensor::{write_npy, write_npz, OracleStore, Tensor};
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Copies the store's audio-path dumps (`<case>.npz`, `<case>_f64.npz`) and
/// its manifest. The language-model dumps (`<case>_lm.npz`) hold step cases
/// (`<case>.s05/...`) and cache aliases that the generic `<stem>/<key>` rule
/// does not produce; build_manifest.py indexes them (tools/fixtures).
fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().contains("_lm") {
            continue;
        }
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// The committed manifest's entries for the audio-path dumps only.
fn audio_tensors(committed: &serde_json::Value) -> serde_json::Value {
    let mut t = committed["tensors"].as_object().unwrap().clone();
    t.retain(|_, e| !e["file"].as_str().unwrap().contains("_lm"));
    serde_json::Value::Object(t)
}

#[test]
fn reindexing_the_gemma3n_store_gives_the_committed_tensors() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("oracle-dumps/gemma3n"), dir.path());
    let committed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("manifest.json")).unwrap()).unwrap();
    let options = IndexOptions {
        provenance: parse_provenance(&["producer=test".into()]).unwrap(),
        ..IndexOptions::default()
    };
    let built = index_dir(dir.path(), &options).unwrap();
    let ours: serde_json::Value = serde_json::from_str(&built.to_json()).unwrap();
    assert_eq!(ours["schema"], committed["schema"]);
    assert_eq!(ours["tensors"], audio_tensors(&committed));
    assert_eq!(ours["provenance"], serde_json::json!({"producer": "test"}));
    assert_eq!(built.files, 10);
    // Written and reopened, it is a sound store; output is byte-deterministic.
    built.write(&dir.path().join("manifest.json")).unwrap();
    let store = OracleStore::open(dir.path()).unwrap();
    assert!(store.verify().is_empty());
    assert_eq!(
        built.to_json(),
        index_dir(dir.path(), &options).unwrap().to_json()
    );
}

#[test]
fn case_patterns_select_cases() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("oracle-dumps/gemma3n"), dir.path());
    let options = IndexOptions {
        cases: Some(CasePattern::new("re:full128|two_clips").unwrap()),
        ..IndexOptions::default()
    };
    let built = index_dir(dir.path(), &options).unwrap();
    assert!(built
        .tensors
        .keys()
        .all(|k| k.starts_with("full128/") || k.starts_with("two_clips/")));
    assert!(built
        .tensors
        .contains_key("full128/conformer_0_attention@f64"));
    let skipped: Vec<&str> = built.skipped_cases.iter().map(String::as_str).collect();
    assert_eq!(skipped, ["boundary33", "partial77", "shortest"]);
    let none = IndexOptions {
        cases: Some(CasePattern::new("nothing*").unwrap()),
        ..IndexOptions::default()
    };
    let err = index_dir(dir.path(), &none).unwrap_err().to_string();
    assert!(err.contains("nothing*"), "{err}");
}

#[test]
fn npy_directories_key_markers_and_out_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("dumps/case_a");
    std::fs::create_dir_all(&case).unwrap();
    let a = Tensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let b = Tensor::from_f64(vec![3], &[0.5, 1.5, 2.5]).unwrap();
    write_npy(case.join("encoder.layers.0.npy"), &a).unwrap();
    write_npy(case.join("encoder.layers.0_f64.npy"), &b).unwrap();
    write_npz(
        dir.path().join("dumps/case_b.npz"),
        &[("x", &a), ("x@f64", &b)],
        false,
    )
    .unwrap();
    std::fs::write(dir.path().join("dumps/README.txt"), "not a tensor").unwrap();
    std::fs::write(dir.path().join("dumps/.hidden.npy"), "skipped").unwrap();
    let out_dir = dir.path().join("store");
    std::fs::create_dir(&out_dir).unwrap();
    let options = IndexOptions {
        manifest_dir: Some(out_dir.clone()),
        ..IndexOptions::default()
    };
    let built = index_dir(&dir.path().join("dumps"), &options).unwrap();
    let names: Vec<&str> = built.tensors.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "case_a/encoder.layers.0",
            "case_a/encoder.layers.0@f64",
            "case_b/x",
            "case_b/x@f64"
        ]
    );
    let e = &built.tensors["case_a/encoder.layers.0"];
    assert_eq!(
        (e.file.as_str(), e.key.as_deref()),
        ("../dumps/case_a/encoder.layers.0.npy", None)
    );
    assert_eq!(built.tensors["case_b/x@f64"].key.as_deref(), Some("x@f64"));
    built.write(&out_dir.join("manifest.json")).unwrap();
    let store = OracleStore::open(&out_dir).unwrap();
    assert_eq!(
        store
            .get("case_a/encoder.layers.0@f64")
            .unwrap()
            .to_f64_vec(),
        [0.5, 1.5, 2.5]
    );
    assert_eq!(
        store.get("case_b/x").unwrap().to_f64_vec(),
        [1.0, 2.0, 3.0, 4.0]
    );
}

#[test]
fn bad_and_clashing_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let a = Tensor::from_f32(vec![1], &[1.0]).unwrap();
    write_npy(dir.path().join("good.npy"), &a).unwrap();
    std::fs::write(dir.path().join("broken.npy"), b"\x93NUMPY\x01\x00garbage").unwrap();
    std::fs::write(dir.path().join("trunc.npz"), b"PK\x03\x04").unwrap();
    let err = index_dir(dir.path(), &IndexOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("broken.npy") && err.contains("trunc.npz"),
        "{err}"
    );
    assert!(!err.contains("good.npy"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("c")).unwrap();
    write_npy(dir.path().join("c/x.npy"), &a).unwrap();
    write_npz(dir.path().join("c.npz"), &[("x", &a)], false).unwrap();
    let err = index_dir(dir.path(), &IndexOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`c/x`") && err.contains("c.npz[x]") && err.contains("x.npy"),
        "{err}"
    );
}

#[test]
fn provenance_items_parse_as_json_or_strings_and_nest() {
    let p = parse_provenance(&[
        "producer=mlx-vlm recorder".into(),
        "versions.mlx=\"0.32.4\"".into(),
        "seeds.weights=7".into(),
        "versions.numpy=2.1".into(),
    ])
    .unwrap();
    assert_eq!(
        serde_json::Value::Object(p),
        serde_json::json!({"producer": "mlx-vlm recorder", "versions": {"mlx": "0.32.4", "numpy": 2.1}, "seeds": {"weights": 7}})
    );
    assert!(parse_provenance(&["novalue".into()])
        .unwrap_err()
        .to_string()
        .contains("novalue"));
    assert!(parse_provenance(&["a=1".into(), "a.b=2".into()]).is_err());
}

#[test]
fn a_flat_directory_of_one_case() {
    let dir = tempfile::tempdir().unwrap();
    let a = Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap();
    write_npy(dir.path().join("conformer.0.attention.npy"), &a).unwrap();
    write_npy(dir.path().join("conformer.0.attention_f64.npy"), &a).unwrap();
    let options = IndexOptions {
        case: Some("full128".into()),
        cases: Some(CasePattern::new("full*").unwrap()),
        ..IndexOptions::default()
    };
    let built = index_dir(dir.path(), &options).unwrap();
    let names: Vec<&str> = built.tensors.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "full128/conformer.0.attention",
            "full128/conformer.0.attention@f64"
        ]
    );
    assert_eq!(
        built.tensors["full128/conformer.0.attention"].file,
        "conformer.0.attention.npy"
    );
    let bad = IndexOptions {
        case: Some("a/b".into()),
        ..IndexOptions::default()
    };
    assert!(index_dir(dir.path(), &bad)
        .unwrap_err()
        .to_string()
        .contains("`a/b`"));
}

/// Issue 28: two links to `.` made the walk grow without bound (1.3 GB in
/// 30 s); one listed `self/self/.../a`. Links into the tree and to its
/// ancestors are skipped and reported; a link out of the tree is followed once.
#[cfg(unix)]
#[test]
fn directory_links_back_into_the_tree_are_not_followed() {
    use std::os::unix::fs::symlink;
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("tree");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let t = Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap();
    write_npy(dir.join("a.npy"), &t).unwrap();
    write_npy(dir.join("sub/b.npy"), &t).unwrap();
    write_npy(outside.join("c.npy"), &t).unwrap();
    symlink(".", dir.join("self")).unwrap();
    symlink(".", dir.join("again")).unwrap();
    symlink("..", dir.join("sub/up")).unwrap();
    symlink("../..", dir.join("sub/top")).unwrap();
    symlink(&outside, dir.join("ext")).unwrap();
    symlink(&outside, dir.join("ext2")).unwrap();
    symlink(&dir, outside.join("back")).unwrap();
    let built = index_dir(&dir, &IndexOptions::default()).unwrap();
    let names: Vec<&str> = built.tensors.keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "ext/c", "sub/b"]);
    assert_eq!(
        built.skipped_links,
        ["again", "ext/back", "ext2", "self", "sub/top", "sub/up"]
    );
}

/// A name that is not UTF-8 was turned lossy and then not found ("No such
/// file or directory" for a file that exists); now it is refused by name.
#[cfg(unix)]
#[test]
fn a_file_name_that_is_not_utf8_is_refused_by_name() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let t = Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap();
    write_npy(
        dir.path().join(std::ffi::OsStr::from_bytes(b"a\xff.npy")),
        &t,
    )
    .unwrap();
    let err = index_dir(dir.path(), &IndexOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a\u{fffd}.npy") && err.contains("not valid UTF-8"),
        "{err}"
    );
    assert!(!err.contains("No such file"), "{err}");
}
