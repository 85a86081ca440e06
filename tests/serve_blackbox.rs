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

#[test]
fn http_streams_oracle_tokens_concurrently_and_stream_equals_non_stream() {
    let server = FixtureServer::start(&["--slots", "2"]);
    let cases = ["full128", "two_clips", "text_short", "near_tie"];
    let streamed: Vec<HttpOutcome> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|c| {
                let url = server.url.clone();
                s.spawn(move || call(&url, &request(c, N), true, None))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request thread"))
            .collect()
    });
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
fn the_leaking_servers_give_a_reused_slot_wrong_tokens() {
    for leak in ["ple", "kv"] {
        let server = FixtureServer::start(&["--slots", "1", "--leak", leak]);
        let first = call(&server.url, &request("text_short", N), true, None);
        assert_eq!(
            first.tokens,
            oracle_tokens("text_short", N),
            "--leak {leak}: a fresh slot is still right"
        );
        let second = call(&server.url, &request("near_tie", N), true, None);
        assert_ne!(
            second.tokens,
            oracle_tokens("near_tie", N),
            "--leak {leak}: the reused slot must be wrong"
        );
    }
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
