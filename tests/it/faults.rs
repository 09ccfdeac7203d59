//! Faults under load, on two askbridge processes sharing one Redis: Redis killed and restarted,
//! its script cache flushed, an askbridge process killed and restarted, while clients ask and
//! race two replies (one to each process) for every question.
//!
//! Checked: every question that got its 201 is still there; no question has two winning
//! replies; a reply that was told it won is the resolution; during an outage requests fail
//! within seconds, as JSON 503s, instead of hanging.
//!
//! The tests run a bounded form (a 3 s outage). `scripts/fault` runs longer outages and more
//! rounds: `ASKBRIDGE_FAULT_OUTAGE_S` and `ASKBRIDGE_FAULT_ROUNDS`.

use crate::support::{Process, RedisServer, http, serve_api};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the clients saw.
#[derive(Default)]
struct Ledger {
    /// Questions created (201), and the process that created each.
    created: Vec<String>,
    /// Per question, the answers whose reply was told it won (200).
    won: HashMap<String, Vec<String>>,
    /// Responses that were not a success, by status; 0 for no response at all.
    failures: HashMap<u16, usize>,
    /// Failed responses that were not JSON.
    not_json: usize,
    /// The slowest failed request.
    slowest_failure: Duration,
}

impl Ledger {
    fn failed(&mut self, status: u16, json: bool, took: Duration) {
        *self.failures.entry(status).or_default() += 1;
        if !json {
            self.not_json += 1;
        }
        self.slowest_failure = self.slowest_failure.max(took);
    }
}

async fn send(request: reqwest::RequestBuilder, ledger: &Mutex<Ledger>) -> Option<(u16, Value)> {
    let began = Instant::now();
    match request.send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            let json = response
                .headers()
                .get("content-type")
                .is_some_and(|v| v.to_str().unwrap_or("").starts_with("application/json"));
            let body = response.json::<Value>().await.unwrap_or(Value::Null);
            if status >= 500 {
                ledger.lock().unwrap().failed(status, json, began.elapsed());
            }
            Some((status, body))
        }
        Err(_) => {
            // No response at all: the process was killed under it (not a bad response).
            ledger.lock().unwrap().failed(0, true, began.elapsed());
            None
        }
    }
}

/// One client: asks on one process, then replies on both at once with different answers.
async fn client(
    bases: Arc<Mutex<Vec<String>>>,
    ledger: Arc<Mutex<Ledger>>,
    until: Instant,
    n: usize,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut round = 0usize;
    while Instant::now() < until {
        round += 1;
        let (first, second) = {
            let bases = bases.lock().unwrap();
            let a = (n + round) % bases.len();
            (bases[a].clone(), bases[(a + 1) % bases.len()].clone())
        };
        let ask = http.post(format!("{first}/api/questions")).json(
            &json!({"session_id": format!("fault-{n}"), "prompt": "Go?", "options": ["yes", "no"]}),
        );
        let Some((201, question)) = send(ask, &ledger).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let id = question["id"].as_str().unwrap().to_owned();
        ledger.lock().unwrap().created.push(id.clone());
        let reply = |base: &str, answer: &'static str| {
            http.post(format!("{base}/api/questions/{id}/reply"))
                .json(&json!({"answer": answer}))
        };
        let (one, two) = tokio::join!(
            send(reply(&first, "yes"), &ledger),
            send(reply(&second, "no"), &ledger)
        );
        for (answer, result) in [("yes", one), ("no", two)] {
            if let Some((200, _)) = result {
                ledger
                    .lock()
                    .unwrap()
                    .won
                    .entry(id.clone())
                    .or_default()
                    .push(answer.to_owned());
            }
        }
    }
}

fn script_flush(port: u16) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"*2\r\n$6\r\nSCRIPT\r\n$5\r\nFLUSH\r\n")
        .unwrap();
    let mut reply = [0u8; 5];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}

