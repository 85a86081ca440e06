//! `parity serve` against a server nobody here wrote: the real
//! `python -m mlx_lm.server` (mlx-lm 0.32.2, tools/fixtures/.venv) serving
//! the tiny Llama model of examples/mlx-lm on a 127.0.0.1 port, judged
//! against mlx-lm's own greedy oracle (docs/serving-blackbox.md,
//! "mlx_lm.server"). The server is killed by a guard, even when a test fails.

mod common;

use common::{parity, repo};
use parity::serve::adapters::http::{complete, CallOptions, Endpoint, HttpOutcome};
use parity::serve::adapters::mlx_lm::Api;
use parity::serve::adapters::request::from_oracle;
use parity::serve::adapters::tokenizer::WordLevel;
use parity_tensor::OracleStore;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

fn example() -> PathBuf {
    repo().join("examples/mlx-lm")
}

/// The running `mlx_lm.server`; dropping it kills the process (by its id) and reaps it.
struct MlxLmServer {
    child: Child,
    url: String,
}

impl Drop for MlxLmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl MlxLmServer {
    /// Starts the server on `model` and waits (at most 60 s) for `/health`.
    fn start(model: &Path) -> MlxLmServer {
        let python = repo().join("tools/fixtures/.venv/bin/python");
        assert!(
            python.exists(),
            "{} missing: make -C tools/fixtures venv",
            python.display()
        );
        // A free port: bound, read, released (the server binds it right after).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new(python)
            .args(["-m", "mlx_lm.server", "--model"])
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn python -m mlx_lm.server");
        let server = MlxLmServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while !server.healthy() {
            assert!(
                started.elapsed() < TIMEOUT,
                "mlx_lm.server did not answer /health within {TIMEOUT:?} (is mlx-lm==0.32.2 installed in tools/fixtures/.venv?)"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let Ok(mut s) = std::net::TcpStream::connect(addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.contains("\"ok\"")
    }
}

fn store() -> OracleStore {
    OracleStore::open(example().join("oracle")).expect("oracle store")
}

fn ints(store: &OracleStore, name: &str) -> Vec<i64> {
    let t = store.get(name).expect(name);
    t.to_f64_vec().into_iter().map(|v| v as i64).collect()
}

/// `parity serve SCENARIO --target URL [extra]`: (exit code, stderr, serving.json).
fn serve(scenario: &Path, url: Option<&str>, extra: &[&str]) -> (i32, String, Value) {
    let out = tempfile::tempdir().expect("tempdir");
    let mut args = vec![
        "serve".to_string(),
        scenario.display().to_string(),
        "--out-dir".into(),
        out.path().display().to_string(),
        "--request-timeout".into(),
        "60".into(),
    ];
    if let Some(u) = url {
        args.extend(["--target".to_string(), u.to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = parity(&repo(), &args);
    let record = std::fs::read_to_string(out.path().join("serving.json")).expect("serving.json");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        serde_json::from_str(&record).expect("serving.json is JSON"),
    )
}

fn request<'a>(record: &'a Value, id: &str) -> &'a Value {
    record["requests"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["id"] == id))
        .unwrap_or_else(|| panic!("request {id} in {record}"))
}

fn verdict<'a>(r: &'a Value, check: &str) -> &'a Value {
    r["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|x| x["check"] == check))
        .unwrap_or_else(|| panic!("verdict {check} in {r}"))
}

fn u32s(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_i64().expect("int"))
        .collect()
}

fn call(url: &str, case: &str, stream: bool) -> HttpOutcome {
    let tokenizer = WordLevel::load(&example().join("model/tokenizer.json")).expect("tokenizer");
    let req = from_oracle(&store(), case, 12, false).expect("wire request");
    complete(
        &Endpoint::parse(url).expect("url"),
        &Api::MlxLm(tokenizer),
        &req,
        CallOptions {
            stream,
            hang_up_after: None,
            timeout: TIMEOUT,
        },
    )
    .expect("completion")
}

