//! A batch of actions decided by mail, against the real mail servers of `email.rs`: the mail
//! lists the actions and says to reply one line per action; a reply's lines that decide
//! (`1 once`, `3 reject too broad`) each count, the greeting and signature around them do not,
//! and the mail back answers each line; a bad edit is refused politely while the decisions
//! already made stand, then a good one completes the batch.

use crate::email::setup_with;
use crate::email_decisions::{ask, reply};
use crate::mails::ALICE;
use serde_json::{Value, json};

fn batch() -> Value {
    let action = |n: u64| {
        json!({"tool": "deploy", "args": {"service": format!("svc-{n}"), "replicas": n},
               "allowed": ["once", "edit", "reject"]})
    };
    json!({
        "session_id": "mail-batch",
        "kind": "approval",
        "prompt": "The agent proposes three deploys",
        "actions": [action(1), action(2), action(3)],
        "targets": [format!("email:{ALICE}")],
        "answerers": [format!("email:{ALICE}")],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_decided_line_by_line_in_mail_replies() {
    let s = setup_with(false, false).await;
    let (id, mail) = ask(&s, batch(), 1).await;
    let text = mail.text();
    assert!(text.contains("one line per action"), "{text}");
    assert!(
        text.contains("svc-3"),
        "the mail lists every action: {text}"
    );

    let body = "Hi,\r\n\r\n1 once\r\n3 reject too broad\r\n\r\nThanks,\r\nAlice\r\n";
    let back = reply(&s, &mail, body, 1, 2).await;
    println!("1 once / 3 reject -> {back}");
    assert!(back.contains("> /answer"), "each line answered: {back}");
    let q = s.question(&id).await;
    assert_eq!(q["status"], "pending", "{q}");
    assert_eq!(q["actions"][0]["decision"]["decision"], "once", "{q}");
    assert_eq!(q["actions"][2]["decision"]["message"], "too broad", "{q}");
    assert!(q["actions"][1].get("decision").is_none(), "{q}");

    // An edit that does not keep the arguments' types: refused, nothing more decided.
    let refusal = reply(
        &s,
        &mail,
        "2 edit {\"service\": \"svc-2\", \"replicas\": \"many\"}\r\n",
        2,
        3,
    )
    .await;
    println!("2 edit with a string -> {refusal}");
    assert!(refusal.contains("replicas"), "{refusal}");
    assert_eq!(s.question(&id).await["status"], "pending");

    let body = "2 edit {\"service\": \"svc-2\",\r\n  \"replicas\": 5}\r\n";
    reply(&s, &mail, body, 3, 4).await;
    let q = s.question(&id).await;
    assert_eq!(q["status"], "answered", "{q}");
    let decisions: Vec<&str> = q["resolution"]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["once", "edit", "reject"]);
    assert_eq!(q["resolution"]["decisions"][1]["args"]["replicas"], 5);
    assert_eq!(q["resolution"]["decisions"][0]["via"], "email");
}
