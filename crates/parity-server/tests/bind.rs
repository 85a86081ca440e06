//! The fixture server's command line: it refuses any bind address that is
//! not loopback, before compiling or loading anything (exit 2). Also makes
//! `cargo test --workspace` build the binary the black-box tests start.

use std::process::Command;

#[test]
fn a_non_loopback_bind_address_is_refused() {
    for addr in ["0.0.0.0:0", "10.1.2.3:8080", "[::]:0", "not-an-address"] {
        let out = Command::new(env!("CARGO_BIN_EXE_parity-fixture-server"))
            .args(["serve", "--spec", "does-not-matter.yaml", "--bind", addr])
            .output()
            .expect("run parity-fixture-server");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {stderr}");
        assert!(
            stderr.contains(&format!("--bind `{addr}`")),
            "{addr}: {stderr}"
        );
    }
}
