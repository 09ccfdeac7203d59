//! The HTTP API: routes called through `app(state)` with `oneshot`, and a real server for the
//! long-poll and the event stream.
//!
//! By feature: here questions asked, answered, refused and cancelled; `ops` (the API token,
//! health, metrics, stats and the ops page); `streams` (the long-poll, the event stream, the
//! history and audit pages).

use crate::support::{eventually_some, http, memory_bridge, serve_api, wait_in_background};
use askbridge::config::Secret;
use askbridge::http::{AppState, app};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;
use tower::ServiceExt;

mod ops;
mod streams;

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
