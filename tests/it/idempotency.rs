//! `Idempotency-Key` on the two creating routes: a retried create (its response lost on the way)
//! gets the first question or run back, 200 instead of 201, and nothing is made twice; the same
//! key on a different request is refused, naming the header.

use crate::support::{bridge_running, http, redis_store, serve_api};
use askbridge::Flows;
use askbridge::flows::FlowContext;
use askbridge::store::embedded::EmbeddedStore;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{ListFilter, Store, StoreOptions};
use askbridge_core::NewQuestion;
use serde_json::{Value, json};
use std::sync::Arc;

async fn create(base: &str, path: &str, key: &str, body: Value) -> (u16, Value) {
    let response = http()
        .post(format!("{base}{path}"))
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn one_ask() -> Flows {
    Flows::new()
        .flow("lunch", "asks once", |ctx: FlowContext| async move {
            let picked = ctx
                .ask(NewQuestion::ask("Which?").options(["a", "b"]))
                .await?;
            Ok(picked.to_string())
        })
        .unwrap()
}

#[tokio::test]
async fn a_retried_create_with_the_same_key_makes_one_question_and_one_run() {
    retried_creates_over(Arc::new(MemoryStore::default())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_create_makes_one_question_and_one_run_on_the_embedded_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(dir.path(), StoreOptions::default())
        .await
        .unwrap();
    retried_creates_over(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_create_makes_one_question_and_one_run_on_redis() {
    let fixture = redis_store().await;
    retried_creates_over(fixture.store.clone()).await;
}

async fn retried_creates_over(store: Arc<dyn Store>) {
    let (bridge, _) = bridge_running(store, one_ask()).await;
    let base = serve_api(bridge.clone()).await;
    let ask = json!({"prompt": "Ship?", "options": ["yes", "no"], "session_id": "idem", "targets": ["chat:1"]});
    let (status, first) = create(&base, "/api/questions", "k-1", ask.clone()).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = create(&base, "/api/questions", "k-1", ask.clone()).await;
    assert_eq!(status, 200, "a retry is answered 200: {again}");
    assert_eq!(again["id"], first["id"]);
    let filter = ListFilter {
        session_id: Some("idem".into()),
        ..ListFilter::pending()
    };
    assert_eq!(bridge.list(&filter).await.unwrap().len(), 1);
    // Another key is another question.
    let (status, other) = create(&base, "/api/questions", "k-2", ask.clone()).await;
    assert_eq!(status, 201);
    assert_ne!(other["id"], first["id"]);
    // The same key on a different request is a mistake, said so.
    let changed = json!({"prompt": "Ship now?", "options": ["yes", "no"], "session_id": "idem", "targets": ["chat:1"]});
    let (status, refused) = create(&base, "/api/questions", "k-1", changed).await;
    assert_eq!(status, 422, "{refused}");
    let why = refused["error"].as_str().unwrap();
    assert!(why.contains("Idempotency-Key"), "{why}");
    assert_eq!(bridge.list(&filter).await.unwrap().len(), 2);

    let start = json!({"flow": "lunch", "input": "x"});
    let (status, run) = create(&base, "/api/runs", "r-1", start.clone()).await;
    assert_eq!(status, 201, "{run}");
    let (status, rerun) = create(&base, "/api/runs", "r-1", start.clone()).await;
    assert_eq!(status, 200, "{rerun}");
    assert_eq!(rerun["id"], run["id"]);
    let (status, _) = create(
        &base,
        "/api/runs",
        "r-1",
        json!({"flow": "lunch", "input": "y"}),
    )
    .await;
    assert_eq!(status, 422);
    // The key is the client's, per route: a question's key does not name a run.
    let (status, _) = create(&base, "/api/runs", "k-1", start).await;
    assert_eq!(status, 201);
    // A create that fails keeps nothing under its key: the retry fails the same way, and the
    // key is free for the corrected request.
    let bad = json!({"prompt": "", "session_id": "idem"});
    for _ in 0..2 {
        let (status, refused) = create(&base, "/api/questions", "k-3", bad.clone()).await;
        assert_eq!(status, 422, "{refused}");
        assert_eq!(refused["field"], "prompt", "{refused}");
    }
    let (status, _) = create(&base, "/api/questions", "k-3", ask).await;
    assert_eq!(status, 201);
    // A key must be a short, visible ASCII token.
    let (status, refused) = create(&base, "/api/questions", &"k".repeat(300), json!({})).await;
    assert_eq!(status, 422);
    assert_eq!(refused["field"], "Idempotency-Key", "{refused}");
}
