//! The black-box adapters against the real loopback fixture server
//! (crates/parity-server: the subject's production modules on real IREE),
//! started by the tests on ephemeral 127.0.0.1 ports: token-exact output
//! against the oracle's greedy tokens through HTTP (stream and not,
//! concurrent) and through the command template; cancel-by-disconnect
//! leaves the slot's next request correct; the leaking variants are
//! caught. Every loop is bounded in count and time; every address is loopback.

mod common;

use common::fixture_server::{binary, FixtureServer};
use common::repo;
use parity::serve::adapters::command::CommandTemplate;
use parity::serve::adapters::http::{complete, CallOptions, Endpoint, HttpOutcome};
use parity::serve::adapters::request::from_oracle;
use parity::serve::adapters::wire::WireRequest;
use parity_tensor::OracleStore;
use std::time::Duration;

/// Tokens per request: enough to see a leak, few enough to stay fast.
const N: usize = 6;
const TIMEOUT: Duration = Duration::from_secs(60);

fn store() -> OracleStore {
    OracleStore::open(repo().join("oracle-dumps/gemma3n")).expect("oracle store")
}

fn request(case: &str, n: usize) -> WireRequest {
    from_oracle(&store(), case, n, false).expect("wire request")
}

fn oracle_tokens(case: &str, n: usize) -> Vec<u32> {
    let t = store()
        .get(&format!("{case}/lm_tokens"))
        .expect("lm_tokens");
    t.to_f64_vec()
        .into_iter()
        .take(n)
        .map(|v| v as u32)
        .collect()
}

fn call(url: &str, req: &WireRequest, stream: bool, hang_up_after: Option<usize>) -> HttpOutcome {
    let endpoint = Endpoint::parse(url).expect("endpoint");
    complete(
        &endpoint,
        req,
        CallOptions {
            stream,
            hang_up_after,
            timeout: TIMEOUT,
        },
    )
    .expect("completion")
}

/// `cases` streamed at once (one thread each), `n` tokens each.
fn concurrently(url: &str, cases: &[&str], n: usize) -> Vec<HttpOutcome> {
    std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|c| s.spawn(move || call(url, &request(c, n), true, None)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request thread"))
            .collect()
    })
}

#[test]
fn http_streams_oracle_tokens_concurrently_and_stream_equals_non_stream() {
    let server = FixtureServer::start(&["--slots", "2"]);
    let cases = [
        "full128",
        "two_clips",
        "text_short",
        "near_tie",
        "audio_only",
    ];
    let streamed = concurrently(&server.url, &cases, N);
    for (case, out) in cases.iter().zip(&streamed) {
        assert_eq!(
            (out.error.as_deref(), out.refused.as_deref()),
            (None, None),
            "{case}"
        );
        assert_eq!(
            out.tokens,
            oracle_tokens(case, N),
            "{case}: streamed tokens vs the oracle's greedy tokens"
        );
        assert_eq!(out.logprobs.len(), N, "{case}");
        assert!(
            out.logprobs.iter().all(|p| p.is_finite() && *p <= 0.0),
            "{case}: {:?}",
            out.logprobs
        );
        assert_eq!(out.finish.as_deref(), Some("length"));
        let plain = call(&server.url, &request(case, N), false, None);
        assert_eq!(plain.tokens, out.tokens, "{case}: non-stream vs stream");
        assert_eq!(
            plain.logprobs, out.logprobs,
            "{case}: non-stream vs stream logprobs"
        );
    }
}

#[test]
fn a_disconnect_cancels_and_the_slot_serves_the_next_request_correctly() {
    let server = FixtureServer::start(&["--slots", "1"]);
    let cut = call(&server.url, &request("full128", 24), true, Some(2));
    assert!(cut.hung_up);
    assert_eq!(cut.tokens, oracle_tokens("full128", 2));
    // One slot: the next request can only run once the cancelled one freed it.
    let next = call(&server.url, &request("text_short", N), true, None);
    assert_eq!(next.tokens, oracle_tokens("text_short", N));
    let log = server.log.lock().expect("log").join("\n");
    assert!(
        log.contains("cancelled (client gone)"),
        "server log:\n{log}"
    );
}

#[test]
fn refusals_are_http_400_and_the_server_goes_on() {
    let server = FixtureServer::start(&["--slots", "1"]);
    let padded = from_oracle(&store(), "full128", N, true).expect("request");
    let out = call(&server.url, &padded, true, None);
    assert!(
        out.refused
            .as_deref()
            .is_some_and(|m| m.contains("HTTP 400") && m.contains("all padding")),
        "{out:?}"
    );
    let long = request("two_clips", 64);
    let out = call(&server.url, &long, false, None);
    assert!(
        out.refused
            .as_deref()
            .is_some_and(|m| m.contains("context")),
        "{out:?}"
    );
    let ok = call(&server.url, &request("full128", 3), false, None);
    assert_eq!(ok.tokens, oracle_tokens("full128", 3));
}

