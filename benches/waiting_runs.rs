//! Memory of an askbridge process with many runs waiting for people.
//!
//! Starts the real `askbridge serve` on a real redis-server it starts itself, with the example
//! flows on, then starts runs over `POST /api/runs` in batches; every run parks on its first
//! question. After each batch it reports the process's resident memory (VmRSS), its task-free
//! state, and Redis's `used_memory`: waiting runs should cost store space only, so the process's
//! memory stays flat while Redis's grows.
//!
//! ```text
//! cargo bench --bench waiting_runs -- [--batches 3] [--batch 10000] [--concurrency 32]
//! ```

#![allow(clippy::unwrap_used)]

#[path = "../tests/it/redis_server.rs"]
mod redis_server;
#[path = "../tests/it/support.rs"]
#[allow(unreachable_pub, missing_debug_implementations)]
mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn threads(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

async fn redis_used_memory(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut connection)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

async fn pending(base: &str) -> usize {
    let metrics = support::http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("askbridge_pending_questions "))
        .unwrap()
        .parse()
        .unwrap()
}

async fn start_runs(base: &str, count: usize, concurrency: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (base, next) = (base.to_owned(), next.clone());
        workers.push(tokio::spawn(async move {
            let client = support::http();
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let response = client
                    .post(format!("{base}/api/runs"))
                    .json(&json!({"flow": "release", "input": "2.0"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let (batches, batch, concurrency) = (
        arg("--batches", 3),
        arg("--batch", 10_000),
        arg("--concurrency", 32),
    );
    let redis = redis_server::RedisServer::start();
    let env = vec![
        ("REDIS_URL", redis.url()),
        ("ASKBRIDGE_EXAMPLE_FLOWS", "true".to_owned()),
        ("ASKBRIDGE_LOG", "warn".to_owned()),
    ];
    let process = support::Process::spawn(&["serve"], &env);
    let (base, pid) = (process.base.clone(), process.child.id());
    start_runs(&base, 100, 8).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss0, redis0) = (rss_kib(pid), redis_used_memory(&redis.url()).await);
    println!("waiting runs  askbridge RSS  threads  Redis used_memory");
    println!(
        "{:>12}  {:>9} KiB  {:>7}  {:>12} B",
        100,
        rss0,
        threads(pid),
        redis0
    );
    let mut total = 100;
    for _ in 0..batches {
        let started = Instant::now();
        start_runs(&base, batch, concurrency).await;
        total += batch;
        while pending(&base).await < total {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let rate = batch as f64 / started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (rss, used) = (rss_kib(pid), redis_used_memory(&redis.url()).await);
        println!(
            "{total:>12}  {rss:>9} KiB  {:>7}  {used:>12} B   (+{} KiB RSS, +{} B/run in Redis, {rate:.0} runs started/s)",
            threads(pid),
            rss.saturating_sub(rss0),
            used.saturating_sub(redis0) / (total - 100) as u64,
        );
    }
    let sample: Value = support::http()
        .get(format!("{base}/api/questions?limit=1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sample["questions"][0]["status"], "pending");
    drop(process);
}
