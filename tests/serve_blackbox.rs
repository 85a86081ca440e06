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
use parity::serve::adapters::mlx_lm::Api;
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
        &Api::OpenAi,
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
    let (code, text, record) = parity_serve("mixed-scenario.yaml", &["--server", &honest.url]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(record["target"], "http", "{record}");
    let want: Vec<(String, String)> = ["one_clip", "two_clips", "text", "overflow", "audio_only"]
        .iter()
        .map(|id| (id.to_string(), "pass".to_string()))
        .collect();
    assert_eq!(statuses(&record), want, "{text}");
    assert!(text.contains("refused: HTTP 400"), "{text}");
    // The real server's logprobs are judged against the oracle's and hold.
    let admitted: Vec<&serde_json::Value> = record["requests"]
        .as_array()
        .map(|rs| rs.iter().filter(|r| r["refused"].is_null()).collect())
        .unwrap_or_default();
    assert_eq!(admitted.len(), 4, "{record}");
    for r in admitted {
        let v = r["verdicts"]
            .as_array()
            .and_then(|vs| vs.iter().find(|v| v["check"] == "logprobs"))
            .expect("a logprobs verdict");
        eprintln!("{}: {}", r["id"], v["message"]);
        assert_eq!(v["status"], "pass", "{v}");
        assert_eq!(
            r["logprobs"].as_array().map(Vec::len),
            r["tokens"].as_array().map(Vec::len)
        );
    }
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

// ---------------------------------------------------------------------------
// Misbehaving targets (issue 28). Each is a test double standing in for a
// server or command that misbehaves on purpose (no real one does so on
// demand): a loopback listener scripted per connection, or `sh -c '...'`.
// The scenario is one text request, so an honest double passes (exit 0) and
// each variant differs from it in one thing.

/// The case of the one-request scenarios.
const CASE: &str = "text_short";

/// A one-request scenario (`only`, `max` tokens) in `dir`, on the bundled spec and module.
fn one_request_scenario(dir: &std::path::Path, max: usize) -> std::path::PathBuf {
    let path = dir.join("one-scenario.yaml");
    let text = format!(
        "version: 1\nspec: {}\nmodule: {}\nslots: 2\nrequests:\n  - {{id: only, case: {CASE}, max_new_tokens: {max}, arrive: 0}}\n",
        serving_dir().join("../stages.yaml").display(),
        serving_dir().join("gemma3n_serving_f32.mlir.gz").display()
    );
    std::fs::write(&path, text).expect("write scenario");
    path
}

/// `parity serve` on the one-request scenario with `max` tokens: (exit code, text, record).
fn serve_one(max: usize, target: &[&str]) -> (i32, String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = one_request_scenario(dir.path(), max);
    let json = dir.path().join("serving.json");
    let mut args = vec![
        "serve",
        scenario.to_str().expect("utf8"),
        "--out-dir",
        dir.path().to_str().expect("utf8"),
    ];
    args.extend_from_slice(target);
    common::parity_with_record(&repo(), &args, &json)
}

/// The oracle's natural-log probability of each of its first `n` tokens of `case`
/// (the log-softmax of its logits row at that token), as an honest server sends them.
fn oracle_logprobs(case: &str, n: usize) -> Vec<f32> {
    let logits = store().get(&format!("{case}/logits")).expect("logits");
    let v = logits.shape()[1];
    let rows = logits.to_f64_vec();
    oracle_tokens(case, n)
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            let row = &rows[k * v..(k + 1) * v];
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
            (row[t as usize] - lse) as f32
        })
        .collect()
}

/// One choice of a completion chunk / object.
fn choice(index: u32, tokens: &[u32], logprobs: &[f32], finish: Option<&str>) -> serde_json::Value {
    serde_json::json!({
        "index": index, "text": "", "token_ids": tokens,
        "logprobs": {"token_logprobs": logprobs}, "finish_reason": finish,
    })
}

/// A completion chunk / object with `choices`.
fn completion(choices: Vec<serde_json::Value>) -> String {
    serde_json::json!({"id": "cmpl-x", "object": "text_completion", "choices": choices}).to_string()
}

/// An honest answer of `tokens` (with `logprobs`) and `finish`: an SSE
/// stream, a chunk per token then the finish chunk, or one JSON object.
fn answer(streamed: bool, tokens: &[u32], logprobs: &[f32], finish: &str) -> String {
    if streamed {
        let mut s = SSE_HEAD.to_string();
        for (t, lp) in tokens.iter().zip(logprobs) {
            let c = completion(vec![choice(0, &[*t], &[*lp], None)]);
            s.push_str(&format!("data: {c}\n\n"));
        }
        let c = completion(vec![choice(0, &[], &[], Some(finish))]);
        s.push_str(&format!("data: {c}\n\ndata: [DONE]\n\n"));
        s
    } else {
        json_answer(&completion(vec![choice(0, tokens, logprobs, Some(finish))]))
    }
}

