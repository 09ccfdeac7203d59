//! askbridge killed with SIGKILL and restarted: no pending question is lost, overdue ones are
//! expired, the rest stay answerable. On Redis (shared store) and on the embedded store.

use crate::support::{Process, RedisServer, eventually, http};
use serde_json::{Value, json};
use std::time::Duration;

async fn create(base: &str, prompt: &str, timeout_s: f64) -> String {
    let body = json!({"session_id": "restart", "prompt": prompt, "options": ["yes", "no"], "timeout_s": timeout_s});
    let q: Value = http()
        .post(format!("{base}/api/questions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    q["id"].as_str().expect("created").to_owned()
}

async fn status(base: &str, id: &str) -> String {
    let q: Value = http()
        .get(format!("{base}/api/questions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    q["status"].as_str().unwrap_or("missing").to_owned()
}

async fn kill_and_restart(env: Vec<(&'static str, String)>) {
    let mut first = Process::spawn(&["serve"], &env);
    let keep = create(&first.base, "Still there after a crash?", 600.0).await;
    let overdue = create(&first.base, "Expires while askbridge is down", 1.0).await;
    let answered = create(&first.base, "Answered before the crash", 600.0).await;
    let r = http()
        .post(format!("{}/api/questions/{answered}/reply", first.base))
        .json(&json!({"answer": "no"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    first.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = Process::spawn(&["serve"], &env);
    let base = second.base.clone();
    eventually(
        Duration::from_secs(5),
        "the overdue question expired after the restart",
        || {
            let (base, overdue) = (base.clone(), overdue.clone());
            async move { status(&base, &overdue).await == "expired" }
        },
    )
    .await;
    assert_eq!(
        status(&base, &keep).await,
        "pending",
        "the pending question survived"
    );
    assert_eq!(status(&base, &answered).await, "answered");
    let pending: Value = http()
        .get(format!("{base}/api/questions?session_id=restart"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = pending["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![keep.as_str()]);
    // Ops see the same through `askbridge pending`.
    let table = pending_cli(&base, &[]).await;
    assert!(
        table.starts_with("ID") && table.contains(&keep) && !table.contains(&overdue),
        "{table}"
    );
    let json: Value =
        serde_json::from_str(&pending_cli(&base, &["--json", "--session", "restart"]).await)
            .unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
    let r = http()
        .post(format!("{base}/api/questions/{keep}/reply"))
        .json(&json!({"answer": "yes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "still answerable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_on_redis_loses_nothing() {
    let redis = RedisServer::start();
    kill_and_restart(vec![("REDIS_URL", redis.url())]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_and_restart_on_the_embedded_store_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    kill_and_restart(vec![(
        "ASKBRIDGE_DATA_DIR",
        dir.path().display().to_string(),
    )])
    .await;
}

async fn pending_cli(base: &str, extra: &[&str]) -> String {
    let output = tokio::process::Command::new(crate::support::askbridge_binary())
        .args(["pending", "--url", base])
        .args(extra)
        .env_clear()
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
