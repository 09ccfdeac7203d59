//! Answers over time: the long-poll returning as soon as a question is resolved, the event stream
//! replaying pending questions then live ones, and the history and audit pages, newest first.

use super::*;

/// Serves the app on a real socket for tests that need streaming.
async fn served() -> (String, askbridge::Bridge) {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge.clone()).await;
    (base, bridge)
}

#[tokio::test]
async fn wait_returns_as_soon_as_the_question_is_resolved_or_after_the_timeout() {
    let (base, _) = served().await;
    let client = http();
    let q: Value = client
        .post(format!("{base}/api/questions"))
        .json(&ask_body())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = q["id"].as_str().unwrap().to_owned();
    let unresolved: Value = client
        .get(format!("{base}/api/questions/{id}/wait?timeout_s=0.2"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        unresolved["status"], "pending",
        "after the timeout it comes back as it is"
    );
    let waiting = wait_in_background(&base, &id);
    tokio::time::sleep(Duration::from_millis(100)).await;
    client
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": "dayjs"}))
        .send()
        .await
        .unwrap();
    let done = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("returned soon after the reply")
        .unwrap();
    assert_eq!(done["status"], "answered");
    let status = client
        .get(format!("{base}/api/questions/{id}/wait?timeout_s=9999"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, reqwest::StatusCode::UNPROCESSABLE_ENTITY);
}

/// Reads SSE frames (`event:` and `data:` lines) from a streaming response.
struct Sse {
    response: reqwest::Response,
    buffer: String,
}

impl Sse {
    async fn next(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let mut name = String::new();
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if !name.is_empty() {
                    return (name, serde_json::from_str(&data).unwrap_or(Value::Null));
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(5), self.response.chunk())
                .await
                .expect("an event in time")
                .unwrap()
                .expect("stream open");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[tokio::test]
async fn events_replay_pending_questions_then_stream_live_ones() {
    let (base, _) = served().await;
    let client = http();
    let first: Value = client
        .post(format!("{base}/api/questions"))
        .json(&ask_body())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let other_session = json!({"session_id": "s2", "prompt": "Elsewhere?"});
    client
        .post(format!("{base}/api/questions"))
        .json(&other_session)
        .send()
        .await
        .unwrap();
    let response = client
        .get(format!("{base}/api/events?session_id=s1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = Sse {
        response,
        buffer: String::new(),
    };
    let (name, q) = events.next().await;
    assert_eq!(
        (name.as_str(), &q["id"]),
        ("question.asked", &first["id"]),
        "replayed on connect"
    );
    let second: Value = client
        .post(format!("{base}/api/questions"))
        .json(&ask_body())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (name, q) = events.next().await;
    assert_eq!((name.as_str(), &q["id"]), ("question.asked", &second["id"]));
    let id = first["id"].as_str().unwrap();
    client
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": "dayjs"}))
        .send()
        .await
        .unwrap();
    let (name, q) = events.next().await;
    assert_eq!(
        (name.as_str(), q["status"].as_str()),
        ("question.replied", Some("answered"))
    );
    let id = second["id"].as_str().unwrap();
    client
        .post(format!("{base}/api/questions/{id}/reject"))
        .send()
        .await
        .unwrap();
    assert_eq!(events.next().await.0, "question.rejected");
    client
        .post(format!("{base}/api/sessions/s1/cancel"))
        .send()
        .await
        .unwrap();
    let third: Value = client
        .post(format!("{base}/api/questions"))
        .json(&json!({"session_id": "s1", "prompt": "Soon gone", "timeout_s": 0.2}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(events.next().await.1["id"], third["id"]);
    assert_eq!(events.next().await.0, "question.expired");
    let fourth: Value = client
        .post(format!("{base}/api/questions"))
        .json(&ask_body())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(events.next().await.1["id"], fourth["id"]);
    client
        .post(format!("{base}/api/sessions/s1/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(events.next().await.0, "question.cancelled");
}

/// Streams opening one after another share a replay while nothing changes, and never one read
/// before a change: a question answered and another asked between two streams show in the
/// second's replay.
#[tokio::test]
async fn a_new_stream_replays_what_changed_since_the_last_one() {
    let (base, _) = served().await;
    let client = http();
    let ask = |prompt: &str| {
        let request = client
            .post(format!("{base}/api/questions"))
            .json(&json!({"session_id": "s1", "prompt": prompt}))
            .send();
        async move { request.await.unwrap().json::<Value>().await.unwrap() }
    };
    let open = || {
        let request = client.get(format!("{base}/api/events")).send();
        async move {
            Sse {
                response: request.await.unwrap(),
                buffer: String::new(),
            }
        }
    };
    let first = ask("First?").await;
    let (_, replayed) = open().await.next().await;
    assert_eq!(replayed["id"], first["id"]);
    let (_, replayed) = open().await.next().await;
    assert_eq!(replayed["id"], first["id"], "the same replay, shared");
    let id = first["id"].as_str().unwrap();
    client
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": "yes"}))
        .send()
        .await
        .unwrap();
    let second = ask("Second?").await;
    let (name, replayed) = open().await.next().await;
    assert_eq!(
        (name.as_str(), &replayed["id"]),
        ("question.asked", &second["id"]),
        "the answered question is not replayed, the new one is"
    );
}

/// The ops page's paged listings over HTTP: history and the newest-first audit trail page with
/// `next` cursors until the end; bad filters and cursors are refused with the field named.
#[tokio::test]
async fn history_and_audit_page_newest_first_and_refuse_bad_cursors() {
    let (router, _) = router().await;
    let mut resolved = Vec::new();
    for n in 0..7 {
        let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
        let id = q["id"].as_str().unwrap().to_owned();
        let (verb, body) = if n % 3 == 0 {
            ("reject", json!({}))
        } else {
            ("reply", json!({"answer": "dayjs"}))
        };
        let (status, _) = call(
            &router,
            "POST",
            &format!("/api/questions/{id}/{verb}"),
            Some(body),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        resolved.push(id);
    }
    // A refused attempt: a second reply to a resolved question.
    let (status, _) = call(
        &router,
        "POST",
        &format!("/api/questions/{}/reply", resolved[0]),
        Some(json!({"answer": "luxon"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let mut seen = Vec::new();
    let mut uri = "/api/history?limit=3".to_owned();
    loop {
        let (status, page) = call(&router, "GET", &uri, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for q in page["questions"].as_array().unwrap() {
            assert!(q["resolution"].is_object(), "{q}");
            seen.push(q["id"].as_str().unwrap().to_owned());
        }
        match page["next"].as_str() {
            Some(next) => uri = format!("/api/history?limit=3&after={next}"),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 7, "each resolved question once: {seen:?}");
    let (_, declined) = call(&router, "GET", "/api/history?status=declined", None).await;
    assert_eq!(declined["questions"].as_array().unwrap().len(), 3);

    let (status, refused) = call(
        &router,
        "GET",
        "/api/audit?order=newest&outcome=refused",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{refused}");
    let entries = refused["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{refused}");
    assert_eq!(entries[0]["event"], "refused");
    let (_, newest) = call(&router, "GET", "/api/audit?order=newest&limit=2", None).await;
    assert_eq!(newest["entries"].as_array().unwrap().len(), 2);
    let next = newest["next"].as_str().unwrap().to_owned();
    let (_, older) = call(
        &router,
        "GET",
        &format!("/api/audit?order=newest&limit=10&before={next}"),
        None,
    )
    .await;
    assert_eq!(older["entries"].as_array().unwrap().len(), 6, "{older}");
    assert!(older["next"].is_null());

    for (uri, field) in [
        ("/api/history?after=nonsense", "after"),
        ("/api/history?status=pending", "status"),
        ("/api/audit?order=newest&before=x", "before"),
        ("/api/audit?outcome=maybe", "outcome"),
        ("/api/runs?state=sleeping", "state"),
        ("/api/rules?after=12", "after"),
    ] {
        let (status, body) = call(&router, "GET", uri, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {body}");
        assert_eq!(body["field"], field, "{uri}: {body}");
    }
    let (status, runs) = call(&router, "GET", "/api/runs", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(runs, json!({"runs": [], "next": null}));
}