fn json_answer(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A scripted server on loopback (a test double): each connection in its
/// own thread, its request read, then `respond(streamed, socket)` (streamed:
/// the request asked for SSE). Serves at most 32 connections.
fn scripted_server<F>(respond: F) -> String
where
    F: Fn(bool, &mut std::net::TcpStream) + Send + Sync + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let respond = std::sync::Arc::new(respond);
    std::thread::spawn(move || {
        for mut stream in listener.incoming().take(32).flatten() {
            let respond = std::sync::Arc::clone(&respond);
            std::thread::spawn(move || {
                use std::io::{BufRead, Read};
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut r = std::io::BufReader::new(&stream);
                let (mut len, mut line) = (0usize, String::new());
                while r.read_line(&mut line).is_ok_and(|k| k > 2) {
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let mut body = Vec::new();
                let _ = r.by_ref().take(len as u64).read_to_end(&mut body);
                let streamed = String::from_utf8_lossy(&body).contains("\"stream\":true");
                respond(streamed, &mut stream);
            });
        }
    });
    url
}

/// A server that answers every request with `text(streamed)`.
fn answering(text: impl Fn(bool) -> String + Send + Sync + 'static) -> String {
    scripted_server(move |streamed, s| {
        use std::io::Write;
        let _ = s.write_all(text(streamed).as_bytes());
    })
}

fn request_error(record: &serde_json::Value) -> String {
    record["requests"][0]["error"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn verdict_of(record: &serde_json::Value, check: &str) -> serde_json::Value {
    record["requests"][0]["verdicts"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["check"] == check).cloned())
        .unwrap_or(serde_json::Value::Null)
}

#[test]
fn an_honest_double_passes_every_check_logprobs_included() {
    let (tokens, lps) = (oracle_tokens(CASE, 4), oracle_logprobs(CASE, 4));
    let url = answering(move |s| answer(s, &tokens, &lps, "length"));
    let (code, text, record) = serve_one(4, &["--target", &url]);
    assert_eq!(code, 0, "{text}");
    for check in [
        "oracle_tokens",
        "token_count",
        "logprobs",
        "batch_invariance",
    ] {
        assert_eq!(
            verdict_of(&record, check)["status"],
            "pass",
            "{check}: {text}"
        );
    }
    assert_eq!(record["requests"][0]["finish"], "length", "{record}");
    assert_eq!(
        record["requests"][0]["logprobs"].as_array().map(Vec::len),
        Some(4)
    );
}

#[test]
fn a_failing_solo_run_is_an_execution_error_naming_the_request() {
    // The scenario run (streamed) is right; the solo reference run (not streamed) is not.
    let solo_answers = [
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 13\r\nConnection: close\r\n\r\nsolo exploded".to_string(),
        json_answer("<html>not json</html>"),
    ];
    for (solo, want) in solo_answers
        .into_iter()
        .zip(["HTTP 500: solo exploded", "not a completion object"])
    {
        let (tokens, lps) = (oracle_tokens(CASE, 4), oracle_logprobs(CASE, 4));
        let url = answering(move |s| {
            if s {
                answer(true, &tokens, &lps, "length")
            } else {
                solo.clone()
            }
        });
        let (code, text, record) = serve_one(4, &["--target", &url]);
        assert_eq!(code, 3, "{want}: {text}");
        let error = request_error(&record);
        assert!(
            error.contains("request `only` (its solo reference run)") && error.contains(want),
            "{want}: {error}\n{text}"
        );
        assert_eq!(record["requests"][0]["status"], "error", "{record}");
    }
}

#[test]
fn short_long_and_misindexed_http_answers_are_caught() {
    let all = oracle_tokens(CASE, 24);
    let lps = oracle_logprobs(CASE, 24);
    // 1 of 8 tokens with finish `length`; 24 tokens for 8: wrong answers (exit 1).
    for (n, want) in [
        (
            1,
            "finish reason `length` after 1 of max_new_tokens 8 tokens",
        ),
        (24, "24 tokens for max_new_tokens 8"),
    ] {
        let (t, l) = (all[..n].to_vec(), lps[..n].to_vec());
        let url = answering(move |s| answer(s, &t, &l, "length"));
        let (code, text, record) = serve_one(8, &["--target", &url]);
        assert_eq!(code, 1, "{want}: {text}");
        let v = verdict_of(&record, "token_count");
        assert_eq!(v["status"], "fail", "{want}: {text}");
        assert!(v["message"].as_str().unwrap_or("").contains(want), "{v}");
    }
    // A chunk whose only choice has index 1, or two index-0 choices: unreadable (exit 3).
    let (t, l) = (all[..4].to_vec(), lps[..4].to_vec());
    let one = completion(vec![choice(1, &t, &l, Some("length"))]);
    let two = completion(vec![
        choice(0, &t, &l, Some("length")),
        choice(0, &t, &l, Some("length")),
    ]);
    for (body, want) in [(one, "index 1"), (two, "2 choices")] {
        let url = answering(move |s| {
            if s {
                format!("{SSE_HEAD}data: {body}\n\ndata: [DONE]\n\n")
            } else {
                json_answer(&body)
            }
        });
        let (code, text, record) = serve_one(4, &["--target", &url]);
        assert_eq!(code, 3, "{want}: {text}");
        assert!(request_error(&record).contains(want), "{want}: {text}");
    }
}

/// A command that prints `lines` (JSON lines) and exits 0, through `sh -c`.
fn printing_command(lines: &[String]) -> String {
    let script = lines
        .iter()
        .map(|l| format!("echo '{l}'"))
        .collect::<Vec<_>>()
        .join("; ");
    format!("sh -c \"{}\"", script.replace('"', "\\\""))
}

fn token_lines(tokens: &[u32], logprobs: &[f32], finish: &str) -> Vec<String> {
    let mut lines: Vec<String> = tokens
        .iter()
        .zip(logprobs)
        .map(|(t, lp)| format!("{{\"token\": {t}, \"logprob\": {lp}}}"))
        .collect();
    lines.push(format!("{{\"done\": true, \"reason\": \"{finish}\"}}"));
    lines
}

#[test]
fn short_and_long_command_answers_are_caught() {
    let all = oracle_tokens(CASE, 24);
    let lps = oracle_logprobs(CASE, 24);
    let honest = printing_command(&token_lines(&all[..8], &lps[..8], "length"));
    let (code, text, _) = serve_one(8, &["--target-command", &honest]);
    assert_eq!(code, 0, "{text}");
    for (n, want) in [
        (
            1,
            "finish reason `length` after 1 of max_new_tokens 8 tokens",
        ),
        (24, "24 tokens for max_new_tokens 8"),
    ] {
        let cmd = printing_command(&token_lines(&all[..n], &lps[..n], "length"));
        let (code, text, record) = serve_one(8, &["--target-command", &cmd]);
        assert_eq!(code, 1, "{want}: {text}");
        let v = verdict_of(&record, "token_count");
        assert!(
            v["message"].as_str().unwrap_or("").contains(want),
            "{v}\n{text}"
        );
    }
}

#[test]
fn a_command_token_flood_is_cut_at_the_margin() {
    let line = token_lines(&oracle_tokens(CASE, 1), &oracle_logprobs(CASE, 1), "length")[0]
        .replace('"', "\\\"");
    let cmd = format!("sh -c \"while :; do echo '{line}'; done\"");
    let (code, text, record) = serve_one(4, &["--target-command", &cmd]);
    assert_eq!(code, 1, "{text}");
    let v = verdict_of(&record, "token_count");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("parity stopped reading after 20 (a token flood)"),
        "{v}"
    );
}

#[test]
fn logprobs_far_from_the_oracles_fail() {
    let tokens = oracle_tokens(CASE, 4);
    for (shift, want) in [
        (-1.0f32, "the oracle's log-softmax gives"),
        (7.5, "not a log-probability"),
    ] {
        let lps: Vec<f32> = oracle_logprobs(CASE, 4)
            .iter()
            .enumerate()
            .map(|(k, &lp)| {
                if k == 2 {
                    if shift > 0.0 {
                        shift
                    } else {
                        lp + shift
                    }
                } else {
                    lp
                }
            })
            .collect();
        let t = tokens.clone();
        let url = answering(move |s| answer(s, &t, &lps, "length"));
        let (code, text, record) = serve_one(4, &["--target", &url]);
        assert_eq!(code, 1, "{want}: {text}");
        let v = verdict_of(&record, "logprobs");
        let m = v["message"].as_str().unwrap_or("");
        assert!(m.contains(want) && m.contains("token 2"), "{v}");
    }
}

/// Writes `chunks` one by one, `pause` apart, until the client goes (at most `n`).
fn trickle(s: &mut std::net::TcpStream, head: &str, chunk: &str, pause: Duration, n: usize) {
    use std::io::Write;
    if s.write_all(head.as_bytes()).is_err() {
        return;
    }
    for _ in 0..n {
        std::thread::sleep(pause);
        if s.write_all(chunk.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn slow_chatty_and_silent_servers_end_at_one_deadline_with_a_clear_message() {
    let pause = Duration::from_millis(200);
    // A keep-alive comment every 200 ms, a byte every 200 ms inside a data
    // line, and a server that reads the request and never answers: each for
    // up to 30 s, against a 1 s deadline per request.
    type Script = fn(&mut std::net::TcpStream, Duration);
    let scripts: [(Script, &str); 3] = [
        (
            |s, p| {
                trickle(
                    s,
                    &format!("{SSE_HEAD}: hi\n\n"),
                    ": keep-alive\n\n",
                    p,
                    150,
                )
            },
            "while reading event 1 of the stream (after 0 tokens)",
        ),
        (
            |s, p| trickle(s, &format!("{SSE_HEAD}data: {{\"id\""), " ", p, 150),
            "while reading event 1 of the stream (after 0 tokens)",
        ),
        (
            |_, _| std::thread::sleep(Duration::from_secs(30)),
            "while waiting for the response's status line and headers",
        ),
    ];
    for (script, want) in scripts {
        let url = scripted_server(move |streamed, s| {
            if streamed {
                script(s, pause)
            } else {
                std::thread::sleep(Duration::from_secs(30))
            }
        });
        let (code, text, record) = serve_one(4, &["--target", &url, "--request-timeout", "1"]);
        assert_eq!(code, 3, "{want}: {text}");
        let error = request_error(&record);
        assert!(
            error.contains("request `only`: wire: ")
                && error.contains("timed out after 1.")
                && error.contains(want)
                && error.contains("one wall-clock deadline of 1.0 s per request"),
            "{want}: {error}"
        );
    }
}

#[test]
fn token_floods_and_huge_bodies_are_cut() {
    // A streamed flood: one token per event, without end, until the client goes.
    let tokens = oracle_tokens(CASE, 4);
    let lps = oracle_logprobs(CASE, 4);
    let (t, l) = (tokens.clone(), lps.clone());
    let url = scripted_server(move |streamed, s| {
        use std::io::Write;
        if !streamed {
            let _ = s.write_all(answer(false, &t, &l, "length").as_bytes());
            return;
        }
        let chunk = format!(
            "data: {}\n\n",
            completion(vec![choice(0, &t[..1], &l[..1], None)])
        );
        let _ = s.write_all(SSE_HEAD.as_bytes());
        for _ in 0..1_000_000 {
            if s.write_all(chunk.as_bytes()).is_err() {
                return;
            }
        }
    });
    let (code, text, record) = serve_one(4, &["--target", &url]);
    assert_eq!(code, 1, "{text}");
    let v = verdict_of(&record, "token_count");
    assert!(
        v["message"].as_str().unwrap_or("").contains("more than 20 tokens for max_new_tokens 4: parity stopped reading after 20 (a token flood)"),
        "{v}"
    );
    assert_eq!(
        record["requests"][0]["tokens"].as_array().map(Vec::len),
        Some(20)
    );
    // A non-streamed answer over 4 MiB (the solo run): an execution error, read no further.
    let (t, l) = (tokens.clone(), lps.clone());
    let url = answering(move |s| {
        if s {
            answer(true, &t, &l, "length")
        } else {
            json_answer(&format!("{{\"pad\": \"{}\"}}", "x".repeat(5 << 20)))
        }
    });
    let (code, text, record) = serve_one(4, &["--target", &url]);
    assert_eq!(code, 3, "{text}");
    let error = request_error(&record);
    assert!(
        error.contains("(its solo reference run)")
            && error.contains("Content-Length is")
            && error.contains("parity reads at most 4194304"),
        "{error}"
    );
}

#[test]
fn a_command_past_its_deadline_is_killed_with_its_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("pids");
    let cmd = format!("sh -c 'sleep 300 & echo $! >> {}; wait'", pids.display());
    let (code, text, record) = serve_one(4, &["--target-command", &cmd, "--request-timeout", "1"]);
    assert_eq!(code, 3, "{text}");
    let error = request_error(&record);
    assert!(
        error.contains("timed out after 1.") && error.contains("its process group was killed"),
        "{error}"
    );
    let started = std::fs::read_to_string(&pids).expect("pids");
    assert!(!started.trim().is_empty());
    for pid in started.split_whitespace() {
        // Killed: gone, or a zombie until its new parent reaps it.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        assert!(
            stat.is_empty() || state == Some("Z"),
            "sleep {pid} still runs: {stat}"
        );
    }
}
