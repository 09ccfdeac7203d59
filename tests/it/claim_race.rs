//! 200 concurrent replies to one question, through HTTP and through the grammar, on two bridges
//! sharing one Redis (as two askbridge processes would): exactly one wins.

use crate::support::{FakeChannel, RedisServer, http, serve_api};
use askbridge::bridge::Bridge;
use askbridge::store::StoreOptions;
use askbridge_core::{Inbound, Inbox, NewQuestion, Status, Tone};
use serde_json::json;
use std::sync::Arc;

async fn process(server: &RedisServer) -> (Bridge, String) {
    let store = crate::support::redis_store_on(server, StoreOptions::default()).await;
    let bridge = Bridge::builder(Arc::new(store))
        .channel(FakeChannel::new("chat"))
        .start()
        .await
        .unwrap();
    let base = serve_api(bridge.clone()).await;
    (bridge, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_replies_one_winner() {
    let server = RedisServer::start();
    let (a, base_a) = process(&server).await;
    let (b, base_b) = process(&server).await;
    let q = a
        .create(
            NewQuestion::ask("Which?")
                .session("race")
                .options(["dayjs", "luxon", "date-fns"])
                .targets(["chat:1"]),
        )
        .await
        .unwrap();
    let client = http();
    let mut tasks = Vec::new();
    for n in 0..200usize {
        let label = ["dayjs", "luxon", "date-fns"][n % 3];
        let id = q.id.to_string();
        if n % 2 == 0 {
            let base = if n % 4 == 0 {
                base_a.clone()
            } else {
                base_b.clone()
            };
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let response = client
                    .post(format!("{base}/api/questions/{id}/reply"))
                    .json(&json!({"answer": label, "by": format!("chat:{n}")}))
                    .send()
                    .await
                    .unwrap();
                match response.status().as_u16() {
                    200 => true,
                    409 => false,
                    other => panic!("unexpected status {other}"),
                }
            }));
        } else {
            let bridge = if n % 4 == 1 { a.clone() } else { b.clone() };
            tasks.push(tokio::spawn(async move {
                let message = Inbound {
                    via: "chat".into(),
                    chat: "chat:1".into(),
                    sender: format!("chat:{n}").into(),
                    sender_name: None,
                    text: format!("/answer {id} {}", n % 3 + 1),
                    private: false,
                    delivery_id: Some(format!("d{n}")),
                    in_reply_to: None,
                };
                let reply = bridge.handle(message).await.unwrap();
                match reply.tone {
                    Tone::Done => true,
                    Tone::Refused => {
                        assert!(reply.text.starts_with("Already answered"), "{}", reply.text);
                        false
                    }
                    Tone::Info => panic!("unexpected {}", reply.text),
                }
            }));
        }
    }
    let mut wins = 0;
    for task in tasks {
        wins += usize::from(task.await.unwrap());
    }
    assert_eq!(wins, 1, "exactly one of 200 replies wins");
    let stored = b.get(&q.id).await.unwrap();
    assert_eq!(stored.status, Status::Answered);
}

/// A delivery whose claim the store failed to record is forgotten. Here Redis refuses the
/// claim's script (an ACL) while it still takes plain writes, so the delivery's mark is written
/// and the claim is not: the redelivery must be handled, not dropped as a duplicate of an answer
/// that was never recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_whose_claim_the_store_failed_is_handled_when_delivered_again() {
    let server = RedisServer::start();
    let (bridge, _) = process(&server).await;
    let q = ask(&bridge, "redelivered").await;
    let delivery = || reply_to(&q.id, "update-41");
    let mut connection = server.connection().await;
    let acl = |rule: &'static str| {
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("default")
            .arg(rule)
            .clone()
    };
    let _: () = acl("-@scripting")
        .query_async(&mut connection)
        .await
        .unwrap();
    let refused = bridge.handle(delivery()).await;
    let _: () = acl("+@all").query_async(&mut connection).await.unwrap();
    assert!(
        refused
            .as_ref()
            .is_none_or(|reply| reply.tone != Tone::Done),
        "the claim could not be recorded: {refused:?}"
    );
    assert_eq!(bridge.get(&q.id).await.unwrap().status, Status::Pending);

    let reply = bridge
        .handle(delivery())
        .await
        .expect("a reply to the redelivery");
    assert_eq!(reply.tone, Tone::Done, "{}", reply.text);
    let answered = bridge.get(&q.id).await.unwrap();
    assert_eq!(answered.status, Status::Answered);

    // Now that it is recorded, the same delivery again is a duplicate: no reply, no change.
    assert!(bridge.handle(delivery()).await.is_none());
}

/// A question in chat:1 with two options, in `session`.
async fn ask(bridge: &Bridge, session: &str) -> askbridge_core::Question {
    let question = NewQuestion::ask("Which?")
        .session(session)
        .options(["dayjs", "luxon"])
        .targets(["chat:1"]);
    bridge.create(question).await.unwrap()
}

/// chat:7's `/answer <id> 2`, delivered with the platform's id `delivery`.
fn reply_to(id: &askbridge_core::QuestionId, delivery: &str) -> Inbound {
    Inbound {
        via: "chat".into(),
        chat: "chat:1".into(),
        sender: "chat:7".into(),
        sender_name: None,
        text: format!("/answer {id} 2"),
        private: false,
        delivery_id: Some(delivery.into()),
        in_reply_to: None,
    }
}

/// A process killed after it took a delivery in hand and before it claimed leaves the delivery
/// in hand, under a lease. Here a second store on the same Redis takes `chat:update-42` in hand
/// (as the inbox keys a delivery: surface, then the platform's id) and is never heard of again:
/// the delivery's next coming, on a live process, is handled once that lease lapses, not dropped
/// as a duplicate of an answer that was never recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_whose_holder_died_is_handled_when_its_lease_lapses() {
    use askbridge::store::prelude::*;
    let server = RedisServer::start();
    let (bridge, _) = process(&server).await;
    let q = ask(&bridge, "holder-died").await;
    let dead = crate::support::redis_store_on(&server, StoreOptions::default()).await;
    let lease = std::time::Duration::from_millis(1500);
    assert_eq!(
        dead.take_in_hand("chat:update-42", lease).await.unwrap(),
        askbridge::store::Sighting::First
    );
    drop(dead);

    let reply = bridge
        .handle(reply_to(&q.id, "update-42"))
        .await
        .expect("a reply once the dead holder's lease lapsed");
    assert_eq!(reply.tone, Tone::Done, "{}", reply.text);
    assert_eq!(bridge.get(&q.id).await.unwrap().status, Status::Answered);
    assert!(
        bridge.handle(reply_to(&q.id, "update-42")).await.is_none(),
        "handled now: a duplicate"
    );
}

/// The same delivery on two processes at once (a platform's retry racing the first): one
/// carries it out and replies, the other waits for it and stays silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_delivery_on_two_processes_at_once_is_answered_once() {
    let server = RedisServer::start();
    let (a, _) = process(&server).await;
    let (b, _) = process(&server).await;
    for round in 0..20 {
        let q = ask(&a, "twice").await;
        let delivery = format!("update-{round}");
        let (first, second) = tokio::join!(
            a.handle(reply_to(&q.id, &delivery)),
            b.handle(reply_to(&q.id, &delivery))
        );
        let replies: Vec<_> = [first, second].into_iter().flatten().collect();
        assert_eq!(replies.len(), 1, "round {round}: {replies:?}");
        assert_eq!(replies[0].tone, Tone::Done, "{}", replies[0].text);
    }
}
