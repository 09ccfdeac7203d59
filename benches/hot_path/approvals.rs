//! Approvals with many rules (`--only approvals`): approvals asked per second and rules created
//! per second (an approval asked and answered "always"), with no rule and with
//! `--approval-rules` (100,000 by default), in one run on one Redis (`appendfsync everysec`).
//! An approval looks for a rule that decides it; the goal is that it finds one through an
//! index, so the rate with 100,000 rules is within 10 % of the rate with none.
//!
//! The rules are filled through the store's own `put_rule` (what askbridge calls when a person
//! answers "always"), many at once: through askbridge one at a time, 100,000 took too long to
//! be part of a benchmark while rules were found by reading them all. Each rate is counted over
//! a fixed window, so a slow build still finishes; the best of three windows is printed.

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
async fn rate(base: &str, concurrency: usize, name: String, always: bool) -> (f64, usize) {
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
    (done as f64 / started.elapsed().as_secs_f64(), failed)
}

/// Best of three windows of asks, then of rule creations: (asked/s, rules created/s). The
/// creations add rules as they go (a few thousand, beside the 100,000 of the second figure).
async fn rates(base: &str, concurrency: usize, label: &str) -> (f64, f64) {
    let (mut asked, mut created, mut failed) = (0.0f64, 0.0f64, 0);
    for round in 0..3 {
        let (rate, f) = rate(base, concurrency, format!("{label}-ask-{round}"), false).await;
        (asked, failed) = (asked.max(rate), failed + f);
    }
    for round in 0..3 {
        let (rate, f) = rate(base, concurrency, format!("{label}-rule-{round}"), true).await;
        (created, failed) = (created.max(rate), failed + f);
    }
    println!(
        "approvals ({label}): asked {asked:.0}/s, rules created {created:.0}/s, {failed} requests failed"
    );
    (asked, created)
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

pub async fn approvals(redis_url: &str, base: &str, rules: usize, concurrency: usize) {
    // Warm up (connections open, scripts loaded) with asks only: "with 0 rules" means none.
    rate(base, concurrency, "warm".into(), false).await;
    let (asked_none, created_none) = rates(base, concurrency, "none").await;
    let store = RedisStore::connect(RedisOptions {
        url: redis_url.to_owned(),
        cluster: false,
        replica_wait: Duration::ZERO,
        prefix: askbridge::store::redis::DEFAULT_PREFIX.into(),
        store: Default::default(),
    })
    .await
    .unwrap();
    let started = Instant::now();
    fill(store, rules, 64).await;
    println!(
        "approvals: filled {rules} rules through the store in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    // The fill's AOF rewrite done, and askbridge's reader through the fill's events.
    crate::probe::rewrite_aof(redis_url).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (asked_many, created_many) = rates(base, concurrency, "many").await;
    println!(
        "approvals asked/s        with 0 rules {asked_none:>8.0}   with {rules} rules {asked_many:>8.0}   ratio {:.3} (goal >= 0.90)",
        asked_many / asked_none
    );
    println!(
        "rule creations/s         with 0 rules {created_none:>8.0}   with {rules} rules {created_many:>8.0}   ratio {:.3} (goal >= 0.90)",
        created_many / created_none
    );
}
