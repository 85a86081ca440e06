//! Compiling many MLIR modules at once, each in a child process.
//!
//! The IREE compiler library crashes when two sessions run at once in one
//! process (see [`parity_iree::IreeCompiler::compile`]), so parallel compiles
//! need processes: the `parity` binary re-executes itself as `parity
//! __compile --compiler-lib <lib>` (a hidden subcommand), up to
//! `$PARITY_COMPILE_JOBS` (default: the number of cores) at a time. Each child
//! takes jobs on stdin and answers on stdout, one at a time, until stdin
//! closes, so the compiler library is loaded once per child, not per job.
//!
//! Protocol, both ways: one JSON line, then the number of raw bytes it names.
//! Request `{"source_name", "target_backend", "flags", "mlir_bytes"}` + MLIR;
//! answer `{"vmfb_bytes": n}` + vmfb, or `{"error": "..."}` (the compiler's
//! bounded diagnostics). A child that dies fails only the job it held; the
//! next job gets a fresh child. Children compile without MLIR's own thread
//! pool unless `$PARITY_COMPILE_THREADS` is `many` ([`COMPILE_THREADS_ENV`]).
//!
//! Only a process that is the `parity` binary can re-execute itself: the CLI
//! calls [`enable_child_processes`] first thing. Elsewhere (the library used
//! in-process, a test harness) the jobs compile one after another here.

use parity_iree::{CompileOptions, IreeCompiler};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Env var capping the number of compiler processes at once (default: cores).
pub const COMPILE_JOBS_ENV: &str = "PARITY_COMPILE_JOBS";

/// Env var: `many` leaves MLIR's thread pool on in the compiler children;
/// `one` (the default) turns it off (`--mlir-disable-threading`). Several
/// children already keep the cores busy, and MLIR's threads on top of them
/// cost CPU and wall time; single-threaded, a child's artifacts are also the
/// same bytes from one compile to the next, which with threads on they were
/// not (docs/performance.md, "Compiler threads in the children").
pub const COMPILE_THREADS_ENV: &str = "PARITY_COMPILE_THREADS";

/// The hidden subcommand a compiler child runs.
pub const WORKER_SUBCOMMAND: &str = "__compile";

/// Most stderr bytes kept from a child that died (its last words).
const STDERR_TAIL: usize = 4096;

static SELF_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Lets this process compile in child processes of its own executable; only
/// the `parity` CLI may call it (the executable must understand `__compile`).
pub fn enable_child_processes() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = SELF_EXE.set(exe);
    }
}

/// One module to compile.
#[derive(Clone, Debug)]
pub struct Job {
    /// Labels diagnostics and errors (file and function).
    pub source_name: String,
    /// The MLIR text.
    pub mlir: String,
    /// Backend and flags.
    pub options: CompileOptions,
}

#[derive(Serialize, Deserialize)]
struct Request {
    source_name: String,
    target_backend: String,
    flags: Vec<String>,
    mlir_bytes: usize,
}

#[derive(Serialize, Deserialize)]
struct Answer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vmfb_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Whether the compiler children run MLIR without its thread pool.
fn children_single_threaded() -> bool {
    std::env::var(COMPILE_THREADS_ENV).map_or(true, |v| v.trim() != "many")
}

/// How many compiler processes run at once.
pub fn job_limit() -> usize {
    std::env::var(COMPILE_JOBS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Compiles every job, in child processes when this process may spawn them
/// and there is more than one job, else in this process one after another.
/// Results are in job order; an error is the compiler's message.
pub fn compile_jobs(compiler: &IreeCompiler, jobs: &[Job]) -> Vec<Outcome> {
    let workers = job_limit().min(jobs.len());
    match SELF_EXE.get() {
        Some(exe) if workers > 1 => in_children(exe, compiler.library_path(), jobs, workers),
        _ => jobs
            .iter()
            .map(|job| {
                compiler
                    .compile(&job.source_name, job.mlir.as_bytes(), &job.options)
                    .map_err(|e| e.to_string())
            })
            .collect(),
    }
}

/// A compiled vmfb, or the compiler's message.
pub type Outcome = Result<Vec<u8>, String>;

fn in_children(exe: &Path, library: &Path, jobs: &[Job], workers: usize) -> Vec<Outcome> {
    // Largest first, so the last job to start is a small one.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].mlir.len()));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut child: Option<Worker> = None;
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let result = match child.take().map_or_else(|| Worker::spawn(exe, library), Ok)
                    {
                        Err(e) => Err(e),
                        Ok(mut worker) => {
                            let result = worker.run(&jobs[i]);
                            // A child that answered keeps serving; a dead one is replaced.
                            if worker.alive {
                                child = Some(worker);
                            } else {
                                worker.reap();
                            }
                            result
                        }
                    };
                    let mut slots = results.lock().unwrap_or_else(|p| p.into_inner());
                    slots[i] = Some(result);
                }
                if let Some(worker) = child {
                    worker.finish();
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("the compile job was never run".to_string())))
        .collect()
}

