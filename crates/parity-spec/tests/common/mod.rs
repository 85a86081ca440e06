//! Shared fixture: a temporary directory laid out like a real subject, so that
//! module-file checks run against real files.

#![allow(dead_code)]

use parity_spec::{Spec, SpecError};
use std::path::PathBuf;

/// A temp dir with `subject/audio.mlir` and `subject/prebuilt.vmfb` in it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("subject")).expect("mkdir");
        std::fs::write(
            dir.path().join("subject/audio.mlir"),
            "func.func @f() { return }\n",
        )
        .expect("write mlir");
        std::fs::write(dir.path().join("subject/prebuilt.vmfb"), b"\0").expect("write vmfb");
        Fixture { dir }
    }

    /// Where the spec would live.
    pub fn spec_path(&self) -> PathBuf {
        self.dir.path().join("stages.yaml")
    }

    /// Parses `text` as if it were `<dir>/stages.yaml`.
    pub fn parse(&self, text: &str) -> Result<Spec, SpecError> {
        Spec::parse_str(text, self.spec_path())
    }

    /// Parses `text`, expecting an error; returns its message.
    pub fn err(&self, text: &str) -> String {
        match self.parse(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e.to_string(),
        }
    }
}

/// Asserts that `msg` is located at `line:col` of stages.yaml and mentions every needle.
pub fn assert_err(msg: &str, line: usize, col: usize, needles: &[&str]) {
    let loc = format!("stages.yaml:{line}:{col}: ");
    assert!(msg.contains(&loc), "expected `{loc}` in: {msg}");
    for n in needles {
        assert!(msg.contains(n), "expected `{n}` in: {msg}");
    }
}

/// A minimal valid header: version, one MLIR module, an oracle.
pub const HEADER: &str = "version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir}
oracle: dumps
";
