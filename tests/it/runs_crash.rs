//! askbridge killed with SIGKILL between an answer and the resume, then restarted: the run
//! finishes exactly once. The real binary, on a real redis-server, with a run started from
//! (fake) Telegram and a flow that is an HTTP endpoint — which tells the test when the resume has
//! reached it, so the kill lands exactly there.

use crate::fakes::telegram::{FakeTelegram, User};
use crate::support::{Process, RedisServer, eventually_some, serve};
use askbridge::signing;
use askbridge_core::Millis;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

const SECRET: &str = "crash-test-secret";

#[derive(Default)]
struct Endpoint {
    resumes: AtomicUsize,
    resume_arrived: Notify,
    journals: Mutex<Vec<Value>>,
}

/// The flow: ask "Ship it?", then reply. The first resume request hangs (askbridge is killed
/// while waiting for it); later ones complete.
async fn serve_flow(endpoint: Arc<Endpoint>) -> String {
    let route = axum::routing::post(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let endpoint = endpoint.clone();
            async move {
                let signature = headers
                    .get(signing::SIGNATURE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                assert!(
                    signing::verify(
                        SECRET.as_bytes(),
                        signature,
                        &body,
                        Millis::now(),
                        signing::DEFAULT_TOLERANCE
                    )
                    .is_ok()
                );
                let request: Value = serde_json::from_slice(&body).unwrap();
                let journal = request["journal"].as_array().cloned().unwrap_or_default();
                endpoint
                    .journals
                    .lock()
                    .unwrap()
                    .push(request["journal"].clone());
                if journal.is_empty() {
                    return axum::Json(json!({"ask": {"kind": "confirm", "prompt": "Ship it?"}}));
                }
                if endpoint.resumes.fetch_add(1, Ordering::SeqCst) == 0 {
                    endpoint.resume_arrived.notify_one();
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                axum::Json(json!({"reply": format!("shipped ({})", journal[0]["value"])}))
            }
        },
    );
    let url = format!(
        "{}/ship",
        serve(axum::Router::new().route("/ship", route)).await
    );
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_the_answer_and_the_resume_then_restart_finishes_the_run_once() {
    let redis = RedisServer::start();
    let telegram = FakeTelegram::start();
    let endpoint = Arc::new(Endpoint::default());
    let flow_url = serve_flow(endpoint.clone()).await;
    let env = vec![
        ("REDIS_URL", redis.url()),
        ("TELEGRAM_BOT_TOKEN", "123:crash-test-token".to_owned()),
        ("TELEGRAM_API_URL", telegram.base.clone()),
        ("ASKBRIDGE_FLOWS", format!("ship={flow_url}")),
        ("ASKBRIDGE_FLOW_SECRET", SECRET.to_owned()),
        ("ASKBRIDGE_RUN_LEASE_S", "1".to_owned()),
    ];
    let mut first = Process::spawn(&["serve"], &env);
    let alice = User {
        id: 7,
        username: "alice",
    };
    telegram.say(7, &alice, "/ship");
    let fake = telegram.clone();
    let shown = eventually_some(
        Duration::from_secs(10),
        "the run's question on Telegram",
        move || {
            let fake = fake.clone();
            async move {
                fake.sent_in(7)
                    .into_iter()
                    .find(|m| m.text.contains("Ship it?") && m.markup.is_some())
            }
        },
    )
    .await;
    telegram.tap(7, shown.id, &alice, &shown.payload("Yes"));
    tokio::time::timeout(Duration::from_secs(10), endpoint.resume_arrived.notified())
        .await
        .expect("the resume reached the flow");
    first.kill();
    let _second = Process::spawn(&["serve"], &env);
    let fake = telegram.clone();
    let result = eventually_some(
        Duration::from_secs(20),
        "the run's result after the restart",
        move || {
            let fake = fake.clone();
            async move {
                fake.sent_in(7)
                    .into_iter()
                    .find(|m| m.text.starts_with("✓ ship:"))
            }
        },
    )
    .await;
    assert_eq!(result.text, "✓ ship: shipped (true)");
    // Give a duplicate every chance to appear, then check there is none.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let results = telegram
        .sent_in(7)
        .into_iter()
        .filter(|m| m.text.starts_with("✓ ship:"))
        .count();
    assert_eq!(results, 1, "the run finished exactly once");
    assert_eq!(
        endpoint.resumes.load(Ordering::SeqCst),
        2,
        "the interrupted resume, and the one that finished"
    );
    let journals = endpoint.journals.lock().unwrap().clone();
    assert_eq!(
        journals.len(),
        3,
        "ask, interrupted resume, resume: {journals:?}"
    );
    assert_eq!(journals[2][0]["status"], "answered");
}
