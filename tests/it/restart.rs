//! askbridge killed with SIGKILL and restarted: no pending question is lost, overdue ones are
//! expired, the rest stay answerable. On Redis (shared store) and on the embedded store.

use crate::support::{Process, RedisServer, eventually, http, post_json, wait_in_background};
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

/// Answers question `id` through `base`'s API.
async fn reply(base: &str, id: &str, answer: &str) {
    let path = format!("/api/questions/{id}/reply");
    let r = post_json(base, &path, json!({ "answer": answer })).await;
    assert_eq!(r.status(), 200);
}

/// Everything in the AOF's files, as text (its base is an RDB preamble: binary, read lossily).
fn aof_text(redis: &RedisServer) -> String {
    let mut text = String::new();
    for file in std::fs::read_dir(redis.dir().join("appendonlydir")).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    text
}

/// Events announce what their script wrote into the records: the records go into the AOF, the
/// events only to the stream (and replicas). After Redis restarts, what was acknowledged is
/// there, and a waiter in one process still hears at once of an answer given in another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stay_out_of_the_aof_and_waiters_hear_of_answers_after_a_restart() {
    let mut redis = RedisServer::start();
    let env = vec![("REDIS_URL", redis.url())];
    let (a, b) = (
        Process::spawn(&["serve"], &env),
        Process::spawn(&["serve"], &env),
    );
    let answered = create(&a.base, "Answered before Redis restarts", 600.0).await;
    reply(&a.base, &answered, "yes").await;
    let aof = aof_text(&redis);
    assert!(
        aof.contains(&answered),
        "the question's records are in the AOF"
    );
    assert!(
        aof.contains("Answered before Redis restarts"),
        "the question itself is in the AOF"
    );
    assert!(
        !aof.contains("question.asked") && !aof.contains("question.replied"),
        "an event went into the AOF"
    );

    redis.restart();
    eventually(
        Duration::from_secs(10),
        "the answer survived the restart",
        || {
            let (base, id) = (b.base.clone(), answered.clone());
            async move { status(&base, &id).await == "answered" }
        },
    )
    .await;
    // Both processes' event readers are back: a waiter in `a` hears of `b`'s answer as it lands.
    let later = create(&a.base, "Asked after Redis restarted", 600.0).await;
    let waiter = wait_in_background(&a.base, &later);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let began = std::time::Instant::now();
    reply(&b.base, &later, "no").await;
    let waited = waiter.await.unwrap();
    assert_eq!(waited["status"], "answered", "{waited}");
    assert_eq!(waited["resolution"]["value"], "no", "{waited}");
    // The waiters' safety net rereads once a minute: this came from the event stream.
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "the waiter heard after {:?}",
        began.elapsed()
    );
}

/// A process whose event reader lost Redis re-reads its waiters' questions when it is back:
/// events written while it was away may be gone (here deleted, as a Redis restart drops those not
/// read, being out of the AOF), and its waiters must not sit until the once-a-minute recheck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_back_from_an_outage_rechecks_its_waiters() {
    let redis = RedisServer::start();
    let env = vec![("REDIS_URL", redis.url())];
    let (a, b) = (
        Process::spawn(&["serve"], &env),
        Process::spawn(&["serve"], &env),
    );
    let id = create(&a.base, "Answered while a was not reading", 600.0).await;
    let waiter = wait_in_background(&a.base, &id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut connection = redis.connection().await;
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut connection)
        .await
        .unwrap();
    let readers: Vec<&str> = clients
        .lines()
        .filter(|l| l.contains("cmd=xread"))
        .filter_map(|l| l.split_whitespace().next()?.strip_prefix("id="))
        .collect();
    assert_eq!(readers.len(), 2, "one event reader per process: {clients}");
    let began = std::time::Instant::now();
    for reader in readers {
        let _: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(reader)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    // The readers retry after 200 ms: the answer and its event, then the event's loss, before.
    reply(&b.base, &id, "yes").await;
    let streams: Vec<String> = redis::cmd("KEYS")
        .arg("askbridge:*:events")
        .query_async(&mut connection)
        .await
        .unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg(&streams)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(
        began.elapsed() < Duration::from_millis(200),
        "too slow to beat the readers' retry: {:?}",
        began.elapsed()
    );
    let waited = waiter.await.unwrap();
    assert_eq!(waited["status"], "answered", "{waited}");
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "the waiter heard after {:?}",
        began.elapsed()
    );
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
