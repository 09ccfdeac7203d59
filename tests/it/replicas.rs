//! Several askbridge replicas on one store — one Redis, or a Redis Cluster — exactly one holds
//! Telegram's long poll, another takes it over when it dies, and no update is handled twice.

use crate::fakes::telegram::FakeTelegram;
use crate::support::{Process, RedisServer, eventually_some, http};
use crate::telegram::{GROUP, alice};
use serde_json::Value;
use std::time::{Duration, Instant};

async fn leases(base: &str) -> Vec<String> {
    let Ok(response) = http().get(format!("{base}/healthz")).send().await else {
        return Vec::new();
    };
    let body: Value = response.json().await.unwrap_or_default();
    body["leases"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_polls_telegram_and_another_takes_over_when_it_dies() {
    let redis = RedisServer::start();
    takeover(vec![("REDIS_URL", redis.url())], 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_one_of_three_replicas_polls_telegram_and_another_takes_over() {
    let cluster = crate::redis_cluster::shared();
    takeover(
        vec![
            ("REDIS_URL", cluster.urls.join(",")),
            ("ASKBRIDGE_REDIS_PREFIX", "takeover".to_owned()),
        ],
        3,
    )
    .await;
}

/// `count` replicas with the store settings `store`: one holds the poll, survives a few renewals
/// alone, dies; one other takes it over and handles an update once.
async fn takeover(store: Vec<(&'static str, String)>, count: usize) {
    let fake = FakeTelegram::start();
    let mut env = store;
    env.push(("TELEGRAM_BOT_TOKEN", "1:fake".to_owned()));
    env.push(("TELEGRAM_API_URL", fake.base.clone()));
    let mut replicas: Vec<Process> = (0..count)
        .map(|_| Process::spawn(&["serve"], &env))
        .collect();
    let bases: Vec<String> = replicas.iter().map(|r| r.base.clone()).collect();
    let holder = eventually_some(
        Duration::from_secs(15),
        "one replica holding the poll",
        || {
            let bases = bases.clone();
            async move {
                let mut holding = Vec::new();
                for (n, base) in bases.iter().enumerate() {
                    if leases(base).await.contains(&"telegram-poll".to_owned()) {
                        holding.push(n);
                    }
                }
                (holding.len() == 1).then(|| holding[0])
            }
        },
    )
    .await;
    // All replicas stay up; still one holder a few renewals later.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let others: Vec<String> = (0..count)
        .filter(|n| *n != holder)
        .map(|n| bases[n].clone())
        .collect();
    assert!(
        leases(&bases[holder])
            .await
            .contains(&"telegram-poll".to_owned())
    );
    for other in &others {
        assert!(leases(other).await.is_empty());
    }

    replicas[holder].kill();
    let killed = Instant::now();
    eventually_some(
        Duration::from_secs(20),
        "exactly one other replica taking the poll over",
        || {
            let others = others.clone();
            async move {
                let mut holding = 0;
                for base in &others {
                    if leases(base).await.contains(&"telegram-poll".to_owned()) {
                        holding += 1;
                    }
                }
                assert!(holding <= 1, "{holding} replicas hold the poll");
                (holding == 1).then_some(())
            }
        },
    )
    .await;
    let takeover = killed.elapsed();
    eprintln!(
        "takeover among {count} replicas after {:.1} s",
        takeover.as_secs_f64()
    );
    assert!(takeover < Duration::from_secs(12), "took {takeover:?}");

    // An update now is handled once, by the new holder.
    let before = fake
        .calls()
        .iter()
        .filter(|c| c.method == "sendmessage")
        .count();
    fake.say(GROUP, &alice(), "/whoami");
    let probe = fake.clone();
    eventually_some(Duration::from_secs(15), "the reply", move || {
        let fake = probe.clone();
        async move {
            (fake
                .calls()
                .iter()
                .filter(|c| c.method == "sendmessage")
                .count()
                > before)
                .then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let replies = fake
        .calls()
        .iter()
        .filter(|c| c.method == "sendmessage")
        .count()
        - before;
    assert_eq!(replies, 1, "the update was handled {replies} times");
}
