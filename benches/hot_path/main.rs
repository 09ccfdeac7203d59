//! The hot path, measured: every figure of the hot-path issue, each printed beside its anchor
//! measured in the same run (the machine is shared and noisy; the ratio is the figure that counts).
//!
//! It starts a real redis-server and the real `askbridge serve` (the binary this benchmark is
//! built with), and drives it over HTTP like a client would (the loops whose figures are goals
//! through `lean.rs`, a client that costs little of the cores it shares with what it measures):
//!
//! 1. commands askbridge sends to Redis per ask and per answer (MONITOR; a script's own lines
//!    and blocking stream reads left out), and per second with 1,000 idle waiters;
//! 2. ask+answer cycles/s with 16 connections, beside redis-benchmark EVALSHA of a claim-shaped
//!    script at the same concurrency, on a Redis without AOF (the goal) and with fsync always;
//! 3. reply -> waiter released with 1,000 waiters parked, beside Redis PING;
//! 4. resumes/s of the example `release` flow, one request per step and as wait + reply, beside
//!    LangGraph's interrupt/resume in both shapes of the flow, against the faster (scripts/bench
//!    installs it into a venv), with the CPU each process spends per resume (`runs.rs`);
//! 5. Redis memory per pending question and per waiting run, and the latency of `/api/stats`,
//!    a page of `/api/questions` and the SSE replay with that many pending;
//! 6. the embedded store's cycles/s, beside the disk's fsyncs/s, and its run resumes/s;
//! 7. the release binary's size;
//! 8. the process under stress on each store (`--only process`): RSS after list and stats with
//!    `--pending` questions, threads and memory with `--waiters` parked long polls (the cap
//!    raised for them), idle connections closed;
//! 9. (`--only cluster`) cycles on a Redis Cluster beside one node, with 1 and 3 askbridge
//!    replicas, with and without the replica wait, and asks' latencies through a master's
//!    failover (`cluster.rs`);
//! 10. (`--only views`) the ops page's runs, rules, audit and history first pages with
//!     `--pending` items of each, beside the same pages with five;
//! 11. (`--only approvals`) approvals asked/s and rules created/s with no rule and with
//!     `--approval-rules` (100,000), side by side (`approvals.rs`);
//! 12. (`--only mcp`) RSS before, with and after `--sessions` (10,000) MCP sessions, opened by
//!     `initialize` and left to expire (`process.rs`);
//! 13. (`--only chat`) ask -> shown and answer -> waiter released on Telegram, Slack and
//!     Discord, `--rounds` (1,000) each with `--chat-pending` (1,000) pending, beside a loopback
//!     round trip to each fake (`chat.rs`);
//! 14. (`--only email`) ask -> the mail in the person's mailbox and a reply in askbridge's
//!     mailbox -> waiter released, `--mail-rounds` (100) with `--chat-pending` pending, on real
//!     Postfix and Dovecot, beside the mail servers' own part of each path (`email.rs`);
//! 15. (`--only restart`) the embedded store's restart with `--pending` pending, beside 100
//!     (`restart.rs`);
//! 16. (`--only million`, never by default) `--million` (1,000,000) pending on Redis beside 100:
//!     bytes each, cycles, stats, first pages, SSE replay, restart (`million.rs`);
//! 17. (`--only slow`, `forms`, `silent`, never by default) issue 35's attacks: `/healthz` during
//!     4,300 slow bodies, the data files and a history page after 20 maximal form answers, and
//!     memory with 2,000 event streams nobody reads and `--pending` pending, then 150 large live
//!     events, and how many the server cut (`attacks.rs`).
//!
//! The sizes of each figure and `--only` are read in `options.rs`.
//!
//! ```text
//! scripts/bench                                    # everything, as the README gives it
//! cargo bench --bench hot_path -- --pending 100000 --cycles 20000 --only cycles,waiters
//! cargo bench --bench hot_path -- --only runs --threads 0   # askbridge with a thread per core
//! ```

