//! A million pending on Redis (`--only million`, never in the default run: filling takes
//! minutes and a gigabyte): two redis-servers (AOF fsync every second) and an askbridge on each,
//! one with `--million` questions pending (1,000,000 by default, shaped like the benchmark's: a
//! 40-character prompt, three short options, one target), the other with 100. Side by side,
//! taking turns: Redis bytes per pending question, ask+answer cycles/s, `/api/stats`, the first
//! page of each listing (a session's history with a tenth as many resolved in it, up to
//! 100,000, beside the same with none more), the SSE replay to its last replayed event, and a
//! restart to `/healthz` and the first page. The goals: <= 1 KB a question; cycles within 10 %; each call under 5x
//! the same with 100; the restart serving within 1 s.

use crate::redis_server::RedisServer;
use crate::restart::restart;
use crate::support::Process;
use crate::{load, probe};
use std::time::{Duration, Instant};

/// The calls timed on both sides: `/api/stats` and the first page of each listing.
const CALLS: [&str; 9] = [
    "/api/stats",
    "/api/questions?limit=50",
    // A session's first page (every question here is in that session): its pending index's page.
    "/api/questions?session_id=million&limit=50",
    "/api/history?limit=50",
    // A session's history and its questions of one outcome: the cycles' session, with
    // `resolved` more on the side with many (its resolved index's page).
    "/api/history?session_id=bench&limit=50",
    "/api/questions?session_id=bench&status=answered&limit=50",
    "/api/runs?limit=50",
    "/api/rules?limit=50",
    "/api/audit?order=newest&limit=50",
];

struct Side {
    redis: RedisServer,
    server: Process,
}

impl Side {
    fn start() -> Side {
        let redis = RedisServer::start_with(&["--appendfsync", "everysec"]);
        let server = Process::spawn(&["serve"], &env(&redis));
        Side { redis, server }
    }
}

fn env(redis: &RedisServer) -> Vec<(&'static str, String)> {
    vec![
        ("REDIS_URL", redis.url()),
        ("ASKBRIDGE_LOG", "warn".to_owned()),
        crate::worker_threads(),
    ]
}

/// Asks `count` on `side`: Redis bytes per question.
async fn fill(side: &Side, count: usize, concurrency: usize) -> u64 {
    let before = probe::used_memory(&side.redis.url()).await;
    let started = Instant::now();
    load::fill(&side.server.base, count, concurrency, "million").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = probe::used_memory(&side.redis.url()).await;
    if count > 100 {
        println!(
            "million: asked {count} in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    after.saturating_sub(before) / count as u64
}

/// The median of five alternating GETs of `path` on each side, in ms: (few, many).
async fn call(few: &Side, many: &Side, path: &str) -> (f64, f64) {
    let client = load::client();
    let (mut on_few, mut on_many) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        on_few.push(
            load::timed_get(&client, &format!("{}{path}", few.server.base))
                .await
                .0,
        );
        on_many.push(
            load::timed_get(&client, &format!("{}{path}", many.server.base))
                .await
                .0,
        );
    }
    (median(&mut on_few), median(&mut on_many))
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn print_beside(what: &str, few: f64, many: f64, count: usize, unit: &str) {
    println!(
        "million: {what:<46} with {count}: {many:>9.1} {unit}   beside 100 pending: {few:>7.1} {unit}   ratio {:.2}x",
        many / few
    );
}

pub async fn million(count: usize, concurrency: usize) {
    let (mut few, mut many) = (Side::start(), Side::start());
    load::fill(&few.server.base, 200, 8, "warm").await;
    load::fill(&many.server.base, 200, 8, "warm").await;
    let few_bytes = fill(&few, 100, concurrency).await;
    let many_bytes = fill(&many, count, concurrency).await;
    println!(
        "million: Redis per pending question {many_bytes} B with {count} (goal <= 1,024 B)   beside {few_bytes} B with 100"
    );
    // The replay: every pending question, up to the newest 1,000.
    let (mut replay_few, mut replay_many) = (Vec::new(), Vec::new());
    let replayed = |side: &Side| {
        let stats = format!("{}/api/stats", side.server.base);
        async move {
            let (_, stats) = load::timed_get(&load::client(), &stats).await;
            stats["pending"].as_u64().unwrap().min(1_000) as usize
        }
    };
    let (expect_few, expect_many) = (replayed(&few).await, replayed(&many).await);
    for _ in 0..3 {
        replay_few.push(load::replay_ms(&few.server.base, expect_few).await);
        replay_many.push(load::replay_ms(&many.server.base, expect_many).await);
    }
    print_beside(
        "SSE replay to its last replayed event",
        median(&mut replay_few),
        median(&mut replay_many),
        count,
        "ms",
    );
    // Cycles, three turns each, alternating.
    let (mut few_rate, mut many_rate) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        few_rate.push(load::cycles(&few.server.base, 2_000, concurrency).await.0);
        many_rate.push(load::cycles(&many.server.base, 2_000, concurrency).await.0);
    }
    let (few_rate, many_rate) = (median(&mut few_rate), median(&mut many_rate));
    println!(
        "million: ask+answer cycles/s with {count} pending {many_rate:.0}   beside 100 pending {few_rate:.0}   ratio {:.2} (goal >= 0.9)",
        many_rate / few_rate
    );
    // More resolved in the cycles' session on the side with many: a tenth as many as pending.
    let resolved = (count / 10).min(100_000);
    load::cycles(&many.server.base, resolved, concurrency).await;
    println!(
        "million: {resolved} more resolved in session `bench` on the side with {count} pending (each side answered 6,000 there in the cycles above)"
    );
    for path in CALLS {
        let (on_few, on_many) = call(&few, &many, path).await;
        print_beside(&format!("GET {path}"), on_few, on_many, count, "ms");
    }
    for (name, side) in [("100", &mut few), ("many", &mut many)] {
        let env = env(&side.redis);
        let restarted = restart(&mut side.server, env).await;
        println!(
            "million: restart with {name} pending: /healthz after {:.3} s, first page after {:.3} s (goal <= 1 s)",
            restarted.healthy_s, restarted.first_page_s
        );
    }
}
