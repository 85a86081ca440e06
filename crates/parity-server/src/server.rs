//! The loopback HTTP server: one scheduler thread (one IREE runtime, the
//! [`Batcher`]: continuous batching over the serving module's slots) fed
//! from a bounded queue, and one thread per connection (bounded too) that
//! reads the request, hands it to the scheduler and writes the tokens as they
//! come, step by step. A client that goes away cancels its request: the
//! connection thread sees the closed socket, and the scheduler frees the
//! slot at its next step and admits the next request there.

use crate::artifacts::Artifacts;
use crate::batch::{Batcher, Event, Job};
use crate::error::ServerError;
use crate::http::{self, HttpError};
use crate::model::Model;
use parity::serve::adapters::wire::{
    Choice, Completion, ErrorBody, ErrorDetail, Logprobs, WireRequest,
};
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen: a loopback address only.
    pub bind: SocketAddr,
    /// Slots in use (at most the serving module's S): requests batched together.
    pub slots: u32,
    /// Requests waiting for a slot before new ones get 503.
    pub queue: usize,
    /// Open connections before new ones get 503.
    pub max_connections: usize,
    /// IREE HAL driver.
    pub driver: String,
}

/// Parses `addr` and refuses anything but a loopback address.
pub fn loopback(addr: &str) -> Result<SocketAddr, ServerError> {
    let parsed: SocketAddr = addr.parse().map_err(|e| {
        ServerError::Setup(format!("--bind `{addr}`: {e} (expected e.g. 127.0.0.1:0)"))
    })?;
    let ok = match parsed.ip() {
        IpAddr::V4(ip) => ip.is_loopback(),
        IpAddr::V6(ip) => ip.is_loopback(),
    };
    if !ok {
        return Err(ServerError::Setup(format!(
            "--bind `{addr}`: this test fixture serves loopback only (127.0.0.0/8 or ::1)"
        )));
    }
    Ok(parsed)
}

