//! Reminders and escalation, with a shortened clock (ASKBRIDGE_REMINDER_GAP_S=1): two askbridge
//! processes on one Redis, Telegram through teloxide against the fake Bot API, one process
//! killed and restarted in between. Each reminder and each escalation step happens once.

use crate::fakes::telegram::{FakeTelegram, Sent, User};
use crate::support::{
    Process, RedisServer, ask_when_connected, eventually_some, found, get_json, post_json,
};
use crate::telegram::{GROUP, alice};
use serde_json::{Value, json};
use std::time::Duration;

/// Where the escalation step shows the question.
const BOSS_CHAT: i64 = -300_400;

fn boss() -> User {
    User {
        id: 88,
        username: "boss",
    }
}

fn reminders_in(fake: &FakeTelegram, chat: i64, id: &str) -> Vec<Sent> {
    fake.sent_in(chat)
        .into_iter()
        .filter(|m| m.text.contains("Reminder") && m.text.contains(id))
        .collect()
}

fn questions_in(fake: &FakeTelegram, chat: i64) -> Vec<Sent> {
    fake.sent_in(chat)
        .into_iter()
        .filter(|m| m.markup.is_some() || m.text.contains("Which"))
        .filter(|m| !m.text.contains("Reminder"))
        .collect()
}

