//! Flows and runs over HTTP: a flow endpoint called signed and resumed with its journal (and a
//! wrong signature refused), callbacks signed, runs started over the API, and a run asking for
//! approval bound to its action.

use super::*;

/// A flow endpoint in the test: checks askbridge's signature with its own secret, then plays a
/// two-question flow from the journal it receives.
async fn flow_endpoint(secret: &'static str) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let recorder = seen.clone();
    let route = axum::routing::post(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let recorder = recorder.clone();
            async move {
                let signature = headers
                    .get(signing::SIGNATURE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default();
                if signing::verify(
                    secret.as_bytes(),
                    signature,
                    &body,
                    Millis::now(),
                    signing::DEFAULT_TOLERANCE,
                )
                .is_err()
                {
                    return (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"error": "bad signature"})),
                    );
                }
                let request: Value = serde_json::from_slice(&body).unwrap();
                recorder.lock().unwrap().push(request.clone());
                let journal = request["journal"].as_array().unwrap();
                let reply = match journal.len() {
                    0 => json!({"ask": {"prompt": "Which region?", "options": ["eu", "us"]}}),
                    1 => {
                        json!({"ask": {"kind": "confirm", "prompt": format!("Scale {} to 3 nodes?", journal[0]["value"].as_str().unwrap())}})
                    }
                    _ => {
                        json!({"reply": format!("scaled {} ({})", journal[0]["value"].as_str().unwrap(), journal[1]["value"])})
                    }
                };
                (axum::http::StatusCode::OK, axum::Json(reply))
            }
        },
    );
    let url = format!(
        "{}/flow",
        serve(axum::Router::new().route("/flow", route)).await
    );
    (url, seen)
}

/// A bridge with the endpoint's flow registered as `scale`, signing with `secret`, and a run of
/// it started.
async fn scale_run(secret: &str) -> (Bridge, Arc<FakeChannel>, Arc<std::sync::Mutex<Vec<Value>>>) {
    let (url, seen) = flow_endpoint("endpoint-secret").await;
    let flow = HttpFlow::new("scale", &url, Secret::new(secret));
    let flows = Flows::new().register("scale", Arc::new(flow)).unwrap();
    let (bridge, chat) = memory_bridge_running(flows).await;
    bridge
        .handle(message("chat:7", "chat:1", "/scale web"))
        .await
        .unwrap();
    (bridge, chat, seen)
}

#[tokio::test]
async fn an_http_flow_endpoint_is_called_signed_and_resumed_with_its_journal() {
    let (bridge, chat, seen) = scale_run("endpoint-secret").await;
    let region = waiting_question(&bridge, "chat:1", "Which region?").await;
    bridge
        .handle(message("chat:7", "chat:1", "eu"))
        .await
        .unwrap();
    waiting_question(&bridge, "chat:1", "Scale eu to 3 nodes?").await;
    bridge
        .handle(message("chat:7", "chat:1", "y"))
        .await
        .unwrap();
    assert_eq!(
        wait_said(&chat, "✓ scale").await,
        "✓ scale: scaled eu (true)"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["input"], "web");
    assert_eq!(requests[0]["origin"]["user"], "chat:7");
    assert_eq!(requests[1]["journal"][0]["question_id"], region.id.as_str());
    assert_eq!(requests[1]["journal"][0]["status"], "answered");
    assert_eq!(requests[2]["journal"][1]["value"], true);
}

#[tokio::test]
async fn an_http_flow_refusing_a_wrong_signature_fails_the_run_clearly() {
    let (_bridge, chat, seen) = scale_run("not-the-secret").await;
    assert_eq!(
        wait_said(&chat, "scale failed").await,
        "✗ scale failed: the flow endpoint answered 401 Unauthorized"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "the endpoint acted on nothing"
    );
}

#[tokio::test]
async fn callback_urls_get_the_resolved_question_signed() {
    let received = Arc::new(std::sync::Mutex::new(Vec::<(String, Value)>::new()));
    let recorder = received.clone();
    let route = axum::routing::post(
        move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let recorder = recorder.clone();
            async move {
                let signature = headers
                    .get(signing::SIGNATURE_HEADER)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                let ok = signing::verify(
                    b"callback-secret",
                    &signature,
                    &body,
                    Millis::now(),
                    signing::DEFAULT_TOLERANCE,
                )
                .is_ok();
                recorder
                    .lock()
                    .unwrap()
                    .push((ok.to_string(), serde_json::from_slice(&body).unwrap()));
                axum::http::StatusCode::NO_CONTENT
            }
        },
    );
    let callback = format!(
        "{}/done",
        serve(axum::Router::new().route("/done", route)).await
    );
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            signing_secret: Some(Secret::new("callback-secret")),
            // The test's receiver is on loopback, which callbacks may not reach by default.
            callback_egress: askbridge::egress::Egress::public_only()
                .allow(["127.0.0.1"])
                .unwrap(),
            ..BridgeOptions::default()
        })
        .start()
        .await
        .unwrap();
    let router = app(AppState::new(bridge.clone(), None));
    let base = serve(router).await;
    let body =
        json!({"session_id": "cb", "prompt": "Ship?", "kind": "confirm", "callback_url": callback});
    let q: Value = http()
        .post(format!("{base}/api/questions"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = q["id"].as_str().unwrap();
    http()
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&json!({"answer": true}))
        .send()
        .await
        .unwrap();
    let (verified, question) = eventually_some(WITHIN, "the callback", || {
        let received = received.clone();
        async move { received.lock().unwrap().first().cloned() }
    })
    .await;
    assert_eq!(verified, "true", "signed with the shared secret");
    assert_eq!(question["id"], id);
    assert_eq!(question["resolution"]["value"], true);
    // Without a secret configured, callback URLs are refused rather than sent unsigned.
    let (plain, _) = memory_bridge().await;
    let mut with_callback = NewQuestion::ask("x").session("s");
    with_callback.callback_url = Some("http://127.0.0.1:9/cb".into());
    assert!(matches!(
        plain.create(with_callback).await,
        Err(Error::Model(askbridge_core::Error::Invalid {
            field: "callback_url",
            ..
        }))
    ));
}

