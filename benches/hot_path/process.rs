//! The process under stress, on each store: resident memory after list and stats calls with many
//! questions pending, threads with 1,000 waiters parked, and idle connections closed by the
//! header timeout (the hardening issue's probes).

use crate::{load, support};
use serde_json::Value;
use std::time::Duration;

/// The number after `field:` in a `/proc` file (kB for sizes), 0 when absent.
fn proc_field(file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A field of `/proc/<pid>/status` (`VmRSS`, `Threads`), as a number (kB for sizes).
fn proc_status(pid: u32, field: &str) -> u64 {
    proc_field(&format!("/proc/{pid}/status"), field)
}

/// File descriptors `pid` holds (a parked long poll holds its connection's).
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Waits (up to 60 s) until `pid` holds `files` descriptors, then 2 s more.
async fn settle(pid: u32, files: usize) {
    for _ in 0..600 {
        if open_files(pid) >= files {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}

pub fn rss_mb(pid: u32) -> f64 {
    proc_status(pid, "VmRSS") as f64 / 1024.0
}

/// How much of `pid`'s resident memory is in transparent huge pages (MB): a 2 MB page is
/// resident whole once any byte of it is touched, so buffers allocated and never written (hyper's)
/// count in full there, and only for what was written elsewhere.
fn huge_pages_mb(pid: u32) -> f64 {
    proc_field(&format!("/proc/{pid}/smaps_rollup"), "AnonHugePages") as f64 / 1024.0
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
    // Parked in two halves: the second half's growth is what one more long poll costs, apart from
    // what the first ones start once (threads, tables and the allocator's own pages).
    // A client of their own: the asks' idle connections would otherwise carry some of them, and
    // the wait for every waiter's connection (`settle`) would never end.
    let parker = load::client();
    let park = |ids: &[String]| {
        ids.iter()
            .map(|id| {
                let (client, url) = (
                    parker.clone(),
                    format!("{base}/api/questions/{id}/wait?timeout_s=60"),
                );
                tokio::spawn(async move {
                    let _: Option<Value> = match client.get(url).send().await {
                        Ok(response) => response.json().await.ok(),
                        Err(_) => None,
                    };
                })
            })
            .collect::<Vec<_>>()
    };
    let (first, second) = ids.split_at(waiters / 2);
    let open_before = open_files(pid);
    let mut parked = park(first);
    settle(pid, open_before + first.len()).await;
    let half = rss_mb(pid);
    parked.extend(park(second));
    settle(pid, open_before + waiters).await;
    let threads = proc_status(pid, "Threads");
    let with_waiters = rss_mb(pid);
    // Each parked long poll with its connection (issue 35 measured ~37 KB).
    let per_waiter_kb = (with_waiters - asked) * 1024.0 / waiters.max(1) as f64;
    let marginal_kb = (with_waiters - half) * 1024.0 / second.len().max(1) as f64;
    let huge = huge_pages_mb(pid);
    println!(
        "{name:<9} threads with {waiters} waiters parked: {threads}   (goal <= 32); RSS {asked:.1} MB before them, {with_waiters:.1} MB with them: {per_waiter_kb:.1} KB a waiter, the second half {marginal_kb:.1} KB each (goal <= 20); {huge:.1} MB in huge pages"
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

/// `count` MCP `initialize` calls on `/mcp`, each a session of its own (the askbridge is started
/// with room for them and `idle_s` of idle life): RSS before, with them all held, and once they
/// have expired (issue 35 measured ~133 KB a session, and 1,177 MB of 1,503 MB still held after).
pub async fn mcp_sessions(server: &support::Process, count: usize, idle_s: u64) {
    let (base, pid) = (server.base.clone(), server.child.id());
    let client = load::client();
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}});
    let open = |n: usize| {
        let (client, base, initialize) = (client.clone(), base.clone(), initialize.clone());
        async move {
            for _ in 0..n {
                let response = client
                    .post(format!("{base}/mcp"))
                    .header("accept", "application/json, text/event-stream")
                    .json(&initialize)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200, "initialize");
                let _ = response.bytes().await;
            }
        }
    };
    // Warm-up: the first sessions' one-off allocations (the tools' table, pools) are not a
    // session's cost.
    open(50).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_mb(pid);
    open(count).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let peak = rss_mb(pid);
    tokio::time::sleep(Duration::from_secs(idle_s + 5)).await;
    // One more session: expired ones are swept when sessions are opened or used.
    open(1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_mb(pid);
    let per_session_kb = (peak - before) * 1024.0 / count.max(1) as f64;
    println!(
        "MCP sessions: RSS {before:.1} MB before {count} initialize, {peak:.1} MB with them held ({per_session_kb:.1} KB a session, goal <= 30), {after:.1} MB once expired ({:.2}x before, goal <= 1.5x)",
        after / before.max(1.0)
    );
}