fn log_softmax(row: &[f64], k: usize) -> f64 {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = row.iter().map(|x| (x - max).exp()).sum();
    row[k] - max - sum.ln()
}

#[test]
fn mlx_lm_server_gives_the_oracle_tokens_streamed_and_not_and_parity_judges_it() {
    let server = MlxLmServer::start(&example().join("model"));
    let store = store();

    // The wire, case by case: non-streamed answers carry ids and logprobs,
    // streamed chunks text only (parity tokenizes it; no logprobs).
    for case in ["short", "medium", "long"] {
        let oracle = ints(&store, &format!("{case}/tokens"));
        let whole = call(&server.url, case, false);
        let streamed = call(&server.url, case, true);
        let ids = |o: &HttpOutcome| o.tokens.iter().map(|&t| i64::from(t)).collect::<Vec<_>>();
        assert_eq!(ids(&whole), oracle, "{case}: non-streamed ids");
        assert_eq!(ids(&streamed), oracle, "{case}: streamed text, tokenized");
        assert_eq!(whole.finish.as_deref(), Some("length"));
        assert_eq!(streamed.finish.as_deref(), Some("length"));
        assert!(
            streamed.logprobs.is_empty(),
            "{case}: streamed chunks carry no logprobs"
        );
        let logits = store.get(&format!("{case}/logits")).expect("logits");
        let v = logits.shape()[1];
        let rows: Vec<f64> = logits.to_f64_vec();
        assert_eq!(whole.logprobs.len(), 12);
        for (k, &lp) in whole.logprobs.iter().enumerate() {
            let want = log_softmax(&rows[k * v..(k + 1) * v], oracle[k] as usize);
            assert!(
                (f64::from(lp) - want).abs() < 1e-4,
                "{case} token {k}: logprob {lp}, oracle {want}"
            );
        }
    }

    // parity serve, two requests at a time, one cancelled by hanging up.
    let scenario = example().join("scenario.yaml");
    let (code, stderr, record) = serve(&scenario, Some(&server.url), &["--target-api", "mlx-lm"]);
    assert_eq!(code, 0, "{stderr}\n{record:#}");
    if std::env::var_os("PARITY_SHOW_RECORD").is_some() {
        eprintln!("{record:#}");
    }
    assert_eq!(record["target"], "http");
    for (id, case) in [("short", "short"), ("medium", "medium"), ("long", "long")] {
        let r = request(&record, id);
        let oracle = ints(&store, &format!("{case}/tokens"));
        assert_eq!(u32s(&r["tokens"]), oracle, "{id}: streamed in the scenario");
        assert_eq!(u32s(&r["solo_tokens"]), oracle, "{id}: alone, not streamed");
        assert_eq!(u32s(&r["oracle_tokens"]), oracle);
        assert_eq!(verdict(r, "oracle_tokens")["status"], "pass");
        let inv = verdict(r, "batch_invariance");
        assert_eq!(inv["status"], "pass", "{inv}");
        assert!(inv["message"]
            .as_str()
            .unwrap()
            .starts_with("12 tokens equal the solo run's"));
        // The streamed run has no logprobs: the solo run's are judged, and say so.
        let lp = verdict(r, "logprobs");
        assert_eq!(lp["status"], "pass", "{lp}");
        assert!(
            lp["message"].as_str().unwrap().starts_with(
                "the solo run's (the scenario run sent none): 12 logprobs within 0.05"
            ),
            "{lp}"
        );
        assert!(r["logprobs"].as_array().is_none_or(Vec::is_empty), "{r}");
        // The server names no slot.
        assert!(r["slot"].is_null());
    }
    let cut = request(&record, "cut");
    assert_eq!(
        u32s(&cut["tokens"]),
        ints(&store, "medium/tokens")[..4].to_vec()
    );
    assert_eq!(cut["status"], "pass");

    // Parity's default (OpenAI-style) request: refused by the server, with the hint.
    let (code, _, record) = serve(&scenario, Some(&server.url), &[]);
    assert_eq!(code, 1);
    let adm = verdict(request(&record, "short"), "admission");
    let msg = adm["message"].as_str().unwrap();
    assert!(
        adm["status"] == "fail"
            && msg.contains("HTTP 4")
            && msg.contains("must be of type")
            && msg.contains("--target-api mlx-lm"),
        "{adm}"
    );
    drop(server);
}

