//! A client following a run: question by question with `run wait`, and step by step with one
//! round trip each.

use super::*;
use askbridge::store::redis::{
    DEFAULT_EVENTS_GATHER, DEFAULT_REPLICA_WAIT, RedisOptions, RedisStore,
};

/// Two processes sharing one Redis, each serving the API (their base URLs): the first runs the
/// example flows, the second none, its event reader pausing `gather` after each read that brought
/// events. The Redis lives as long as the fixture returned.
async fn two_processes(gather: Duration) -> (crate::support::RedisFixture, [String; 2]) {
    let fixture = crate::support::redis_store().await;
    let flows = askbridge::demo::with_example_flows(Flows::new()).unwrap();
    let (driver, _) = bridge_running(fixture.store.clone(), flows).await;
    let other_store = RedisStore::connect(RedisOptions {
        url: fixture.server.url(),
        cluster: false,
        replica_wait: DEFAULT_REPLICA_WAIT,
        events_gather: gather,
        prefix: "askbridge".into(),
        store: StoreOptions::default(),
    })
    .await
    .unwrap();
    let (other, _) = bridge_over(Arc::new(other_store)).await;
    let bases = [serve_api(driver).await, serve_api(other).await];
    (fixture, bases)
}

/// `POST url` with `body`: the status, and the JSON answered.
async fn post(url: String, body: Value) -> (u16, Value) {
    let response = http().post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json::<Value>().await.unwrap())
}

