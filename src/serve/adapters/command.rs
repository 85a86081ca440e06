//! The command-template adapter: parity runs a command per request and
//! reads its JSON lines. The template is split like a shell would (no shell
//! runs); `{request}` becomes the path of a file holding the request's JSON,
//! and without `{request}` the JSON goes to the command's stdin. Each run is
//! bounded in time (one wall-clock deadline), and runs in a process group
//! of its own: past the deadline the whole group is killed.

use super::command_io::{self, Lines, Running, Stop};
use super::wire::{CommandLine, WireRequest};
use super::{AdapterError, TOKEN_MARGIN};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A parsed command template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandTemplate {
    /// The words, placeholders unexpanded.
    pub words: Vec<String>,
    /// The template as given, for messages.
    pub text: String,
}

/// What one completion call gave.
pub type CommandOutcome = super::Outcome;

impl CommandTemplate {
    /// Splits `text` into words; an empty template or unbalanced quotes are input errors.
    pub fn parse(text: &str) -> Result<CommandTemplate, AdapterError> {
        let words = shell_words::split(text)
            .map_err(|e| AdapterError::Target(format!("--target-command `{text}`: {e}")))?;
        if words.is_empty() {
            return Err(AdapterError::Target("--target-command is empty".into()));
        }
        Ok(CommandTemplate {
            words,
            text: text.to_string(),
        })
    }

    fn uses_file(&self) -> bool {
        self.words.iter().any(|w| w.contains("{request}"))
    }

    /// Runs the command for `request` (its JSON file in `scratch`), at most
    /// `timeout` from start to exit, in a process group of its own; with
    /// `hang_up_after` k, kills it after its k-th token line. Past the
    /// deadline, after a hang-up, or after `max_tokens` + [`TOKEN_MARGIN`]
    /// token lines (a flood), the whole group is killed, so a command that
    /// started children (`sh -c 'srv & wait'`) leaves none behind.
    pub fn run(
        &self,
        request: &WireRequest,
        scratch: &Path,
        timeout: Duration,
        hang_up_after: Option<usize>,
    ) -> Result<CommandOutcome, AdapterError> {
        let started = Instant::now();
        let json = serde_json::to_string(request).map_err(|e| AdapterError::Wire(e.to_string()))?;
        let mut child = self.spawn(&json, scratch)?;
        let run = Running {
            text: &self.text,
            started,
            timeout,
            deadline: started + timeout,
        };
        if let Some(stdin) = child.stdin.take() {
            command_io::feed_stdin(stdin, json);
        }
        let lines = command_io::stdout_lines(child.stdout.take());
        let stderr = command_io::stderr_text(child.stderr.take());
        let stop = Stop {
            limit: request.max_tokens.saturating_add(TOKEN_MARGIN),
            hang_up_after,
        };
        let lines = match run.read_lines(&mut child, &lines, stop)? {
            Lines::Stopped(out) => return Ok(out),
            Lines::Closed(lines) => lines,
        };
        let status = run.wait_exit(&mut child)?;
        // A child of the command may still hold stderr: do not wait past the deadline for it.
        let left = run.deadline.saturating_duration_since(Instant::now());
        let stderr = stderr.recv_timeout(left).unwrap_or_default();
        parse_lines(&self.text, &lines, status.code(), &stderr, false)
    }

    /// Writes the request's file when the template names it, expands
    /// `{request}` and starts the command in a process group of its own.
    fn spawn(&self, json: &str, scratch: &Path) -> Result<Child, AdapterError> {
        let file = scratch.join("request.json");
        if self.uses_file() {
            std::fs::write(&file, json).map_err(|e| {
                AdapterError::Target(format!("cannot write {}: {e}", file.display()))
            })?;
        }
        let words: Vec<String> = self
            .words
            .iter()
            .map(|w| w.replace("{request}", &file.display().to_string()))
            .collect();
        Command::new(&words[0])
            .args(&words[1..])
            .process_group(0)
            .stdin(if self.uses_file() {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                AdapterError::Target(format!("`{}`: cannot run `{}`: {e}", self.text, words[0]))
            })
    }
}

