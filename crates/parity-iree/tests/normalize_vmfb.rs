//! The process-wide printing flags `normalize` sets must not change compiled
//! code: one module compiled before and after the first `normalize` call in this
//! process gives the same vmfb bytes. (Own test binary, one test: "before" must
//! really come before any normalisation.)

mod common;

use common::{compiler, ADD_F32};
use parity_iree::CompileOptions;

#[test]
fn vmfb_bytes_unchanged_by_normalize() {
    let c = compiler();
    let opts = CompileOptions::default();
    let before = c.compile("add.mlir", ADD_F32.as_bytes(), &opts).unwrap();
    let normal = c.normalize("add.mlir", ADD_F32.as_bytes()).unwrap();
    assert!(normal.starts_with("\"builtin.module\""));
    let after = c.compile("add.mlir", ADD_F32.as_bytes(), &opts).unwrap();
    assert_eq!(before.len(), after.len());
    assert!(
        before == after,
        "vmfb changed after normalize set the print flags"
    );
    // The normal form compiles to the same code as the original.
    let from_normal = c
        .compile("add_normal.mlir", normal.as_bytes(), &opts)
        .unwrap();
    assert_eq!(from_normal.len(), before.len());
}
