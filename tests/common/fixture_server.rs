//! The loopback fixture server (crates/parity-server) for the black-box
//! tests: built once per test run (a no-op when fresh), started on an
//! ephemeral 127.0.0.1 port, killed when dropped. Its stdin is a pipe
//! held open by the test, and the server exits when it closes, so a test
//! that dies takes its server with it.

use super::{cache_dir, repo};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// How long a server may take to compile (cold cache) and load its modules.
const START_TIMEOUT: Duration = Duration::from_secs(600);

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> Option<SystemTime> {
    let mut best = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let t = if entry.file_type().ok()?.is_dir() {
            newest(&entry.path())
        } else {
            entry.metadata().ok()?.modified().ok()
        };
        best = best.max(t);
    }
    best
}

/// The fixture server binary, its modules compiled into the shared test
/// cache (once per test binary). `cargo test --workspace` builds it
/// (parity-server has integration tests); when it is missing or older than
/// its sources (`cargo test --test serve_blackbox` alone), it is built here.
pub fn binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let profile = if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            };
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| repo().join("target"));
            let exe = target.join(profile).join("parity-fixture-server");
            let built = std::fs::metadata(&exe).and_then(|m| m.modified()).ok();
            let sources = [repo().join("src"), repo().join("crates")]
                .iter()
                .filter_map(|d| newest(d))
                .max();
            if built.is_none() || built < sources {
                let mut cmd = Command::new(env!("CARGO"));
                cmd.args([
                    "build",
                    "--quiet",
                    "-p",
                    "parity-server",
                    "--bin",
                    "parity-fixture-server",
                ]);
                if !cfg!(debug_assertions) {
                    cmd.arg("--release");
                }
                let status = cmd.current_dir(repo()).status().expect("run cargo build");
                assert!(status.success(), "cargo build -p parity-server failed");
            }
            // Compile the modules once, before the tests start servers in parallel.
            let status = Command::new(&exe)
                .args(["compile", "--spec", "stages.yaml", "--cache-dir"])
                .arg(cache_dir())
                .current_dir(repo())
                .status()
                .expect("run parity-fixture-server compile");
            assert!(status.success(), "parity-fixture-server compile failed");
            exe
        })
        .clone()
}

/// A running server.
pub struct FixtureServer {
    child: Child,
    _stdin: ChildStdin,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The server's stderr lines so far (one per finished request).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl FixtureServer {
    /// Starts `parity-fixture-server serve` on the bundled spec with `extra` arguments.
    pub fn start(extra: &[&str]) -> FixtureServer {
        let mut child = Command::new(binary())
            .args([
                "serve",
                "--spec",
                "stages.yaml",
                "--bind",
                "127.0.0.1:0",
                "--exit-with-stdin",
            ])
            .arg("--cache-dir")
            .arg(cache_dir())
            .args(extra)
            .current_dir(repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn parity-fixture-server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[server] {line}");
                if let Ok(mut l) = sink.lock() {
                    l.push(line);
                }
            }
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for _ in lines {}
        });
        let first = match rx.recv_timeout(START_TIMEOUT) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the fixture server did not start: {:?}",
                    log.lock().map(|l| l.join("\n"))
                );
            }
        };
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line `{first}`"))
            .to_string();
        FixtureServer {
            child,
            _stdin: stdin,
            url,
            log,
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
