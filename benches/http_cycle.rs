//! Ask-and-answer cycles over HTTP, on a real redis-server (or another store).
//!
//! Each cycle is what an HTTP client and a person do: `POST /api/questions`, a long-poll
//! `GET /api/questions/{id}/wait` in flight, then `POST /api/questions/{id}/reply`. Reported:
//! cycles per second, the resolve latency (reply sent -> the waiting long-poll returns, across
//! the event stream) and the whole cycle's latency, as p50/p99; then how late expiry is
//! (deadline -> `question.expired` event) over a batch of short-lived questions.
//!
//! ```text
//! cargo bench --bench http_cycle -- [--store redis|embedded|memory] [--cycles N] [--concurrency C]
//! ```

#![allow(clippy::unwrap_used)]

#[path = "../tests/it/redis_server.rs"]
mod redis_server;

use askbridge::BridgeOptions;
use askbridge::bridge::Bridge;
use askbridge::http::{AppState, app};
use askbridge::store::embedded::EmbeddedStore;
use askbridge::store::memory::MemoryStore;
use askbridge::store::redis::{RedisOptions, RedisStore};
use askbridge::store::{Store, StoreOptions};
use askbridge_core::Millis;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Options {
    store: String,
    cycles: usize,
    concurrency: usize,
}

fn options() -> Options {
    let mut options = Options {
        store: "redis".into(),
        cycles: 2000,
        concurrency: 16,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--store" => options.store = args.next().expect("--store needs a value"),
            "--cycles" => {
                options.cycles = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--cycles needs a number")
            }
            "--concurrency" => {
                options.concurrency = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--concurrency needs a number")
            }
            // `cargo bench` passes --bench; ignore what is not ours.
            _ => {}
        }
    }
    options
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn describe(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<18} p50 {:>8.2} ms   p99 {:>8.2} ms   max {:>8.2} ms",
        percentile(&samples, 0.50).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().unwrap().as_secs_f64() * 1e3,
    );
}

async fn cycle(client: &reqwest::Client, base: &str, n: usize) -> (Duration, Duration) {
    let started = Instant::now();
    let body = json!({"session_id": format!("bench-{}", n % 64), "prompt": "Which library?", "options": ["dayjs", "luxon", "date-fns"]});
    let created: Value = client
        .post(format!("{base}/api/questions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().expect("created").to_owned();
    let wait = {
        let (client, url) = (
            client.clone(),
            format!("{base}/api/questions/{id}/wait?timeout_s=30"),
        );
        tokio::spawn(async move {
            let waited: Value = client.get(url).send().await.unwrap().json().await.unwrap();
            (Instant::now(), waited)
        })
    };
    // Let the long-poll register before answering, as a person would take longer still.
    tokio::time::sleep(Duration::from_millis(2)).await;
    let replied_at = Instant::now();
    let reply = client
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": "luxon"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    let (returned_at, waited) = wait.await.unwrap();
    assert_eq!(waited["status"], "answered");
    (
        returned_at.saturating_duration_since(replied_at),
        started.elapsed(),
    )
}

async fn expiry_lag(bridge: &Bridge, base: &str, count: usize) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let mut events = bridge.store().subscribe();
    let mut pending = std::collections::HashMap::new();
    for _ in 0..count {
        let body = json!({"session_id": "bench-expiry", "prompt": "Expire me", "timeout_s": 0.5});
        let created: Value = client
            .post(format!("{base}/api/questions"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        let expires_at = Millis::parse_rfc3339(created["expires_at"].as_str().unwrap()).unwrap();
        pending.insert(id, expires_at);
    }
    let mut lags = Vec::new();
    while !pending.is_empty() {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("expiry events")
            .unwrap();
        let Some(question) = event.question() else {
            continue;
        };
        if question.status == askbridge_core::Status::Expired {
            if let Some(deadline) = pending.remove(question.id.as_str()) {
                lags.push(Millis::now().since(deadline));
            }
        }
    }
    lags
}

#[tokio::main]
async fn main() {
    let options = options();
    let _server;
    let _dir;
    let store: Arc<dyn Store> = match options.store.as_str() {
        "redis" => {
            let server = redis_server::RedisServer::start();
            let store = RedisStore::connect(RedisOptions {
                url: server.url(),
                prefix: "askbridge".into(),
                store: StoreOptions::default(),
            })
            .await
            .unwrap();
            _server = server;
            Arc::new(store)
        }
        "embedded" => {
            let dir = tempfile::tempdir().unwrap();
            let store = EmbeddedStore::open(dir.path(), StoreOptions::default())
                .await
                .unwrap();
            _dir = dir;
            Arc::new(store)
        }
        "memory" => Arc::new(MemoryStore::default()),
        other => panic!("unknown store {other}; use redis, embedded or memory"),
    };
    println!(
        "store: {}; {} cycles, {} concurrent clients",
        store.describe(),
        options.cycles,
        options.concurrency
    );
    let bridge = Bridge::new(store, BridgeOptions::default());
    bridge.start().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = app(AppState::new(bridge.clone(), None));
    tokio::spawn(async move { axum::serve(listener, router).await });

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    for n in 0..50 {
        cycle(&client, &base, n).await;
    }
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..options.concurrency {
        let (client, base, next) = (client.clone(), base.clone(), next.clone());
        let total = options.cycles;
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= total {
                    return samples;
                }
                samples.push(cycle(&client, &base, n).await);
            }
        }));
    }
    let mut resolve = Vec::new();
    let mut whole = Vec::new();
    for worker in workers {
        for (r, w) in worker.await.unwrap() {
            resolve.push(r);
            whole.push(w);
        }
    }
    let elapsed = started.elapsed();
    println!(
        "cycles/s           {:.0}",
        options.cycles as f64 / elapsed.as_secs_f64()
    );
    describe("resolve latency", resolve);
    describe("cycle latency", whole);
    describe("expiry lag", expiry_lag(&bridge, &base, 200).await);
    bridge.shutdown();
}
