//! A real headless Chromium driven over the DevTools protocol on
//! `--remote-debugging-pipe` (fd 3: commands in, fd 4: replies and events
//! out, messages separated by NUL), so no port, no WebSocket and no extra
//! crate stand between the test and the browser. Console errors, uncaught
//! exceptions and JavaScript dialogs are collected from the protocol events.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long one protocol command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium binary: `PARITY_CHROMIUM`, else Debian's /usr/bin/chromium.
/// Panics (a test failure, not a skip) when it is missing.
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("PARITY_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "Chromium not found at {} (set PARITY_CHROMIUM, or install Debian's `chromium` \
         package: ci/setup.sh does, `apt-get install -y chromium`). The HTML report is \
         tested in a real browser; this test does not skip.",
        path.display()
    );
    path
}

/// A pipe (read end, write end), both close-on-exec.
fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors that nothing else owns.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: the descriptors are open and owned by nobody else.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

/// A running browser.
pub struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    next_id: u64,
    /// Every event received so far.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

/// A page (tab) of the browser, attached through a flat session.
pub struct Page {
    session: String,
}

impl Browser {
    /// Starts Chromium headless with a fresh profile and no background networking.
    pub fn launch() -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let (cmd_read, cmd_write) = pipe();
        let (evt_read, evt_write) = pipe();
        let (r, w) = (cmd_read.as_raw_fd(), evt_write.as_raw_fd());
        let mut command = Command::new(chromium());
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                "--disable-extensions",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl,
        // dup2) run. The pipe ends are first moved above fd 10 so that
        // placing them on 3 and 4 cannot clobber each other; dup2 clears
        // close-on-exec on the targets.
        unsafe {
            command.pre_exec(move || {
                let a = libc::fcntl(r, libc::F_DUPFD, 10);
                let b = libc::fcntl(w, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("spawn chromium");
        drop(cmd_read);
        drop(evt_write);
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(evt_read);
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        Browser {
            child,
            to_browser: cmd_write,
            from_browser: rx,
            next_id: 1,
            events: Vec::new(),
            _profile: profile,
        }
    }

    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("json");
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("writing to chromium ({method}): {e}"));
        id
    }

    /// Sends a command and waits for its result, keeping events meanwhile.
    /// A JavaScript dialog is recorded and dismissed so the page cannot hang.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.send(session, method, params);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = match self.from_browser.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => panic!("chromium: no reply to {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("chromium exited during {method}"),
            };
            if msg["id"] == json!(id) {
                if let Some(e) = msg.get("error") {
                    panic!("chromium: {method} failed: {e}");
                }
                return msg["result"].clone();
            }
            if msg["method"] == "Page.javascriptDialogOpening" {
                let s = msg["sessionId"].as_str().map(str::to_string);
                self.send(
                    s.as_deref(),
                    "Page.handleJavaScriptDialog",
                    json!({ "accept": true }),
                );
            }
            if msg.get("method").is_some() {
                self.events.push(msg);
            }
        }
    }

    /// Waits until an event named `method` arrives for `page` (or was kept).
    pub fn wait_event(&mut self, page: &Page, method: &str) -> Value {
        let matches = |m: &Value| m["method"] == method && m["sessionId"] == json!(page.session);
        if let Some(e) = self.events.iter().find(|e| matches(e)) {
            return e.clone();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("chromium: waiting for {method}: {e}"));
            let hit = matches(&msg);
            self.events.push(msg.clone());
            if hit {
                return msg;
            }
        }
    }

    /// Opens `file` in a new tab with console, log and page events enabled,
    /// and waits for its load event.
    pub fn open(&mut self, file: &Path) -> Page {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        let page = Page {
            session: attached["sessionId"]
                .as_str()
                .expect("sessionId")
                .to_string(),
        };
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            self.call(Some(&page.session), domain, json!({}));
        }
        self.call(
            Some(&page.session),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false }),
        );
        let url = format!(
            "file://{}",
            file.canonicalize().expect("report path").display()
        );
        self.call(Some(&page.session), "Page.navigate", json!({ "url": url }));
        self.wait_event(&page, "Page.loadEventFired");
        page
    }

    /// Evaluates `expr` in the page and returns its value (JSON).
    pub fn eval(&mut self, page: &Page, expr: &str) -> Value {
        let r = self.call(
            Some(&page.session),
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true }),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("evaluating `{expr}`: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Clicks the centre of the first element matching `selector` with real
    /// mouse events (scrolled into view first).
    pub fn click(&mut self, page: &Page, selector: &str) {
        let sel = serde_json::to_string(selector).expect("json");
        let rect = self.eval(
            page,
            &format!(
                "(() => {{ const e = document.querySelector({sel}); e.scrollIntoView({{block: 'center'}}); \
                 const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ),
        );
        let (x, y) = (rect[0].as_f64().expect("x"), rect[1].as_f64().expect("y"));
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                Some(&page.session),
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// Writes a PNG of the whole page (at most 12000 px tall) to `path`.
    pub fn screenshot(&mut self, page: &Page, path: &Path) {
        let height = self
            .eval(page, "document.documentElement.scrollHeight")
            .as_f64()
            .unwrap_or(1000.0)
            .min(12000.0);
        self.call(
            Some(&page.session),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1400, "height": height as u64, "deviceScaleFactor": 1, "mobile": false }),
        );
        self.eval(page, "window.scrollTo(0, 0)");
        let shot = self.call(
            Some(&page.session),
            "Page.captureScreenshot",
            json!({ "format": "png" }),
        );
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }

    /// Console errors, uncaught exceptions and error log entries of `page`.
    pub fn errors(&self, page: &Page) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["sessionId"] == json!(page.session))
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.consoleAPICalled"
                        if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(format!("console.{}: {}", p["type"], p["args"]))
                    }
                    "Runtime.exceptionThrown" => {
                        Some(format!("exception: {}", p["exceptionDetails"]))
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(format!("log: {}", p["entry"]))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// JavaScript dialogs (alert, confirm, prompt) `page` opened.
    pub fn dialogs(&self, page: &Page) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| {
                e["method"] == "Page.javascriptDialogOpening"
                    && e["sessionId"] == json!(page.session)
            })
            .map(|e| e["params"]["message"].to_string())
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Not `send`: a write error must not panic inside drop.
        let _ = self
            .to_browser
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\",\"params\":{}}\0");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
