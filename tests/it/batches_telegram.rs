//! A batch of three actions on Telegram, through teloxide against the fake Bot API (which
//! refuses a `callback_data` over 64 bytes and a keyboard over 100 buttons): one message lists
//! the actions numbered with a row of buttons per action and "Approve all" / "Reject all"; a
//! tap approves one, an edit typed with a bad value is refused with why and then accepted, a
//! rejection carries its reason; the message is redrawn as each is decided, and the resolution
//! lists the decisions in order. Prints the transcript (`--nocapture`).

use crate::batches::three_actions;
use crate::fakes::telegram::{FakeTelegram, Sent};
use crate::support::{Process, RedisServer, answered_over_http, ask_when_connected, found};
use crate::telegram::{GROUP, alice};
use serde_json::json;
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

async fn bot_says(fake: &FakeTelegram, contains: &str) -> Sent {
    found(WITHIN, contains, || {
        fake.sent()
            .into_iter()
            .rev()
            .find(|m| m.text.contains(contains))
    })
    .await
}

fn labels(sent: &Sent) -> Vec<Vec<String>> {
    sent.buttons()
        .into_iter()
        .map(|row| row.into_iter().map(|(label, _)| label).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_three_is_decided_on_telegram_with_mixed_decisions() {
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let server = Process::spawn(&["serve"], &fake.serve_env(&redis));
    let body = json!({
        "session_id": "batch-telegram", "kind": "approval",
        "prompt": "The agent proposes 3 actions",
        "actions": three_actions(),
        "targets": [format!("telegram:{GROUP}")],
        "answerers": [format!("telegram:{}", alice().id)],
        "timeout_s": 600,
    });
    let question = ask_when_connected(&server.base, body).await;
    let id = question["id"].as_str().unwrap().to_owned();
    let digest = question["digest"].as_str().unwrap()[..8].to_owned();

    let shown = bot_says(&fake, "3 actions (digest").await;
    assert!(
        shown.text.contains("\n1. shell\n   command: make test"),
        "{}",
        shown.text
    );
    assert_eq!(
        labels(&shown),
        [
            vec!["1: Allow", "1: Always", "1: Reject"],
            vec!["2: Allow", "2: Edit", "2: Reject"],
            vec!["3: Allow", "3: Reject"],
            vec!["Approve all", "Reject all"],
        ]
    );
    assert_eq!(
        shown.payload("1: Allow"),
        format!("/answer {id} 1 once #{digest}")
    );

    // A tap approves action 1; the message is redrawn with it, its buttons gone.
    fake.tap(GROUP, shown.id, &alice(), &shown.payload("1: Allow"));
    let redrawn = bot_says(&fake, "✅ allowed once by").await;
    assert_eq!(redrawn.id, shown.id, "the same message, redrawn");
    assert!(!labels(&redrawn).concat().contains(&"1: Allow".to_owned()));

    // Edit: the button says what to type; a bad value is refused with why, then accepted.
    let tap = fake.tap(GROUP, shown.id, &alice(), &shown.payload("2: Edit"));
    let toast = found(WITHIN, "the Edit tap's toast", || fake.toast_of(tap)).await;
    let command = format!("/answer {id} 2 edit {{\"env\":\"staging\",\"replicas\":2}}");
    assert!(toast.ends_with(&command), "{toast}");
    fake.say(
        GROUP,
        &alice(),
        &format!("/answer {id} 2 edit {{\"env\": \"staging\", \"replicas\": 11}}"),
    );
    bot_says(&fake, "action 2 args.replicas").await;
    fake.say(
        GROUP,
        &alice(),
        &format!("/answer {id} 2 edit {{\"env\": \"production\", \"replicas\": 3}}"),
    );
    bot_says(
        &fake,
        "✏️ approved with changes: {\"env\":\"production\",\"replicas\":3}",
    )
    .await;

    // A decision action 3 does not offer is refused; the others stand.
    fake.say(GROUP, &alice(), &format!("/answer {id} 3 always"));
    bot_says(&fake, "Action 3 does not offer \"always\"").await;
    fake.say(GROUP, &alice(), &format!("/answer {id} 3 reject too broad"));

    let answered = answered_over_http(&server.base, &id).await;
    let decisions = answered["resolution"]["decisions"].as_array().unwrap();
    let words: Vec<&str> = decisions
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["once", "edit", "reject"]);
    assert_eq!(
        decisions[1]["args"],
        json!({"env": "production", "replicas": 3})
    );
    assert_eq!(decisions[2]["message"], "too broad");
    assert_eq!(decisions[0]["via"], "telegram");
    let closed = bot_says(
        &fake,
        "Decided: 1 allowed once; 2 approved with changes; 3 rejected",
    )
    .await;
    assert!(closed.buttons().is_empty(), "no buttons once decided");

    println!(
        "--- Telegram transcript: a batch of three actions ---\n{}",
        fake.transcript()
    );
}