fn redis_port(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// Everything the clients were told must hold in the store.
async fn audit_ledger(base: &str, ledger: &Ledger) {
    assert!(!ledger.created.is_empty(), "no question was created at all");
    let mut answered = 0;
    for id in &ledger.created {
        let response = http()
            .get(format!("{base}/api/questions/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            200,
            "question {id} got its 201 and is gone"
        );
        let question: Value = response.json().await.unwrap();
        let winners = ledger.won.get(id).cloned().unwrap_or_default();
        assert!(
            winners.len() <= 1,
            "question {id}: two replies were told they won: {winners:?}"
        );
        if let Some(winner) = winners.first() {
            answered += 1;
            assert_eq!(
                question["status"], "answered",
                "question {id}: a won reply was lost"
            );
            assert_eq!(
                question["resolution"]["value"].as_str(),
                Some(winner.as_str()),
                "question {id}: the reply told it won is not the resolution"
            );
        }
    }
    eprintln!(
        "faults: {} questions created, {answered} answered, failures by status {:?}, slowest failure {:.1} s",
        ledger.created.len(),
        ledger.failures,
        ledger.slowest_failure.as_secs_f64()
    );
    assert_eq!(ledger.not_json, 0, "failed responses that were not JSON");
    assert!(
        ledger.slowest_failure < Duration::from_secs(10),
        "a request took {:?} to fail",
        ledger.slowest_failure
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_killed_flushed_and_askbridge_killed_under_load_loses_nothing() {
    let outage = Duration::from_secs(setting("ASKBRIDGE_FAULT_OUTAGE_S", 3));
    let rounds = setting("ASKBRIDGE_FAULT_ROUNDS", 1);
    let mut redis = RedisServer::start();
    let env = vec![("REDIS_URL", redis.url())];
    let a = Process::spawn(&["serve"], &env);
    let mut b = Process::spawn(&["serve"], &env);
    let bases = Arc::new(Mutex::new(vec![a.base.clone(), b.base.clone()]));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let phase = Duration::from_millis(1500);
    let total = (outage + phase * 4) * rounds as u32 + phase;
    let until = Instant::now() + total;
    let clients: Vec<_> = (0..6)
        .map(|n| tokio::spawn(client(bases.clone(), ledger.clone(), until, n)))
        .collect();
    for _ in 0..rounds {
        tokio::time::sleep(phase).await;
        // Redis crashes; the AOF (fsync always) brings back what it acknowledged.
        redis.kill();
        tokio::time::sleep(outage).await;
        redis.restart();
        tokio::time::sleep(phase).await;
        // Its script cache goes: scripts are sent again on NOSCRIPT.
        script_flush(redis_port(&redis.url()));
        tokio::time::sleep(phase).await;
        // One askbridge crashes mid-race and comes back on its port.
        let port = b.port();
        b.kill();
        tokio::time::sleep(Duration::from_millis(300)).await;
        b = Process::spawn_at(port, &["serve"], &env);
        tokio::time::sleep(phase).await;
    }
    for client in clients {
        client.await.unwrap();
    }
    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    audit_ledger(&a.base, &ledger).await;
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_a_redis_outage_health_answers_within_a_second_and_requests_fail_as_json() {
    let mut fixture = crate::support::redis_store().await;
    let (bridge, _) = crate::support::bridge_over(fixture.store.clone()).await;
    let base = serve_api(bridge).await;
    let asked = http()
        .post(format!("{base}/api/questions"))
        .json(&json!({"session_id": "outage", "prompt": "Still there?", "targets": ["chat:1"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 201);
    let id = asked.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The target index expires with its questions (it had no TTL once).
    let mut connection = fixture.server.connection().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*target:chat:1")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&keys[0])
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(ttl > 0, "the target set has no expiry ({ttl})");

    fixture.server.kill();
    let began = Instant::now();
    let health = http().get(format!("{base}/healthz")).send().await.unwrap();
    let took = began.elapsed();
    assert_eq!(health.status(), 503);
    assert!(
        took < Duration::from_millis(1500),
        "/healthz took {took:?} to say 503"
    );
    // /metrics reads the store too, within the same bound (it took 6.9 s once).
    let began = Instant::now();
    let metrics = http().get(format!("{base}/metrics")).send().await.unwrap();
    let took = began.elapsed();
    assert_eq!(metrics.status(), 503);
    assert!(
        took < Duration::from_secs(3),
        "/metrics took {took:?} to say 503"
    );
    let body: Value = metrics.json().await.unwrap();
    assert!(body["error"].is_string(), "{body}");
    let began = Instant::now();
    let refused = http()
        .post(format!("{base}/api/questions"))
        .json(&json!({"session_id": "outage", "prompt": "Anyone?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    let body: Value = refused.json().await.unwrap();
    assert!(body["error"].is_string(), "{body}");
    // Back: what was acknowledged is there.
    fixture.server.restart();
    let question =
        crate::support::eventually_some(Duration::from_secs(15), "the store back", || {
            let (base, id) = (base.clone(), id.clone());
            async move {
                let response = http()
                    .get(format!("{base}/api/questions/{id}"))
                    .send()
                    .await
                    .ok()?;
                (response.status() == 200).then_some(response.json::<Value>().await.ok()?)
            }
        })
        .await;
    assert_eq!(question["status"], "pending");
}
