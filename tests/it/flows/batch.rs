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
                let outcomes = ctx
                    .approve_actions(
                        NewQuestion::ask("Deploy both?")
                            .approve_all([action("api"), action("web")]),
                    )
                    .await?;
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
    let chat = FakeChannel::new("chat");
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            approvers: vec!["chat:7".into()],
            ..BridgeOptions::default()
        })
        .channel(chat.clone())
        .runner(Arc::new(deploy))
        .start()
        .await
        .unwrap();
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
