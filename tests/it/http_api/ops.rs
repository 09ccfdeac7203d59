//! The API's guard and its ops surfaces: the token required when set, health and metrics, the
//! last hour's stats, and the ops page served without a token under a strict policy.

use super::*;

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
        ("/batch.js", "text/javascript; charset=utf-8", "onBatch"),
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
