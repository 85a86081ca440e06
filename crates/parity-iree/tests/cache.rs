//! The artifact cache against the real compiler: hits return identical bytes,
//! any key component change misses, and damaged entries are recompiled.

mod common;

use common::compiler;
use parity_iree::{ArtifactCache, CacheOutcome, CompileOptions, IreeRuntime};
use parity_tensor::Tensor;

const MUL: &str = r#"
func.func @mul(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.multiply"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"#;

fn opts(flags: &[&str]) -> CompileOptions {
    CompileOptions::new("llvm-cpu", flags.iter().map(|s| s.to_string()).collect())
}

#[test]
fn hit_returns_identical_bytes_and_changes_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path().join("cache"));
    let c = compiler();
    let o = opts(&["--iree-llvmcpu-target-cpu=generic"]);

    let (first, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    let (second, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(first, second);

    // The cached artifact is the real thing: it runs.
    let m = IreeRuntime::new("local-sync")
        .unwrap()
        .load(&second, "mul")
        .unwrap();
    let a = Tensor::from_f32(vec![3], &[1.5, -2.0, 4.0]).unwrap();
    let out = m.invoke("mul", &[a.clone(), a]).unwrap();
    assert_eq!(out[0].to_f64_vec(), vec![2.25, 4.0, 16.0]);

    // One flag changed: miss.
    let o2 = opts(&["--iree-llvmcpu-target-cpu=generic", "--iree-opt-level=O1"]);
    let (_, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o2)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    // One MLIR byte changed (a trailing space): miss, even though the program is the same.
    let mut mlir2 = MUL.as_bytes().to_vec();
    mlir2.push(b' ');
    let (_, outcome) = cache
        .get_or_compile(&c, "mul.mlir", &mlir2, &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    // The source name is a label, not part of the key.
    let (_, outcome) = cache
        .get_or_compile(&c, "renamed.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);

    // The sidecar records the key's components.
    let key = cache.key(&c, MUL.as_bytes(), &o).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.dir().join(format!("{key}.json"))).unwrap())
            .unwrap();
    assert_eq!(json["key"], key.as_str());
    assert_eq!(json["compiler_revision"], c.revision().as_str());
    assert_eq!(json["target_backend"], "llvm-cpu");
    assert_eq!(json["flags"][0], "--iree-llvmcpu-target-cpu=generic");
    assert_eq!(json["vmfb_bytes"], first.len());
    assert_eq!(json["compiler_library_sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn corrupted_or_truncated_entries_are_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path());
    let c = compiler();
    let o = opts(&[]);
    let (good, _) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    let entry = cache.entry_path(&cache.key(&c, MUL.as_bytes(), &o).unwrap());

    // Flip one payload byte: the header's sha256 no longer matches.
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&entry, &bytes).unwrap();
    let (again, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    assert_eq!(again, good);

    // Truncate: length no longer matches.
    let bytes = std::fs::read(&entry).unwrap();
    std::fs::write(&entry, &bytes[..bytes.len() - 100]).unwrap();
    let (again, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Miss);
    assert_eq!(again, good);

    // The rewritten entry is valid again.
    let (again, outcome) = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o)
        .map(|c| (c.vmfb, c.outcome))
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(again, good);
    // No temp files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".parity-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn compile_errors_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path());
    let c = compiler();
    let bad = b"func.func @f() { this is not mlir }";
    for _ in 0..2 {
        let err = cache
            .get_or_compile(&c, "bad.mlir", bad, &opts(&[]))
            .unwrap_err();
        assert!(err.to_string().contains("bad.mlir"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unwritable_cache_warns_and_returns_the_compiled_module() {
    // Root ignores permissions, so make the cache directory impossible: its
    // parent is a regular file, and creating it fails with ENOTDIR even for root.
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, b"x").unwrap();
    let cache = ArtifactCache::new(blocker.join("cache"));
    let c = compiler();
    let got = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &opts(&[]))
        .unwrap();
    assert_eq!(got.outcome, CacheOutcome::Miss);
    assert!(!got.vmfb.is_empty());
    assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
    assert!(
        got.warnings[0].contains("not-a-dir") && got.warnings[0].contains("not written"),
        "{}",
        got.warnings[0]
    );
}

#[test]
fn an_entry_copied_under_another_key_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path());
    let c = compiler();
    let (o1, o2) = (opts(&[]), opts(&["--iree-opt-level=O1"]));
    let first = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o1)
        .unwrap();
    let k1 = cache.key(&c, MUL.as_bytes(), &o1).unwrap();
    let k2 = cache.key(&c, MUL.as_bytes(), &o2).unwrap();
    std::fs::copy(cache.entry_path(&k1), cache.entry_path(&k2)).unwrap();
    let second = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o2)
        .unwrap();
    assert_eq!(second.outcome, CacheOutcome::Miss);
    assert!(
        second
            .warnings
            .iter()
            .any(|w| w.contains(&k2) && w.contains("another key")),
        "{:?}",
        second.warnings
    );
    // The rewritten entry is bound to its own key and hits.
    let third = cache
        .get_or_compile(&c, "mul.mlir", MUL.as_bytes(), &o2)
        .unwrap();
    assert_eq!(third.outcome, CacheOutcome::Hit);
    assert!(third.warnings.is_empty());
    assert_eq!(first.outcome, CacheOutcome::Miss);
}

#[test]
fn temp_files_of_a_killed_run_are_swept_on_write() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ArtifactCache::new(dir.path());
    // A real process, gone by now, and the temp file it would have left.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let leftover = dir
        .path()
        .join(format!("{}{dead}-abc.vmfb-0", parity_tensor::TEMP_PREFIX));
    std::fs::write(&leftover, b"half an entry").unwrap();
    cache
        .get_or_compile(&compiler(), "mul.mlir", MUL.as_bytes(), &opts(&[]))
        .unwrap();
    assert!(!leftover.exists());
}