/// `GET /api/runs/{id}/wait` hands a client each next question of a run, and its end, without
/// polling: on the process that drives the run, and on another one sharing the Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_follows_a_run_question_by_question_with_run_wait() {
    let (_redis, [driver_base, watcher_base]) = two_processes(DEFAULT_EVENTS_GATHER).await;
    let run: Value = http()
        .post(format!("{driver_base}/api/runs"))
        .json(&json!({"flow": "release", "input": "2.0"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    let mut after = String::new();
    let mut prompts = Vec::new();
    for (n, answer) in [json!("beta"), json!("Faster."), json!(true)]
        .into_iter()
        .enumerate()
    {
        // Alternate between the two processes' endpoints.
        let base = if n % 2 == 0 {
            &driver_base
        } else {
            &watcher_base
        };
        let waited: Value = http()
            .get(format!(
                "{base}/api/runs/{run_id}/wait?after={after}&timeout_s=10"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(waited["state"], "waiting", "{waited}");
        let question = &waited["question"];
        assert_eq!(question["id"], waited["waiting_on"]);
        prompts.push(question["prompt"].as_str().unwrap().to_owned());
        after = question["id"].as_str().unwrap().to_owned();
        let replied = http()
            .post(format!("{base}/api/questions/{after}/reply"))
            .json(&json!({"answer": answer}))
            .send()
            .await
            .unwrap();
        let status = replied.status();
        assert_eq!(status, 200, "{n}: {}", replied.text().await.unwrap());
    }
    let finished: Value = http()
        .get(format!(
            "{watcher_base}/api/runs/{run_id}/wait?after={after}&timeout_s=10"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(finished["state"], "done", "{finished}");
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Published 2.0 on beta")
    );
    assert_eq!(
        prompts,
        [
            "Release 2.0 on which channel?",
            "One line for the release notes?",
            "Publish 2.0 on beta?"
        ]
    );
    // A wait that nothing answers returns the run as it is when the time is up.
    let unknown = http()
        .get(format!(
            "{driver_base}/api/runs/r0000000000zz/wait?timeout_s=0"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// `POST /api/runs` with `wait_s` responds at the run's first question, and
/// `POST /api/runs/{id}/answer` answers the question the run waits on and responds with its next
/// step: one round trip per step, on either of two processes sharing the Redis. Bad answers and
/// stale question ids change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_answers_a_run_step_by_step_in_one_round_trip_each() {
    let (_redis, bases) = two_processes(DEFAULT_EVENTS_GATHER).await;
    let (status, first) = post(
        format!("{}/api/runs", bases[0]),
        json!({"flow": "release", "input": "2.0", "wait_s": 10}),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["state"], "waiting", "{first}");
    assert_eq!(first["question"]["prompt"], "Release 2.0 on which channel?");
    let run_id = first["id"].as_str().unwrap().to_owned();
    let first_question = first["question"]["id"].as_str().unwrap().to_owned();

    // An answer that does not fit (two values for a one-value question): refused, the run
    // still waits on the same question.
    let (status, refused) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": ["beta", "stable"]}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    // A question id the run does not wait on: refused, nothing answered.
    let (status, stale) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": "beta", "question_id": "q000000000"}),
    )
    .await;
    assert_eq!(status, 409, "{stale}");
    assert_eq!(stale["waiting_on"], first_question.as_str(), "{stale}");

    let mut prompts = Vec::new();
    let mut step = first;
    for (n, answer) in [json!("beta"), json!("Faster.")].into_iter().enumerate() {
        let question_id = step["question"]["id"].clone();
        let (status, next) = post(
            format!("{}/api/runs/{run_id}/answer", bases[(n + 1) % 2]),
            json!({"answer": answer, "question_id": question_id, "timeout_s": 10}),
        )
        .await;
        assert_eq!(status, 200, "{next}");
        assert_eq!(next["state"], "waiting", "{next}");
        assert_ne!(next["question"]["id"], question_id);
        prompts.push(next["question"]["prompt"].as_str().unwrap().to_owned());
        step = next;
    }
    assert_eq!(
        prompts,
        ["One line for the release notes?", "Publish 2.0 on beta?"]
    );
    // The last answer, without naming the question: the run's end comes back.
    let (status, done) = post(
        format!("{}/api/runs/{run_id}/answer", bases[0]),
        json!({"answer": true, "timeout_s": 10}),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["state"], "done", "{done}");
    assert!(
        done["result"]
            .as_str()
            .unwrap()
            .starts_with("Published 2.0 on beta"),
        "{done}"
    );
    // Nothing left to answer.
    let (status, over) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": true}),
    )
    .await;
    assert_eq!(status, 409, "{over}");
    assert!(
        over["error"].as_str().unwrap().contains("it is done"),
        "{over}"
    );
    let (status, unknown) = post(
        format!("{}/api/runs/r0000000000zz/answer", bases[0]),
        json!({"answer": true}),
    )
    .await;
    assert_eq!(status, 404, "{unknown}");
}

/// A run's last answer sent to a process that has not yet heard the run end: it answers from
/// the stored run ("it is done"), not from what it last heard ("already answered"). The other
/// process's reader pauses 2 s after each read that brought events (`events_gather`), and an
/// ask it reads just before the last answer starts such a pause: the run's end reaches it only
/// after it has answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_to_a_run_ended_elsewhere_is_told_it_is_done() {
    let (_redis, bases) = two_processes(Duration::from_secs(2)).await;
    let (_, mut step) = post(
        format!("{}/api/runs", bases[0]),
        json!({"flow": "release", "input": "2.0", "wait_s": 10}),
    )
    .await;
    let run_id = step["id"].as_str().unwrap().to_owned();
    for answer in [json!("beta"), json!("Faster.")] {
        let body =
            json!({"answer": answer, "question_id": step["question"]["id"], "timeout_s": 10});
        let (status, next) = post(format!("{}/api/runs/{run_id}/answer", bases[0]), body).await;
        assert_eq!(status, 200, "{next}");
        step = next;
    }
    // The other process hears the run wait on its last question (its pause after the read
    // that brought it ends), then an ask of no concern starts a new pause.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (status, _) = post(
        format!("{}/api/questions", bases[0]),
        json!({"session_id": "elsewhere", "prompt": "Unrelated?"}),
    )
    .await;
    assert_eq!(status, 201);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, done) = post(
        format!("{}/api/runs/{run_id}/answer", bases[0]),
        json!({"answer": true, "timeout_s": 10}),
    )
    .await;
    assert_eq!(
        (status, done["state"].as_str()),
        (200, Some("done")),
        "{done}"
    );
    let (status, late) = post(
        format!("{}/api/runs/{run_id}/answer", bases[1]),
        json!({"answer": true}),
    )
    .await;
    assert_eq!(status, 409, "{late}");
    let told = late["error"].as_str().unwrap();
    assert!(told.contains("it is done"), "{late}");
}
