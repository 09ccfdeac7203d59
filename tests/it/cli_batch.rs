//! `askbridge approve --actions FILE` against a running askbridge: one line per decision on
//! stdout, and the exit code saying whether every action, none or some may run.

use crate::cli::{api_approving_server, cli, finish, post};
use crate::support::pending_in_session;
use serde_json::json;

#[tokio::test]
async fn approve_actions_prints_a_line_per_decision_and_exits_by_what_may_run() {
    let base = api_approving_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("actions.json");
    let actions = json!([
        {"tool": "shell", "args": {"command": "ls /tmp"}},
        {"tool": "deploy", "args": {"replicas": 2}, "allowed": ["once", "edit", "reject"]},
        {"tool": "shell", "args": {"command": "rm -rf /"}},
    ]);
    std::fs::write(&file, actions.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let child = cli(&base, &["approve", "--actions", path, "--session", "b1"]);
    let q = pending_in_session(&base, "b1").await;
    assert_eq!(q["actions"].as_array().unwrap().len(), 3, "{q}");
    assert_eq!(q["prompt"], "Allow these 3 actions?");
    let reply = format!("/api/questions/{}/reply", q["id"].as_str().unwrap());
    let decisions = json!({"decisions": [
        {"action": 1, "decision": "once"},
        {"action": 2, "decision": "edit", "args": {"replicas": 3}},
    ]});
    assert_eq!(post(&base, &reply, decisions).await, 200);
    let reject = json!({"action": 3, "decision": "reject", "message": "too broad"});
    assert_eq!(post(&base, &reply, reject).await, 200);
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(
        (code, stdout.as_str()),
        (
            7,
            "1 once {\"command\":\"ls /tmp\"}\n2 edit {\"replicas\":3}\n3 reject too broad\n"
        ),
        "{stderr}"
    );

    // Every action allowed: exit 0; every one rejected: exit 3.
    for (session, all, expected) in [("b2", "once", 0), ("b3", "reject", 3)] {
        let child = cli(&base, &["approve", "--actions", path, "--session", session]);
        let q = pending_in_session(&base, session).await;
        let reply = format!("/api/questions/{}/reply", q["id"].as_str().unwrap());
        assert_eq!(post(&base, &reply, json!({"all": all})).await, 200);
        let (code, stdout, stderr) = finish(child).await;
        assert_eq!(code, expected, "{stdout}{stderr}");
        assert_eq!(stdout.lines().count(), 3, "{stdout}");
    }

    // Not an array, or with --tool: refused before anything is asked.
    std::fs::write(&file, r#"{"tool": "shell"}"#).unwrap();
    let (code, _, stderr) = finish(cli(&base, &["approve", "--actions", path])).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("not a JSON array"), "{stderr}");
    let both = cli(&base, &["approve", "--actions", path, "--tool", "x"]);
    let (code, _, stderr) = finish(both).await;
    assert_eq!(code, 2, "{stderr}");
}
