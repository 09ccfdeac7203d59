//! Several askbridge replicas on one store: exactly one holds Telegram's long poll, another
//! takes it over when it dies, and no update is handled twice.

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
    let fake = FakeTelegram::start();
    let env = [
        ("REDIS_URL", redis.url()),
        ("TELEGRAM_BOT_TOKEN", "1:fake".to_owned()),
        ("TELEGRAM_API_URL", fake.base.clone()),
    ];
    let mut replicas = [
        Process::spawn(&["serve"], &env),
        Process::spawn(&["serve"], &env),
    ];
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
    // Both replicas stay up; still one holder a few renewals later.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let other = 1 - holder;
    assert!(
        leases(&bases[holder])
            .await
            .contains(&"telegram-poll".to_owned())
    );
    assert!(leases(&bases[other]).await.is_empty());

    replicas[holder].kill();
    let killed = Instant::now();
    let base = bases[other].clone();
    eventually_some(
        Duration::from_secs(20),
        "the other replica taking the poll over",
        || {
            let base = base.clone();
            async move {
                leases(&base)
                    .await
                    .contains(&"telegram-poll".to_owned())
                    .then_some(())
            }
        },
    )
    .await;
    let takeover = killed.elapsed();
    eprintln!("takeover after {:.1} s", takeover.as_secs_f64());
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
