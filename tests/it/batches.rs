//! Several actions in one approval (a batch): over HTTP with mixed decisions (approve, an edit
//! refused for a bad value then accepted, a rejection with a reason), a disallowed decision
//! for one action refused while the others stand, an action already decided (409), the digest
//! binding (422), a rule deciding the actions it matches before anyone is asked, "always"
//! creating a rule per action, and a 2-of-3 quorum whose members each decide every action.

use crate::approvals::setup;
use crate::support::{get_json, http, post_json};
use askbridge::bridge::{Attempt, Bridge, Said};
use askbridge_core::{Actor, QuestionId, Target};
use serde_json::{Value, json};

/// Three actions: a shell command (default decisions), a deploy one may edit (a schema), and a
/// removal one may only reject or allow once.
pub(crate) fn three_actions() -> Value {
    json!([
        {"tool": "shell", "args": {"command": "make test"}},
        {"tool": "deploy", "args": {"env": "staging", "replicas": 2},
         "allowed": ["once", "edit", "reject"],
         "args_schema": {"type": "object", "properties": {
             "env": {"type": "string", "enum": ["staging", "production"]},
             "replicas": {"type": "integer", "minimum": 1, "maximum": 10}},
             "required": ["env", "replicas"]}},
        {"tool": "rm", "args": {"path": "/tmp/cache"}, "allowed": ["once", "reject"]}
    ])
}

async fn ask(base: &str, body: Value) -> Value {
    let r = post_json(base, "/api/questions", body).await;
    let status = r.status().as_u16();
    let json: Value = r.json().await.unwrap();
    assert_eq!(status, 201, "{json}");
    json
}

