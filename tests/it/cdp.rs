//! A small Chrome DevTools Protocol client for the ops-page tests: starts headless Chromium
//! (Debian's `chromium`), opens pages, evaluates JavaScript, clicks and types through real input
//! events, intercepts requests, and captures screenshots.
//!
//! One websocket to the browser; pages are attached in flat mode, so every command and event
//! carries its page's `sessionId`.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// How long a single DevTools command may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where Chromium is: `$CHROMIUM`, else Debian's package.
fn chromium_path() -> PathBuf {
    std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// Where tests leave screenshots: `target/test-artifacts/`.
pub fn artifacts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A DevTools event.
#[derive(Clone, Debug)]
pub struct Event {
    pub session: Option<String>,
    pub method: String,
    pub params: Value,
}

type Reply = Result<Value, String>;

struct Connection {
    outgoing: mpsc::UnboundedSender<String>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    events: broadcast::Sender<Event>,
    next_id: AtomicU64,
}

impl Connection {
    async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Value {
        match self.try_call(session, method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method} failed: {error}"),
        }
    }

    /// [`Connection::call`], with the browser's error returned rather than failing the test.
    async fn try_call(&self, session: Option<&str>, method: &str, params: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id, tx);
        self.outgoing
            .send(message.to_string())
            .expect("the DevTools connection is open");
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => panic!("{method}: the DevTools connection closed"),
            Err(_) => panic!("{method}: no reply within {CALL_TIMEOUT:?}"),
        }
    }
}

