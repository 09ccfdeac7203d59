//! What an attack campaign broke, each kept fixed: cross-site requests, DNS rebinding, callback
//! URLs that reach internal services, the framework's non-JSON errors, connections that never end.

use crate::support::{Process, http, memory_bridge, raw, serve, serve_api, serve_api_with};
use askbridge::egress::{Egress, Lookup};
use askbridge::http::{AppState, HostPolicy, app};
use askbridge::server::{ServeOptions, serve_with};
use askbridge::{BridgeOptions, bridge::Bridge, store::memory::MemoryStore};
use askbridge_core::Secret;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn post(path: &str, host: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn ask(base: &str) -> String {
    let q: Value = http()
        .post(format!("{base}/api/questions"))
        .json(&json!({"session_id": "s", "prompt": "Ship?", "options": ["yes", "no"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    q["id"].as_str().unwrap().to_owned()
}

async fn status_of(base: &str, id: &str) -> String {
    let q: Value = http()
        .get(format!("{base}/api/questions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    q["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_web_page_cannot_answer_or_cancel() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let host = base.trim_start_matches("http://").to_owned();
    let id = ask(&base).await;
    let reject = format!("/api/questions/{id}/reject");
    for (headers, body, expected) in [
        ("Content-Type: text/plain\r\n", "{\"message\":\"x\"}", 415),
        (
            "Content-Type: application/x-www-form-urlencoded\r\n",
            "",
            415,
        ),
        ("Content-Type: multipart/form-data; boundary=x\r\n", "", 415),
        ("", "{\"message\":\"no type\"}", 415),
        (
            "Origin: http://evil.example\r\nContent-Type: application/json\r\n",
            "{}",
            403,
        ),
        (
            "Origin: null\r\nContent-Type: application/json\r\n",
            "{}",
            403,
        ),
    ] {
        let (status, text) = raw(&base, &post(&reject, &host, headers, body)).await;
        assert_eq!(status, expected, "{headers:?}: {text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert!(error["error"].is_string(), "{text}");
        assert_eq!(
            status_of(&base, &id).await,
            "pending",
            "{headers:?} changed it"
        );
    }
    let cancel = "/api/sessions/s/cancel";
    let (status, _) = raw(
        &base,
        &post(cancel, &host, "Content-Type: text/plain\r\n", "x"),
    )
    .await;
    assert_eq!(status, 415);
    assert_eq!(status_of(&base, &id).await, "pending");
    // The server's own page may; so may a shell (no Origin, no body).
    let own = format!("Origin: {base}\r\nContent-Type: application/json\r\n");
    let (status, text) = raw(&base, &post(&reject, &host, &own, "{\"message\":\"no\"}")).await;
    assert_eq!(status, 200, "{text}");
    let id = ask(&base).await;
    let (status, text) = raw(&base, &post(cancel, &host, "", "")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(status_of(&base, &id).await, "cancelled");
}

#[tokio::test]
async fn only_our_own_names_are_answered() {
    let (bridge, _) = memory_bridge().await;
    let state =
        AppState::new(bridge, None).with_hosts(HostPolicy::local().allow(["bridge.example.com"]));
    let base = serve(app(state)).await;
    let get = |host: &str| {
        format!("GET /api/questions HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    for refused in [
        "evil.example:8080",
        "localhost.evil.example",
        "[::1]evil",
        "[::1]evil:80",
        "[127.0.0.1]",
    ] {
        let (status, body) = raw(&base, &get(refused)).await;
        assert_eq!(status, 421, "{refused}: {body}");
        assert!(body.contains("ASKBRIDGE_ALLOWED_HOSTS"), "{body}");
    }
    let port = base.rsplit(':').next().unwrap();
    for ok in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "bridge.example.com".to_owned(),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = raw(&base, &get(&ok)).await;
        assert_eq!(status, 200, "{ok}: {body}");
    }
}

#[tokio::test]
async fn every_error_is_json() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let id = ask(&base).await;
    let client = http();
    let cases = [
        client.put(format!("{base}/api/questions")),
        client.get(format!("{base}/api/questions?limit=many")),
        client.get(format!("{base}/api/questions/{id}/wait?timeout_s=soon")),
        client.delete(format!("{base}/api/questions/{id}")),
        client
            .post(format!("{base}/api/questions/{id}/reject"))
            .header("content-type", "application/json")
            .body(vec![b' '; 3 * 1024 * 1024]),
        client.post(format!("{base}/api/runs")).json(&json!({})),
        client.get(format!("{base}/no/such/route")),
    ];
    for request in cases {
        let response = request.send().await.unwrap();
        let status = response.status();
        assert!(status.is_client_error(), "{status}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let text = response.text().await.unwrap();
        assert!(
            kind.starts_with("application/json"),
            "{status} {kind}: {text}"
        );
        let body: Value = serde_json::from_str(&text).unwrap();
        let message = body["error"].as_str().unwrap();
        assert!(
            !message.is_empty() && !message.contains("Failed to"),
            "{status}: {message}"
        );
    }
}

#[tokio::test]
async fn the_openapi_document_matches_the_routes() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let spec: Value = http()
        .get(format!("{base}/api/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(spec["openapi"], "3.1.0");
    let paths = spec["paths"].as_object().unwrap();
    // Every documented route exists: it answers something else than "no such route".
    for (path, methods) in paths {
        for method in methods.as_object().unwrap().keys() {
            let url = format!(
                "{base}{}",
                path.replace("{id}", "x1").replace("{session_id}", "s")
            );
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let request = http().request(method.clone(), &url);
            let request = if method == reqwest::Method::POST {
                request.json(&json!({}))
            } else {
                request.query(&[("timeout_s", "0")])
            };
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            // Only a 404's body says which kind it is; an event stream's never ends.
            let body = if status == 404 {
                response.text().await.unwrap_or_default()
            } else {
                String::new()
            };
            assert!(
                status != 405 && !(status == 404 && body.contains("no route")),
                "{method} {path} is documented but not served: {status} {body}"
            );
        }
    }
    // Every served route is documented.
    let source = include_str!("../../src/http/mod.rs");
    let route = regex::Regex::new(r#"\.route\(\s*"([^"]+)""#).unwrap();
    for found in route.captures_iter(source) {
        let path = &found[1];
        let full = if matches!(path, "/healthz" | "/metrics") {
            path.to_owned()
        } else {
            format!("/api{path}")
        };
        assert!(
            paths.contains_key(&full),
            "{full} is served but not in openapi.json"
        );
    }
}

/// A resolver for tests: every name is these addresses.
struct Resolving(Vec<IpAddr>);

impl Lookup for Resolving {
    fn lookup(&self, _: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let found = self.0.clone();
        Box::pin(async move { Ok(found) })
    }
}

#[tokio::test]
async fn callbacks_may_not_reach_internal_addresses() {
    let egress =
        Egress::public_only().with_lookup(Arc::new(Resolving(vec!["10.0.0.7".parse().unwrap()])));
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            signing_secret: Some(Secret::new("k")),
            callback_egress: egress,
            ..BridgeOptions::default()
        })
        .start()
        .await
        .unwrap();
    let base = serve_api(bridge).await;
    for url in [
        "http://127.0.0.1:6379/",
        "http://127.1/",
        "http://2130706433/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://user:pw@example.com/cb",
        "http://",
        "https://internal.test/cb",
    ] {
        let response = http()
            .post(format!("{base}/api/questions"))
            .json(&json!({"prompt": "Ship?", "callback_url": url}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{url}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["field"], "callback_url", "{url}: {body}");
        let why = body["error"].as_str().unwrap();
        assert!(why.len() > "callback_url".len() + 10, "{url}: {why}");
    }
}

/// IPv6 spellings of internal addresses, literal or resolved: each carries an internal IPv4
/// address (IPv4-compatible, NAT64, 6to4) or lies in an internal IPv6 range (site-local, local-use
/// NAT64, Teredo).
#[tokio::test]
async fn callbacks_may_not_reach_internal_addresses_in_ipv6_clothes() {
    let egress = Egress::public_only()
        .with_lookup(Arc::new(Resolving(vec!["64:ff9b::a00:7".parse().unwrap()])));
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            signing_secret: Some(Secret::new("k")),
            callback_egress: egress,
            ..BridgeOptions::default()
        })
        .start()
        .await
        .unwrap();
    let base = serve_api(bridge).await;
    for url in [
        "http://[::127.0.0.1]/",
        "http://[::7f00:1]:6379/",
        "http://[::ffff:7f00:1]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[64:ff9b::169.254.169.254]/",
        "http://[64:ff9b:1::5db8:d822]/",
        "http://[2002:7f00:1::1]/",
        "http://[2002:a9fe:a9fe::]/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "http://[fec0::1]/",
        "https://internal.test/cb",
    ] {
        let response = http()
            .post(format!("{base}/api/questions"))
            .json(&json!({"prompt": "Ship?", "session_id": "cb", "callback_url": url}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{url}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["field"], "callback_url", "{url}: {body}");
    }
    let response = http()
        .post(format!("{base}/api/questions"))
        .json(&json!({"prompt": "Ship?", "session_id": "cb", "callback_url": "http://[2002:5db8:d822::1]/cb"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "6to4 of a public address is public");
}

#[tokio::test]
async fn metrics_need_the_token_unless_made_public() {
    let (bridge, _) = memory_bridge().await;
    let token = Secret::new("t0k");
    let closed = serve_api_with(bridge.clone(), Some(&token)).await;
    let status = http()
        .get(format!("{closed}/metrics"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);
    let status = http()
        .get(format!("{closed}/metrics"))
        .bearer_auth("t0k")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    let open = serve(app(
        AppState::new(bridge, Some(&token)).with_public_metrics(true)
    ))
    .await;
    let status = http()
        .get(format!("{open}/metrics"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
}

#[tokio::test]
async fn idle_and_surplus_connections_are_closed() {
    let (bridge, _) = memory_bridge().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = ServeOptions {
        max_connections: 4,
        header_timeout: Duration::from_millis(500),
        grace: Duration::from_millis(500),
        // None of these idle connections is shed to make room: the cap is what is tested.
        shed_after: Duration::from_secs(600),
        ..ServeOptions::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_with(
        listener,
        app(AppState::new(bridge, None)),
        async move {
            let _ = stopped.await;
        },
        options,
    ));
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Past the cap: a clear 503 at once, not a queue.
    let base = format!("http://{addr}");
    let (status, body) = raw(&base, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too many connections"), "{body}");
    // Idle ones are closed after the header timeout, which frees their places.
    for stream in &mut idle {
        let mut buffer = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await;
        assert!(
            matches!(read, Ok(Ok(_))),
            "an idle connection was left open"
        );
    }
    let (status, _) = raw(
        &base,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    // A client stalled halfway through a header does not hold shutdown up.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .unwrap();
    let began = Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stopped")
        .unwrap()
        .unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[tokio::test]
async fn serve_stops_soon_after_sigterm_whatever_clients_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = Process::spawn(
        &["serve"],
        &[("ASKBRIDGE_DATA_DIR", dir.path().display().to_string())],
    );
    let addr = process.base.trim_start_matches("http://").to_owned();
    let mut stalled = TcpStream::connect(&addr).await.unwrap();
    stalled
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .unwrap();
    let mut events = TcpStream::connect(&addr).await.unwrap();
    events
        .write_all(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The grace period is 5 s; a generous margin above it.
    assert!(
        process.terminate(Duration::from_secs(15)),
        "still running 15 s after SIGTERM"
    );
}

#[tokio::test]
async fn decline_messages_are_bounded() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let id = ask(&base).await;
    let response = http()
        .post(format!("{base}/api/questions/{id}/reject"))
        .json(&json!({"message": "x".repeat(4001)}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    assert_eq!(status_of(&base, &id).await, "pending");
}

#[tokio::test]
async fn a_flood_of_refused_replies_is_counted_not_recorded_one_by_one() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge.clone()).await;
    for n in 0..200 {
        let response = http()
            .post(format!("{base}/api/questions/zz{n:08}/reply"))
            .json(&json!({"answer": "yes"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "every refusal is still answered");
    }
    let audit: Value = http()
        .get(format!("{base}/api/audit"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let recorded = audit["entries"].as_array().unwrap().len();
    assert!(
        (1..=25).contains(&recorded),
        "{recorded} records for one caller's 200 refusals"
    );
}

#[tokio::test]
async fn serve_outlives_a_telegram_outage_at_start() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: Telegram is unreachable.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let api_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut process = Process::spawn(
        &["serve"],
        &[
            ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
            ("TELEGRAM_BOT_TOKEN", "1:fake".into()),
            ("TELEGRAM_API_URL", api_url),
        ],
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        process.child.try_wait().unwrap().is_none(),
        "serve exited because Telegram was unreachable"
    );
    let health = http()
        .get(format!("{}/healthz", process.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn the_audit_trail_takes_the_spans_the_cli_documents() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    for since in ["2h", "90s", "7d", "2026-01-01T00:00:00Z", "1700000000000"] {
        let response = http()
            .get(format!("{base}/api/audit?since={since}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "since={since}");
    }
    let response = http()
        .get(format!("{base}/api/audit?since=lately"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
}
