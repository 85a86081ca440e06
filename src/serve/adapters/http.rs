//! The OpenAI-compatible HTTP client: `POST /v1/completions` on a loopback
//! endpoint, streaming (SSE, ending with `data: [DONE]`) or not, with token
//! ids and logprobs; it can hang up after k tokens (the disconnect cancel).
//! Only loopback addresses are contacted.

use super::sse::{SseEvent, SseReader};
use super::wire::{Completion, ErrorBody, WireRequest};
use super::AdapterError;
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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HttpOutcome {
    /// Token ids, in order.
    pub tokens: Vec<u32>,
    /// Their log-probabilities, when the server sent them.
    pub logprobs: Vec<f32>,
    /// The finish reason (`length`, `stop`); None when parity hung up.
    pub finish: Option<String>,
    /// The server refused the request (HTTP 4xx): its message.
    pub refused: Option<String>,
    /// The server failed it (HTTP 5xx, or an error event in the stream): its message.
    pub error: Option<String>,
    /// Parity hung up after this many tokens.
    pub hung_up: bool,
}

/// How to call.
#[derive(Clone, Copy, Debug)]
pub struct CallOptions {
    /// Stream (SSE) or one JSON answer.
    pub stream: bool,
    /// Hang up after this many tokens (streaming only).
    pub hang_up_after: Option<usize>,
    /// The whole call's time bound.
    pub timeout: Duration,
}

fn io(endpoint: &Endpoint, e: std::io::Error) -> AdapterError {
    AdapterError::Wire(format!("{}: {e}", endpoint.url))
}

/// Sends `request` and reads the answer.
pub fn complete(
    endpoint: &Endpoint,
    request: &WireRequest,
    options: CallOptions,
) -> Result<HttpOutcome, AdapterError> {
    let deadline = Instant::now() + options.timeout;
    let mut body = request.clone();
    body.stream = options.stream;
    body.logprobs = Some(1);
    let body = serde_json::to_vec(&body).map_err(|e| AdapterError::Wire(e.to_string()))?;
    let mut stream = TcpStream::connect_timeout(&endpoint.addr, options.timeout)
        .map_err(|e| AdapterError::Wire(format!("{}: cannot connect: {e}", endpoint.url)))?;
    stream
        .set_read_timeout(Some(options.timeout))
        .map_err(|e| io(endpoint, e))?;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.addr,
        if options.stream { "text/event-stream" } else { "application/json" },
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(&body))
        .map_err(|e| io(endpoint, e))?;
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| io(endpoint, e))?);
    let (status, chunked, length) = read_head(endpoint, &mut reader)?;
    let mut body: Box<dyn BufRead> = if chunked {
        Box::new(BufReader::new(Chunked::new(reader)))
    } else if let Some(n) = length {
        Box::new(reader.take(n))
    } else {
        Box::new(reader)
    };
    let mut out = HttpOutcome::default();
    if !(200..300).contains(&status) {
        let mut text = String::new();
        let _ = body.take(1 << 20).read_to_string(&mut text);
        let message = serde_json::from_str::<ErrorBody>(&text)
            .map(|b| b.error.message)
            .unwrap_or_else(|_| text.trim().to_string());
        let message = format!("HTTP {status}: {message}");
        if (400..500).contains(&status) {
            out.refused = Some(message);
        } else {
            out.error = Some(message);
        }
        return Ok(out);
    }
    if !options.stream {
        let mut text = String::new();
        body.read_to_string(&mut text)
            .map_err(|e| io(endpoint, e))?;
        let c: Completion = serde_json::from_str(&text).map_err(|e| {
            AdapterError::Wire(format!(
                "{}: the answer is not a completion object: {e}",
                endpoint.url
            ))
        })?;
        take_choice(endpoint, &c, &mut out)?;
        return Ok(out);
    }
    let mut events = SseReader::new(body);
    let mut n = 0usize;
    loop {
        if Instant::now() > deadline {
            return Err(AdapterError::Wire(format!(
                "{}: no end of stream within {:?}",
                endpoint.url, options.timeout
            )));
        }
        let event = events
            .next_event()
            .map_err(|e| AdapterError::Wire(format!("{}: {e}", endpoint.url)))?;
        n += 1;
        match event {
            None => {
                return Err(AdapterError::Wire(format!(
                    "{}: the stream ended after {} event(s) without `data: [DONE]`",
                    endpoint.url,
                    n - 1
                )))
            }
            Some(SseEvent::Done) => return Ok(out),
            Some(SseEvent::Data(d)) => {
                if let Ok(e) = serde_json::from_str::<ErrorBody>(&d) {
                    out.error = Some(format!("error event {n}: {}", e.error.message));
                    return Ok(out);
                }
                let c: Completion = serde_json::from_str(&d).map_err(|e| {
                    AdapterError::Wire(format!(
                        "{}: event {n} is not a completion chunk: {e}: {d:.200}",
                        endpoint.url
                    ))
                })?;
                take_choice(endpoint, &c, &mut out)?;
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

fn take_choice(
    endpoint: &Endpoint,
    c: &Completion,
    out: &mut HttpOutcome,
) -> Result<(), AdapterError> {
    let choice = c.choices.first().ok_or_else(|| {
        AdapterError::Wire(format!("{}: a completion with no choices", endpoint.url))
    })?;
    out.tokens.extend(&choice.token_ids);
    if let Some(lp) = &choice.logprobs {
        out.logprobs.extend(&lp.token_logprobs);
    }
    if choice.finish_reason.is_some() {
        out.finish.clone_from(&choice.finish_reason);
    }
    Ok(())
}

/// Reads the status line and headers: (status, chunked, content length).
fn read_head(
    endpoint: &Endpoint,
    r: &mut impl BufRead,
) -> Result<(u16, bool, Option<u64>), AdapterError> {
    let bad = |m: String| AdapterError::Wire(format!("{}: {m}", endpoint.url));
    let mut line = String::new();
    r.by_ref()
        .take(8192)
        .read_line(&mut line)
        .map_err(|e| io(endpoint, e))?;
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
            .map_err(|e| io(endpoint, e))?;
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

/// A `Transfer-Encoding: chunked` body as a plain byte stream.
struct Chunked<R> {
    inner: R,
    left: u64,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.by_ref().take(1024).read_line(&mut line)?;
            if line.trim().is_empty() {
                // The CRLF after the previous chunk.
                line.clear();
                self.inner.by_ref().take(1024).read_line(&mut line)?;
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = u64::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(invalid("the chunked body ended mid-chunk"));
        }
        self.left -= n as u64;
        Ok(n)
    }
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

    #[test]
    fn chunked_bodies_are_decoded() {
        let raw = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let mut s = String::new();
        Chunked::new(&raw[..]).read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");
        let mut s = String::new();
        assert!(Chunked::new(&b"zz\r\n"[..]).read_to_string(&mut s).is_err());
    }
}