/// A headless Chromium, killed (with every process it started) when dropped.
pub struct Browser {
    child: Child,
    connection: Arc<Connection>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium with a fresh profile and connects to it.
    pub async fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let path = chromium_path();
        let mut command = Command::new(&path);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                // Without these Chromium calls Google's hosts, which this machine's closed
                // network refuses, many connections at a time.
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--disable-dev-shm-usage",
                "--mute-audio",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so that dropping the browser ends its renderers too.
            .process_group(0);
        let mut child = command.spawn().unwrap_or_else(|error| {
            panic!(
                "cannot start {} ({error}); install Debian's chromium package \
                 (scripts/test does it) or set CHROMIUM",
                path.display()
            )
        });
        let stderr = child.stderr.take().unwrap();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let (found, devtools_url) = std::sync::mpsc::channel();
        {
            let tail = stderr_tail.clone();
            // Chromium writes a lot to stderr; keep draining it so that it never blocks on a
            // full pipe, and keep the last lines for failure messages.
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("DevTools listening on ") {
                        let _ = found.send(url.trim().to_owned());
                    }
                    let mut tail = tail.lock().unwrap();
                    tail.push_back(line);
                    if tail.len() > 40 {
                        tail.pop_front();
                    }
                }
            });
        }
        let url = match devtools_url.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let tail: Vec<String> = stderr_tail.lock().unwrap().iter().cloned().collect();
                panic!(
                    "Chromium did not print its DevTools address; its stderr:\n{}",
                    tail.join("\n")
                );
            }
        };
        let (socket, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("connect to Chromium's DevTools websocket");
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut to_send) = mpsc::unbounded_channel::<String>();
        let connection = Arc::new(Connection {
            outgoing,
            waiting: Mutex::new(HashMap::new()),
            events: broadcast::channel(8192).0,
            next_id: AtomicU64::new(1),
        });
        tokio::spawn(async move {
            while let Some(text) = to_send.recv().await {
                if sink.send(Message::Text(text)).await.is_err() {
                    break;
                }
            }
        });
        let reader = connection.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = value["id"].as_u64() {
                    let reply = match value.get("error") {
                        Some(error) => Err(error.to_string()),
                        None => Ok(value["result"].clone()),
                    };
                    if let Some(waiter) = reader.waiting.lock().unwrap().remove(&id) {
                        let _ = waiter.send(reply);
                    }
                } else if let Some(method) = value["method"].as_str() {
                    let _ = reader.events.send(Event {
                        session: value["sessionId"].as_str().map(str::to_owned),
                        method: method.to_owned(),
                        params: value["params"].clone(),
                    });
                }
            }
            // Closing the connection fails every call still waiting, instead of a timeout.
            reader.waiting.lock().unwrap().clear();
        });
        Browser {
            child,
            connection,
            stderr_tail,
            _profile: profile,
        }
    }

    /// Opens a new tab, 1280×900.
    pub async fn new_page(&self) -> Page {
        let target = self
            .connection
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let target_id = target["targetId"].as_str().unwrap().to_owned();
        let attached = self
            .connection
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await;
        let page = Page {
            connection: self.connection.clone(),
            session: attached["sessionId"].as_str().unwrap().to_owned(),
            stderr_tail: self.stderr_tail.clone(),
        };
        page.call("Page.enable", json!({})).await;
        page.call("Runtime.enable", json!({})).await;
        page.set_viewport(1280, 900, false).await;
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The browser leads its own process group (see launch): end the whole group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab.
pub struct Page {
    connection: Arc<Connection>,
    session: String,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Page {
    /// Sends a DevTools command to this page.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        self.connection
            .call(Some(&self.session), method, params)
            .await
    }

    /// Events of this page from now on.
    pub fn events(&self) -> PageEvents {
        PageEvents {
            receiver: self.connection.events.subscribe(),
            session: self.session.clone(),
        }
    }

    /// Sets the viewport (CSS pixels).
    pub async fn set_viewport(&self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        )
        .await;
    }

    /// Loads `url` and waits until the document has loaded.
    pub async fn goto(&self, url: &str) {
        let navigated = self.call("Page.navigate", json!({"url": url})).await;
        assert!(
            navigated.get("errorText").is_none(),
            "navigating to {url}: {navigated}"
        );
        self.wait_for("the document to load", "document.readyState === 'complete'")
            .await;
    }

    /// Evaluates `expression` (awaiting a promise) and returns its value as JSON. A thrown
    /// exception fails the test.
    pub async fn eval(&self, expression: &str) -> Value {
        match self.try_eval(expression).await {
            Ok(value) => value,
            Err(error) => panic!("Runtime.evaluate failed: {error}"),
        }
    }

    /// [`Page::eval`] for polling: while the page is between two documents (a form just
    /// submitted, a link followed) the browser refuses to evaluate ("Inspected target navigated
    /// or closed"), which only means "not yet" to a poll, so it reads as `null`. Any other error
    /// still fails the test.
    async fn poll_eval(&self, expression: &str) -> Value {
        match self.try_eval(expression).await {
            Ok(value) => value,
            Err(error) if error.contains("navigated or closed") => Value::Null,
            Err(error) => panic!("Runtime.evaluate failed: {error}"),
        }
    }

    /// [`Page::eval`], with the browser's error (not a thrown exception) returned.
    async fn try_eval(&self, expression: &str) -> Result<Value, String> {
        let result = self
            .connection
            .try_call(
                Some(&self.session),
                "Runtime.evaluate",
                json!({
                    "expression": expression,
                    "awaitPromise": true,
                    "returnByValue": true,
                    "userGesture": true,
                }),
            )
            .await?;
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("JavaScript failed: {expression}\n{exception:#}");
        }
        Ok(result["result"]["value"].clone())
    }

    /// Polls `expression` until it is truthy; returns its value. On timeout, fails with what
    /// the page shows and leaves a screenshot in the artifacts directory.
    pub async fn wait_for(&self, what: &str, expression: &str) -> Value {
        self.wait_for_within(Duration::from_secs(10), what, expression)
            .await
    }

    /// [`Page::wait_for`] with its own time limit.
    pub async fn wait_for_within(&self, within: Duration, what: &str, expression: &str) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let value = self.poll_eval(expression).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("timed out waiting for: {what}")).await;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Fails the test, saying what the page shows and saving a screenshot of it.
    pub async fn fail(&self, why: &str) -> ! {
        let text = self
            .eval("document.body ? document.body.innerText : '(no body)'")
            .await;
        let name = format!(
            "failure-{}.png",
            std::thread::current()
                .name()
                .unwrap_or("test")
                .replace("::", "-")
        );
        let path = artifacts_dir().join(name);
        self.screenshot(&path).await;
        let tail: Vec<String> = self.stderr_tail.lock().unwrap().iter().cloned().collect();
        panic!(
            "{why}\nscreenshot: {}\nthe page shows:\n{}\nChromium's last stderr lines:\n{}",
            path.display(),
            text.as_str().unwrap_or_default(),
            tail.join("\n")
        );
    }

    /// The centre of the element `selector` (scrolled into view), in viewport pixels, or `None`
    /// when it is missing, hidden or disabled.
    async fn centre(&self, selector: &str) -> Option<(f64, f64)> {
        let found = self
            .poll_eval(&format!(
                "(() => {{
                    const el = document.querySelector({selector});
                    if (!el || el.disabled) return null;
                    el.scrollIntoView({{block: 'center', inline: 'center'}});
                    const r = el.getBoundingClientRect();
                    if (r.width === 0 || r.height === 0) return null;
                    const x = r.left + r.width / 2, y = r.top + r.height / 2;
                    // Clicking must reach this element, not something drawn over it.
                    const hit = document.elementFromPoint(x, y);
                    if (!hit || !(hit === el || el.contains(hit) || hit.control === el)) return null;
                    return [x, y];
                }})()",
                selector = json!(selector)
            ))
            .await;
        Some((found.get(0)?.as_f64()?, found.get(1)?.as_f64()?))
    }

    /// Clicks the element `selector` with the mouse, as a person would: it must be visible,
    /// enabled and not covered.
    pub async fn click(&self, selector: &str) {
        let what = format!("{selector} to be clickable");
        let deadline = Instant::now() + Duration::from_secs(10);
        let (x, y) = loop {
            if let Some(point) = self.centre(selector).await {
                break point;
            }
            if Instant::now() >= deadline {
                self.fail(&format!("timed out waiting for {what}")).await;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        };
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
        }
    }

    /// Clicks the text field `selector` and types `text` into it.
    pub async fn type_into(&self, selector: &str, text: &str) {
        self.click(selector).await;
        self.call("Input.insertText", json!({"text": text})).await;
    }

    /// Presses a key (`Tab`, `Enter`, ` `) on whatever has the focus.
    pub async fn press(&self, key: &str) {
        let (code, key_code, text) = match key {
            "Tab" => ("Tab", 9, None),
            "Enter" => ("Enter", 13, Some("\r")),
            " " => ("Space", 32, Some(" ")),
            other => panic!("press: add {other} to the key table"),
        };
        // A key that types something is a keyDown with its text; others are raw key presses.
        let mut down = json!({"type": "rawKeyDown", "key": key, "code": code,
            "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code});
        if let Some(text) = text {
            down["type"] = json!("keyDown");
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await;
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code,
                "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code}),
        )
        .await;
    }

    /// Saves a PNG of the whole page (beyond the viewport) at `path`.
    pub async fn screenshot(&self, path: &Path) {
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await;
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        std::fs::write(path, png).unwrap();
    }
}

/// A page's events.
pub struct PageEvents {
    receiver: broadcast::Receiver<Event>,
    session: String,
}

impl PageEvents {
    /// The next event of this page named `method`.
    pub async fn next(&mut self, method: &str, within: Duration) -> Value {
        self.next_where(method, within, |_| true).await
    }

    /// The next event of this page named `method` whose parameters pass `wanted`.
    pub async fn next_where(
        &mut self,
        method: &str,
        within: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        let found = tokio::time::timeout(within, async {
            loop {
                match self.receiver.recv().await {
                    Ok(event)
                        if event.method == method
                            && event.session.as_deref() == Some(&self.session)
                            && wanted(&event.params) =>
                    {
                        return event.params;
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => {
                        panic!("the DevTools connection closed")
                    }
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no {method} event within {within:?}"))
    }

    /// Every event of this page received so far and not yet taken.
    pub fn drain(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            match self.receiver.try_recv() {
                Ok(event) if event.session.as_deref() == Some(&self.session) => events.push(event),
                Ok(_) => {}
                Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                    panic!("{missed} DevTools events were dropped; raise the buffer")
                }
                Err(_) => return events,
            }
        }
    }
}

/// Standard base64 (screenshots come as such); no crate for twenty lines.
fn base64_decode(text: &str) -> Vec<u8> {
    fn value(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    }
    let bytes: Vec<u8> = text.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= value(*c) << (18 - 6 * i);
        }
        let produced = chunk.len() * 6 / 8;
        out.extend(n.to_be_bytes()[1..1 + produced].iter());
    }
    out
}

#[test]
fn base64_decodes_every_padding() {
    assert_eq!(base64_decode("TWFu"), b"Man");
    assert_eq!(base64_decode("TWE="), b"Ma");
    assert_eq!(base64_decode("TQ=="), b"M");
    assert_eq!(base64_decode(""), b"");
}
