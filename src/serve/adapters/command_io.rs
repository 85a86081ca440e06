//! One run of a command template under its deadline: its pipes, each read
//! or written on a thread of its own so that a command that never reads its
//! stdin, or floods its stdout, cannot hold parity past the deadline; the
//! reading of its output lines; and the killing of its process group.

use super::command::{parse_lines, CommandOutcome};
use super::wire::CommandLine;
use super::{AdapterError, MAX_BODY};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Writes the request's JSON to the command's stdin in the background.
pub(super) fn feed_stdin(stdin: ChildStdin, json: String) {
    // A command that exits without reading its stdin is its own
    // business; one that never reads it must not hold parity past the deadline.
    std::thread::spawn(move || {
        let mut stdin = stdin;
        let _ = stdin.write_all(json.as_bytes());
    });
}

/// The command's stdout as lines (at most 64 MiB in all, [`MAX_BODY`] a
/// line), each sent as it arrives; an unreadable line is sent as an error
/// and ends the stream.
pub(super) fn stdout_lines(stdout: Option<ChildStdout>) -> Receiver<Result<String, String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Some(s) = stdout else { return };
        let mut r = BufReader::new(s).take(64 << 20);
        loop {
            let mut raw = Vec::new();
            let line = match r
                .by_ref()
                .take(MAX_BODY as u64 + 1)
                .read_until(b'\n', &mut raw)
            {
                Ok(0) => return,
                Ok(_) if raw.len() > MAX_BODY => {
                    Err(format!("a line longer than {MAX_BODY} bytes (4 MiB)"))
                }
                Ok(_) => String::from_utf8(raw)
                    .map(|l| l.trim_end_matches(['\n', '\r']).to_string())
                    .map_err(|_| "a line that is not UTF-8".to_string()),
                Err(e) => Err(e.to_string()),
            };
            let stop = line.is_err();
            if tx.send(line).is_err() || stop {
                return;
            }
        }
    });
    rx
}

/// The command's stderr (its first MiB), sent once it closes.
pub(super) fn stderr_text(stderr: Option<ChildStderr>) -> Receiver<String> {
    let (etx, erx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut s) = stderr {
            let _ = s.by_ref().take(1 << 20).read_to_string(&mut text);
        }
        let _ = etx.send(text);
    });
    erx
}

/// When to stop reading a command's output before it closes it.
#[derive(Clone, Copy)]
pub(super) struct Stop {
    /// More token lines than this is a flood.
    pub(super) limit: usize,
    /// Hang up after this many token lines (the disconnect cancel).
    pub(super) hang_up_after: Option<usize>,
}

/// How reading a command's output lines ended.
pub(super) enum Lines {
    /// parity stopped it (a flood or the hang-up): the outcome so far.
    Stopped(CommandOutcome),
    /// It closed its output: every line it wrote.
    Closed(Vec<String>),
}

/// One run of a command under its deadline, for reading and messages.
pub(super) struct Running<'a> {
    /// The template as given.
    pub(super) text: &'a str,
    /// When the run began.
    pub(super) started: Instant,
    /// The run's bound.
    pub(super) timeout: Duration,
    /// `started` + `timeout`.
    pub(super) deadline: Instant,
}

impl Running<'_> {
    /// Reads output lines until the command closes its output, parity stops
    /// it (a flood, the hang-up), a line is unreadable or the deadline
    /// passes; the group is killed in all but the first case.
    pub(super) fn read_lines(
        &self,
        child: &mut Child,
        rx: &Receiver<Result<String, String>>,
        stop: Stop,
    ) -> Result<Lines, AdapterError> {
        let mut lines = Vec::new();
        let mut tokens = 0usize;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(line)) => {
                    let is_token =
                        matches!(serde_json::from_str(&line), Ok(CommandLine::Token { .. }));
                    tokens += usize::from(is_token);
                    lines.push(line);
                    if tokens > stop.limit {
                        kill_group(child);
                        let mut out = parse_lines(self.text, &lines, None, "", true)?;
                        out.tokens.truncate(stop.limit);
                        out.logprobs.truncate(stop.limit);
                        out.token_flood = true;
                        return Ok(Lines::Stopped(out));
                    }
                    if stop.hang_up_after.is_some_and(|k| tokens >= k) {
                        kill_group(child);
                        let mut out = parse_lines(self.text, &lines, None, "", true)?;
                        out.hung_up = true;
                        return Ok(Lines::Stopped(out));
                    }
                }
                Ok(Err(e)) => {
                    kill_group(child);
                    return Err(AdapterError::Wire(format!(
                        "`{}`: reading its output line {}: {e}",
                        self.text,
                        lines.len() + 1
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(Lines::Closed(lines)),
                Err(RecvTimeoutError::Timeout) => {
                    kill_group(child);
                    return Err(AdapterError::Wire(format!(
                        "`{}`: timed out after {} while reading output line {} (after {tokens} token lines; one wall-clock deadline of {} per request; --request-timeout); its process group was killed",
                        self.text,
                        super::seconds(self.started.elapsed()),
                        lines.len() + 1,
                        super::seconds(self.timeout)
                    )));
                }
            }
        }
    }

    /// Output closed: the command is exiting; waits for it, still bounded.
    pub(super) fn wait_exit(&self, child: &mut Child) -> Result<ExitStatus, AdapterError> {
        loop {
            match child.try_wait() {
                Ok(Some(s)) => return Ok(s),
                Ok(None) if Instant::now() > self.deadline => {
                    kill_group(child);
                    return Err(AdapterError::Wire(format!(
                        "`{}`: timed out after {} waiting for it to exit (it closed its output; one wall-clock deadline of {} per request); its process group was killed",
                        self.text,
                        super::seconds(self.started.elapsed()),
                        super::seconds(self.timeout)
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(AdapterError::Wire(format!("`{}`: {e}", self.text))),
            }
        }
    }
}

/// Kills the command's whole process group (it leads its own, see `run`),
/// then reaps the command. The group is signalled before the leader is
/// reaped, so its id cannot have been reused.
pub(super) fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