#[test]
fn a_server_on_other_weights_fails_at_the_first_differing_token() {
    // The same model with another RoPE base: every prompt position moves.
    let dir = tempfile::tempdir().expect("tempdir");
    common::copy_dir(&example().join("model"), dir.path());
    let config = dir.path().join("config.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    c["rope_theta"] = serde_json::json!(3.0);
    std::fs::write(&config, c.to_string()).unwrap();
    let server = MlxLmServer::start(dir.path());
    let (code, stderr, record) = serve(
        &example().join("scenario.yaml"),
        Some(&server.url),
        &["--target-api", "mlx-lm"],
    );
    assert_eq!(code, 1, "{stderr}");
    let failed: Vec<&Value> = record["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| verdict(r, "oracle_tokens")["status"] == "fail")
        .collect();
    assert!(!failed.is_empty(), "{record:#}");
    for r in failed {
        let tokens = u32s(&r["tokens"]);
        let oracle = u32s(&r["oracle_tokens"]);
        let k = (0..tokens.len()).find(|&k| tokens[k] != oracle[k]).unwrap();
        let msg = verdict(r, "oracle_tokens")["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            msg.contains(&format!(
                "token {k} at step ? is {}, the oracle's is {}",
                tokens[k], oracle[k]
            )),
            "{msg}"
        );
    }
    drop(server);
}

/// Writes a copy of the scenario whose tokenizer is `tokenizer` (JSON text).
fn scenario_with_tokenizer(dir: &Path, tokenizer: &str) -> PathBuf {
    std::fs::write(dir.join("tokenizer.json"), tokenizer).unwrap();
    let text = std::fs::read_to_string(example().join("scenario.yaml"))
        .unwrap()
        .replace(
            "oracle: oracle",
            &format!("oracle: {}", example().join("oracle").display()),
        )
        .replace(
            "tokenizer: model/tokenizer.json",
            "tokenizer: tokenizer.json",
        );
    let path = dir.join("s-scenario.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn prompts_that_do_not_round_trip_and_other_tokenizers_are_exit_2_before_any_request() {
    // No server: parity refuses before it sends anything (the port is never contacted).
    let url = "http://127.0.0.1:9";
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(example().join("model/tokenizer.json")).unwrap();
    // Word 17 (id 21, in the `short` prompt) spelled with a space: its text is two words.
    let spaced = original.replace("\"w17\": 21", "\"w17 x\": 21");
    assert_ne!(spaced, original);
    let (code, _, record) = serve(
        &scenario_with_tokenizer(dir.path(), &spaced),
        Some(url),
        &["--target-api", "mlx-lm"],
    );
    assert_eq!(code, 2, "{record:#}");
    let e = record["errors"][0]["message"].as_str().unwrap();
    assert!(
        e.contains("request `short`")
            && e.contains("case `short`")
            && e.contains("tokenizes back to")
            && e.contains("tokenizer.json"),
        "{e}"
    );

    let bpe = r#"{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"}}"#;
    let path = scenario_with_tokenizer(dir.path(), bpe);
    let (code, _, record) = serve(&path, Some(url), &["--target-api", "mlx-lm"]);
    assert_eq!(code, 2);
    let e = record["errors"][0]["message"].as_str().unwrap();
    assert!(
        e.contains(&dir.path().join("tokenizer.json").display().to_string())
            && e.contains("model type `BPE`"),
        "{e}"
    );

    // An oracle-only scenario cannot run in-process.
    let (code, _, record) = serve(&example().join("scenario.yaml"), None, &[]);
    assert_eq!(code, 2);
    let e = record["errors"][0]["message"].as_str().unwrap();
    assert!(
        e.contains("oracle-only scenario") && e.contains("--target URL"),
        "{e}"
    );
}
