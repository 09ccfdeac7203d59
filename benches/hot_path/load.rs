//! The loads: clients of a running `askbridge serve`. What they cost is read by [`crate::probe`].

use crate::lean;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// An HTTP client with room for many connections.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(2048)
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

/// Asks; returns the question's id.
pub async fn ask(client: &reqwest::Client, base: &str, session: &str) -> String {
    let response = client
        .post(format!("{base}/api/questions"))
        .json(&lean::ask_body(session))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let created: Value = response.json().await.unwrap();
    created["id"].as_str().unwrap().to_owned()
}

pub async fn reply(client: &reqwest::Client, base: &str, id: &str, answer: Value) {
    let response = client
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({ "answer": answer }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

/// `total` ask+answer cycles by `concurrency` clients: cycles/s and each cycle's latency.
pub async fn cycles(base: &str, total: usize, concurrency: usize) -> (f64, Vec<Duration>) {
    cycles_on(&[base.to_owned()], total, concurrency).await
}

/// [`cycles`] spread over several askbridge replicas: client `n` talks to `bases[n % len]`.
pub async fn cycles_on(bases: &[String], total: usize, concurrency: usize) -> (f64, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for n in 0..concurrency {
        let base = bases[n % bases.len()].clone();
        let next = next.clone();
        workers.push(tokio::spawn(async move {
            let mut http = lean::Connection::open(&base).await;
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                let id = http.ask("bench").await;
                http.reply(&id, json!("luxon")).await;
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.unwrap());
    }
    (total as f64 / started.elapsed().as_secs_f64(), latencies)
}

/// `count` waiters parked on `GET /wait`, then their questions answered one at a time: the time
/// from sending each reply to the waiter's response arriving, client-timed.
pub async fn waiter_release(base: &str, count: usize) -> Vec<Duration> {
    let mut http = lean::Connection::open(base).await;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(http.ask("bench-waiters").await);
    }
    let (done, mut arrivals) = tokio::sync::mpsc::unbounded_channel();
    for (n, id) in ids.iter().enumerate() {
        let (base, path, done) = (
            base.to_owned(),
            format!("/api/questions/{id}/wait?timeout_s=120"),
            done.clone(),
        );
        tokio::spawn(async move {
            let mut waiter = lean::Connection::open(&base).await;
            let (_, waited) = waiter.get(&path).await;
            assert_eq!(waited["status"], "answered");
            let _ = done.send((n, Instant::now()));
        });
    }
    // Let every long-poll reach the server and register.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut times = Vec::with_capacity(count);
    for (n, id) in ids.iter().enumerate() {
        let sent = Instant::now();
        http.reply(id, json!("dayjs")).await;
        let (woken, at) = arrivals.recv().await.unwrap();
        assert_eq!(woken, n);
        times.push(at.saturating_duration_since(sent));
    }
    times
}

/// What a client following a run reads of each step: the run's id and state, and the id of the
/// question it waits on (the body holds the whole run; serde skips the rest).
#[derive(Debug, serde::Deserialize)]
pub struct Step {
    id: String,
    state: String,
    question: Option<StepQuestion>,
}

#[derive(Debug, serde::Deserialize)]
pub struct StepQuestion {
    id: String,
}

/// How a client follows a run in [`runs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// `POST /api/runs` with `wait_s`, then `POST /api/runs/{id}/answer` per step: one request
    /// per step, as LangGraph's `invoke(Command(resume=...))` returns the next interrupt.
    Answer,
    /// `GET /api/runs/{id}/wait` for the next question, then `POST /api/questions/{id}/reply`.
    WaitThenReply,
}

/// Runs of the example `release` flow by `concurrency` clients, each answering its three
/// questions as `follow` says: resumes/s, how many requests a client made per answer to learn
/// the next question, and the time of each step's requests.
pub async fn runs(
    base: &str,
    total: usize,
    concurrency: usize,
    follow: Follow,
) -> (f64, f64, Vec<Duration>, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(0));
    let learning = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (base, next, learning) = (base.to_owned(), next.clone(), learning.clone());
        workers.push(tokio::spawn(async move {
            let mut http = lean::Connection::open(&base).await;
            let (mut waits, mut replies) = (Vec::new(), Vec::new());
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let start = match follow {
                    Follow::Answer => json!({"flow": "release", "input": "2.0", "wait_s": 60}),
                    Follow::WaitThenReply => json!({"flow": "release", "input": "2.0"}),
                };
                let (status, mut step) = http.post_as::<Step>("/api/runs", &start).await;
                assert_eq!(status, 201, "{step:?}");
                let run_id = step.id.clone();
                let mut after = String::new();
                for answer in [json!("beta"), json!("Faster."), json!(true)] {
                    if follow == Follow::Answer {
                        let question = step.question.as_ref().map(|q| q.id.clone());
                        assert!(question.is_some(), "no next question: {step:?}");
                        let t = Instant::now();
                        let body =
                            json!({"answer": answer, "question_id": question, "timeout_s": 60});
                        let (status, next) = http
                            .post_as::<Step>(&format!("/api/runs/{run_id}/answer"), &body)
                            .await;
                        assert_eq!(status, 200, "{next:?}");
                        step = next;
                        replies.push(t.elapsed());
                        continue;
                    }
                    learning.fetch_add(1, Ordering::Relaxed);
                    let t = Instant::now();
                    let (status, waited) = http
                        .get(&format!(
                            "/api/runs/{run_id}/wait?after={after}&timeout_s=60"
                        ))
                        .await;
                    assert_eq!(status, 200, "{waited}");
                    waits.push(t.elapsed());
                    after = waited["question"]["id"].as_str().unwrap().to_owned();
                    let t = Instant::now();
                    http.reply(&after, answer).await;
                    replies.push(t.elapsed());
                }
                if follow == Follow::Answer {
                    assert_eq!(step.state, "done", "{step:?}");
                }
            }
            (waits, replies)
        }));
    }
    let (mut waits, mut replies) = (Vec::new(), Vec::new());
    for worker in workers {
        let (w, r) = worker.await.unwrap();
        waits.extend(w);
        replies.extend(r);
    }
    let resumes = total * 3;
    (
        resumes as f64 / started.elapsed().as_secs_f64(),
        learning.load(Ordering::Relaxed) as f64 / resumes as f64,
        waits,
        replies,
    )
}

