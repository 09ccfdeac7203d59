//! Approvals with many rules (`--only approvals`): approvals asked per second and rules created
//! per second (an approval asked and answered "always"), with no rule and with
//! `--approval-rules` (100,000 by default), in one run, each on a Redis of its own
//! (`appendfsync everysec`) served by an askbridge of its own. An approval looks for a rule that
//! decides it; the goal is that it finds one through an index, so the rate with 100,000 rules is
//! within 10 % of the rate with none.
//!
//! The rules are filled through the store's own `put_rule` (what askbridge calls when a person
//! answers "always"), many at once: through askbridge one at a time, 100,000 took too long to
//! be part of a benchmark while rules were found by reading them all. Each rate is counted over
//! a fixed window, so a slow build still finishes. The two sides take turns, window by window
//! (which goes first alternates), and each figure is the median of its rounds: on cores shared
//! with other work, a slow spell then falls on both sides alike instead of on whichever was
//! measured during it. The rules a round of creations made are revoked before the next, so each
//! of its windows starts with none, or with the filled rules alone.

use crate::lean::Connection;
use askbridge::store::Rules as _;
use askbridge::store::redis::{RedisOptions, RedisStore};
use askbridge_core::{Action, Millis, QuestionId, Rule, RuleId, Scope};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long each rate is counted.
const WINDOW: Duration = Duration::from_secs(4);

/// An approval of a distinct action in a session of its own (an agent's).
fn approval(name: &str, n: usize) -> serde_json::Value {
    json!({
        "session_id": format!("{name}-{n}"),
        "kind": "approval",
        "prompt": "Run it?",
        "answerers": ["api"],
        "action": {"tool": "shell", "args": {"command": format!("{name} {n}")}}
    })
}

/// Per second over [`WINDOW`], by `concurrency` clients: approvals asked, and also answered
/// "always" (a rule each) when `always`; and how many requests failed (an askbridge that reads
/// every rule times out reading 100,000 of them, and is measured all the same).
async fn rate(base: &str, concurrency: usize, name: String, always: bool) -> (f64, usize, usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (base, next, name) = (base.to_owned(), next.clone(), name.clone());
        workers.push(tokio::spawn(async move {
            let mut http = Connection::open(&base).await;
            let (mut done, mut failed) = (0usize, 0usize);
            while started.elapsed() < WINDOW {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let (status, created) = http.post("/api/questions", &approval(&name, n)).await;
                let mut ok = status == 201;
                if ok && always {
                    let path = format!("/api/questions/{}/reply", created["id"].as_str().unwrap());
                    ok = http.post(&path, &json!({"answer": "always"})).await.0 == 200;
                }
                if ok {
                    done += 1;
                } else {
                    failed += 1;
                }
            }
            (done, failed)
        }));
    }
    let (mut done, mut failed) = (0, 0);
    for worker in workers {
        let (d, f) = worker.await.unwrap();
        (done, failed) = (done + d, failed + f);
    }
    (done as f64 / started.elapsed().as_secs_f64(), done, failed)
}

/// Rounds of windows per figure.
const ROUNDS: usize = 5;

/// One side of the comparison: a Redis, and the askbridge serving from it.
pub struct Side {
    pub redis: String,
    pub base: String,
    /// askbridge's process id, to read the CPU it spent.
    pub pid: String,
}

/// CPU seconds spent so far by a side's askbridge and its Redis.
async fn cpu(side: &Side) -> [f64; 2] {
    [
        crate::probe::process_cpu_s(&side.pid),
        crate::probe::redis_cpu_s(&side.redis).await,
    ]
}

async fn store(redis_url: &str) -> RedisStore {
    RedisStore::connect(RedisOptions {
        url: redis_url.to_owned(),
        cluster: false,
        replica_wait: Duration::ZERO,
        events_gather: askbridge::store::redis::DEFAULT_EVENTS_GATHER,
        prefix: askbridge::store::redis::DEFAULT_PREFIX.into(),
        store: Default::default(),
    })
    .await
    .unwrap()
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// [`ROUNDS`] windows on each side, taking turns: the median rate of each side (none, many),
/// and how many requests failed. `between` runs after each round.
async fn rounds<F, Fut>(sides: [&Side; 2], concurrency: usize, what: &str, between: F) -> [f64; 2]
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let always = what == "rule";
    let mut rates = [Vec::new(), Vec::new()];
    // Per side: askbridge's and Redis's CPU seconds over its windows, and the requests done.
    let mut spent = [[0.0; 2]; 2];
    let mut done = [0usize; 2];
    let mut failed = 0;
    for round in 0..ROUNDS {
        for index in [round % 2, 1 - round % 2] {
            let side = sides[index];
            crate::probe::aof_rewritten(&side.redis).await;
            let name = format!("{index}-{what}-{round}");
            let before = cpu(side).await;
            let (rate, d, f) = rate(&side.base, concurrency, name, always).await;
            let after = cpu(side).await;
            for part in 0..2 {
                spent[index][part] += after[part] - before[part];
            }
            rates[index].push(rate);
            done[index] += d;
            failed += f;
        }
        between().await;
    }
    println!(
        "approvals, {what} windows (none | many): {:.0?} | {:.0?}, {failed} requests failed",
        rates[0], rates[1]
    );
    // CPU per request is steadier than a rate on a shared machine, and says which process a
    // difference between the sides comes from.
    let per = |index: usize, part: usize| spent[index][part] * 1e6 / done[index].max(1) as f64;
    println!(
        "approvals, {what} CPU per request (none | many): askbridge {:.0} | {:.0} us, redis-server {:.0} | {:.0} us",
        per(0, 0),
        per(1, 0),
        per(0, 1),
        per(1, 1)
    );
    let [none, many] = rates;
    [median(none), median(many)]
}

