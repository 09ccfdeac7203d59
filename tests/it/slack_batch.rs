//! Twenty actions in one approval on Slack, through the real slack-morphism client against the
//! fake Slack (which refuses a message or view beyond Block Kit's limits): one actions block per
//! action within the 50 blocks; action 3 edited through its own modal (a bad value shown on its
//! field first), the rest approved all.

use crate::approvals_edit::deploy_schema;
use crate::slack::{ALICE, Rig, elements};
use crate::slack_modals::{block_ids, edit_values, element, open, submit};
use askbridge_core::{Decision, Status};
use axum::http::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn twenty_actions_fit_one_message_and_one_is_edited_in_its_modal() {
    let rig = Rig::start().await;
    let actions: Vec<Value> = (1..=20)
        .map(|n| {
            json!({"tool": "deploy", "args": {"env": "staging", "replicas": n % 10 + 1},
                        "allowed": ["once", "edit", "reject"], "args_schema": deploy_schema()})
        })
        .collect();
    let q = rig
        .ask(
            json!({"prompt": "The agent proposes 20 deploys", "kind": "approval",
                    "actions": actions, "answerers": [format!("slack:{ALICE}")]}),
        )
        .await;
    let (_, posted) = rig.shown(&q).await;
    let blocks = posted["blocks"].as_array().unwrap();
    assert_eq!(
        blocks.len(),
        22,
        "the text, a block per action, the all block"
    );
    let text = blocks[0]["text"]["text"].as_str().unwrap();
    println!(
        "20 actions on Slack: {} blocks of 50, {} elements, the text {} of 3000 characters",
        blocks.len(),
        elements(&posted).len(),
        text.chars().count()
    );
    assert!(text.contains("20. deploy"), "every action listed: {text}");
    let texts: Vec<String> = elements(&posted)
        .into_iter()
        .filter_map(|e| e["text"]["text"].as_str().map(str::to_owned))
        .filter(|t| t.starts_with("3:"))
        .collect();
    assert_eq!(
        texts,
        [
            "3: Allow",
            "3: Edit",
            "3: Reject",
            "3: Reject with a reason…"
        ]
    );

    // Action 3's Edit opens its own arguments' fields, prefilled.
    let opener = element(&rig, &q, "askbridge-modal-edit:3").await;
    let view = open(&rig, ALICE, &opener, "trigger-edit-3").await;
    assert_eq!(block_ids(&view), ["field-0", "field-1"]);
    assert_eq!(view["blocks"][2]["element"]["initial_value"], "4");
    let production = view["blocks"][1]["element"]["options"][1]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let bad = submit(&rig, ALICE, &view, edit_values(&production, "11")).await;
    assert_eq!(bad["response_action"], "errors", "{bad}");
    assert!(rig.get(&q.id).await.actions[2].decision.is_none());
    let good = submit(&rig, ALICE, &view, edit_values(&production, "5")).await;
    // Still pending: the modal says the decision was recorded, as a quorum's vote does.
    assert_eq!(good["response_action"], "update", "{good}");
    let said = good["view"]["blocks"][0]["text"]["text"].as_str().unwrap();
    assert!(
        said.starts_with("✓ Recorded. 1 of 20 actions decided"),
        "{said}"
    );
    let edited = rig.get(&q.id).await;
    assert_eq!(edited.status, Status::Pending);
    let entry = edited.actions[2]
        .decision
        .clone()
        .expect("action 3 decided");
    assert_eq!(entry.decision, Decision::Edit);
    assert_eq!(
        entry.args,
        Some(json!({"env": "production", "replicas": 5}))
    );

    let all = elements(&posted)
        .into_iter()
        .find(|e| e["text"]["text"] == "Approve all")
        .unwrap();
    assert_eq!(rig.act(ALICE, all, "trigger-all").await, StatusCode::OK);
    let done = rig.wait_status(&q.id, Status::Answered).await;
    let decisions = done.resolution.unwrap().decisions;
    assert_eq!(decisions.len(), 20);
    for entry in &decisions {
        let expected = if entry.action == 3 {
            Decision::Edit
        } else {
            Decision::Once
        };
        assert_eq!(entry.decision, expected, "{entry:?}");
        assert_eq!(entry.via, "slack");
    }
}