#[test]
fn the_server_batches_concurrent_requests_and_names_their_slots() {
    let server = FixtureServer::start(&["--slots", "2"]);
    let cases = ["text_short", "near_tie"];
    let outs = concurrently(&server.url, &cases, N);
    let mut slots: Vec<Option<u32>> = outs.iter().map(|o| o.slot).collect();
    for (case, out) in cases.iter().zip(&outs) {
        assert_eq!(out.tokens, oracle_tokens(case, N), "{case}");
    }
    slots.sort();
    // Both requests are admitted at once, one per slot; the log line per
    // request names it too.
    assert_eq!(slots, vec![Some(0), Some(1)], "{outs:?}");
    let log = server.log.lock().expect("log").join("\n");
    assert!(log.contains("slot 0:") && log.contains("slot 1:"), "{log}");
}

#[test]
fn the_leaking_servers_give_wrong_tokens() {
    // kv: one slot, used twice in a row: the second request sees the first's stale rows.
    let server = FixtureServer::start(&["--slots", "1", "--leak", "kv"]);
    let first = call(&server.url, &request("text_short", N), true, None);
    assert_eq!(
        first.tokens,
        oracle_tokens("text_short", N),
        "--leak kv: a fresh slot is still right"
    );
    let second = call(&server.url, &request("near_tie", N), true, None);
    assert_eq!(second.slot, Some(0));
    assert_ne!(
        second.tokens,
        oracle_tokens("near_tie", N),
        "--leak kv: the reused slot must be wrong"
    );
    drop(server);
    // ple: two requests decoding side by side each get the other's dense PLE.
    let server = FixtureServer::start(&["--slots", "2", "--leak", "ple"]);
    let outs = concurrently(&server.url, &["text_short", "near_tie"], N);
    assert!(
        outs[0].tokens != oracle_tokens("text_short", N)
            || outs[1].tokens != oracle_tokens("near_tie", N),
        "--leak ple: batched requests must be wrong: {outs:?}"
    );
}

#[test]
fn the_command_template_gives_the_oracle_tokens() {
    let template = format!(
        "{} run --spec {} --cache-dir {} --request {{request}}",
        binary().display(),
        repo().join("stages.yaml").display(),
        common::cache_dir().display()
    );
    let t = CommandTemplate::parse(&template).expect("template");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = t
        .run(&request("two_clips", N), dir.path(), TIMEOUT, None)
        .expect("run");
    assert_eq!(out.tokens, oracle_tokens("two_clips", N));
    assert_eq!(out.finish.as_deref(), Some("length"));
    let padded = from_oracle(&store(), "two_clips", N, true).expect("request");
    let out = t.run(&padded, dir.path(), TIMEOUT, None).expect("run");
    assert!(
        out.refused
            .as_deref()
            .is_some_and(|m| m.contains("all padding")),
        "{out:?}"
    );
    assert!(out.tokens.is_empty());
}

fn serving_dir() -> std::path::PathBuf {
    repo().join("subject/gemma3n/serving")
}

/// `parity serve SCENARIO <target args>` with a JSON record: (exit code, stdout+stderr, record).
fn parity_serve(scenario: &str, target: &[&str]) -> (i32, String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("serving.json");
    let scenario = serving_dir().join(scenario);
    let mut args = vec![
        "serve",
        scenario.to_str().expect("utf8"),
        "--out-dir",
        dir.path().to_str().expect("utf8"),
    ];
    args.extend_from_slice(target);
    common::parity_with_record(&repo(), &args, &json)
}