/// Binds, loads every slot, prints `listening on http://ADDR` on stdout and
/// serves until the process ends.
pub fn serve(art: Arc<Artifacts>, config: &ServerConfig) -> Result<(), ServerError> {
    let listener = TcpListener::bind(config.bind)
        .map_err(|e| ServerError::Setup(format!("cannot listen on {}: {e}", config.bind)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServerError::Setup(format!("listener address: {e}")))?;
    let (jobs, queue) = mpsc::sync_channel::<Job>(config.queue);
    let (ready, loaded) = mpsc::channel();
    let (driver, slots, bound) = (config.driver.clone(), config.slots, config.queue);
    std::thread::spawn(move || {
        let batcher = Model::load(art, &driver).and_then(|model| {
            let caches = model.empty_caches()?;
            Batcher::new(model, slots, caches)
        });
        match batcher {
            Ok(b) => {
                let _ = ready.send(Ok(()));
                schedule(b, &queue, bound);
            }
            Err(e) => {
                let _ = ready.send(Err(e));
            }
        }
    });
    loaded
        .recv()
        .map_err(|_| ServerError::Setup("the scheduler thread died while loading".into()))??;
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    let open = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(AtomicU64::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if open.load(Ordering::SeqCst) >= config.max_connections {
            let _ = answer_error(
                &mut stream,
                &ServerError::Busy(format!("{} connections are open", config.max_connections)),
            );
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (jobs, open, ids) = (jobs.clone(), Arc::clone(&open), Arc::clone(&ids));
        std::thread::spawn(move || {
            let id = format!("cmpl-{}", ids.fetch_add(1, Ordering::SeqCst));
            connection(stream, &jobs, &id);
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(())
}

/// The scheduler loop: takes new requests (blocking only while nothing
/// runs), then runs one step; returns when every sender is gone.
fn schedule(mut batcher: Batcher, queue: &Receiver<Job>, bound: usize) {
    loop {
        if batcher.idle() {
            match queue.recv() {
                Ok(job) => batcher.submit(job),
                Err(_) => return,
            }
        }
        while batcher.waiting() < bound.max(1) {
            match queue.try_recv() {
                Ok(job) => batcher.submit(job),
                Err(_) => break,
            }
        }
        batcher.step();
    }
}

/// Whether the peer closed its side (a read would return end of stream).
fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let closed = match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    closed || stream.set_nonblocking(false).is_err()
}

fn json_error(e: &ServerError) -> Vec<u8> {
    let body = ErrorBody {
        error: ErrorDetail {
            message: e.to_string(),
            kind: e.kind().to_string(),
        },
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

fn answer_error(stream: &mut TcpStream, e: &ServerError) -> std::io::Result<()> {
    http::respond(stream, e.status().0, "application/json", &json_error(e))
}

/// Waits for the next event, cancelling the job when the client goes away.
fn next(events: &Receiver<Event>, stream: &TcpStream, cancel: &AtomicBool) -> Option<Event> {
    loop {
        match events.recv_timeout(Duration::from_millis(20)) {
            Ok(e) => return Some(e),
            Err(RecvTimeoutError::Timeout) if peer_closed(stream) => {
                cancel.store(true, Ordering::SeqCst);
                return None;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

fn chunk(
    id: &str,
    slot: u32,
    tokens: Vec<u32>,
    logprobs: Option<Vec<f32>>,
    finish: Option<&str>,
) -> Completion {
    Completion {
        id: id.to_string(),
        object: "text_completion".to_string(),
        slot: Some(slot),
        choices: vec![Choice {
            index: 0,
            text: String::new(),
            token_ids: tokens,
            logprobs: logprobs.map(|token_logprobs| Logprobs { token_logprobs }),
            finish_reason: finish.map(str::to_string),
        }],
    }
}

fn connection(mut stream: TcpStream, jobs: &SyncSender<Job>, id: &str) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = match stream.try_clone() {
        Ok(s) => http::read_request(&mut BufReader::new(s)),
        Err(e) => Err(HttpError::Io(e)),
    };
    let request = match request {
        Ok(r) => r,
        Err(HttpError::Bad { status, message }) => {
            let body = ErrorBody {
                error: ErrorDetail {
                    message,
                    kind: "invalid_request_error".into(),
                },
            };
            let _ = http::respond(
                &mut stream,
                status,
                "application/json",
                &serde_json::to_vec(&body).unwrap_or_default(),
            );
            return;
        }
        Err(HttpError::Io(_)) => return,
    };
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/health") => {
            let _ = http::respond(&mut stream, 200, "application/json", b"{\"status\":\"ok\"}");
            return;
        }
        ("POST", "/v1/completions") => {}
        (_, "/v1/completions") | (_, "/health") => {
            let _ = http::respond(&mut stream, 405, "text/plain", b"method not allowed\n");
            return;
        }
        _ => {
            let _ = http::respond(
                &mut stream,
                404,
                "text/plain",
                b"not found: this server has POST /v1/completions and GET /health\n",
            );
            return;
        }
    }
    let wire: WireRequest = match serde_json::from_slice(&request.body) {
        Ok(w) => w,
        Err(e) => {
            let _ = answer_error(
                &mut stream,
                &ServerError::Refused(format!("the request body is not a completion request: {e}")),
            );
            return;
        }
    };
    let (stream_mode, logprobs) = (wire.stream, wire.logprobs.is_some_and(|n| n > 0));
    let (events, rx) = mpsc::channel();
    let cancel = Arc::new(AtomicBool::new(false));
    match jobs.try_send(Job {
        request: wire,
        events,
        cancel: Arc::clone(&cancel),
    }) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            let _ = answer_error(
                &mut stream,
                &ServerError::Busy("every slot is busy and the queue is full".into()),
            );
            return;
        }
        Err(TrySendError::Disconnected(_)) => {
            let _ = answer_error(
                &mut stream,
                &ServerError::Execution("no slot is running".into()),
            );
            return;
        }
    }
    let slot = match next(&rx, &stream, &cancel) {
        Some(Event::Admitted(slot)) => slot,
        Some(Event::Failed(e)) => {
            let _ = answer_error(&mut stream, &e);
            return;
        }
        _ => return,
    };
    let mut tokens = Vec::new();
    let mut lps = Vec::new();
    if stream_mode && http::start_events(&mut stream).is_err() {
        cancel.store(true, Ordering::SeqCst);
        return;
    }
    let lp = |v: Vec<f32>| logprobs.then_some(v);
    let end = loop {
        match next(&rx, &stream, &cancel) {
            Some(Event::Token(t, p)) => {
                tokens.push(t);
                lps.push(p);
                if stream_mode {
                    let c = chunk(id, slot, vec![t], lp(vec![p]), None);
                    if http::event(&mut stream, &serde_json::to_string(&c).unwrap_or_default())
                        .is_err()
                    {
                        cancel.store(true, Ordering::SeqCst);
                        break None;
                    }
                }
            }
            Some(Event::Done(f)) => break Some(Ok(f)),
            Some(Event::Failed(e)) => break Some(Err(e)),
            Some(Event::Admitted(_)) => {}
            None => break None,
        }
    };
    eprintln!(
        "parity-fixture-server: {id}: slot {slot}: {} tokens, {}",
        tokens.len(),
        match &end {
            Some(Ok(f)) => f.reason().to_string(),
            Some(Err(e)) => e.to_string(),
            None => "cancelled (client gone)".to_string(),
        }
    );
    let _ = match (end, stream_mode) {
        (None, _) => Ok(()),
        (Some(Ok(f)), true) => {
            let c = chunk(id, slot, Vec::new(), None, Some(f.reason()));
            http::event(&mut stream, &serde_json::to_string(&c).unwrap_or_default())
                .and_then(|_| http::event(&mut stream, "[DONE]"))
        }
        (Some(Ok(f)), false) => {
            let c = chunk(id, slot, tokens, lp(lps), Some(f.reason()));
            http::respond(
                &mut stream,
                200,
                "application/json",
                &serde_json::to_vec(&c).unwrap_or_default(),
            )
        }
        (Some(Err(e)), true) => {
            let text = String::from_utf8(json_error(&e)).unwrap_or_default();
            http::event(&mut stream, &text).and_then(|_| http::event(&mut stream, "[DONE]"))
        }
        (Some(Err(e)), false) => answer_error(&mut stream, &e),
    };
}
