//! The process under stress, on each store: resident memory after list and stats calls with many
//! questions pending, threads with 1,000 waiters parked, and idle connections closed by the
//! header timeout (the hardening issue's probes).

use crate::{load, support};
use serde_json::Value;
use std::time::Duration;

/// A field of `/proc/<pid>/status` (`VmRSS`, `Threads`), as a number (kB for sizes).
fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn rss_mb(pid: u32) -> f64 {
    proc_status(pid, "VmRSS") as f64 / 1024.0
}

/// Fills `pending` questions, then lists and reads stats three times; then parks `waiters`
/// long-polls; then holds 2,000 idle connections past the header timeout.
pub async fn probe(name: &str, server: &support::Process, pending: usize, waiters: usize) {
    let (base, pid) = (server.base.clone(), server.child.id());
    let client = load::client();
    let start = rss_mb(pid);
    load::fill(&base, pending, 16, "rss").await;
    let filled = rss_mb(pid);
    for _ in 0..3 {
        load::timed_get(&client, &format!("{base}/api/questions")).await;
        load::timed_get(&client, &format!("{base}/api/stats")).await;
    }
    let listed = rss_mb(pid);
    println!(
        "{name:<9} RSS {start:>6.1} MB at start, {filled:>6.1} MB with {pending} pending, {listed:>6.1} MB after 3 list+stats   (goal <= 200 MB)"
    );
    let mut ids = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        ids.push(load::ask(&client, &base, "threads").await);
    }
    let asked = rss_mb(pid);
    let mut parked = Vec::with_capacity(waiters);
    for id in &ids {
        let (client, url) = (
            client.clone(),
            format!("{base}/api/questions/{id}/wait?timeout_s=60"),
        );
        parked.push(tokio::spawn(async move {
            let _: Option<Value> = match client.get(url).send().await {
                Ok(response) => response.json().await.ok(),
                Err(_) => None,
            };
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let threads = proc_status(pid, "Threads");
    let with_waiters = rss_mb(pid);
    // Each parked long poll with its connection (issue 35 measured ~37 KB).
    let per_waiter_kb = (with_waiters - asked) * 1024.0 / waiters.max(1) as f64;
    println!(
        "{name:<9} threads with {waiters} waiters parked: {threads}   (goal <= 32); RSS {with_waiters:.1} MB, {per_waiter_kb:.1} KB a waiter (goal <= 20)"
    );
    for task in parked {
        task.abort();
    }
    // Idle connections: opened, never used; the header timeout (10 s) closes them.
    let addr = base.trim_start_matches("http://").to_owned();
    let mut idle = Vec::new();
    for _ in 0..2000 {
        if let Ok(stream) = tokio::net::TcpStream::connect(&addr).await {
            idle.push(stream);
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held = rss_mb(pid);
    tokio::time::sleep(Duration::from_secs(11)).await;
    let mut closed = 0;
    for stream in &idle {
        let mut buffer = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(5), stream.peek(&mut buffer)).await
        {
            closed += 1;
        }
    }
    let (health_ms, _) = load::timed_get(&client, &format!("{base}/healthz")).await;
    println!(
        "{name:<9} {} idle connections: RSS {held:.1} MB while held; {closed} closed by the server after 12 s; /healthz then {health_ms:.1} ms",
        idle.len()
    );
}
