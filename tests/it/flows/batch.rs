//! A flow step asking a batch approval: the run waits while actions are undecided, and once each
//! is decided in the chat it resumes, replaying its journal, with one outcome per action.

use super::*;
use askbridge_core::actions::ActionOutcome;
use askbridge_core::batch::BatchAction;

#[tokio::test]
async fn a_run_asks_a_batch_and_resumes_with_an_outcome_per_action() {
    let deploy = Flows::new()
        .flow(
            "deploy",
            "deploys two services",
            |ctx: FlowContext| async move {
                let action = |service: &str| {
                    let mut item = BatchAction::new(askbridge_core::Action::new(
                        "deploy",
                        json!({"service": service, "replicas": 2}),
                    ));
                    item.allowed = vec![
                        askbridge_core::Decision::Once,
                        askbridge_core::Decision::Edit,
                        askbridge_core::Decision::Reject,
                    ];
                    item
                };
                let mut request =
                    NewQuestion::ask("Deploy both?").approve_all([action("api"), action("web")]);
                request.answerers = vec!["chat:7".into()];
                let outcomes = ctx.approve_actions(request).await?;
                let said: Vec<String> = outcomes
                    .iter()
                    .map(|outcome| match outcome {
                        ActionOutcome::Approved { action, .. } => format!("run {}", action.args),
                        ActionOutcome::Edited { action, .. } => {
                            format!("run edited {}", action.args)
                        }
                        ActionOutcome::Responded { text } => format!("responded {text}"),
                        ActionOutcome::Rejected { message } => format!("rejected {message:?}"),
                    })
                    .collect();
                Ok(said.join("; "))
            },
        )
        .unwrap();
    let (bridge, chat) = memory_bridge_running(deploy).await;
    bridge
        .handle(message("chat:7", "chat:1", "/deploy"))
        .await
        .unwrap();
    let q = waiting_question(&bridge, "chat:1", "Deploy both?").await;
    assert_eq!(q.actions.len(), 2);
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} 1 once", q.id),
        ))
        .await
        .unwrap();
    assert!(bridge.get(&q.id).await.unwrap().is_pending());
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!(
                "/answer {} 2 edit {{\"service\": \"web\", \"replicas\": 4}}",
                q.id
            ),
        ))
        .await
        .unwrap();
    let done = wait_said(&chat, "✓ deploy").await;
    assert!(
        done.starts_with(
            "✓ deploy: run {\"service\":\"api\",\"replicas\":2}; run edited {\"service\":\"web\",\"replicas\":4}"
        ),
        "{done}"
    );
}

/// A flow in another language (an HTTP endpoint) asks a batch as any question; the journal it is
/// called back with carries the decisions, each with the arguments to run with.
#[tokio::test]
async fn an_http_flow_asks_a_batch_and_reads_the_decisions_from_its_journal() {
    let route = axum::routing::post(|body: axum::body::Bytes| async move {
        let request: Value = serde_json::from_slice(&body).unwrap();
        let journal = request["journal"].as_array().unwrap();
        let reply = match journal.first() {
            None => json!({"ask": {"kind": "approval", "prompt": "Ship both?",
                "answerers": ["chat:7"],
                "actions": [{"tool": "ship", "args": {"to": "eu"}},
                            {"tool": "ship", "args": {"to": "us"}, "allowed": ["once", "edit", "reject"]}]}}),
            Some(record) => {
                let said: Vec<String> = record["decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| format!("{} {}", d["decision"].as_str().unwrap(), d["args"]))
                    .collect();
                json!({"reply": said.join("; ")})
            }
        };
        axum::Json(reply)
    });
    let url = format!(
        "{}/flow",
        serve(axum::Router::new().route("/flow", route)).await
    );
    let flow = HttpFlow::new("ship", &url, Secret::new("s"));
    let flows = Flows::new().register("ship", Arc::new(flow)).unwrap();
    let (bridge, chat) = memory_bridge_running(flows).await;
    bridge
        .handle(message("chat:7", "chat:1", "/ship"))
        .await
        .unwrap();
    let q = waiting_question(&bridge, "chat:1", "Ship both?").await;
    let edit = format!("/answer {} 2 edit {{\"to\": \"ap\"}}", q.id);
    for command in [format!("/answer {} 1 once", q.id), edit] {
        bridge
            .handle(message("chat:7", "chat:1", &command))
            .await
            .unwrap();
    }
    assert_eq!(
        wait_said(&chat, "✓ ship").await,
        "✓ ship: once {\"to\":\"eu\"}; edit {\"to\":\"ap\"}"
    );
}
