//! The loopback HTTP server: a bounded pool of slots (one thread, one IREE
//! runtime and one model each) fed from a bounded queue, and one thread per
//! connection (bounded too) that reads the request, hands it to a slot and
//! writes the answer. A client that goes away cancels its request: the
//! connection thread sees the closed socket and the slot stops at the next
//! token and takes the next request.

use crate::artifacts::Artifacts;
use crate::error::ServerError;
use crate::http::{self, HttpError};
use crate::leak::Leak;
use crate::model::{Finish, Model};
use parity::serve::adapters::wire::{
    Choice, Completion, ErrorBody, ErrorDetail, Logprobs, WireRequest,
};
use std::io::{BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen: a loopback address only.
    pub bind: SocketAddr,
    /// Concurrent requests (slots, each a thread with its own IREE runtime).
    pub slots: usize,
    /// Requests waiting for a slot before new ones get 503.
    pub queue: usize,
    /// Open connections before new ones get 503.
    pub max_connections: usize,
    /// IREE HAL driver of every slot.
    pub driver: String,
    /// The leaking variant, if any.
    pub leak: Option<Leak>,
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

enum Event {
    Admitted(usize),
    Token(u32, f32),
    Done(Finish),
    Failed(ServerError),
}

struct Job {
    request: WireRequest,
    events: Sender<Event>,
    cancel: Arc<AtomicBool>,
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
    let queue = Arc::new(Mutex::new(queue));
    let (ready, loaded) = mpsc::channel();
    for slot in 0..config.slots.max(1) {
        let (art, queue, ready, driver, leak) = (
            Arc::clone(&art),
            Arc::clone(&queue),
            ready.clone(),
            config.driver.clone(),
            config.leak,
        );
        std::thread::spawn(move || match Model::load(art, &driver, leak) {
            Ok(model) => {
                let _ = ready.send(Ok(()));
                slot_loop(slot, model, &queue);
            }
            Err(e) => {
                let _ = ready.send(Err(e));
            }
        });
    }
    drop(ready);
    for _ in 0..config.slots.max(1) {
        loaded
            .recv()
            .map_err(|_| ServerError::Setup("a slot thread died while loading".into()))??;
    }
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

fn slot_loop(slot: usize, mut model: Model, queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if job.cancel.load(Ordering::SeqCst) {
            continue;
        }
        let plan = match model.admit(&job.request) {
            Ok(p) => p,
            Err(e) => {
                let _ = job.events.send(Event::Failed(e));
                continue;
            }
        };
        let _ = job.events.send(Event::Admitted(slot));
        let cancel = Arc::clone(&job.cancel);
        let events = job.events.clone();
        let outcome = model.run(&plan, &mut |t, lp| {
            !cancel.load(Ordering::SeqCst) && events.send(Event::Token(t, lp)).is_ok()
        });
        let _ = job.events.send(match outcome {
            Ok(f) => Event::Done(f),
            Err(e) => Event::Failed(e),
        });
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
    tokens: Vec<u32>,
    logprobs: Option<Vec<f32>>,
    finish: Option<&str>,
) -> Completion {
    Completion {
        id: id.to_string(),
        object: "text_completion".to_string(),
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
                    let c = chunk(id, vec![t], lp(vec![p]), None);
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
        (None, _) | (Some(Ok(Finish::Cancelled)), _) => Ok(()),
        (Some(Ok(f)), true) => {
            let c = chunk(id, Vec::new(), None, Some(f.reason()));
            http::event(&mut stream, &serde_json::to_string(&c).unwrap_or_default())
                .and_then(|_| http::event(&mut stream, "[DONE]"))
        }
        (Some(Ok(f)), false) => {
            let c = chunk(id, tokens, lp(lps), Some(f.reason()));
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