#[tokio::test]
async fn runs_start_over_the_http_api_too() {
    let counters = Counters::default();
    let (bridge, _) = memory_bridge_running(trip(&counters)).await;
    let router = app(AppState::new(bridge.clone(), None));
    let base = serve(router).await;
    let response = http()
        .post(format!("{base}/api/runs"))
        .json(&json!({"flow": "trip", "input": "Bern"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let run: Value = response.json().await.unwrap();
    let run_id = run["id"].as_str().unwrap().to_owned();
    let question = eventually_some(WITHIN, "the run's question", || {
        let bridge = bridge.clone();
        let run_id = run_id.clone();
        async move {
            bridge
                .list(&ListFilter::pending())
                .await
                .unwrap()
                .into_iter()
                .find(|q| q.run_id.as_ref().is_some_and(|r| r.as_str() == run_id))
        }
    })
    .await;
    assert!(question.targets.is_empty(), "no chat: answered over HTTP");
    assert_eq!(question.answerers, vec!["api".to_owned()]);
    let r = http()
        .post(format!("{base}/api/questions/{}/reply", question.id))
        .json(&json!({"answer": "car"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let bad = http()
        .post(format!("{base}/api/runs"))
        .json(&json!({"flow": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    let stored: Value = http()
        .get(format!("{base}/api/runs/{run_id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored["flow"], "trip");
}

#[tokio::test]
async fn a_run_asks_for_approval_and_is_bound_to_the_action() {
    // Without approvers, a run's approval fails the run, clearly: nobody may approve it.
    let clean = Flows::new()
        .flow("clean", "cleans", |ctx: FlowContext| async move {
            let action = askbridge_core::Action::new("shell", json!({"command": "make clean"}));
            ctx.approve(NewQuestion::ask("May I clean?").approve(action))
                .await?;
            Ok("cleaned".into())
        })
        .unwrap();
    let (unconfigured, unconfigured_chat) = memory_bridge_running(clean).await;
    unconfigured
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let failure = wait_said(&unconfigured_chat, "clean failed").await;
    assert!(failure.contains("an approval needs approvers"), "{failure}");
    // With the starter configured as an approver, the run waits for the decision.
    let command = Arc::new(std::sync::Mutex::new("rm -rf build/".to_owned()));
    let current = command.clone();
    let clean = Flows::new()
        .flow("clean", "cleans the build", move |ctx: FlowContext| {
            let command = current.lock().unwrap().clone();
            async move {
                let action = askbridge_core::Action::new("shell", json!({"command": command}));
                let approval = ctx
                    .approve(NewQuestion::ask("May I clean?").approve(action.clone()))
                    .await?;
                assert!(approval.covers(&action));
                Ok(format!("ran `{command}` ({approval:?})"))
            }
        })
        .unwrap();
    let chat = FakeChannel::new("chat");
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            approvers: vec!["chat:7".into()],
            ..BridgeOptions::default()
        })
        .channel(chat.clone())
        .runner(Arc::new(clean))
        .start()
        .await
        .unwrap();
    bridge
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let q = waiting_question(&bridge, "chat:1", "May I clean?").await;
    assert_eq!(
        q.answerers,
        vec!["chat:7".to_owned()],
        "the configured approvers"
    );
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once", q.id),
        ))
        .await
        .unwrap();
    assert!(
        wait_said(&chat, "✓ clean")
            .await
            .starts_with("✓ clean: ran `rm -rf build/` (Once")
    );
    // The action changes while a second run waits: the approval does not stretch to it.
    bridge
        .handle(message("chat:7", "chat:1", "/clean"))
        .await
        .unwrap();
    let second = eventually_some(WITHIN, "the second approval", || {
        let bridge = bridge.clone();
        let first = q.id.clone();
        async move {
            bridge
                .list(&ListFilter::pending())
                .await
                .unwrap()
                .into_iter()
                .find(|p| p.id != first && p.prompt == "May I clean?")
        }
    })
    .await;
    *command.lock().unwrap() = "rm -rf /".to_owned();
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} once", second.id),
        ))
        .await
        .unwrap();
    let failure = wait_said(&chat, "clean failed").await;
    assert!(
        failure.starts_with("✗ clean failed: The flow changed while the run waited"),
        "{failure}"
    );
}
