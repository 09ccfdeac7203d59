//! Test support: a real redis-server per test, a recording fake channel, spawning the binary.

#![allow(dead_code)]

use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::store::redis::{RedisOptions, RedisStore};
use askbridge::store::{Store, StoreOptions};
use askbridge::{BridgeBuilder, BridgeOptions, Flows};
use askbridge_core::{Channel, Error as ModelError, Question, Target};
use async_trait::async_trait;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::redis_server::{RedisServer, free_port};

/// A Redis store on its own server, with the server kept alive beside it.
pub struct RedisFixture {
    pub server: RedisServer,
    pub store: Arc<RedisStore>,
}

pub async fn redis_store_with(options: StoreOptions) -> RedisFixture {
    let server = RedisServer::start();
    let store = redis_store_on(&server, options).await;
    RedisFixture {
        server,
        store: Arc::new(store),
    }
}

/// Another store on `server` (a second process's, say), under the usual prefix.
pub async fn redis_store_on(server: &RedisServer, options: StoreOptions) -> RedisStore {
    RedisStore::connect(RedisOptions {
        url: server.url(),
        cluster: false,
        replica_wait: askbridge::store::redis::DEFAULT_REPLICA_WAIT,
        events_gather: askbridge::store::redis::DEFAULT_EVENTS_GATHER,
        prefix: "askbridge".into(),
        store: options,
    })
    .await
    .expect("connect to redis")
}

/// A store on the Redis Cluster whose nodes are `urls`, under `prefix`.
pub async fn redis_cluster_store(
    urls: &[String],
    prefix: String,
    options: StoreOptions,
) -> RedisStore {
    RedisStore::connect(RedisOptions {
        url: urls.join(","),
        cluster: true,
        replica_wait: askbridge::store::redis::DEFAULT_REPLICA_WAIT,
        events_gather: askbridge::store::redis::DEFAULT_EVENTS_GATHER,
        prefix,
        store: options,
    })
    .await
    .expect("connect to the redis cluster")
}

pub async fn redis_store() -> RedisFixture {
    redis_store_with(StoreOptions::default()).await
}

/// What a [`FakeChannel`] was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Show {
        id: String,
        target: String,
    },
    Withdraw {
        id: String,
        target: String,
        reference: String,
        outcome: String,
    },
    Say {
        target: String,
        text: String,
    },
}

/// A channel that records calls, and can be told to fail like a platform outage.
#[derive(Default)]
pub struct FakeChannel {
    pub surface: String,
    pub calls: Mutex<Vec<Call>>,
    pub down: AtomicBool,
    shown: AtomicUsize,
    /// Shows to this target wait while it is set, as a slow platform's would.
    pub show_held_on: Mutex<Option<String>>,
    /// Withdrawals wait while it is set.
    pub withdrawals_held: AtomicBool,
}

impl FakeChannel {
    pub fn new(surface: &str) -> Arc<Self> {
        Arc::new(FakeChannel {
            surface: surface.into(),
            ..FakeChannel::default()
        })
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub fn withdrawn(&self, id: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| matches!(c, Call::Withdraw { id: i, .. } if i == id))
            .collect()
    }

    pub fn shows(&self, id: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| matches!(c, Call::Show { id: i, .. } if i == id))
            .count()
    }
}

#[async_trait]
impl Channel for FakeChannel {
    fn surface(&self) -> &str {
        &self.surface
    }

    async fn show(&self, question: &Question, target: &Target) -> Result<String, ModelError> {
        while self.show_held_on.lock().unwrap().as_deref() == Some(target.as_str()) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(ModelError::retryable(&self.surface, "platform down"));
        }
        self.calls.lock().unwrap().push(Call::Show {
            id: question.id.to_string(),
            target: target.to_string(),
        });
        Ok(format!("msg-{}", self.shown.fetch_add(1, Ordering::SeqCst)))
    }

    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), ModelError> {
        while self.withdrawals_held.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(ModelError::retryable(&self.surface, "platform down"));
        }
        self.calls.lock().unwrap().push(Call::Withdraw {
            id: question.id.to_string(),
            target: target.to_string(),
            reference: shown.into(),
            outcome: askbridge_core::render::outcome_line(question),
        });
        Ok(())
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), ModelError> {
        self.calls.lock().unwrap().push(Call::Say {
            target: target.to_string(),
            text: text.into(),
        });
        Ok(())
    }
}

