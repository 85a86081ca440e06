//! The OpenAI-compatible HTTP client: `POST /v1/completions` on a loopback
//! endpoint, streaming (SSE, ending with `data: [DONE]`) or not, with token
//! ids and logprobs; it can hang up after k tokens (the disconnect cancel).
//! Only loopback addresses are contacted; redirects are not followed.
//!
//! Hand-written over `TcpStream` rather than on an HTTP crate (ureq was
//! weighed): one request per connection, `Connection: close`, and what a
//! crate would add by construction is a few lines here: one wall-clock
//! deadline per request ([`DeadlineStream`] gives every read and write only
//! the time left), a 4 MiB cap on a non-streamed body (as on an SSE line),
//! and a stop after `max_tokens` + [`TOKEN_MARGIN`] tokens; the SSE parsing
//! and the token checks are parity's either way.

use super::chunked::Chunked;
use super::mlx_lm::{self, Api};
use super::sse::{SseError, SseEvent, SseReader};
use super::wire::{Completion, ErrorBody, WireRequest};
use super::{AdapterError, MAX_BODY, TOKEN_MARGIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A loopback `/v1/completions` endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// Host and port.
    pub addr: SocketAddr,
    /// The request path (`/v1/completions`, under any base path the URL gave).
    pub path: String,
    /// The URL as given, for messages.
    pub url: String,
}

impl Endpoint {
    /// Parses `http://HOST:PORT[/base]`; HOST must be a loopback address
    /// (`127.x.y.z`, `[::1]`, `localhost`). The path gets `/v1/completions`
    /// appended unless it already ends so.
    pub fn parse(url: &str) -> Result<Endpoint, AdapterError> {
        let bad = |why: &str| AdapterError::Target(format!("--target `{url}`: {why}"));
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            bad("only http:// URLs are supported (the target must be on loopback)")
        })?;
        let (hostport, base) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = hostport
            .rsplit_once(':')
            .ok_or_else(|| bad("no port (expected http://127.0.0.1:PORT)"))?;
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
        let ip: IpAddr = match host {
            "localhost" => IpAddr::from([127, 0, 0, 1]),
            h => h
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| bad("the host must be a loopback IP address or localhost"))?,
        };
        if !ip.is_loopback() {
            return Err(bad(&format!(
                "{ip} is not a loopback address; parity contacts only 127.0.0.0/8, ::1 and localhost"
            )));
        }
        let base = base.trim_end_matches('/');
        let path = if base.ends_with("/v1/completions") {
            base.to_string()
        } else {
            format!("{base}/v1/completions")
        };
        Ok(Endpoint {
            addr: SocketAddr::new(ip, port),
            path,
            url: url.to_string(),
        })
    }
}

/// What one completion call gave.
pub type HttpOutcome = super::Outcome;

/// How to call.
#[derive(Clone, Copy, Debug)]
pub struct CallOptions {
    /// Stream (SSE) or one JSON answer.
    pub stream: bool,
    /// Hang up after this many tokens (streaming only).
    pub hang_up_after: Option<usize>,
    /// The whole call's time bound: one wall-clock deadline from connect to
    /// the last byte, whatever arrives in between.
    pub timeout: Duration,
}

/// The socket under one wall-clock deadline: every read and write is given
/// only the time left, so a byte a second inside a line, or a keep-alive
/// comment every second, cannot stretch the request past its bound.
struct DeadlineStream {
    stream: TcpStream,
    until: Instant,
}

impl DeadlineStream {
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
struct Call<'a> {
    endpoint: &'a Endpoint,
    started: Instant,
    timeout: Duration,
    phase: String,
}

impl Call<'_> {
    /// An I/O error of the current phase; a timeout says after how long and where.
    fn io(&self, e: &std::io::Error) -> AdapterError {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            self.timed_out()
        } else {
            AdapterError::Wire(format!("{}: {}: {e}", self.endpoint.url, self.phase))
        }
    }

    fn timed_out(&self) -> AdapterError {
        AdapterError::Wire(format!(
            "{}: timed out after {} while {} (one wall-clock deadline of {} per request, whatever arrives; --request-timeout)",
            self.endpoint.url,
            super::seconds(self.started.elapsed()),
            self.phase,
            super::seconds(self.timeout)
        ))
    }

    fn wire(&self, message: impl std::fmt::Display) -> AdapterError {
        AdapterError::Wire(format!("{}: {message}", self.endpoint.url))
    }
}