#![allow(clippy::unwrap_used, unreachable_pub)]

mod anchors;
mod approvals;
mod attacks;
mod chat;
mod cluster;
mod email;
mod lean;
mod load;
mod million;
mod options;
mod probe;
mod process;
mod restart;
mod runs;
mod views;

#[path = "../../tests/it/fakes/mod.rs"]
#[allow(dead_code)]
mod fakes;

#[path = "../../tests/it/mail_servers.rs"]
#[allow(dead_code)]
mod mail_servers;
#[path = "../../tests/it/mails.rs"]
#[allow(dead_code)]
mod mails;

#[path = "../../tests/it/redis_cluster.rs"]
#[allow(dead_code)]
mod redis_cluster;
#[path = "../../tests/it/redis_server.rs"]
mod redis_server;
#[path = "../../tests/it/support.rs"]
#[allow(unreachable_pub, missing_debug_implementations)]
mod support;

use options::{Options, options};
use serde_json::json;
use std::time::Duration;

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index].as_secs_f64() * 1e3
}

/// `ASKBRIDGE_WORKER_THREADS` of every askbridge started here (`--threads`, default 1): on a
/// 2-core machine shared with Redis and the client, one thread switches least and serves most.
static THREADS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The environment entry that gives an askbridge started here the benchmark's worker threads.
fn worker_threads() -> (&'static str, String) {
    (
        "ASKBRIDGE_WORKER_THREADS",
        THREADS.get().cloned().unwrap_or_default(),
    )
}

fn serve(redis: &redis_server::RedisServer) -> support::Process {
    support::Process::spawn(
        &["serve"],
        &[
            ("REDIS_URL", redis.url()),
            ("ASKBRIDGE_EXAMPLE_FLOWS", "true".to_owned()),
            ("ASKBRIDGE_LOG", "warn".to_owned()),
            worker_threads(),
        ],
    )
}