/// Revokes the rules the windows made (every rule but the filled ones), `concurrency` at once.
async fn revoke_made(store: &RedisStore, concurrency: usize) {
    let made: Vec<RuleId> = store
        .rules()
        .await
        .unwrap()
        .into_iter()
        .filter(|rule| !matches!(&rule.scope, Scope::Session { session_id } if session_id.starts_with("filled-")))
        .map(|rule| rule.id)
        .collect();
    let made = Arc::new(std::sync::Mutex::new(made));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (store, made) = (store.clone(), made.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let Some(id) = made.lock().unwrap().pop() else {
                    return;
                };
                store.delete_rule(&id).await.unwrap();
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

/// `count` rules, each for a distinct action in a session of its own, stored by `store`.
async fn fill(store: RedisStore, count: usize, concurrency: usize) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (store, next) = (store.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return;
                }
                let rule = Rule {
                    id: RuleId::for_question(&QuestionId::random()),
                    action: Action::new("shell", json!({"command": format!("filled {n}")})),
                    scope: Scope::Session {
                        session_id: format!("filled-{n}"),
                    },
                    created_by: "api".into(),
                    created_at: Millis::now(),
                    question_id: None,
                    quorum: 0,
                };
                store.put_rule(&rule).await.unwrap();
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

/// `count` keys of no rule, each shaped as an index entry (a hash of one field holding a list
/// of one id), in the Redis at `url`, a thousand per pipeline.
async fn ballast(url: &str, count: usize) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    for start in (0..count).step_by(1000) {
        let mut pipe = redis::pipe();
        for n in start..(start + 1000).min(count) {
            pipe.hset(
                format!("ballast:{n}"),
                "s:ballast",
                format!("[\"rule-{n:010}\"]"),
            )
            .ignore();
        }
        let () = pipe.query_async(&mut connection).await.unwrap();
    }
}

/// `ballast` > 0 is a control: the side with no rule then holds that many keys of no rule, so
/// both Redis hold a keyspace of about the same size, and a difference left between the sides is
/// the rules' (their index's lookups) rather than a larger keyspace's.
pub async fn approvals(
    none: Side,
    many: Side,
    rules: usize,
    ballast_keys: usize,
    concurrency: usize,
) {
    // The fill's store is dropped before the asks: a store reads the event streams while it
    // lives, and one kept on the side with the rules doubled that side's XREADs (issue 32's
    // asks ratio read 0.83-0.89 with it). The rule windows connect one on each side.
    let started = Instant::now();
    fill(store(&many.redis).await, rules, 64).await;
    println!(
        "approvals: filled {rules} rules through the store in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if ballast_keys > 0 {
        ballast(&none.redis, ballast_keys).await;
        crate::probe::rewrite_aof(&none.redis).await;
        println!("approvals: control: the side with no rule holds {ballast_keys} keys of no rule");
    }
    // The fill's AOF rewrite done, and askbridge's reader through the fill's events.
    crate::probe::rewrite_aof(&many.redis).await;
    // Warm up (connections open, scripts loaded) with asks only: "with 0 rules" means none.
    for side in [&none, &many] {
        rate(&side.base, concurrency, "warm".into(), false).await;
    }
    let sides = [&none, &many];
    // Redis's command statistics count the asks' windows only (and the commands scripts run).
    for side in [&none, &many] {
        crate::probe::reset_stats(&side.redis).await;
    }
    let [asked_none, asked_many] = rounds(sides, concurrency, "ask", || async {}).await;
    for (label, side) in [("none", &none), ("many", &many)] {
        let stats = crate::probe::command_stats(&side.redis, &[]).await;
        println!("approvals, Redis after the asks ({label}): {stats}");
    }
    let (emptied, filled) = (store(&none.redis).await, store(&many.redis).await);
    let [created_none, created_many] = rounds(sides, concurrency, "rule", || async {
        revoke_made(&emptied, 64).await;
        revoke_made(&filled, 64).await;
    })
    .await;
    println!(
        "approvals asked/s        with 0 rules {asked_none:>8.0}   with {rules} rules {asked_many:>8.0}   ratio {:.3} (goal >= 0.90)",
        asked_many / asked_none
    );
    println!(
        "rule creations/s         with 0 rules {created_none:>8.0}   with {rules} rules {created_many:>8.0}   ratio {:.3} (goal >= 0.90)",
        created_many / created_none
    );
}
