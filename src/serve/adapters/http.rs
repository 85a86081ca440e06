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
use super::http_answer::{read_answer, refusal, Streamed};
use super::http_io::{read_head, Call, DeadlineStream};
use super::mlx_lm::{self, Api};
use super::wire::WireRequest;
use super::{AdapterError, TOKEN_MARGIN};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
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
    let body = request_body(&call, api, request, options.stream)?;
    let (stream, mut socket) = connect(&call, options.timeout)?;
    call.phase = "sending the request".to_string();
    send(&call, &mut socket, &body, options.stream)?;
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
    if !(200..300).contains(&status) {
        call.phase = format!("reading the HTTP {status} answer");
        return Ok(refusal(api, status, body));
    }
    let limit = request.max_tokens.saturating_add(TOKEN_MARGIN);
    if !options.stream {
        call.phase = "reading the (non-streamed) answer".to_string();
        return read_answer(&call, api, body, length, limit);
    }
    let stream = Streamed {
        stream: &stream,
        hang_up_after: options.hang_up_after,
        limit,
    };
    stream.read(&mut call, api, body)
}

/// The request's JSON body in `api`'s form.
fn request_body(
    call: &Call<'_>,
    api: &Api,
    request: &WireRequest,
    stream: bool,
) -> Result<Vec<u8>, AdapterError> {
    match api {
        Api::OpenAi => {
            let mut body = request.clone();
            body.stream = stream;
            body.logprobs = Some(1);
            serde_json::to_vec(&body).map_err(|e| AdapterError::Wire(e.to_string()))
        }
        // The prompt was checked to round-trip when the request was built.
        Api::MlxLm(t) => {
            mlx_lm::body(t, request, stream).map_err(|e| call.wire(format!("the request: {e}")))
        }
    }
}

/// Connects within `timeout`: the socket (kept to hang up on) and a clone of
/// it under the call's deadline (to talk on).
fn connect(
    call: &Call<'_>,
    timeout: Duration,
) -> Result<(TcpStream, DeadlineStream), AdapterError> {
    let endpoint = call.endpoint;
    let stream = TcpStream::connect_timeout(&endpoint.addr, timeout).map_err(|e| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            call.timed_out()
        } else {
            AdapterError::Wire(format!("{}: cannot connect: {e}", endpoint.url))
        }
    })?;
    let socket = DeadlineStream {
        stream: stream.try_clone().map_err(|e| call.io(&e))?,
        until: call.started + timeout,
    };
    Ok((stream, socket))
}

/// Writes the request's head and `body`.
fn send(
    call: &Call<'_>,
    socket: &mut DeadlineStream,
    body: &[u8],
    stream: bool,
) -> Result<(), AdapterError> {
    let endpoint = call.endpoint;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.addr,
        if stream { "text/event-stream" } else { "application/json" },
        body.len()
    );
    socket
        .write_all(head.as_bytes())
        .and_then(|_| socket.write_all(body))
        .map_err(|e| call.io(&e))
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