/// Times one GET, in ms.
pub async fn timed_get(client: &reqwest::Client, url: &str) -> (f64, Value) {
    let started = Instant::now();
    let response = client.get(url).send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let body: Value = response.json().await.unwrap();
    (started.elapsed().as_secs_f64() * 1e3, body)
}

/// Time until the SSE replay of a new event stream has delivered `expect` events, in ms.
pub async fn replay_ms(base: &str, expect: usize) -> f64 {
    let started = Instant::now();
    let mut response = client()
        .get(format!("{base}/api/events"))
        .send()
        .await
        .unwrap();
    const ASKED: &[u8] = b"event: question.asked";
    let (mut seen, mut carried) = (0, Vec::new());
    while seen < expect {
        let Some(chunk) = response.chunk().await.unwrap() else {
            break;
        };
        carried.extend_from_slice(&chunk);
        seen += carried.windows(ASKED.len()).filter(|w| *w == ASKED).count();
        // Kept: the bytes that may begin a name cut between two chunks (never a whole one).
        carried.drain(..carried.len().saturating_sub(ASKED.len() - 1));
    }
    started.elapsed().as_secs_f64() * 1e3
}

/// Asks `count` questions with `concurrency` clients.
pub async fn fill(base: &str, count: usize, concurrency: usize, session: &str) {
    let client = client();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, base, next, session) = (
            client.clone(),
            base.to_owned(),
            next.clone(),
            session.to_owned(),
        );
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < count {
                ask(&client, &base, &session).await;
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}

/// Starts `count` runs of the example flow (each parks on its first question).
pub async fn start_runs(base: &str, count: usize, concurrency: usize) {
    let client = client();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, base, next) = (client.clone(), base.to_owned(), next.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let response = client
                    .post(format!("{base}/api/runs"))
                    .json(&json!({"flow": "release", "input": "2.0"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 201);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
}
