//! A small HTTP/1.1 layer: one request per connection (`Connection: close`),
//! a `Content-Length` body, bounded header and body sizes; plain responses
//! and a server-sent-events stream.

use std::io::{BufRead, Read, Write};

/// Largest request head (request line and headers) read.
pub const MAX_HEAD: usize = 64 * 1024;
/// Largest request body read.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// A parsed request.
#[derive(Debug)]
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target, e.g. `/v1/completions`.
    pub path: String,
    /// The body (empty without `Content-Length`).
    pub body: Vec<u8>,
}

/// Why a request could not be read; the status to answer with.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Malformed or oversized request (400, 411 or 413).
    #[error("{status} {message}")]
    Bad {
        /// HTTP status.
        status: u16,
        /// What is wrong.
        message: String,
    },
    /// The connection failed or closed mid-request (no answer possible).
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
}

fn bad(status: u16, message: impl Into<String>) -> HttpError {
    HttpError::Bad {
        status,
        message: message.into(),
    }
}

/// Reads one request from `r`.
pub fn read_request(r: &mut impl BufRead) -> Result<HttpRequest, HttpError> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = r
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(bad(
                400,
                "the connection closed before the request head ended",
            ));
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(bad(
                431,
                format!("the request head exceeds {MAX_HEAD} bytes"),
            ));
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let text = std::str::from_utf8(&head).map_err(|_| bad(400, "the request head is not UTF-8"))?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (method, path, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(p), Some(v), None) if !m.is_empty() && p.starts_with('/') => (m, p, v),
        _ => return Err(bad(400, format!("malformed request line `{first}`"))),
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad(505, format!("unsupported version `{version}`")));
    }
    let mut length = None;
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad(400, format!("malformed header `{line}`")))?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            let n: usize = value
                .parse()
                .map_err(|_| bad(400, format!("bad Content-Length `{value}`")))?;
            length = Some(n);
        } else if name == "transfer-encoding" {
            return Err(bad(
                411,
                "chunked request bodies are not supported; send Content-Length",
            ));
        }
    }
    let length = match (method, length) {
        ("POST", None) => return Err(bad(411, "a POST needs Content-Length")),
        (_, n) => n.unwrap_or(0),
    };
    if length > MAX_BODY {
        return Err(bad(
            413,
            format!("the body of {length} bytes exceeds {MAX_BODY}"),
        ));
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body)?;
    Ok(HttpRequest {
        method: method.to_string(),
        path: path.to_string(),
        body,
    })
}

/// The reason phrase of a status this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Internal Server Error",
    }
}

/// Writes a whole response with a body and closes the exchange.
pub fn respond(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    )?;
    w.write_all(body)?;
    w.flush()
}

/// Starts a server-sent-events response.
pub fn start_events(w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )?;
    w.flush()
}

/// Writes one `data:` event (a single line of JSON, or `[DONE]`).
pub fn event(w: &mut impl Write, data: &str) -> std::io::Result<()> {
    write!(w, "data: {data}\n\n")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Result<HttpRequest, HttpError> {
        read_request(&mut std::io::BufReader::new(raw.as_bytes()))
    }

    #[test]
    fn reads_a_post_with_a_body() {
        let r = parse("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap();
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.body.as_slice()),
            ("POST", "/v1/completions", &b"{}"[..])
        );
    }

    #[test]
    fn refuses_malformed_requests_with_a_status() {
        let status = |raw: &str| match parse(raw) {
            Err(HttpError::Bad { status, .. }) => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status("POST /v1/completions HTTP/1.1\r\n\r\n"), 411);
        assert_eq!(
            status("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
        assert_eq!(status("GARBAGE\r\n\r\n"), 400);
        assert_eq!(
            status("POST /x HTTP/1.1\r\nContent-Length: nope\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST /x HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n"),
            413
        );
        assert_eq!(status("GET /x HTTP/2\r\n\r\n"), 505);
        assert!(matches!(
            parse("POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}"),
            Err(HttpError::Io(_))
        ));
    }
}