/// Sends `request` in `api`'s form and reads the answer, all within `options.timeout`.
pub fn complete(
    endpoint: &Endpoint,
    api: &Api,
    request: &WireRequest,
    options: CallOptions,
) -> Result<HttpOutcome, AdapterError> {
    let started = Instant::now();
    let mut call = Call {
        endpoint,
        started,
        timeout: options.timeout,
        phase: "connecting".to_string(),
    };
    let body = match api {
        Api::OpenAi => {
            let mut body = request.clone();
            body.stream = options.stream;
            body.logprobs = Some(1);
            serde_json::to_vec(&body).map_err(|e| AdapterError::Wire(e.to_string()))?
        }
        // The prompt was checked to round-trip when the request was built.
        Api::MlxLm(t) => mlx_lm::body(t, request, options.stream)
            .map_err(|e| call.wire(format!("the request: {e}")))?,
    };
    let stream = TcpStream::connect_timeout(&endpoint.addr, options.timeout).map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            call.timed_out()
        } else {
            AdapterError::Wire(format!("{}: cannot connect: {e}", endpoint.url))
        }
    })?;
    let mut socket = DeadlineStream {
        stream: stream.try_clone().map_err(|e| call.io(&e))?,
        until: started + options.timeout,
    };
    call.phase = "sending the request".to_string();
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.addr,
        if options.stream { "text/event-stream" } else { "application/json" },
        body.len()
    );
    socket
        .write_all(head.as_bytes())
        .and_then(|_| socket.write_all(&body))
        .map_err(|e| call.io(&e))?;
    call.phase = "waiting for the response's status line and headers".to_string();
    let mut reader = BufReader::new(socket);
    let (status, chunked, length) = read_head(&call, &mut reader)?;
    let body: Box<dyn BufRead> = if chunked {
        Box::new(BufReader::new(Chunked::new(reader)))
    } else if let Some(n) = length {
        Box::new(reader.take(n))
    } else {
        Box::new(reader)
    };
    let mut out = HttpOutcome::default();
    if !(200..300).contains(&status) {
        call.phase = format!("reading the HTTP {status} answer");
        let mut text = Vec::new();
        let _ = body.take(1 << 20).read_to_end(&mut text);
        let text = String::from_utf8_lossy(&text);
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error.message)
            .unwrap_or_else(|_| text.trim().to_string());
        let mut message = format!("HTTP {status}: {message}");
        if let (Api::OpenAi, Some(hint)) = (api, mlx_lm::hint(&message)) {
            message = format!("{message} ({hint})");
        }
        if (400..500).contains(&status) {
            out.refused = Some(message);
        } else {
            out.error = Some(message);
        }
        return Ok(out);
    }
    let limit = request.max_tokens.saturating_add(TOKEN_MARGIN);
    if !options.stream {
        call.phase = "reading the (non-streamed) answer".to_string();
        if let Some(n) = length.filter(|&n| n > MAX_BODY as u64) {
            return Err(call.wire(format!(
                "the answer's Content-Length is {n} bytes; parity reads at most {MAX_BODY} (4 MiB)"
            )));
        }
        let mut raw = Vec::new();
        body.take(MAX_BODY as u64 + 1)
            .read_to_end(&mut raw)
            .map_err(|e| call.io(&e))?;
        if raw.len() > MAX_BODY {
            return Err(call.wire(format!(
                "the answer is longer than {MAX_BODY} bytes (4 MiB, the most parity reads); stopped reading"
            )));
        }
        let text = std::str::from_utf8(&raw).map_err(|_| call.wire("the answer is not UTF-8"))?;
        if let Api::MlxLm(t) = api {
            mlx_lm::answer(t, text, &mut out).map_err(|e| call.wire(e))?;
        } else {
            let c: Completion = serde_json::from_str(text)
                .map_err(|e| call.wire(format!("the answer is not a completion object: {e}")))?;
            take_choice(&call, &c, "the answer", &mut out)?;
        }
        if out.tokens.len() > limit {
            out.tokens.truncate(limit);
            out.logprobs.truncate(limit);
            out.token_flood = true;
            out.finish = None;
        }
        return Ok(out);
    }
    let mut events = SseReader::new(body);
    let mut n = 0usize;
    // mlx-lm chunks carry text only: the text so far, tokenized at each chunk.
    let mut streamed_text = String::new();
    loop {
        call.phase = format!(
            "reading event {} of the stream (after {} tokens)",
            n + 1,
            out.tokens.len()
        );
        let event = events.next_event().map_err(|e| match e {
            SseError::Io(e) => call.io(&e),
            e => call.wire(e),
        })?;
        n += 1;
        match event {
            None => {
                return Err(call.wire(format!(
                    "the stream ended after {} event(s) without `data: [DONE]`",
                    n - 1
                )))
            }
            Some(SseEvent::Done) => return Ok(out),
            Some(SseEvent::Data(d)) => {
                if let Ok(e) = serde_json::from_str::<ErrorBody>(&d) {
                    out.error = Some(format!("error event {n}: {}", e.error.message));
                    return Ok(out);
                }
                if let Api::MlxLm(t) = api {
                    mlx_lm::chunk(t, &d, n, &mut streamed_text, &mut out)
                        .map_err(|e| call.wire(e))?;
                } else {
                    let c: Completion = serde_json::from_str(&d).map_err(|e| {
                        call.wire(format!(
                            "event {n} is not a completion chunk: {e}: {d:.200}"
                        ))
                    })?;
                    take_choice(&call, &c, &format!("event {n}"), &mut out)?;
                }
                if out.tokens.len() > limit {
                    // A token flood: stop reading, keep what the checks need.
                    let _ = stream.shutdown(Shutdown::Both);
                    out.tokens.truncate(limit);
                    out.logprobs.truncate(limit);
                    out.token_flood = true;
                    out.finish = None;
                    return Ok(out);
                }
                if options.hang_up_after.is_some_and(|k| out.tokens.len() >= k) {
                    let _ = stream.shutdown(Shutdown::Both);
                    out.hung_up = true;
                    out.finish = None;
                    return Ok(out);
                }
            }
        }
    }
}

