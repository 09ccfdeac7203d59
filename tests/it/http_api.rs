//! The HTTP API: routes called through `app(state)` with `oneshot`, and a real server for the
//! long-poll and the event stream.

use crate::support::{eventually_some, http, memory_bridge, serve_api, wait_in_background};
use askbridge::config::Secret;
use askbridge::http::{AppState, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;
use tower::ServiceExt;

async fn call(
    router: &Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call_with(router, method, uri, body.map(|b| b.to_string()), None).await
}

async fn call_with(
    router: &Router,
    method: &str,
    uri: &str,
    body: Option<String>,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request
        .body(body.map(Body::from).unwrap_or_else(Body::empty))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

async fn router() -> (Router, askbridge::Bridge) {
    let (bridge, _) = memory_bridge().await;
    (app(AppState::new(bridge.clone(), None)), bridge)
}

fn ask_body() -> Value {
    json!({"session_id": "s1", "prompt": "Which library?", "options": ["dayjs", "date-fns", "luxon"], "targets": ["chat:1"]})
}

#[tokio::test]
async fn create_get_list_and_reply() {
    let (router, _) = router().await;
    let (status, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
    assert_eq!(status, StatusCode::CREATED);
    for field in [
        "id",
        "session_id",
        "kind",
        "prompt",
        "detail",
        "options",
        "multi",
        "allow_custom",
        "created_at",
        "expires_at",
        "default",
        "answerers",
        "targets",
        "status",
    ] {
        assert!(q.get(field).is_some(), "missing {field} in {q}");
    }
    assert_eq!(q["status"], "pending");
    assert_eq!(q["kind"], "ask");
    let id = q["id"].as_str().unwrap();
    let (status, got) = call(&router, "GET", &format!("/api/questions/{id}"), None).await;
    assert_eq!((status, &got["id"]), (StatusCode::OK, &q["id"]));
    let (status, listed) = call(&router, "GET", "/api/questions?session_id=s1", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["questions"].as_array().unwrap().len(), 1);
    let (status, resolved) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reply"),
        Some(json!({"answer": "Luxon", "by": "ops:alice"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{resolved}");
    assert_eq!(resolved["status"], "answered");
    assert_eq!(resolved["resolution"]["value"], "luxon");
    assert_eq!(
        resolved["resolution"]["by"], "api",
        "the caller is the API, whatever it says"
    );
    assert_eq!(resolved["resolution"]["by_name"], "ops:alice");
    assert_eq!(resolved["resolution"]["via"], "api");
    let (status, conflict) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reply"),
        Some(json!({"answer": "dayjs"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(conflict["resolution"]["value"], "luxon");
    assert!(
        conflict["error"]
            .as_str()
            .unwrap()
            .starts_with("Already answered: luxon")
    );
    let (_, answered) = call(&router, "GET", "/api/questions?status=answered", None).await;
    assert_eq!(answered["questions"].as_array().unwrap().len(), 1);
    let (_, pending) = call(&router, "GET", "/api/questions", None).await;
    assert_eq!(pending["questions"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn answers_that_do_not_fit_are_422_and_the_question_stays_pending() {
    let (router, _) = router().await;
    let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
    let id = q["id"].as_str().unwrap();
    for bad in [json!("moment"), json!(["dayjs"]), json!(true)] {
        let (status, body) = call(
            &router,
            "POST",
            &format!("/api/questions/{id}/reply"),
            Some(json!({"answer": bad})),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("Choose 1-3"),
            "{body}"
        );
    }
    let (_, now) = call(&router, "GET", &format!("/api/questions/{id}"), None).await;
    assert_eq!(now["status"], "pending");
}

#[tokio::test]
async fn kinds_multi_confirm_and_free_text() {
    let (router, _) = router().await;
    let multi =
        json!({"session_id": "s", "prompt": "Which?", "options": ["a", "b", "c"], "multi": true});
    let (_, q) = call(&router, "POST", "/api/questions", Some(multi)).await;
    let (status, r) = call(
        &router,
        "POST",
        &format!("/api/questions/{}/reply", q["id"].as_str().unwrap()),
        Some(json!({"answer": ["c", "A"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(r["resolution"]["value"], json!(["a", "c"]));
    let confirm = json!({"session_id": "s", "kind": "confirm", "prompt": "Ship?"});
    let (_, q) = call(&router, "POST", "/api/questions", Some(confirm)).await;
    let (_, r) = call(
        &router,
        "POST",
        &format!("/api/questions/{}/reply", q["id"].as_str().unwrap()),
        Some(json!({"answer": false})),
    )
    .await;
    assert_eq!(r["resolution"]["value"], false);
    let text = json!({"session_id": "s", "prompt": "Name?"});
    let (_, q) = call(&router, "POST", "/api/questions", Some(text)).await;
    assert_eq!(q["allow_custom"], true);
    let (_, r) = call(
        &router,
        "POST",
        &format!("/api/questions/{}/reply", q["id"].as_str().unwrap()),
        Some(json!({"answer": "Aurora"})),
    )
    .await;
    assert_eq!(r["resolution"]["value"], "Aurora");
}

#[tokio::test]
async fn reject_with_and_without_a_message() {
    let (router, _) = router().await;
    let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
    let id = q["id"].as_str().unwrap();
    let (status, r) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reject"),
        Some(json!({"message": "not now"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    assert_eq!(r["status"], "declined");
    assert_eq!(r["resolution"]["message"], "not now");
    let (status, _) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reject"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
    let (status, r) = call(
        &router,
        "POST",
        &format!("/api/questions/{}/reject", q["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "an empty body is fine: {r}");
    assert_eq!(r["resolution"]["message"], Value::Null);
}

#[tokio::test]
async fn malformed_requests_name_what_is_wrong() {
    let (router, _) = router().await;
    let (status, body) = call_with(
        &router,
        "POST",
        "/api/questions",
        Some("{not json".into()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call(
        &router,
        "POST",
        "/api/questions",
        Some(json!({"session_id": "s"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "prompt", "{body}");
    let (status, body) = call(
        &router,
        "POST",
        "/api/questions",
        Some(json!({"session_id": "s", "prompt": "x", "colour": 1})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "colour", "{body}");
    let (status, body) = call(
        &router,
        "POST",
        "/api/questions",
        Some(json!({"session_id": "s", "prompt": "x", "options": ["a", "A"]})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "options", "{body}");
    let (status, body) = call(
        &router,
        "POST",
        "/api/questions",
        Some(json!({"session_id": "s", "prompt": "x", "targets": ["telegram:1"]})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "targets", "{body}");
    let (status, _) = call(&router, "GET", "/api/questions/zzzzzzzzzz", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(&router, "GET", "/api/questions/not-an-id", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = call(
        &router,
        "POST",
        "/api/questions/zzzzzzzzzz/reply",
        Some(json!({"answer": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = call(&router, "GET", "/api/questions?status=maybe", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["field"], "status");
}

#[tokio::test]
async fn answerers_apply_to_the_api_too() {
    let (router, _) = router().await;
    let body = json!({"session_id": "s", "prompt": "Deploy?", "options": ["go"], "answerers": ["telegram:42"]});
    let (_, q) = call(&router, "POST", "/api/questions", Some(body)).await;
    let id = q["id"].as_str().unwrap();
    let (status, _) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reply"),
        Some(json!({"answer": "go"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &router,
        "POST",
        &format!("/api/questions/{id}/reply"),
        Some(json!({"answer": "go", "by": "telegram:42"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "`by` names the caller; it does not make it an answerer"
    );
}

#[tokio::test]
async fn cancel_session_counts_what_it_cancelled() {
    let (router, _) = router().await;
    for _ in 0..3 {
        call(&router, "POST", "/api/questions", Some(ask_body())).await;
    }
    let (status, body) = call(&router, "POST", "/api/sessions/s1/cancel", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"cancelled": 3}));
    let (_, body) = call(
        &router,
        "GET",
        "/api/questions?status=cancelled&session_id=s1",
        None,
    )
    .await;
    assert_eq!(body["questions"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn the_api_token_is_required_when_set() {
    let (bridge, _) = memory_bridge().await;
    let router = app(AppState::new(bridge, Some(&Secret::new("s3cret"))));
    let (status, body) = call_with(&router, "GET", "/api/questions", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer")
    );
    let (status, body) = call_with(&router, "GET", "/api/questions", None, Some("wrong")).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (StatusCode::UNAUTHORIZED, "wrong API token")
    );
    let (status, _) = call_with(&router, "GET", "/api/questions", None, Some("s3cret")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call_with(&router, "GET", "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK, "health checks need no token");
}

#[tokio::test]
async fn healthz_and_metrics() {
    let (router, _) = router().await;
    let (status, body) = call(&router, "GET", "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["topology"]["kind"], "memory", "{body}");
    let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
    call(&router, "POST", "/api/questions", Some(ask_body())).await;
    call(
        &router,
        "POST",
        &format!("/api/questions/{}/reply", q["id"].as_str().unwrap()),
        Some(json!({"answer": "dayjs"})),
    )
    .await;
    let text = eventually_some(Duration::from_secs(5), "metrics updated", || {
        let router = router.clone();
        async move {
            let (_, body) = call(&router, "GET", "/metrics", None).await;
            let text = body.as_str().unwrap_or_default().to_owned();
            text.contains("askbridge_questions_resolved_total{outcome=\"answered\",via=\"api\"} 1")
                .then_some(text)
        }
    })
    .await;
    assert!(text.contains("askbridge_pending_questions 1"), "{text}");
    assert!(text.contains("askbridge_questions_asked_total 2"), "{text}");
    assert!(text.contains("askbridge_resolve_seconds_count 1"), "{text}");
    assert!(text.contains("askbridge_store_ok 1"), "{text}");
    assert!(text.contains("askbridge_store_nodes 1"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[tokio::test]
async fn stats_count_the_last_hour_and_time_to_answer() {
    let (router, bridge) = router().await;
    let (_, empty) = call(&router, "GET", "/api/stats", None).await;
    assert_eq!(
        empty,
        json!({"pending": 0, "last_hour": {"answered": 0, "declined": 0, "expired": 0, "cancelled": 0},
               "time_to_answer_s": {"p50": null, "p99": null}})
    );
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (_, q) = call(&router, "POST", "/api/questions", Some(ask_body())).await;
        ids.push(q["id"].as_str().unwrap().to_owned());
    }
    let expired = json!({"session_id": "s2", "prompt": "Soon?", "timeout_s": 0.05});
    call(&router, "POST", "/api/questions", Some(expired)).await;
    for id in &ids[..2] {
        let (status, _) = call(
            &router,
            "POST",
            &format!("/api/questions/{id}/reply"),
            Some(json!({"answer": "dayjs"})),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }
    call(
        &router,
        "POST",
        &format!("/api/questions/{}/reject", ids[2]),
        None,
    )
    .await;
    let stats = eventually_some(
        Duration::from_secs(10),
        "the short question expired",
        || {
            let router = router.clone();
            async move {
                let (status, stats) = call(&router, "GET", "/api/stats", None).await;
                assert_eq!(status, StatusCode::OK);
                (stats["last_hour"]["expired"] == 1).then_some(stats)
            }
        },
    )
    .await;
    assert_eq!(stats["pending"], 2, "{stats}");
    assert_eq!(stats["last_hour"]["answered"], 2, "{stats}");
    assert_eq!(stats["last_hour"]["declined"], 1, "{stats}");
    assert_eq!(stats["last_hour"]["cancelled"], 0, "{stats}");
    // Both answers came within this test's few seconds of their question.
    let answered: Vec<askbridge::core::Question> = serde_json::from_value(
        call(&router, "GET", "/api/questions?status=answered", None)
            .await
            .1["questions"]
            .clone(),
    )
    .unwrap();
    let mut waits: Vec<f64> = answered
        .iter()
        .map(|q| {
            let at = q.resolution.as_ref().unwrap().at;
            at.since(q.created_at).as_millis() as f64 / 1000.0
        })
        .collect();
    waits.sort_by(f64::total_cmp);
    assert_eq!(stats["time_to_answer_s"]["p50"], json!(waits[0]), "{stats}");
    assert_eq!(stats["time_to_answer_s"]["p99"], json!(waits[1]), "{stats}");
    bridge
        .cancel_session("s1", askbridge::core::Actor::new("api", "api"), None)
        .await
        .unwrap();
    let (_, stats) = call(&router, "GET", "/api/stats", None).await;
    assert_eq!(stats["pending"], 0, "{stats}");
    assert_eq!(stats["last_hour"]["cancelled"], 2, "{stats}");
}

#[tokio::test]
async fn the_ops_page_is_served_without_a_token_under_a_strict_policy() {
    let (bridge, _) = memory_bridge().await;
    let router = app(AppState::new(bridge, Some(&Secret::new("s3cret"))));
    for (path, content_type, must_contain) in [
        (
            "/",
            "text/html; charset=utf-8",
            r#"<script src="ops.js" defer>"#,
        ),
        ("/ops.js", "text/javascript; charset=utf-8", "api/events"),
        ("/ops.css", "text/css; charset=utf-8", ":focus-visible"),
    ] {
        let request = Request::builder().uri(path).body(Body::empty()).unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], content_type, "{path}");
        assert_eq!(
            headers["content-security-policy"],
            askbridge::http::ops_page::CONTENT_SECURITY_POLICY,
            "{path}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["x-frame-options"], "DENY");
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains(must_contain), "{path} lacks {must_contain}");
        // Works offline: nothing is loaded from another host.
        for remote in ["http://", "https://", "//cdn", "@import", "url("] {
            assert!(!text.contains(remote), "{path} refers to {remote}");
        }
    }
    let policy = askbridge::http::ops_page::CONTENT_SECURITY_POLICY;
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(directive), "{directive}");
    }
    assert!(!policy.contains("unsafe"), "{policy}");
    let (status, _) = call_with(&router, "GET", "/api/stats", None, None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "the data stays behind the token"
    );
    let (status, _) = call_with(&router, "GET", "/api/stats", None, Some("s3cret")).await;
    assert_eq!(status, StatusCode::OK);
}

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