/// A started bridge over a memory store with a fake `chat` channel.
pub async fn memory_bridge() -> (Bridge, Arc<FakeChannel>) {
    bridge_over(Arc::new(MemoryStore::default())).await
}

/// A started bridge over `store` with a fake `chat` channel (targets `chat:<n>`).
pub async fn bridge_over(store: Arc<dyn Store>) -> (Bridge, Arc<FakeChannel>) {
    bridge_with(store, |builder| builder).await
}

/// [`bridge_over`], with `set_up` adding to the builder (flows, channels) before the bridge is
/// made and started.
pub async fn bridge_with(
    store: Arc<dyn Store>,
    set_up: impl FnOnce(BridgeBuilder) -> BridgeBuilder,
) -> (Bridge, Arc<FakeChannel>) {
    let channel = FakeChannel::new("chat");
    let builder = Bridge::builder(store)
        .options(BridgeOptions {
            default_targets: vec!["chat:1".into()],
            ..BridgeOptions::default()
        })
        .channel(channel.clone());
    let bridge = set_up(builder).start().await.unwrap();
    (bridge, channel)
}

/// [`memory_bridge`] with `channel` too.
pub async fn memory_bridge_and(channel: Arc<dyn Channel>) -> (Bridge, Arc<FakeChannel>) {
    let store = Arc::new(MemoryStore::default());
    bridge_with(store, |builder| builder.channel(channel)).await
}

/// [`memory_bridge_and`] a platform's `channel`, with the HTTP app serving the platform's
/// `routes` (its webhooks, given the bridge as their inbox) beside the API.
pub async fn memory_bridge_routed(
    channel: Arc<dyn Channel>,
    routes: impl FnOnce(Arc<dyn askbridge_core::Inbox>) -> axum::Router,
) -> (Bridge, axum::Router) {
    let (bridge, _) = memory_bridge_and(channel).await;
    let routes = routes(Arc::new(bridge.clone()));
    let state = askbridge::http::AppState::new(bridge.clone(), None).with_routes(routes);
    (bridge, askbridge::http::app(state))
}

/// [`bridge_over`] running `flows`.
pub async fn bridge_running(store: Arc<dyn Store>, flows: Flows) -> (Bridge, Arc<FakeChannel>) {
    bridge_with(store, |builder| builder.runner(Arc::new(flows))).await
}

/// [`memory_bridge`] running `flows`.
pub async fn memory_bridge_running(flows: Flows) -> (Bridge, Arc<FakeChannel>) {
    bridge_running(Arc::new(MemoryStore::default()), flows).await
}

/// Polls `check` every 20 ms until it is true or `within` passes.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_some(within, what, || {
        let checked = check();
        async move { checked.await.then_some(()) }
    })
    .await
}

/// Polls `find` every 20 ms until it returns something or `within` passes.
pub async fn eventually_some<T, F, Fut>(within: Duration, what: &str, mut find: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = find().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The askbridge binary built for these tests, or the one `ASKBRIDGE_BINARY` names: the
/// benchmark measures an earlier build with the same load (before / after figures of one run).
pub fn askbridge_binary() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var("ASKBRIDGE_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_askbridge").to_owned())
    })
}

/// A running `askbridge` process, killed when dropped.
pub struct Process {
    pub child: Child,
    pub base: String,
}

impl Process {
    /// Starts `askbridge <args>` with `env` (and a clean environment for askbridge's variables),
    /// waiting for /healthz.
    pub fn spawn(args: &[&str], env: &[(&str, String)]) -> Self {
        Process::spawn_at(free_port(), args, env)
    }