pub(crate) async fn reply(base: &str, id: &str, body: Value) -> (u16, Value) {
    let r = http()
        .post(format!("{base}/api/questions/{id}/reply"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

fn error(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

async fn asked(bridge: &Bridge, base: &str, session: &str) -> Value {
    let _ = bridge;
    ask(
        base,
        json!({"kind": "approval", "prompt": "The agent proposes 3 actions", "session_id": session,
               "actions": three_actions(), "answerers": ["api"]}),
    )
    .await
}

#[tokio::test]
async fn a_batch_of_three_is_decided_action_by_action_over_http() {
    let (bridge, base) = setup().await;
    let q = asked(&bridge, &base, "batch-http").await;
    let id = q["id"].as_str().unwrap();
    let digest = q["digest"].as_str().unwrap().to_owned();
    assert_eq!(digest.len(), 16);
    assert_eq!(q["actions"][1]["n"], 2, "{q}");
    assert_eq!(
        q["actions"][0]["allowed"],
        json!(["once", "always", "reject"])
    );
    assert!(q["actions"][0].get("decision").is_none());

    let (status, body) = reply(
        &base,
        id,
        json!({"action": 1, "decision": "once", "digest": digest}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "pending");
    assert_eq!(body["actions"][0]["decision"]["decision"], "once");
    assert_eq!(
        body["actions"][0]["decision"]["args"],
        json!({"command": "make test"})
    );

    // An edit breaking the schema: 422 naming the action's argument; nothing decided.
    let bad = json!({"action": 2, "decision": "edit", "args": {"env": "staging", "replicas": 11}});
    let (status, body) = reply(&base, id, bad).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["field"], "action 2 args.replicas", "{body}");
    // A decision action 3 does not offer; an action decided already; a wrong digest; no action 4.
    let (status, body) = reply(&base, id, json!({"action": 3, "decision": "always"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        error(&body).starts_with(
            "Action 3 does not offer \"always\"; choose once or reject. Nothing was decided."
        ),
        "{body}"
    );
    let (status, body) = reply(&base, id, json!({"action": 1, "decision": "reject"})).await;
    assert_eq!((status, body["action"].as_u64()), (409, Some(1)), "{body}");
    let (status, body) = reply(
        &base,
        id,
        json!({"all": "once", "digest": "0000000000000000"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = reply(&base, id, json!({"action": 4, "decision": "once"})).await;
    assert_eq!(status, 422);
    // A single approval's reply names no action: refused.
    let (status, body) = reply(&base, id, json!({"decision": "once"})).await;
    assert_eq!(status, 422, "{body}");
    let now = get_json(&base, &format!("/api/questions/{id}")).await;
    assert_eq!(now["status"], "pending");
    assert!(
        now["actions"][1].get("decision").is_none() && now["actions"][2].get("decision").is_none()
    );

    let (status, body) = reply(
        &base,
        id,
        json!({"decisions": [
            {"action": 2, "decision": "edit", "args": {"env": "production", "replicas": 3}},
            {"action": 3, "decision": "reject", "message": "too broad"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "answered", "{body}");
    let decisions = body["resolution"]["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3);
    assert_eq!(decisions[1]["decision"], "edit");
    assert_eq!(
        decisions[1]["args"],
        json!({"env": "production", "replicas": 3})
    );
    assert_eq!(
        decisions[1]["proposed_args"],
        json!({"env": "staging", "replicas": 2})
    );
    assert_eq!(decisions[2]["message"], "too broad");
    assert_eq!(
        body["resolution"]["value"],
        json!(["once", "edit", "reject"])
    );
    assert!(
        body["outcome"]
            .as_str()
            .unwrap()
            .starts_with("Decided: 1 allowed once; 2 approved with changes; 3 rejected"),
        "{body}"
    );
    let (status, _) = reply(&base, id, json!({"action": 3, "decision": "once"})).await;
    assert_eq!(status, 409);
}

#[tokio::test]
async fn a_rule_decides_the_actions_it_matches_before_anyone_is_asked() {
    let (bridge, base) = setup().await;
    let q = asked(&bridge, &base, "batch-rule").await;
    let id = q["id"].as_str().unwrap();
    let (status, body) = reply(&base, id, json!({"action": 1, "decision": "always"})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = reply(&base, id, json!({"all": "reject", "message": "not today"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["resolution"]["decisions"][0]["rule_id"],
        format!("rule-{id}-1")
    );
    let rules = bridge.rules().await.unwrap();
    assert_eq!(rules.len(), 1, "{rules:?}");

    let again = asked(&bridge, &base, "batch-rule").await;
    assert_eq!(again["status"], "pending", "{again}");
    let first = &again["actions"][0]["decision"];
    assert_eq!(first["by_rule"], true, "{again}");
    assert_eq!(first["rule_id"], format!("rule-{id}-1"));
    assert!(again["actions"][1].get("decision").is_none());
    let text = askbridge_core::render::question_text(
        &serde_json::from_value(again.clone()).unwrap(),
        4096,
    );
    assert!(
        text.contains(&format!("✅ allowed by rule rule-{id}-1")),
        "{text}"
    );
}

#[tokio::test]
async fn a_two_of_three_quorum_takes_each_members_decisions_on_every_action() {
    let (bridge, base) = setup().await;
    let q = ask(
        &base,
        json!({"kind": "approval", "prompt": "Two of us decide", "session_id": "batch-quorum",
               "actions": [{"tool": "a", "args": {}}, {"tool": "b", "args": {}}],
               "quorum": {"needs": 2, "of": ["api", "console", "chat:7"]}}),
    )
    .await;
    let id = q["id"].as_str().unwrap();
    // Edit is one person's answer: a quorum batch cannot offer it.
    let r = post_json(
        &base,
        "/api/questions",
        json!({"kind": "approval", "session_id": "s",
        "actions": [{"tool": "a", "args": {}, "allowed": ["once", "edit"]}],
        "quorum": {"needs": 2, "of": ["api", "console"]}}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 422);
    let (status, body) = reply(
        &base,
        id,
        json!({"decisions": [
        {"action": 1, "decision": "once"}, {"action": 2, "decision": "reject"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(body["votes"][0]["value"], json!(["once", "reject"]));
    let qid = QuestionId::parse(id).unwrap();
    let typed = |text: &str| Attempt {
        id: qid.clone(),
        said: Said::Typed(text.into()),
        actor: Actor::new("console", "console"),
        chat: Target::new("console"),
    };
    let partial = bridge.attempt(typed("1 once")).await;
    let Err(askbridge::Error::Model(askbridge_core::Error::NotFit { reason })) = partial else {
        panic!("a partial list is noted, not a vote: {partial:?}")
    };
    assert!(reason.starts_with("Noted (1 of 2 actions)"), "{reason}");
    assert!(bridge.get(&qid).await.unwrap().votes.len() == 1);
    let done = bridge.attempt(typed("2 reject")).await.unwrap();
    assert_eq!(done.status, askbridge_core::Status::Answered, "{done:?}");
    let resolution = done.resolution.unwrap();
    assert_eq!(resolution.decisions.len(), 2);
    assert_eq!(resolution.by(), "console");
}

#[tokio::test]
async fn the_rust_api_gets_one_outcome_per_action_and_a_timeout_keeps_what_was_decided() {
    use askbridge::{AskError, NoAnswer};
    use askbridge_core::actions::ActionOutcome;
    use askbridge_core::batch::BatchAction;
    use askbridge_core::{Action, Decision, NewQuestion};
    let (bridge, base) = setup().await;
    let actions = || {
        [
            BatchAction::new(Action::new("shell", json!({"command": "ls"}))),
            BatchAction {
                allowed: vec![
                    Decision::Once,
                    Decision::Edit,
                    Decision::Respond,
                    Decision::Reject,
                ],
                ..BatchAction::new(Action::new("deploy", json!({"replicas": 2})))
            },
            BatchAction::new(Action::new("rm", json!({"path": "/"}))),
        ]
    };
    let asking = tokio::spawn({
        let session = bridge.session("batch-rust");
        async move {
            session
                .approve_actions(
                    NewQuestion::ask("Three?")
                        .approve_all(actions())
                        .answerers(["api"]),
                )
                .await
        }
    });
    let q = crate::approvals::pending_approval(&bridge, "batch-rust").await;
    let id = q.id.as_str();
    let (status, _) = reply(
        &base,
        id,
        json!({"action": 2, "decision": "edit", "args": {"replicas": 3}}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = reply(
        &base,
        id,
        json!({"action": 3, "decision": "reject", "message": "never /"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = reply(&base, id, json!({"action": 1, "decision": "once"})).await;
    assert_eq!(status, 200);
    let outcomes = asking.await.unwrap().unwrap();
    assert_eq!(outcomes.len(), 3);
    let ActionOutcome::Approved {
        action,
        by_rule: false,
        ..
    } = &outcomes[0]
    else {
        panic!("{outcomes:?}")
    };
    assert_eq!(action.args, json!({"command": "ls"}));
    let ActionOutcome::Edited { action, proposed } = &outcomes[1] else {
        panic!("{outcomes:?}")
    };
    assert_eq!(
        (&action.args, &proposed.args),
        (&json!({"replicas": 3}), &json!({"replicas": 2}))
    );
    assert_eq!(
        outcomes[2],
        ActionOutcome::Rejected {
            message: Some("never /".into())
        }
    );

    // A timeout: nothing runs, and the resolution keeps the one decision made before it.
    let session = bridge.session("batch-timeout");
    let asking = tokio::spawn(async move {
        let mut request = NewQuestion::ask("Three?")
            .approve_all(actions())
            .answerers(["api"]);
        request.timeout_s = Some(1.5);
        session.approve_actions(request).await
    });
    let q = crate::approvals::pending_approval(&bridge, "batch-timeout").await;
    let (status, _) = reply(
        &base,
        q.id.as_str(),
        json!({"action": 1, "decision": "once"}),
    )
    .await;
    assert_eq!(status, 200);
    let outcome = asking.await.unwrap();
    assert!(
        matches!(outcome, Err(AskError::NoAnswer(NoAnswer::Timeout { .. }))),
        "{outcome:?}"
    );
    let expired = bridge.get(&q.id).await.unwrap();
    assert_eq!(expired.status, askbridge_core::Status::Expired);
    let decisions = expired.resolution.unwrap().decisions;
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].action, 1);
}
