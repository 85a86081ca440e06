//! The socket side of the HTTP client: one wall-clock deadline over every
//! read and write ([`DeadlineStream`]), the call's state for its error
//! messages ([`Call`]), and the response's status line and headers.

use super::http::Endpoint;
use super::AdapterError;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The socket under one wall-clock deadline: every read and write is given
/// only the time left, so a byte a second inside a line, or a keep-alive
/// comment every second, cannot stretch the request past its bound.
pub(super) struct DeadlineStream {
    /// The connection.
    pub(super) stream: TcpStream,
    /// When the request's time is up.
    pub(super) until: Instant,
}

impl DeadlineStream {
    /// The time left, or a timeout error when none is.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request's deadline passed",
            ))
        } else {
            Ok(left)
        }
    }
}

/// A socket timeout reads as `WouldBlock` on Linux: both are the deadline.
fn deadline_kind(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    } else {
        e
    }
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf).map_err(deadline_kind)
    }
}

impl Write for DeadlineStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf).map_err(deadline_kind)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// Where a call is, for its error messages: the URL, when it started, its
/// bound and what it was doing.
pub(super) struct Call<'a> {
    /// The endpoint called.
    pub(super) endpoint: &'a Endpoint,
    /// When the call began.
    pub(super) started: Instant,
    /// The call's bound.
    pub(super) timeout: Duration,
    /// What the call is doing now, for messages.
    pub(super) phase: String,
}

impl Call<'_> {
    /// An I/O error of the current phase; a timeout says after how long and where.
    pub(super) fn io(&self, e: &std::io::Error) -> AdapterError {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            self.timed_out()
        } else {
            AdapterError::Wire(format!("{}: {}: {e}", self.endpoint.url, self.phase))
        }
    }

    /// The deadline passed during the current phase.
    pub(super) fn timed_out(&self) -> AdapterError {
        AdapterError::Wire(format!(
            "{}: timed out after {} while {} (one wall-clock deadline of {} per request, whatever arrives; --request-timeout)",
            self.endpoint.url,
            super::seconds(self.started.elapsed()),
            self.phase,
            super::seconds(self.timeout)
        ))
    }

    /// A protocol error, prefixed with the URL.
    pub(super) fn wire(&self, message: impl std::fmt::Display) -> AdapterError {
        AdapterError::Wire(format!("{}: {message}", self.endpoint.url))
    }
}

/// Reads the status line and headers: (status, chunked, content length).
pub(super) fn read_head(
    call: &Call<'_>,
    r: &mut impl BufRead,
) -> Result<(u16, bool, Option<u64>), AdapterError> {
    let bad = |m: String| call.wire(m);
    let mut line = String::new();
    r.by_ref()
        .take(8192)
        .read_line(&mut line)
        .map_err(|e| call.io(&e))?;
    let mut parts = line.split_whitespace();
    let status = match (parts.next(), parts.next()) {
        (Some(v), Some(s)) if v.starts_with("HTTP/1.") => s.parse::<u16>().ok(),
        _ => None,
    }
    .ok_or_else(|| bad(format!("not an HTTP/1.x status line: `{}`", line.trim())))?;
    let (mut chunked, mut length) = (false, None);
    for _ in 0..200 {
        line.clear();
        r.by_ref()
            .take(8192)
            .read_line(&mut line)
            .map_err(|e| call.io(&e))?;
        let l = line.trim_end();
        if l.is_empty() {
            return Ok((status, chunked, length));
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            } else if k == "content-length" {
                length = Some(
                    v.parse()
                        .map_err(|_| bad(format!("bad Content-Length `{v}`")))?,
                );
            }
        }
    }
    Err(bad("more than 200 response headers".into()))
}
