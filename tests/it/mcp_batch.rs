//! `request_approval` with `actions` through `askbridge mcp` (stdio): the agent's several
//! proposed calls asked as one approval, the result a decision per action with the arguments
//! to run with, in words and as structured content; `get_answer` the same.

use crate::cli::post;
use crate::mcp::{Client, text};
use crate::support::{memory_bridge, pending_in_session, serve_api};
use serde_json::{Value, json};

/// Posts `body` as the reply to batch `id`; it must be taken.
async fn decide(base: &str, id: &str, body: Value) {
    let status = post(base, &format!("/api/questions/{id}/reply"), body).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_for_several_actions_and_gets_a_decision_per_action() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let mut client = Client::spawn(&base, "agent-batch");
    client.initialize("2025-06-18").await;
    let actions = json!([
        {"tool": "shell", "args": {"command": "ls"}},
        {"tool": "deploy", "args": {"replicas": 2}, "allowed": ["once", "edit", "reject"]},
        {"tool": "shell", "args": {"command": "rm -rf /"}},
    ]);
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "request_approval", "arguments": {"actions": actions, "answerers": ["api"]}}}),
        )
        .await;
    let q = pending_in_session(&base, "agent-batch").await;
    let id = q["id"].as_str().unwrap().to_owned();
    assert_eq!(
        q["actions"][1]["allowed"],
        json!(["once", "edit", "reject"])
    );
    decide(
        &base,
        &id,
        json!({"decisions": [{"action": 1, "decision": "once"},
                             {"action": 2, "decision": "edit", "args": {"replicas": 3}},
                             {"action": 3, "decision": "reject", "message": "too broad"}]}),
    )
    .await;
    let result = client.response(2).await["result"].clone();
    assert_eq!(
        text(&result),
        "Each action was decided:\n\
         1. shell: approved by api (once); run it with exactly the arguments you proposed.\n\
         2. deploy: approved with changes by api; run it with these arguments instead: {\"replicas\":3}\n\
         3. shell: rejected by api: too broad. Do not run it."
    );
    let content = &result["structuredContent"];
    assert_eq!(content["status"], "answered");
    assert_eq!(content["digest"], q["digest"]);
    let decisions = content["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 3);
    assert_eq!(decisions[0]["args"], json!({"command": "ls"}));
    assert_eq!(decisions[1]["args"], json!({"replicas": 3}));
    assert_eq!(decisions[1]["proposed_args"], json!({"replicas": 2}));
    assert_eq!(decisions[2]["message"], "too broad");

    // Without waiting: pending, then get_answer gives the decisions.
    let pending = client
        .call(
            3,
            "request_approval",
            json!({"actions": [{"tool": "a", "args": {}}, {"tool": "b", "args": {}}],
                   "answerers": ["api"], "wait": false}),
        )
        .await;
    assert!(text(&pending).starts_with("Pending"), "{pending}");
    let id = pending["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    decide(&base, &id, json!({"all": "once"})).await;
    let answer = client.call(4, "get_answer", json!({"id": id})).await;
    assert!(
        text(&answer).contains("2. b: approved by api (once)"),
        "{answer}"
    );
    assert_eq!(
        answer["structuredContent"]["decisions"][1]["decision"],
        "once"
    );

    // Both an action and actions, or neither: refused, nothing asked.
    let both = client
        .call(
            5,
            "request_approval",
            json!({"tool": "x", "actions": actions}),
        )
        .await;
    assert_eq!(both["isError"], true);
    assert!(text(&both).contains("not both"), "{both}");
}