/// Reads a command's output lines into an outcome. A line that is not one
/// of the documented objects, output after the end, a missing `done` or a
/// failing exit without an `error`/`refused` line are wire errors; `partial`
/// output (parity hung up) needs no end.
pub fn parse_lines(
    what: &str,
    lines: &[String],
    code: Option<i32>,
    stderr: &str,
    partial: bool,
) -> Result<CommandOutcome, AdapterError> {
    let mut out = CommandOutcome::default();
    let tail = stderr.trim().lines().last().unwrap_or("").to_string();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: CommandLine = serde_json::from_str(line).map_err(|_| {
            AdapterError::Wire(format!(
                "`{what}`: output line {}: not a token, done, refused or error object: {line:.200}",
                i + 1
            ))
        })?;
        if out.finish.is_some() || out.error.is_some() || out.refused.is_some() {
            return Err(AdapterError::Wire(format!(
                "`{what}`: output line {}: more output after the end",
                i + 1
            )));
        }
        match parsed {
            CommandLine::Token { token, logprob } => {
                out.tokens.push(token);
                out.logprobs.push(logprob);
            }
            CommandLine::Done { reason, slot, .. } => {
                out.finish = Some(reason);
                out.slot = slot;
            }
            CommandLine::Refused { refused } => out.refused = Some(refused),
            CommandLine::Error { error } => out.error = Some(error),
        }
    }
    if partial {
        return Ok(out);
    }
    if out.refused.is_some() {
        return match code {
            Some(0) => Err(AdapterError::Wire(format!(
                "`{what}`: printed a refused line but exited 0"
            ))),
            _ => Ok(out),
        };
    }
    match (code, &out.finish, &out.error) {
        (Some(0), Some(_), None) => Ok(out),
        (Some(0), None, None) => Err(AdapterError::Wire(format!(
            "`{what}`: exited 0 without a `done` line (after {} tokens)",
            out.tokens.len()
        ))),
        (Some(0), _, Some(_)) => Err(AdapterError::Wire(format!(
            "`{what}`: printed an error line but exited 0"
        ))),
        (code, _, Some(e)) => {
            out.error = Some(format!(
                "{e} (exit {})",
                code.map_or("by signal".to_string(), |c| c.to_string())
            ));
            Ok(out)
        }
        (code, _, None) => Err(AdapterError::Wire(format!(
            "`{what}`: exit {} without an `error` line{}",
            code.map_or("by signal".to_string(), |c| c.to_string()),
            if tail.is_empty() {
                String::new()
            } else {
                format!("; stderr: {tail}")
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn good_output_is_read() {
        let out = parse_lines(
            "x",
            &lines("{\"token\":3,\"logprob\":-0.5}\n{\"done\":true,\"reason\":\"length\"}"),
            Some(0),
            "",
            false,
        )
        .unwrap();
        assert_eq!(
            (out.tokens, out.finish.as_deref()),
            (vec![3], Some("length"))
        );
    }

    #[test]
    fn an_error_line_with_a_failing_exit_is_the_request_error() {
        let out = parse_lines("x", &lines("{\"error\":\"boom\"}"), Some(3), "", false).unwrap();
        assert_eq!(out.error.as_deref(), Some("boom (exit 3)"));
        let out = parse_lines(
            "x",
            &lines("{\"refused\":\"too long\"}"),
            Some(2),
            "",
            false,
        )
        .unwrap();
        assert_eq!(out.refused.as_deref(), Some("too long"));
    }

    #[test]
    fn bad_output_is_a_wire_error_naming_the_line() {
        let cases = [
            (
                "{\"token\":3,\"logprob\":0}\nnot json",
                Some(0),
                "output line 2",
            ),
            (
                "{\"token\":3,\"logprob\":0}",
                Some(0),
                "without a `done` line",
            ),
            (
                "{\"done\":true,\"reason\":\"length\"}\n{\"token\":1,\"logprob\":0}",
                Some(0),
                "after the end",
            ),
            ("", Some(3), "exit 3 without an `error` line; stderr: boom"),
            ("{\"error\":\"e\"}", Some(0), "exited 0"),
        ];
        for (text, code, want) in cases {
            let e = parse_lines("x", &lines(text), code, "boom", false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn templates_split_like_a_shell() {
        let t = CommandTemplate::parse("srv run --request '{request}'").unwrap();
        assert_eq!(t.words, vec!["srv", "run", "--request", "{request}"]);
        assert!(CommandTemplate::parse("").is_err());
        assert!(CommandTemplate::parse("a 'b").is_err());
    }

    #[test]
    fn a_hanging_command_is_killed_in_time() {
        let dir = tempfile::tempdir().unwrap();
        let t = CommandTemplate::parse("sleep 30").unwrap();
        let req = WireRequest {
            prompt: vec![1],
            audio: None,
            max_tokens: 1,
            stream: false,
            logprobs: None,
            model: None,
        };
        let start = Instant::now();
        let e = t
            .run(&req, dir.path(), Duration::from_millis(200), None)
            .unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