/// One compiler child and its pipes.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    alive: bool,
}

impl Worker {
    fn spawn(exe: &Path, library: &Path) -> Result<Worker, String> {
        let mut command = Command::new(exe);
        command
            .arg(WORKER_SUBCOMMAND)
            .arg("--compiler-lib")
            .arg(library);
        if children_single_threaded() {
            command.arg("--single-threaded");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start a compiler process ({}): {e}", exe.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("a compiler process started without its pipes".to_string());
        };
        let stderr = std::thread::spawn(move || keep_tail(stderr));
        Ok(Worker {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr: Some(stderr),
            alive: true,
        })
    }

    /// Sends one job and reads its answer; marks the worker dead when the
    /// pipes fail (the child crashed or exited).
    fn run(&mut self, job: &Job) -> Outcome {
        let request = Request {
            source_name: job.source_name.clone(),
            target_backend: job.options.target_backend.clone(),
            flags: job.options.flags.clone(),
            mlir_bytes: job.mlir.len(),
        };
        let sent = self
            .stdin
            .as_mut()
            .map(|stdin| send(stdin, &request, job.mlir.as_bytes()).and_then(|()| stdin.flush()));
        let answer = match sent {
            Some(Ok(())) => receive::<Answer>(&mut self.stdout).and_then(|a| {
                let vmfb = read_payload(&mut self.stdout, a.vmfb_bytes.unwrap_or(0))?;
                Ok((a, vmfb))
            }),
            _ => Err(std::io::Error::other("not running")),
        };
        match answer {
            Ok((Answer { error: Some(e), .. }, _)) => Err(e),
            Ok((_, vmfb)) => Ok(vmfb),
            Err(_) => {
                self.alive = false;
                Err(format!(
                    "{}: the compiler process died: {}",
                    job.source_name,
                    self.death()
                ))
            }
        }
    }

    /// How the child ended and the tail of its stderr.
    fn death(&mut self) -> String {
        self.stdin = None;
        let status = match self.child.wait() {
            Ok(s) => s.to_string(),
            Err(e) => format!("cannot wait for it: {e}"),
        };
        let tail = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_default();
        if tail.is_empty() {
            status
        } else {
            format!("{status}; its last output:\n{tail}")
        }
    }

    fn reap(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes stdin (the child exits on EOF) and waits for it.
    fn finish(mut self) {
        self.stdin = None;
        let _ = self.child.wait();
        if let Some(h) = self.stderr.take() {
            let _ = h.join();
        }
    }
}

/// Reads a pipe to its end, keeping the last [`STDERR_TAIL`] bytes.
fn keep_tail(mut pipe: impl Read) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 2 * STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    if tail.len() > STDERR_TAIL {
        tail.drain(..tail.len() - STDERR_TAIL);
    }
    tail
}

fn send(out: &mut impl Write, header: &impl Serialize, bytes: &[u8]) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(header).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.write_all(bytes)
}

/// The next header line; `UnexpectedEof` when the other side closed the pipe.
fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> std::io::Result<T> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    serde_json::from_str(&line).map_err(std::io::Error::other)
}

fn read_payload(input: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    input.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `parity __compile`: serves compile requests from stdin until it closes.
/// Returns the process exit code: 0 when stdin closed, 3 when the compiler
/// could not be loaded (the first request is answered with why), 2 on a
/// malformed request.
pub fn serve(library: Option<&Path>, single_threaded: bool) -> i32 {
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut output = std::io::BufWriter::new(std::io::stdout().lock());
    let compiler = IreeCompiler::load(library);
    if let (true, Ok(c)) = (single_threaded, &compiler) {
        if !c.disable_threading() {
            eprintln!("parity __compile: MLIR's threading could not be turned off");
        }
    }
    loop {
        let request = match receive::<Request>(&mut input) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return 0,
            Err(e) => {
                eprintln!("parity __compile: malformed request: {e}");
                return 2;
            }
        };
        let Ok(mlir) = read_payload(&mut input, request.mlir_bytes) else {
            eprintln!("parity __compile: the request's MLIR was cut short");
            return 2;
        };
        let options = CompileOptions::new(request.target_backend, request.flags);
        let compiled = match &compiler {
            Ok(c) => c
                .compile(&request.source_name, &mlir, &options)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let written = match &compiled {
            Ok(vmfb) => send(
                &mut output,
                &Answer {
                    vmfb_bytes: Some(vmfb.len()),
                    error: None,
                },
                vmfb,
            ),
            Err(e) => send(
                &mut output,
                &Answer {
                    vmfb_bytes: None,
                    error: Some(e.clone()),
                },
                &[],
            ),
        };
        if written.and_then(|()| output.flush()).is_err() {
            return 3;
        }
        if compiler.is_err() {
            return 3;
        }
    }
}