    /// [`Process::spawn`] on a given port: a restarted askbridge where the old one was.
    pub fn spawn_at(port: u16, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut command = Command::new(askbridge_binary());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        command
            .env("HOME", std::env::temp_dir())
            .env("ASKBRIDGE_HTTP_ADDR", format!("127.0.0.1:{port}"));
        command.env("ASKBRIDGE_LOG", "info");
        for (key, value) in env {
            command.env(key, value);
        }
        command
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let child = command.spawn().expect("spawn askbridge");
        let process = Process {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        process.wait_healthy();
        process
    }

    fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = self.base.trim_start_matches("http://").to_owned();
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(&addr) {
                let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\n\r\n");
                let mut response = String::new();
                let _ = stream.read_to_string(&mut response);
                if response.starts_with("HTTP/1.0 200") || response.starts_with("HTTP/1.1 200") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("askbridge at {} did not become healthy", self.base);
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// SIGTERM, as a service manager stops it; then waits up to `within` for it to exit.
    /// Returns whether it did.
    pub fn terminate(&mut self, within: Duration) -> bool {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// SIGKILL, like a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An HTTP client for the API.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `GET .../wait?timeout_s=20` for question `id`, in the background: its JSON once it returns.
pub fn wait_in_background(base: &str, id: &str) -> tokio::task::JoinHandle<serde_json::Value> {
    let url = format!("{base}/api/questions/{id}/wait?timeout_s=20");
    tokio::spawn(async move {
        http()
            .get(url)
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()
    })
}

/// Sends `request` as written (so the test controls every header); returns status and body.
pub async fn raw(base: &str, request: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://"))
        .await
        .unwrap();
    // A server may answer and close before it has read everything (a 414, a 431).
    let _ = stream.write_all(request.as_bytes()).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Serves `router` on a free loopback port in the background; returns its base URL.
pub async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// `bridge`'s HTTP API, with no API token, on a free port: its base URL.
pub async fn serve_api(bridge: Bridge) -> String {
    serve_api_with(bridge, None).await
}

/// `bridge`'s HTTP API behind `token` (none: open), on a free port: its base URL.
pub async fn serve_api_with(bridge: Bridge, token: Option<&askbridge_core::Secret>) -> String {
    serve(askbridge::http::app(askbridge::http::AppState::new(
        bridge, token,
    )))
    .await
}

/// A message from `sender` in `chat` on the fake `chat` surface, named `@<sender>`.
pub fn message(sender: &str, chat: &str, text: &str) -> askbridge_core::Inbound {
    askbridge_core::Inbound {
        via: "chat".into(),
        chat: chat.into(),
        sender: sender.into(),
        sender_name: Some(format!("@{}", sender.replace(':', "_"))),
        text: text.into(),
        private: false,
        delivery_id: None,
        in_reply_to: None,
    }
}

/// The first pending question of `session` on the API at `base`, once there is one.
pub async fn pending_in_session(base: &str, session: &str) -> serde_json::Value {
    let (base, session) = (base.to_owned(), session.to_owned());
    eventually_some(Duration::from_secs(15), "the question asked", move || {
        let (base, session) = (base.clone(), session.clone());
        async move {
            let list: serde_json::Value = http()
                .get(format!("{base}/api/questions?session_id={session}"))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            list["questions"].as_array()?.first().cloned()
        }
    })
    .await
}

/// POSTs `body` as JSON to `path` on `base`.
pub async fn post_json(base: &str, path: &str, body: serde_json::Value) -> reqwest::Response {
    http()
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// GETs `path` on `base` as JSON.
pub async fn get_json(base: &str, path: &str) -> serde_json::Value {
    let response = http().get(format!("{base}{path}")).send().await.unwrap();
    response.json().await.unwrap()
}

/// [`eventually_some`] for a check that needs no awaiting (a fake's records).
/// Question `id` over `base`'s API once it is answered.
pub async fn answered_over_http(base: &str, id: &str) -> serde_json::Value {
    eventually_some(
        Duration::from_secs(10),
        "the question answered",
        || async move {
            let q = get_json(base, &format!("/api/questions/{id}")).await;
            (q["status"] == "answered").then_some(q)
        },
    )
    .await
}

pub async fn found<T>(within: Duration, what: &str, find: impl Fn() -> Option<T>) -> T {
    eventually_some(within, what, || {
        let found = find();
        async move { found }
    })
    .await
}

/// POSTs a question to a just-started askbridge, again while its chat channel is still
/// connecting (a target without a channel yet is refused, naming `targets`). The created question.
pub async fn ask_when_connected(base: &str, body: serde_json::Value) -> serde_json::Value {
    eventually_some(Duration::from_secs(15), "the question asked", || {
        let body = body.clone();
        async move {
            let response = post_json(base, "/api/questions", body).await;
            let status = response.status().as_u16();
            let json: serde_json::Value = response.json().await.unwrap_or_default();
            match status {
                201 => Some(json),
                422 if json["field"] == "targets" => None,
                other => panic!("asking failed with {other}: {json}"),
            }
        }
    })
    .await
}

/// The origin of a run started over the HTTP API (no chat; `api` answers).
pub fn api_origin() -> askbridge_core::run::Origin {
    askbridge_core::run::Origin {
        chat: None,
        user: "api".into(),
        user_name: None,
    }
}
