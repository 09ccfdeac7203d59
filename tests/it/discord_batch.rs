//! Twenty actions in one approval, decided on Discord: the real serenity client against the
//! fake Discord, which refuses any message breaking Discord's limits (5 rows of 5 components,
//! unique custom_ids, 2000 characters). The actions' buttons come four actions a page, and the
//! page buttons redraw the message; one action is decided from the second page, the rest with
//! Approve all.

use crate::discord::{Rig, alice, bob, channel, components};
use crate::support::eventually_some;
use askbridge_core::{Decision, Status};
use serde_json::{Value, json};
use std::time::Duration;

const WITHIN: Duration = Duration::from_secs(10);

#[tokio::test]
async fn twenty_actions_are_decided_on_discord_page_by_page_within_its_limits() {
    let rig = Rig::start().await;
    let actions: Vec<Value> = (1..=20)
        .map(|n| json!({"tool": "shell", "args": {"command": format!("make part-{n}")}, "allowed": ["once", "reject"]}))
        .collect();
    let q = rig
        .ask(
            json!({"prompt": "The agent proposes 20 actions", "kind": "approval",
                    "actions": actions, "answerers": [alice().identity()]}),
        )
        .await;
    let (id, digest) = (q.id.clone(), q.batch_short_digest());
    let message = rig.shown(&q, channel()).await;
    let body = rig.shown_body(&q, channel()).await;
    let content = body["content"].as_str().unwrap();
    println!(
        "20 actions on Discord: {} of 2000 characters, {} components on the first page",
        content.chars().count(),
        components(&body).concat().len()
    );
    assert!(
        content.contains("20. shell"),
        "every action listed: {content}"
    );
    let rows = components(&body);
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert_eq!(
        rows[0],
        [
            (
                2,
                "1: Allow".to_owned(),
                format!("/answer {id} 1 once #{digest}")
            ),
            (
                2,
                "1: Reject".to_owned(),
                format!("/answer {id} 1 reject #{digest}")
            ),
        ]
    );
    let last: Vec<&str> = rows[4].iter().map(|c| c.1.as_str()).collect();
    assert_eq!(last, ["Actions 5-8 ▶", "Approve all", "Reject all"]);

    // Someone who may not decide it cannot page it either: told privately, nothing redrawn.
    let edits_before = rig.edits(message).len();
    let strangers = rig.fake.click(&bob(), channel(), message, &rows[4][0].2);
    let told = rig.follow_up(&strangers).await;
    assert!(told.contains("not waiting for you"), "{told}");
    assert_eq!(rig.edits(message).len(), edits_before);

    // The next page: actions 5-8, with a way back.
    rig.fake.click(&alice(), channel(), message, &rows[4][0].2);
    let page = eventually_some(WITHIN, "the second page is shown", || async {
        let rows = components(&rig.fake.message(message)?);
        rows[0][0].2.contains(" 5 once ").then_some(rows)
    })
    .await;
    let last: Vec<&str> = page[4].iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        last,
        [
            "◀ Actions 1-4",
            "Actions 9-12 ▶",
            "Approve all",
            "Reject all"
        ]
    );
    let reject_6 = format!("/answer {id} 6 reject #{digest}");
    assert!(page[1].iter().any(|c| c.2 == reject_6), "{page:?}");
    rig.fake.click(&alice(), channel(), message, &reject_6);

    // Recorded, still pending; the message redrawn with action 6 decided and its buttons gone.
    let redrawn = eventually_some(WITHIN, "action 6 shows its decision", || async {
        let shown = rig.fake.message(message)?;
        let content = shown["content"].as_str()?.to_owned();
        content.contains("rejected by @alice").then_some(shown)
    })
    .await;
    let ids: Vec<String> = components(&redrawn)
        .concat()
        .into_iter()
        .map(|c| c.2)
        .collect();
    assert!(!ids.iter().any(|c| c.contains(" 6 ")), "{ids:?}");
    assert_eq!(rig.get(&id).await.status, Status::Pending);

    rig.fake.click(
        &alice(),
        channel(),
        message,
        &format!("/answer {id} all once #{digest}"),
    );
    let done = rig.wait_status(&id, Status::Answered).await;
    let decisions = done.resolution.unwrap().decisions;
    assert_eq!(decisions.len(), 20);
    for (index, entry) in decisions.iter().enumerate() {
        let expected = if index == 5 {
            Decision::Reject
        } else {
            Decision::Once
        };
        assert_eq!((entry.action, entry.decision), (index + 1, expected));
        assert_eq!(entry.via, "discord");
    }
    rig.withdrawn(message).await;
    // Every message and edit stayed within Discord's limits: the fake refused none.
    let refused: Vec<_> = rig
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.status == 400)
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
}
