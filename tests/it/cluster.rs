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
    assert_eq!(
        health["topology"],
        json!({"kind": "redis-cluster", "nodes": 6, "masters": 3, "failing": 0, "ok": true})
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
            (status, answer, base)
        }));
    }
    let (mut winners, mut won_at) = (Vec::new(), Vec::new());
    for task in tasks {
        let (status, answer, base) = task.await.unwrap();
        match status {
            200 => {
                winners.push(answer);
                won_at.push(base);
            }
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
    // Each replica's metrics: the cluster's shape, and its own store round trips by operation.
    // A replica that heard of the resolution before its replies refuses them from the resolved
    // question it remembers, with no claim: the claim's round trips are the winner's to show.
    for base in &bases {
        let text = http()
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for line in [
            "askbridge_store_nodes 6",
            "askbridge_store_masters 3",
            "askbridge_store_ok 1",
            "askbridge_store_request_seconds_count{op=",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        let claims = "askbridge_store_request_seconds_count{op=\"claim\"}";
        assert!(
            !won_at.contains(base) || text.contains(claims),
            "{claims} missing from the winner's\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_master_crash_under_load_loses_nothing_acknowledged() {
    let cluster = redis_cluster::private();
    let processes = replicas(&cluster.urls, "failover", 3);
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
    // /healthz tells: the crashed master is flagged failing, its replica serves its slots.
    let health: Value = http()
        .get(format!("{}/healthz", bases[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["topology"]["failing"], 1, "{health}");
    assert_eq!(health["topology"]["masters"], 3, "{health}");
    assert_eq!(health["topology"]["ok"], true, "{health}");
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

/// The flow for the test below: asks "Ship it?" and replies with the answer. The first resume
/// hangs (its replica is killed while it waits); later ones complete.
#[derive(Default)]
struct Flow {
    resumes: std::sync::atomic::AtomicUsize,
    resume_arrived: tokio::sync::Notify,
}

async fn serve_flow(flow: Arc<Flow>) -> String {
    use std::sync::atomic::Ordering;
    let route = axum::routing::post(move |body: axum::body::Bytes| {
        let flow = flow.clone();
        async move {
            let request: Value = serde_json::from_slice(&body).unwrap();
            let journal = request["journal"].as_array().cloned().unwrap_or_default();
            if journal.is_empty() {
                return axum::Json(json!({"ask": {"kind": "confirm", "prompt": "Ship it?"}}));
            }
            if flow.resumes.fetch_add(1, Ordering::SeqCst) == 0 {
                flow.resume_arrived.notify_one();
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            axum::Json(json!({"reply": format!("shipped ({})", journal[0]["value"])}))
        }
    });
    let base = crate::support::serve(axum::Router::new().route("/ship", route)).await;
    format!("{base}/ship")
}

/// A run started on one replica and answered on another: the answering replica wins the claim
/// and resumes the run; it is SIGKILLed while the flow handles the resume; a surviving replica
/// takes the run up after its lease and finishes it once, with the answer given.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_answered_on_another_replica_survives_that_replica_being_killed() {
    use std::sync::atomic::Ordering;
    let cluster = redis_cluster::shared();
    let flow = Arc::new(Flow::default());
    let flow_url = serve_flow(flow.clone()).await;
    let env = [
        ("REDIS_URL", cluster.urls.join(",")),
        ("ASKBRIDGE_REDIS_PREFIX", "killed-run".to_owned()),
        ("ASKBRIDGE_FLOWS", format!("ship={flow_url}")),
        ("ASKBRIDGE_FLOW_SECRET", "killed-run-secret".to_owned()),
        ("ASKBRIDGE_RUN_LEASE_S", "1".to_owned()),
    ];
    let mut processes: Vec<Process> = (0..3).map(|_| Process::spawn(&["serve"], &env)).collect();
    let bases: Vec<String> = processes.iter().map(|p| p.base.clone()).collect();
    let run: Value = http()
        .post(format!("{}/api/runs", bases[0]))
        .json(&json!({"flow": "ship", "input": "2.0"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    // The run's question, learned on replica 1 without polling.
    let waiting: Value = http()
        .get(format!("{}/api/runs/{run_id}/wait?timeout_s=10", bases[1]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(waiting["state"], "waiting", "{waiting}");
    let question = waiting["question"]["id"].as_str().unwrap().to_owned();
    let reply = http()
        .post(format!("{}/api/questions/{question}/reply", bases[1]))
        .json(&json!({"answer": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
    tokio::time::timeout(Duration::from_secs(10), flow.resume_arrived.notified())
        .await
        .expect("the resume reached the flow");
    // Replica 1 won the claim, so it resumed the run: kill it there.
    processes[1].kill();
    let killed = Instant::now();
    let finished = crate::support::eventually_some(
        Duration::from_secs(30),
        "the run finished on a surviving replica",
        || {
            let (base, run_id) = (bases[2].clone(), run_id.clone());
            async move {
                let run: Value = http()
                    .get(format!("{base}/api/runs/{run_id}"))
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                (run["state"] == "done").then_some(run)
            }
        },
    )
    .await;
    eprintln!(
        "killed run: finished on a survivor {:.1} s after the kill",
        killed.elapsed().as_secs_f64()
    );
    assert_eq!(finished["result"], "shipped (true)", "{finished}");
    // Give a duplicate resume every chance to happen.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        flow.resumes.load(Ordering::SeqCst),
        2,
        "the interrupted resume and the one that finished, no more"
    );
    let seen: Value = http()
        .get(format!("{}/api/runs/{run_id}", bases[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["state"], "done");
}