/// `askbridge serve` with `env` and the benchmark's worker threads, started on a blocking thread
/// (it blocks until /healthz answers), so that fakes served by this runtime answer meanwhile.
async fn serve_blocking(mut env: Vec<(&'static str, String)>) -> support::Process {
    env.push(worker_threads());
    tokio::task::spawn_blocking(move || support::Process::spawn(&["serve"], &env))
        .await
        .unwrap()
}

async fn commands(o: &Options) {
    let redis = redis_server::RedisServer::start();
    let server = serve(&redis);
    let (base, client) = (server.base.clone(), load::client());
    // Warm up: connections open, scripts loaded.
    let id = load::ask(&client, &base, "warm").await;
    load::reply(&client, &base, &id, json!("luxon")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let monitor = probe::Monitor::start(redis.port);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let n = 500;
    let before = monitor.count();
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(load::ask(&client, &base, "count").await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asks = monitor.count() - before;
    let ask_names = monitor.take_names();
    let before = monitor.count();
    for id in &ids {
        load::reply(&client, &base, id, json!("dayjs")).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answers = monitor.count() - before;
    let answer_names = monitor.take_names();
    println!(
        "commands per ask          {:>8.2}   (budget 1)     {}",
        asks as f64 / n as f64,
        summary(&ask_names)
    );
    println!(
        "commands per answer      {:>8.2}   (budget 4)     {}",
        answers as f64 / n as f64,
        summary(&answer_names)
    );
    // Idle waiters.
    let mut waiting = Vec::new();
    for _ in 0..o.waiters {
        let id = load::ask(&client, &base, "idle").await;
        let (client, url) = (
            client.clone(),
            format!("{base}/api/questions/{id}/wait?timeout_s=60"),
        );
        waiting.push(tokio::spawn(async move { client.get(url).send().await }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = monitor.count();
    let window = Duration::from_secs(10);
    tokio::time::sleep(window).await;
    let idle = (monitor.count() - before) as f64 / window.as_secs_f64();
    println!(
        "idle, {} waiters      {:>8.1}/s (budget 50/s)  {}",
        o.waiters,
        idle,
        summary(&monitor.take_names())
    );
    for w in waiting {
        w.abort();
    }
}

/// "EVALSHA x500, HMGET x500".
fn summary(names: &[String]) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for name in names {
        *counts.entry(name).or_default() += 1;
    }
    counts
        .iter()
        .map(|(name, n)| format!("{name} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Ask+answer cycles beside `redis-benchmark` EVALSHA of a claim-shaped script, first on a Redis
/// without AOF (the goal's line: what askbridge costs beside what a script costs Redis), then on
/// the tests' Redis with fsync on every write (where the disk bounds both).
async fn cycles(o: &Options) {
    let no_aof = redis_server::RedisServer::start_with(&["--appendonly", "no"]);
    cycles_on(o, &no_aof, "without AOF", "   (goal >= 0.14)").await;
    drop(no_aof);
    let always = redis_server::RedisServer::start();
    cycles_on(o, &always, "fsync always", "").await;
}

async fn cycles_on(o: &Options, redis: &redis_server::RedisServer, setting: &str, goal: &str) {
    let server = serve(redis);
    load::cycles(&server.base, 500, o.concurrency).await;
    let askbridge_pid = server.child.id().to_string();
    let cpu = || async {
        (
            probe::process_cpu_s(&askbridge_pid),
            probe::redis_cpu_s(&redis.url()).await,
        )
    };
    let before = cpu().await;
    let (rate, mut latencies) = load::cycles(&server.base, o.cycles, o.concurrency).await;
    let after = cpu().await;
    let anchor = anchors::evalsha_per_s(&redis.url(), redis.port, o.concurrency, 200_000).await;
    println!(
        "ask+answer cycles/s ({setting:<12}) {rate:>6.0}   beside redis-benchmark EVALSHA {anchor:>6.0}/s   ratio {:.3}{goal}   cycle p50 {:.2} ms p99 {:.2} ms",
        rate / anchor,
        percentile(&mut latencies, 0.5),
        percentile(&mut latencies, 0.99),
    );
    // CPU per cycle says which side a change made cheaper, and is steadier than the rate on a
    // shared machine.
    let per_cycle = |a: f64, b: f64| (b - a) * 1e6 / o.cycles as f64;
    println!(
        "  CPU per cycle ({setting}): askbridge {:.0} us, redis-server {:.0} us",
        per_cycle(before.0, after.0),
        per_cycle(before.1, after.1)
    );
}

async fn waiters(o: &Options) {
    let redis = redis_server::RedisServer::start();
    let server = serve(&redis);
    let mut released = load::waiter_release(&server.base, o.waiters).await;
    let mut pings = anchors::ping_times(&redis.url(), 2_000).await;
    println!(
        "reply -> waiter released p50 {:>6.3} ms  p99 {:>6.3} ms (goal p99 <= 1 ms)   beside Redis PING p50 {:.3} ms p99 {:.3} ms",
        percentile(&mut released, 0.5),
        percentile(&mut released, 0.99),
        percentile(&mut pings, 0.5),
        percentile(&mut pings, 0.99),
    );
}

async fn memory(o: &Options) {
    let redis = redis_server::RedisServer::start();
    let server = serve(&redis);
    let base = server.base.clone();
    load::fill(&base, 200, 8, "warm").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = probe::used_memory(&redis.url()).await;
    load::fill(&base, o.pending, o.concurrency, "memory").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = probe::used_memory(&redis.url()).await;
    let per_question = (after - before) / o.pending as u64;
    println!(
        "Redis per pending question {per_question:>6} B   (goal <= 1,024 B; {} questions, indexes and the trimmed event streams included)",
        o.pending
    );
    let client = load::client();
    let (stats_ms, stats) = load::timed_get(&client, &format!("{base}/api/stats")).await;
    let (page_ms, _) = load::timed_get(&client, &format!("{base}/api/questions?limit=50")).await;
    let (default_ms, _) = load::timed_get(&client, &format!("{base}/api/questions")).await;
    let replay = load::replay_ms(&base, 1000).await;
    println!(
        "with {} pending: /api/stats {stats_ms:.1} ms, /api/questions?limit=50 {page_ms:.1} ms, default page (1,000) {default_ms:.1} ms, SSE replay (1,000 newest) {replay:.1} ms   [pending reported {}]",
        stats["pending"].as_u64().unwrap_or_default(),
        stats["pending"]
    );
    let runs = (o.pending / 10).max(100);
    let before = probe::used_memory(&redis.url()).await;
    let streams_before = probe::streams_memory(&redis.url()).await;
    load::start_runs(&base, runs, o.concurrency).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = probe::used_memory(&redis.url()).await;
    let streams = probe::streams_memory(&redis.url()).await as f64 - streams_before as f64;
    let per_run = (after - before) / runs as u64;
    // The streams are full of the questions' events by now and keep 1,000 entries a bucket: a
    // run's entry (its question's event and its own, one entry) replaces a question's.
    println!(
        "Redis per waiting run      {per_run:>6} B   with the question it waits on; the run's own {} B (goal <= 1,024 B; {runs} runs); of the {per_run} B, the capped event streams grew {:.0} B",
        per_run.saturating_sub(per_question),
        streams / runs as f64
    );
}

async fn embedded(o: &Options) {
    let dir = tempfile::tempdir().unwrap();
    let server = support::Process::spawn(
        &["serve"],
        &[
            ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
            ("ASKBRIDGE_EXAMPLE_FLOWS", "true".to_owned()),
            ("ASKBRIDGE_LOG", "warn".to_owned()),
        ],
    );
    load::cycles(&server.base, 200, o.concurrency).await;
    let (rate, mut latencies) = load::cycles(&server.base, o.cycles / 4, o.concurrency).await;
    let fsyncs = anchors::fsyncs_per_s(dir.path(), 500);
    println!(
        "embedded cycles/s        {rate:>8.0}   beside the disk's fsyncs {fsyncs:>8.0}/s   (goal >= 2,000/s)   cycle p50 {:.2} ms p99 {:.2} ms",
        percentile(&mut latencies, 0.5),
        percentile(&mut latencies, 0.99),
    );
    // The example flow's runs on it, one request per step, as the runs section does on Redis.
    let (resumes, _, _, _) = load::runs(
        &server.base,
        o.runs / 4,
        o.concurrency,
        load::Follow::Answer,
    )
    .await;
    println!("embedded run resumes/s   {resumes:>8.0}   (the example flow, one request per step)");
}

/// The sections about rules: listings with many (`views`), and approvals with none and with many
/// (`approvals`).
async fn rule_sections(o: &Options) {
    if o.only.iter().any(|s| s == "views") {
        // AOF fsync once a second: filling takes minutes otherwise; reads do not fsync.
        let redis = redis_server::RedisServer::start_with(&["--appendfsync", "everysec"]);
        let server = serve(&redis);
        views::views(&server.base, o.pending, o.rules, o.concurrency).await;
    }
    if o.only.iter().any(|s| s == "approvals") {
        let start = || redis_server::RedisServer::start_with(&["--appendfsync", "everysec"]);
        let (redis_none, redis_many) = (start(), start());
        let (none, many) = (serve(&redis_none), serve(&redis_many));
        let side = |redis: &redis_server::RedisServer, server: &support::Process| approvals::Side {
            redis: redis.url(),
            base: server.base.clone(),
            pid: server.child.id().to_string(),
        };
        approvals::approvals(
            side(&redis_none, &none),
            side(&redis_many, &many),
            o.approval_rules,
            o.approval_ballast,
            o.concurrency,
        )
        .await;
    }
}

/// The probes of memory and abuse (issue 35): parked waiters (`process`), the attacks (`slow`,
/// `forms`, `silent`) and MCP sessions (`mcp`), one askbridge each.
async fn probes(o: &Options) {
    if o.wants("process") {
        // Room for the waiters beside the 2,000 idle connections (the cap is 4,096).
        let cap = ("ASKBRIDGE_MAX_CONNECTIONS", (o.waiters + 4096).to_string());
        let dir = tempfile::tempdir().unwrap();
        let embedded = support::Process::spawn(
            &["serve"],
            &[
                ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
                ("ASKBRIDGE_LOG", "warn".to_owned()),
                cap.clone(),
            ],
        );
        process::probe("embedded", &embedded, o.pending, o.waiters).await;
        drop(embedded);
        let redis = redis_server::RedisServer::start();
        let server = support::Process::spawn(
            &["serve"],
            &[
                ("REDIS_URL", redis.url()),
                ("ASKBRIDGE_LOG", "warn".to_owned()),
                cap,
            ],
        );
        process::probe("redis", &server, o.pending, o.waiters).await;
    }
    // Issue 35's attacks, one askbridge (embedded store, default limits) each.
    for attack in ["slow", "forms", "silent"] {
        if !o.only.iter().any(|s| s == attack) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let server = support::Process::spawn(
            &["serve"],
            &[
                ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
                ("ASKBRIDGE_LOG", "error".to_owned()),
            ],
        );
        match attack {
            "slow" => attacks::slow_bodies(&server, 4300, 60).await,
            "forms" => attacks::forms(&server, dir.path(), 20).await,
            _ => attacks::silent_streams(&server, 2000, o.pending).await,
        }
    }
    if o.only.iter().any(|s| s == "mcp") {
        let dir = tempfile::tempdir().unwrap();
        let server = support::Process::spawn(
            &["serve"],
            &[
                ("ASKBRIDGE_DATA_DIR", dir.path().display().to_string()),
                ("ASKBRIDGE_LOG", "warn".to_owned()),
                ("ASKBRIDGE_MAX_MCP_SESSIONS", (o.sessions + 100).to_string()),
                ("ASKBRIDGE_MCP_SESSION_IDLE_S", "20".to_owned()),
            ],
        );
        process::mcp_sessions(&server, o.sessions, 20).await;
    }
}

// The load comes from one thread, as redis-benchmark's does: the client shares the two cores
// with askbridge and redis-server, and a second worker thread only adds wake-ups between them.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let o = options();
    let threads = std::env::args()
        .skip_while(|a| a != "--threads")
        .nth(1)
        .unwrap_or_else(|| "1".to_owned());
    println!(
        "askbridge hot path (this machine: {} cores; askbridge with ASKBRIDGE_WORKER_THREADS={})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if threads == "0" {
            "one per core"
        } else {
            &threads
        },
    );
    // 0: askbridge's default, one thread per core.
    let _ = THREADS.set(if threads == "0" {
        String::new()
    } else {
        threads
    });
    if o.wants("commands") {
        commands(&o).await;
    }
    if o.wants("cycles") {
        cycles(&o).await;
    }
    if o.wants("waiters") {
        waiters(&o).await;
    }
    if o.wants("runs") {
        runs::runs(&o).await;
    }
    if o.wants("memory") {
        memory(&o).await;
    }
    if o.wants("embedded") {
        embedded(&o).await;
    }
    if o.only.iter().any(|s| s == "cluster") {
        cluster::cluster(&o).await;
    }
    rule_sections(&o).await;
    probes(&o).await;
    if o.wants("chat") {
        chat::chat(o.rounds, o.chat_pending).await;
    }
    if o.wants("email") {
        email::email(o.mail_rounds, o.chat_pending).await;
    }
    if o.wants("restart") {
        restart::embedded(o.pending, o.concurrency).await;
    }
    if o.only.iter().any(|s| s == "million") {
        million::million(o.million, o.concurrency).await;
    }
    if o.wants("binary") {
        match anchors::release_binary_mb() {
            Some(mb) => println!("release binary          {mb:>8.1} MB (goal <= 30 MB)"),
            None => println!("release binary           not built (scripts/bench builds it)"),
        }
    }
}
