//! askbridge replicas on a real Redis Cluster (3 masters, 3 replicas): a claim race across
//! replicas has one winner; a master crashing under load loses nothing acknowledged.

use crate::redis_cluster;
use crate::support::{Process, http};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A question's id, when its 201 came, and the answer whose reply got 200.
type Entry = (String, Instant, Option<&'static str>);

fn replicas(urls: &[String], prefix: &str, count: usize) -> Vec<Process> {
    let env = [
        ("REDIS_URL", urls.join(",")),
        ("ASKBRIDGE_REDIS_PREFIX", prefix.to_owned()),
    ];
    (0..count)
        .map(|_| Process::spawn(&["serve"], &env))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_race_across_three_replicas_has_one_winner() {
    let cluster = redis_cluster::shared();
    let processes = replicas(&cluster.urls, "race", 3);
    let bases: Vec<String> = processes.iter().map(|p| p.base.clone()).collect();
    let health: Value = http()
        .get(format!("{}/healthz", bases[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        health["store"]
            .as_str()
            .unwrap()
            .starts_with("redis cluster"),
        "{health}"
    );
    let q: Value = http()
        .post(format!("{}/api/questions", bases[0]))
        .json(&json!({"session_id": "race", "prompt": "Which?", "options": ["a", "b", "c"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = q["id"].as_str().unwrap().to_owned();
    let mut tasks = Vec::new();
    for n in 0..200usize {
        let (base, id) = (bases[n % 3].clone(), id.clone());
        let answer = ["a", "b", "c"][n % 3];
        tasks.push(tokio::spawn(async move {
            let status = http()
                .post(format!("{base}/api/questions/{id}/reply"))
                .json(&json!({"answer": answer}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16();
            (status, answer)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (status, answer) = task.await.unwrap();
        match status {
            200 => winners.push(answer),
            409 => {}
            other => panic!("a reply answered {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    // Every replica sees the one resolution.
    for base in &bases {
        let seen: Value = http()
            .get(format!("{base}/api/questions/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(seen["resolution"]["value"], winners[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_master_crash_under_load_loses_nothing_acknowledged() {
    let cluster = redis_cluster::private();
    let processes = replicas(&cluster.urls, "failover", 2);
    let bases: Vec<String> = processes.iter().map(|p| p.base.clone()).collect();
    // (id, when its 201 came, the answer whose reply got 200)
    let ledger: Arc<Mutex<Vec<Entry>>> = Arc::default();
    let until = Instant::now() + Duration::from_secs(14);
    let mut clients = Vec::new();
    for n in 0..4usize {
        let (bases, ledger) = (bases.clone(), ledger.clone());
        clients.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap();
            let mut round = 0;
            while Instant::now() < until {
                round += 1;
                let base = &bases[(n + round) % bases.len()];
                let Ok(response) = client
                    .post(format!("{base}/api/questions"))
                    .json(&json!({"session_id": "load", "prompt": "Go?", "options": ["yes", "no"]}))
                    .send()
                    .await
                else {
                    continue;
                };
                if response.status() != 201 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                let q: Value = response.json().await.unwrap();
                let id = q["id"].as_str().unwrap().to_owned();
                let at = Instant::now();
                let other = &bases[(n + round + 1) % bases.len()];
                let (one, two) = tokio::join!(
                    client
                        .post(format!("{base}/api/questions/{id}/reply"))
                        .json(&json!({"answer": "yes"}))
                        .send(),
                    client
                        .post(format!("{other}/api/questions/{id}/reply"))
                        .json(&json!({"answer": "no"}))
                        .send()
                );
                let won = |r: &reqwest::Result<reqwest::Response>| {
                    r.as_ref().is_ok_and(|r| r.status() == 200)
                };
                let winner = match (won(&one), won(&two)) {
                    (true, true) => panic!("question {id}: both replies won"),
                    (true, false) => Some("yes"),
                    (false, true) => Some("no"),
                    (false, false) => None,
                };
                ledger.lock().unwrap().push((id, at, winner));
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3, "{masters:?}");
    let crashed_at = Instant::now();
    cluster.crash(masters[0]);
    let crashed = masters[0];
    let promoted = loop {
        let now = cluster.masters();
        if now.len() == 3 && !now.contains(&crashed) {
            break crashed_at.elapsed();
        }
        assert!(
            crashed_at.elapsed() < Duration::from_secs(30),
            "no failover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "failover: a replica was promoted {:.1} s after the crash",
        promoted.as_secs_f64()
    );
    for client in clients {
        client.await.unwrap();
    }
    let survivor = cluster
        .ports
        .iter()
        .copied()
        .find(|p| *p != masters[0])
        .unwrap();
    assert!(cluster.ok_at(survivor), "the cluster did not fail over");
    let ledger = ledger.lock().unwrap().clone();
    let after: Vec<_> = ledger
        .iter()
        .filter(|(_, at, _)| *at > crashed_at)
        .collect();
    assert!(
        !after.is_empty(),
        "nothing was created after the crash: askbridge did not recover"
    );
    let first_after = after
        .iter()
        .map(|(_, at, _)| at.duration_since(crashed_at))
        .min()
        .unwrap();
    eprintln!(
        "failover: {} questions, {} after the crash, the first {:.1} s after it",
        ledger.len(),
        after.len(),
        first_after.as_secs_f64()
    );
    for (id, at, winner) in &ledger {
        if *at + Duration::from_secs(1) > crashed_at && *at < crashed_at {
            continue; // acknowledged within the second before the crash: not promised
        }
        let response = http()
            .get(format!("{}/api/questions/{id}", bases[0]))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            200,
            "question {id} got its 201 and is gone"
        );
        let q: Value = response.json().await.unwrap();
        if let Some(winner) = winner {
            assert_eq!(
                q["resolution"]["value"], *winner,
                "question {id}: the winner changed"
            );
        }
    }
}