/// Takes the one choice of a completion (parity asks for n = 1): exactly
/// one choice, with index 0; its logprobs, when sent, one per token id.
fn take_choice(
    call: &Call<'_>,
    c: &Completion,
    at: &str,
    out: &mut HttpOutcome,
) -> Result<(), AdapterError> {
    let choice = match c.choices.as_slice() {
        [] => return Err(call.wire(format!("{at}: a completion with no choices"))),
        [one] => one,
        more => {
            return Err(call.wire(format!(
                "{at}: {} choices (indices {:?}); parity asks for one (n = 1, index 0)",
                more.len(),
                more.iter().map(|c| c.index).collect::<Vec<_>>()
            )))
        }
    };
    if choice.index != 0 {
        return Err(call.wire(format!(
            "{at}: its only choice has index {}; parity asks for one choice, index 0",
            choice.index
        )));
    }
    if let Some(lp) = &choice.logprobs {
        if lp.token_logprobs.len() != choice.token_ids.len() {
            return Err(call.wire(format!(
                "{at}: {} token ids but {} logprobs",
                choice.token_ids.len(),
                lp.token_logprobs.len()
            )));
        }
        out.logprobs.extend(&lp.token_logprobs);
    }
    out.tokens.extend(&choice.token_ids);
    out.slot = out.slot.or(c.slot);
    if choice.finish_reason.is_some() {
        out.finish.clone_from(&choice.finish_reason);
    }
    Ok(())
}

/// Reads the status line and headers: (status, chunked, content length).
fn read_head(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_accepted() {
        let e = Endpoint::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((e.addr.port(), e.path.as_str()), (8080, "/v1/completions"));
        assert_eq!(
            Endpoint::parse("http://localhost:1/v1/completions")
                .unwrap()
                .path,
            "/v1/completions"
        );
        assert_eq!(
            Endpoint::parse("http://[::1]:9/api/").unwrap().path,
            "/api/v1/completions"
        );
        for bad in [
            "http://10.0.0.1:80",
            "https://127.0.0.1:1",
            "http://example.com:80",
            "http://127.0.0.1",
            "127.0.0.1:80",
        ] {
            let err = Endpoint::parse(bad).unwrap_err();
            assert!(matches!(err, AdapterError::Target(_)), "{bad}: {err}");
        }
        assert!(Endpoint::parse("http://8.8.8.8:53")
            .unwrap_err()
            .to_string()
            .contains("not a loopback address"));
    }

    /// A listener that accepts and never answers (a test double for a hung
    /// server): the call ends at its deadline and says where it was.
    #[test]
    fn a_silent_server_times_out_at_the_deadline_naming_the_event() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let held = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
        let request = WireRequest {
            prompt: vec![1],
            audio: None,
            max_tokens: 1,
            stream: true,
            logprobs: None,
            model: None,
        };
        let options = CallOptions {
            stream: true,
            hang_up_after: None,
            timeout: Duration::from_millis(300),
        };
        let e = complete(
            &Endpoint::parse(&url).unwrap(),
            &Api::OpenAi,
            &request,
            options,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!("{url}: timed out after 0."))
                && e.contains("while waiting for the response's status line and headers")
                && e.contains("one wall-clock deadline of 0.3 s per request"),
            "{e}"
        );
        drop(held.join());
    }
}