async fn wait_for<T>(what: &str, within_s: u64, find: impl Fn() -> Option<T>) -> T {
    found(Duration::from_secs(within_s), what, find).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_and_an_escalation_step_happen_once_across_two_processes_and_a_restart() {
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let mut env = fake.serve_env(&redis);
    env.push(("ASKBRIDGE_REMINDER_GAP_S", "1".to_owned()));
    let mut first = Process::spawn(&["serve"], &env);
    let second = Process::spawn(&["serve"], &env);
    let ask = json!({
        "session_id": "nudges",
        "prompt": "Which region do we fail over to?",
        "options": ["eu-west", "us-east"],
        "targets": [format!("telegram:{GROUP}")],
        "answerers": [format!("telegram:{}", alice().id)],
        "remind_after_s": 2,
        "reminders": 2,
        "escalate": [{"after_s": 5, "targets": [format!("telegram:{BOSS_CHAT}")], "answerers": [format!("telegram:{}", boss().id)]}],
        "timeout_s": 60,
    });
    let question = ask_when_connected(&first.base, ask).await;
    let id = question["id"].as_str().unwrap().to_owned();
    assert_eq!(question["reminders"], json!({"after_s": 2.0, "times": 2}));
    let shown = wait_for("the question shown in the group", 10, || {
        questions_in(&fake, GROUP).pop()
    })
    .await;

    // Before the step, the boss is nobody here: a tap is refused and changes nothing.
    let payload = shown.payload("1. eu-west");
    fake.tap(GROUP, shown.id, &boss(), &payload);
    wait_for("the boss's early tap refused", 10, || {
        fake.toasts()
            .into_iter()
            .find(|t| t.contains("can't answer"))
    })
    .await;
    assert_eq!(
        get_json(&second.base, &format!("/api/questions/{id}")).await["status"],
        "pending"
    );

    let first_reminder = wait_for("reminder 1", 10, || {
        reminders_in(&fake, GROUP, &id).into_iter().next()
    })
    .await;
    assert!(
        first_reminder.text.contains("Reminder 1 of 2"),
        "{}",
        first_reminder.text
    );
    assert_eq!(
        first_reminder.reply_to,
        Some(shown.id),
        "a reply to the question's message"
    );
    let mention = fake
        .calls()
        .into_iter()
        .filter(|c| {
            c.method == "sendmessage"
                && c.body["text"].as_str().unwrap_or("").contains("Reminder 1")
        })
        .flat_map(|c| c.body["entities"].as_array().cloned().unwrap_or_default())
        // teloxide writes a mention by id as a tg://user link, which Telegram shows as one.
        .find(|e| {
            e["type"] == "text_link"
                && e["url"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("tg://user"))
        });
    let mention = mention.unwrap_or_else(|| {
        let sent: Vec<Value> = fake.calls().into_iter().map(|c| c.body).collect();
        panic!("the answerer is not mentioned: {sent:#?}")
    });
    let url = mention["url"].as_str().unwrap();
    assert!(url.ends_with(&format!("id={}", alice().id)), "{url}");

    // A crash and a restart in between: the survivor and the restarted process share the work.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let port = first.port();
    first.kill();
    let first = Process::spawn_at(port, &["serve"], &env);

    wait_for("reminder 2", 20, || {
        reminders_in(&fake, GROUP, &id)
            .into_iter()
            .find(|m| m.text.contains("Reminder 2 of 2"))
    })
    .await;
    let escalated = wait_for("the question shown in the boss's chat", 20, || {
        questions_in(&fake, BOSS_CHAT).pop()
    })
    .await;
    // Time for any duplicate to show up.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reminders: Vec<String> = reminders_in(&fake, GROUP, &id)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(
        reminders.len(),
        2,
        "one reminder per step, not one per process: {reminders:#?}"
    );
    assert_eq!(
        questions_in(&fake, BOSS_CHAT).len(),
        1,
        "shown once on the step's target"
    );

    // After the step the boss may answer, from the chat it escalated to.
    fake.tap(
        BOSS_CHAT,
        escalated.id,
        &boss(),
        &escalated.payload("2. us-east"),
    );
    let resolved = eventually_some(Duration::from_secs(10), "answered by the boss", || {
        let (base, id) = (second.base.clone(), id.clone());
        async move {
            let q = get_json(&base, &format!("/api/questions/{id}")).await;
            (q["status"] == "answered").then_some(q)
        }
    })
    .await;
    assert_eq!(
        resolved["resolution"]["by"],
        format!("telegram:{}", boss().id)
    );
    assert_eq!(resolved["resolution"]["value"], "us-east");
    // Every surface withdraws: the group's message loses its buttons too.
    wait_for("the group's message withdrawn", 10, || {
        fake.sent_in(GROUP)
            .into_iter()
            .find(|m| m.id == shown.id && m.markup.is_none())
    })
    .await;

    let audit = get_json(&first.base, "/api/audit?session_id=nudges&outcome=nudged").await;
    let events: Vec<String> = audit["entries"]
        .as_array()
        .expect("audit records")
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["event"].as_str().unwrap(),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(events.len(), 3, "{events:#?}");
    assert_eq!(
        events.iter().filter(|e| e.starts_with("reminded")).count(),
        2,
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("escalated") && e.contains(&BOSS_CHAT.to_string())),
        "{events:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reminders_and_escalation_steps_are_refused_by_name() {
    let redis = RedisServer::start();
    let server = Process::spawn(
        &["serve"],
        &[
            ("REDIS_URL", redis.url()),
            ("ASKBRIDGE_APPROVERS", "telegram:7".to_owned()),
        ],
    );
    let base = |extra: Value| {
        let mut body = json!({"session_id": "bad-nudges", "prompt": "Go?", "timeout_s": 600});
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        body
    };
    for (extra, field) in [
        (json!({"remind_after_s": 10}), "remind_after_s"),
        (json!({"remind_after_s": 900}), "remind_after_s"),
        (json!({"reminders": 2}), "reminders"),
        (json!({"remind_after_s": 60, "reminders": 4}), "reminders"),
        (json!({"escalate": [{"after_s": 60}]}), "escalate"),
        (
            json!({"escalate": [{"after_s": 60, "answerers": ["x"]}]}),
            "escalate",
        ),
        (
            json!({"escalate": [{"after_s": 60, "answerers": ["api"]}, {"after_s": 30, "answerers": ["api"]}]}),
            "escalate",
        ),
        (
            json!({"kind": "approval", "action": {"tool": "shell", "args": {}}, "escalate": [{"after_s": 60, "answerers": ["telegram:99"]}]}),
            "escalate",
        ),
    ] {
        let response = post_json(&server.base, "/api/questions", base(extra.clone())).await;
        assert_eq!(response.status(), 422, "{extra}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["field"], field, "{extra}: {body}");
    }
    let listed = get_json(&server.base, "/api/questions?session_id=bad-nudges").await;
    assert_eq!(listed["questions"], json!([]), "nothing stored: {listed}");
}

/// A flow's question carries its reminder like any other; and one chat gets one reminder per
/// gap: of two questions reminding the same chat at once, the second is skipped (and audited so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_asks_with_a_reminder_and_one_chat_gets_one_reminder_per_gap() {
    use askbridge::bridge::Storing;
    use askbridge::store::memory::MemoryStore;
    use askbridge::{Bridge, BridgeOptions, Flows};
    use askbridge_core::{NewQuestion, audit::AuditFilter};
    use std::sync::Arc;
    // Both reminders fall due at once, and the second must be reached within the gap of the
    // first to be held back: 3 s rather than 1 s, so that a loaded machine's sweeper, which
    // may take over a second between the two, still does.
    const GAP: Duration = Duration::from_secs(3);

    let flows = Flows::new()
        .flow("nag", "asks with a reminder", |ctx| async move {
            let request = NewQuestion::ask("Still there?")
                .targets(["chat:1"])
                .remind(GAP, 1);
            Ok(ctx.ask(request).await?.to_string())
        })
        .unwrap();
    let chat = crate::support::FakeChannel::new("chat");
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            reminder_gap: GAP,
            ..BridgeOptions::default()
        })
        .channel(chat.clone())
        .runner(Arc::new(flows))
        .start()
        .await
        .unwrap();
    let run = bridge
        .start_run(
            "nag",
            "",
            crate::support::api_origin(),
            Storing::WithFirstStep,
        )
        .await
        .unwrap();
    let other = bridge
        .create(
            NewQuestion::new("other", "Lunch?")
                .targets(["chat:1"])
                .remind(GAP, 1),
        )
        .await
        .unwrap();
    let audit = |bridge: Bridge| async move {
        let filter = AuditFilter {
            outcome: Some("nudged".into()),
            ..AuditFilter::default()
        };
        bridge.audit(&filter).await.unwrap()
    };
    let records = eventually_some(Duration::from_secs(20), "both reminders due", || {
        let bridge = bridge.clone();
        async move { Some(audit(bridge).await).filter(|r| r.len() == 2) }
    })
    .await;
    let said: Vec<String> = chat
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            crate::support::Call::Say { target, text } if text.contains("Reminder") => {
                Some(format!("{target} {text}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        said.len(),
        1,
        "one reminder in chat:1 within the gap: {said:#?}"
    );
    assert!(said[0].starts_with("chat:1 "), "{said:#?}");
    let messages: Vec<String> = records.iter().filter_map(|r| r.message.clone()).collect();
    assert!(
        messages.contains(&"reminder 1 of 1 on chat:1".to_owned()),
        "{messages:?}"
    );
    assert!(
        messages.contains(&"reminder 1 of 1: no chat reached".to_owned()),
        "{messages:?}"
    );
    let run = bridge.get_run(run.id.as_str()).await.unwrap();
    let flow_question = bridge.get(run.waiting_on.as_ref().unwrap()).await.unwrap();
    assert_eq!(flow_question.reminders.map(|r| r.times), Some(1));
    assert!(other.reminders.is_some());
}