fn statuses(record: &serde_json::Value) -> Vec<(String, String)> {
    record["requests"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    (
                        r["id"].as_str().unwrap_or("").to_string(),
                        r["status"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every failed request is named with its slot (the server says `slot 0`,
/// so the message does not say `slot ?`): its tokens differ from the
/// oracle's, or (the one that ran in a fresh slot) its solo run, made after
/// another request in that slot, differs from it.
/// A command parity killed after k tokens (`hung_up`) never prints its
/// `done` line, which is where the CLI names the slot: those may say `slot ?`.
fn assert_named_in_slot_0(failed: &[String], hung_up: &[&str], text: &str) {
    for id in failed {
        let slot = if hung_up.contains(&id.as_str()) {
            "?"
        } else {
            "0"
        };
        assert!(
            text.contains(&format!("oracle_tokens: request `{id}` (slot {slot})"))
                || text.contains(&format!("batch_invariance: request `{id}` (slot {slot})")),
            "{id}: {text}"
        );
    }
}

#[test]
fn parity_serve_judges_the_http_server_and_catches_the_leaking_one() {
    let honest = FixtureServer::start(&["--slots", "2"]);
    let (code, text, record) = parity_serve("mixed-scenario.yaml", &["--target", &honest.url]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(record["target"], "http", "{record}");
    let want: Vec<(String, String)> = ["one_clip", "two_clips", "text", "overflow", "audio_only"]
        .iter()
        .map(|id| (id.to_string(), "pass".to_string()))
        .collect();
    assert_eq!(statuses(&record), want, "{text}");
    assert!(text.contains("refused: HTTP 400"), "{text}");
    drop(honest);
    // One leaking slot: the request that gets the fresh slot is right; the
    // ones placed in the reused slot are caught, by name. (Which request comes
    // first depends on the order two simultaneous arrivals reach the server.)
    let leaking = FixtureServer::start(&["--slots", "1", "--leak", "kv"]);
    let (code, text, record) = parity_serve(
        "text-cancel-reuse-scenario.yaml",
        &["--target", &leaking.url],
    );
    assert_eq!(code, 1, "{text}");
    let failed: Vec<String> = statuses(&record)
        .into_iter()
        .filter(|(_, s)| s == "fail")
        .map(|(id, _)| id)
        .collect();
    assert!(failed.len() >= 2, "{failed:?}\n{text}");
    assert_named_in_slot_0(&failed, &[], &text);
}

#[test]
fn parity_serve_judges_the_command_template() {
    let template = format!(
        "{} run --spec {} --cache-dir {} --request {{request}}",
        binary().display(),
        repo().join("stages.yaml").display(),
        common::cache_dir().display()
    );
    let (code, text, record) =
        parity_serve("mixed-scenario.yaml", &["--target-command", &template]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(record["target"], "command");
    assert!(statuses(&record).iter().all(|(_, s)| s == "pass"), "{text}");
}

#[test]
fn parity_serve_catches_the_leaking_command() {
    // The CLI keeps the slots' caches in a state file between runs; with the
    // KV leak module, a run after another one in slot 0 inherits its rows and length.
    let dir = tempfile::tempdir().expect("tempdir");
    let template = format!(
        "{} run --spec {} --cache-dir {} --leak kv --state {} --request {{request}}",
        binary().display(),
        repo().join("stages.yaml").display(),
        common::cache_dir().display(),
        dir.path().join("slots.safetensors").display()
    );
    let (code, text, record) = parity_serve(
        "text-cancel-reuse-scenario.yaml",
        &["--target-command", &template],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(record["target"], "command");
    let failed: Vec<String> = statuses(&record)
        .into_iter()
        .filter(|(_, s)| s == "fail")
        .map(|(id, _)| id)
        .collect();
    assert!(!failed.is_empty(), "{text}");
    assert_named_in_slot_0(&failed, &["first"], &text);
}

/// A misbehaving server on loopback (a test double: no real server sends
/// these on purpose): answers every connection with `answer`, for `n` connections.
fn bad_server(answer: &'static str, n: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        use std::io::{BufRead, Read, Write};
        for stream in listener.incoming().take(n).flatten() {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut r = std::io::BufReader::new(&stream);
            let mut len = 0usize;
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|k| k > 2) {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let _ = r.by_ref().take(len as u64).read_to_end(&mut Vec::new());
            let _ = (&stream).write_all(answer.as_bytes());
        }
    });
    url
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

#[test]
fn bad_wire_data_is_a_clear_error_with_a_distinct_exit_code() {
    let cases: [(String, i32, &str); 3] = [
        (format!("{SSE_HEAD}data: {{not json\n\n"), 3, "is not a completion chunk"),
        (
            format!("{SSE_HEAD}data: {{\"id\":\"x\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"token_ids\":[13]}}]}}\n\n"),
            3,
            "without `data: [DONE]`",
        ),
        (
            format!("{SSE_HEAD}data: {{\"error\":{{\"message\":\"slot exploded\",\"type\":\"server_error\"}}}}\n\ndata: [DONE]\n\n"),
            3,
            "slot exploded",
        ),
    ];
    for (answer, want, message) in cases {
        let url = bad_server(Box::leak(answer.into_boxed_str()), 16);
        let (code, text, _) = parity_serve("text-cancel-reuse-scenario.yaml", &["--target", &url]);
        assert_eq!(code, want, "{message}: {text}");
        assert!(
            text.contains(message) && text.contains("request `"),
            "{message}: {text}"
        );
        assert!(!text.contains("panicked"), "{text}");
    }
    let (code, text, _) = parity_serve(
        "mixed-scenario.yaml",
        &["--target", "http://192.168.1.1:8080"],
    );
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a loopback address"), "{text}");
}
