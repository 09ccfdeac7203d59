//! Clients that hold connections without finishing with them: a body sent a byte at a time,
//! answers never read (pipelined requests, an event stream), and requests hyper refuses before
//! askbridge sees them. The server loop (`src/server/`) cuts the first two and keeps answering;
//! the third still gets a JSON error.

use crate::support::{eventually, memory_bridge, raw};
use askbridge::http::{AppState, app};
use askbridge::server::{ServeOptions, serve_with};
use askbridge_core::NewQuestion;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short limits, so that the tests see them act; generous margins around them.
fn tight() -> ServeOptions {
    ServeOptions {
        max_connections: 6,
        header_timeout: Duration::from_secs(60),
        grace: Duration::from_millis(500),
        body_timeout: Duration::from_secs(2),
        write_timeout: Duration::from_secs(2),
        shed_after: Duration::from_millis(200),
        event_backlog: 1 << 20,
    }
}

async fn start(state: AppState, options: ServeOptions) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_with(
        listener,
        app(state),
        std::future::pending(),
        options,
    ));
    addr
}

/// Whether the server closed `stream` within 30 s (what it sent before is read and dropped).
async fn closed(stream: &mut TcpStream) -> (bool, String) {
    let mut seen = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut seen)).await;
    (ended.is_ok(), String::from_utf8_lossy(&seen).into_owned())
}

#[tokio::test]
async fn slow_bodies_are_cut_and_the_server_keeps_answering() {
    let (bridge, _) = memory_bridge().await;
    let options = tight();
    let addr = start(AppState::new(bridge, None), options).await;
    let mut slow = Vec::new();
    for _ in 0..options.max_connections {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(b"POST /api/questions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
            .await
            .unwrap();
        slow.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    // Every place is held by a body that does not come: a newcomer is answered all the same.
    let base = format!("http://{addr}");
    let (status, body) = raw(
        &base,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // And each slow body is cut: shed to make room, or told its body took too long.
    let mut told = 0;
    for stream in &mut slow {
        let (closed, text) = closed(stream).await;
        assert!(closed, "a body sent a byte at a time held its connection");
        if text.contains("ASKBRIDGE_BODY_TIMEOUT_S") {
            assert!(text.starts_with("HTTP/1.1 400"), "{text}");
            told += 1;
        }
    }
    assert!(told >= 1, "no slow body was told why it was cut");
}

#[tokio::test]
async fn answers_a_client_does_not_take_are_cut() {
    let (bridge, _) = memory_bridge().await;
    let addr = start(AppState::new(bridge, None), tight()).await;
    // 500 pipelined requests for a 37 KB document, and nothing read.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let one = "GET /api/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    stream.write_all(one.repeat(500).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (closed, text) = closed(&mut stream).await;
    assert!(closed, "a client that reads nothing kept its connection");
    let answered = text.matches("HTTP/1.1 200").count();
    assert!(answered < 500, "all {answered} answers were written");
}

#[tokio::test]
async fn an_event_stream_nobody_reads_is_cut_past_its_backlog_and_the_others_go_on() {
    let (bridge, _) = memory_bridge().await;
    let mut replayed = Vec::new();
    for n in 0..20 {
        let mut question = NewQuestion::ask(format!("Replayed {n}?"));
        question.session_id = "replayed".into();
        replayed.push(bridge.create(question).await.unwrap().id);
    }
    let options = ServeOptions {
        // Only the backlog bound may cut here: a write may wait on its client for an hour.
        write_timeout: Duration::from_secs(3600),
        event_backlog: 64 * 1024,
        ..tight()
    };
    let addr = start(AppState::new(bridge.clone(), None), options).await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    // No overall timeout: the stream is read for as long as the test runs (each wait below has
    // its own deadline).
    let mut reader = reqwest::Client::new()
        .get(format!("http://{addr}/api/events"))
        .send()
        .await
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let reading = tokio::spawn({
        let seen = seen.clone();
        async move {
            while let Some(chunk) = reader.chunk().await.unwrap() {
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk));
            }
        }
    });
    let has = |id: &str| {
        let found = seen.lock().unwrap().contains(id);
        async move { found }
    };
    for id in &replayed {
        eventually(
            Duration::from_secs(30),
            "the reader gets the replay",
            || has(id.as_str()),
        )
        .await;
    }
    // 1.2 MB of live events, each taken by the reader before the next: more than the idle
    // client's socket and its own buffers hold with the bound (the kernel alone would take 4 MB).
    // The reader gets each before the next is asked.
    let ask_live = |prompt: String, detail: usize| {
        let mut question = NewQuestion::ask(prompt);
        question.session_id = "live".into();
        question.detail = Some("x".repeat(detail)).filter(|d| !d.is_empty());
        let bridge = bridge.clone();
        async move {
            let asked = bridge.create(question).await.unwrap();
            eventually(
                Duration::from_secs(30),
                "the reader gets a live event",
                || has(asked.id.as_str()),
            )
            .await;
        }
    };
    for n in 0..300 {
        ask_live(format!("Live {n}?"), 4000).await;
    }
    let (closed, _) = closed(&mut idle).await;
    assert!(closed, "an event stream nobody reads kept its connection");
    // The client that reads was not cut, and gets what is asked next.
    ask_live("After the cut?".to_owned(), 0).await;
    assert!(!reading.is_finished(), "the reading client's stream ended");
}

#[tokio::test]
async fn requests_hyper_refuses_are_answered_in_json() {
    let (bridge, _) = memory_bridge().await;
    let addr = start(AppState::new(bridge, None), ServeOptions::default()).await;
    let base = format!("http://{addr}");
    let long = "a".repeat(100_000);
    // hyper reads a header of up to about 400 KB.
    let longer = "a".repeat(500_000);
    let many: String = (0..1000).map(|n| format!("X-H{n}: {n}\r\n")).collect();
    let cases = [
        format!("GET /api/questions?q={long} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {longer}\r\n\r\n"),
        format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n{many}\r\n"),
        "POST /api/questions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}"
            .to_owned(),
        "POST /api/questions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}"
            .to_owned(),
        "GET /healthz HTTP/0.9\r\n\r\n".to_owned(),
        "GET /healthz\r\n\r\n".to_owned(),
        "\u{1}\u{2}garbage\r\n\r\n".to_owned(),
    ];
    for request in cases {
        let shown = &request[..request.len().min(60)];
        let (status, body) = raw(&base, &request).await;
        assert!((400..500).contains(&status), "{shown:?}: {status} {body}");
        let error: Value = serde_json::from_str(&body).unwrap_or_else(|_| {
            panic!("{shown:?}: {status} with a body that is not JSON: {body:?}")
        });
        let message = error["error"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{shown:?}: {body}");
    }
}
