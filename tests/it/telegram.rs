//! The Telegram adapter through the real teloxide client, against the fake Bot API.

use crate::fakes::telegram::{BOT_USERNAME, FakeTelegram, Sent, User};
use crate::support::{
    Call as ChannelCall, FakeChannel, bridge_with, eventually, eventually_some, http, serve,
};
use askbridge::Bridge;
use askbridge::http::{AppState, app};
use askbridge::store::memory::MemoryStore;
use askbridge::store::{Questions, Store};
use askbridge::{BridgeBuilder, Flows};
use askbridge_core::{Inbox, Status};
use askbridge_telegram::{SECRET_HEADER, Telegram, TelegramOptions, WebhookOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "123456:TEST-token-never-logged";
pub(crate) const GROUP: i64 = -100_200;
const WITHIN: Duration = Duration::from_secs(10);

pub(crate) fn alice() -> User {
    User {
        id: 7,
        username: "alice",
    }
}
pub(crate) fn mallory() -> User {
    User {
        id: 66,
        username: "mallory",
    }
}

pub(crate) struct Setup {
    pub(crate) fake: FakeTelegram,
    pub(crate) bridge: Bridge,
    chat: Arc<FakeChannel>,
    base: String,
}

async fn setup_with(webhook: Option<WebhookOptions>) -> Setup {
    setup_bridge(Arc::new(MemoryStore::default()), |b| b, webhook).await
}

/// A fake Telegram, askbridge's Telegram adapter, and the HTTP API, over `store`, its questions
/// role replaced by `questions` (a decorator of the store's).
pub(crate) async fn setup_over(store: Arc<dyn Store>, questions: Arc<dyn Questions>) -> Setup {
    setup_bridge(store, |b| b.questions(questions), None).await
}

async fn setup_bridge(
    store: Arc<dyn Store>,
    set_up: impl FnOnce(BridgeBuilder) -> BridgeBuilder,
    webhook: Option<WebhookOptions>,
) -> Setup {
    let fake = FakeTelegram::start();
    let telegram = Telegram::connect(TelegramOptions {
        token: TOKEN.into(),
        api_url: Some(fake.base.clone()),
        webhook,
    })
    .await
    .unwrap();
    assert_eq!(telegram.username(), BOT_USERNAME);
    let (bridge, chat) =
        bridge_with(store, |builder| set_up(builder.channel(telegram.channel()))).await;
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    let state = AppState::new(bridge.clone(), None).with_routes(telegram.routes(inbox.clone()));
    let base = serve(app(state)).await;
    let shutdown = bridge.shutdown_signal();
    tokio::spawn(async move { telegram.run(inbox, shutdown).await });
    Setup {
        fake,
        bridge,
        chat,
        base,
    }
}

async fn setup() -> Setup {
    setup_with(None).await
}

impl Setup {
    pub(crate) async fn ask(&self, body: Value) -> Value {
        let response = http()
            .post(format!("{}/api/questions", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        response.json().await.unwrap()
    }

    pub(crate) async fn status(&self, id: &str) -> String {
        let q: Value = http()
            .get(format!("{}/api/questions/{id}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        q["status"].as_str().unwrap().to_owned()
    }

    /// The message showing question `id` in `chat`, once askbridge has also recorded where it
    /// showed it (a reply to the message finds the question by that record; the fake has the
    /// message a moment before askbridge stores it).
    pub(crate) async fn shown(&self, chat: i64, id: &str) -> Sent {
        let fake = self.fake.clone();
        let sent = eventually_some(WITHIN, "the question shown on Telegram", move || {
            let fake = fake.clone();
            let id = id.to_owned();
            async move {
                fake.sent_in(chat)
                    .into_iter()
                    .find(|m| m.text.contains(&id) && m.markup.is_some())
            }
        })
        .await;
        let question = askbridge_core::QuestionId::parse(id).unwrap();
        let store = self.bridge.store();
        eventually(WITHIN, "where the question was shown, recorded", || async {
            !store.shown(&question).await.unwrap().is_empty()
        })
        .await;
        sent
    }

    async fn message(&self, chat: i64, message: i64) -> Sent {
        self.fake
            .sent_in(chat)
            .into_iter()
            .find(|m| m.id == message)
            .unwrap()
    }

    pub(crate) async fn wait_for_text(&self, chat: i64, message: i64, needle: &str) -> Sent {
        let fake = self.fake.clone();
        eventually_some(WITHIN, needle, move || {
            let fake = fake.clone();
            let needle = needle.to_owned();
            async move {
                fake.sent_in(chat)
                    .into_iter()
                    .find(|m| m.id == message && m.text.contains(&needle))
            }
        })
        .await
    }

    async fn reply_to(&self, chat: i64, containing: &str) -> Sent {
        let fake = self.fake.clone();
        eventually_some(WITHIN, containing, move || {
            let fake = fake.clone();
            let containing = containing.to_owned();
            async move {
                fake.sent_in(chat).into_iter().find(|m| {
                    m.markup.is_none() && m.reply_to.is_some() && m.text.contains(&containing)
                })
            }
        })
        .await
    }

    /// The newest message in `chat` that still has its buttons and contains `needle`.
    async fn open_question(&self, chat: i64, needle: &str) -> Sent {
        let fake = self.fake.clone();
        eventually_some(WITHIN, needle, move || {
            let fake = fake.clone();
            let needle = needle.to_owned();
            async move {
                fake.sent_in(chat)
                    .into_iter()
                    .filter(|m| m.text.contains(&needle) && m.markup.is_some())
                    .max_by_key(|m| m.id)
            }
        })
        .await
    }

    /// A plain message (no reply, no keyboard) in `chat` starting with `prefix`: what a run posts.
    async fn reply_to_plain(&self, chat: i64, prefix: &str) -> String {
        let fake = self.fake.clone();
        eventually_some(WITHIN, prefix, move || {
            let fake = fake.clone();
            let prefix = prefix.to_owned();
            async move {
                fake.sent_in(chat)
                    .into_iter()
                    .find(|m| {
                        m.markup.is_none() && m.reply_to.is_none() && m.text.starts_with(&prefix)
                    })
                    .map(|m| m.text)
            }
        })
        .await
    }

    /// Waits until every queued update was taken and handled (the bot confirmed them), then a
    /// little more for handlers to finish their calls.
    async fn settle(&self) {
        let before = self.fake.calls().len();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let fake = self.fake.clone();
        eventually(WITHIN, "calls settled", move || {
            let fake = fake.clone();
            async move {
                let n = fake.calls().len();
                tokio::time::sleep(Duration::from_millis(150)).await;
                n == fake.calls().len()
            }
        })
        .await;
        let _ = before;
    }
}

pub(crate) fn ask_body(targets: &[&str], answerers: &[&str]) -> Value {
    json!({
        "session_id": "tg",
        "prompt": "Which library for date formatting?",
        "options": ["dayjs", "date-fns", "luxon"],
        "targets": targets,
        "answerers": answerers,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_by_an_allowed_user_resolves_the_question_and_withdraws_it_everywhere() {
    let s = setup().await;
    let q = s
        .ask(ask_body(
            &[&format!("telegram:{GROUP}"), "telegram:7", "chat:1"],
            &["telegram:7"],
        ))
        .await;
    let id = q["id"].as_str().unwrap();
    let group_message = s.shown(GROUP, id).await;
    let private_message = s.shown(7, id).await;
    assert!(
        group_message
            .text
            .contains("1. dayjs\n2. date-fns\n3. luxon"),
        "{}",
        group_message.text
    );
    assert_eq!(
        group_message.buttons(),
        vec![
            vec![("1. dayjs".to_owned(), format!("/answer {id} 1"))],
            vec![("2. date-fns".to_owned(), format!("/answer {id} 2"))],
            vec![("3. luxon".to_owned(), format!("/answer {id} 3"))],
            vec![("Decline".to_owned(), format!("/decline {id}"))],
        ]
    );
    s.fake.tap(
        GROUP,
        group_message.id,
        &alice(),
        &group_message.payload("3. luxon"),
    );
    let edited = s
        .wait_for_text(
            GROUP,
            group_message.id,
            "✅ Answered: luxon, by @alice via telegram",
        )
        .await;
    assert!(edited.markup.is_none(), "the keyboard is gone");
    assert!(
        !edited.text.contains("/answer"),
        "no commands left in a closed question: {}",
        edited.text
    );
    let other = s
        .wait_for_text(
            7,
            private_message.id,
            "Answered: luxon, by @alice via telegram",
        )
        .await;
    assert!(other.markup.is_none(), "withdrawn in the other chat too");
    let chat = s.chat.clone();
    let qid = id.to_owned();
    eventually(WITHIN, "withdrawn on the other surface", move || {
        let chat = chat.clone();
        let qid = qid.clone();
        async move { chat.withdrawn(&qid).len() == 1 }
    })
    .await;
    assert_eq!(s.status(id).await, "answered");
    // The tap was acknowledged with a toast saying the outcome.
    assert_eq!(
        s.fake.toasts(),
        vec!["✓ Answered: luxon, by @alice via telegram".to_owned()]
    );
    let Some(ChannelCall::Withdraw { outcome, .. }) = s.chat.withdrawn(id).into_iter().next()
    else {
        unreachable!()
    };
    assert_eq!(outcome, "Answered: luxon, by @alice via telegram");
}

/// A question asked in [`GROUP`], answerable by alice: its id and the message showing it.
async fn asked_in_group(s: &Setup) -> (String, Sent) {
    let q = s
        .ask(ask_body(&[&format!("telegram:{GROUP}")], &["telegram:7"]))
        .await;
    let id = q["id"].as_str().unwrap().to_owned();
    let shown = s.shown(GROUP, &id).await;
    (id, shown)
}

/// A tap counts while Telegram is still taking its callback answer: the claim does not wait for
/// a round trip to Telegram (the callback is answered once the claim is in, with its reply).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_counts_while_telegram_takes_its_answer() {
    let s = setup().await;
    let (id, shown) = asked_in_group(&s).await;
    let id = id.as_str();
    s.fake.hold_next("answerCallbackQuery");
    s.fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("2. date-fns"));
    eventually(
        WITHIN,
        "answered while the callback answer is held",
        || async { s.status(id).await == "answered" },
    )
    .await;
    assert!(
        s.fake.toasts().is_empty(),
        "the callback answer is still held"
    );
    s.fake.release();
    let fake = s.fake.clone();
    eventually(WITHIN, "the tap's toast", move || {
        let fake = fake.clone();
        async move { !fake.toasts().is_empty() }
    })
    .await;
    assert_eq!(
        s.fake.toasts(),
        vec!["✓ Answered: date-fns, by @alice via telegram".to_owned()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_renders_with_command_payloads() {
    let s = setup().await;
    let target = format!("telegram:{GROUP}");
    let confirm = s.ask(json!({"session_id": "tg", "kind": "confirm", "prompt": "Ship it?", "targets": [target]})).await;
    let shown = s.shown(GROUP, confirm["id"].as_str().unwrap()).await;
    let id = confirm["id"].as_str().unwrap();
    assert_eq!(
        shown.buttons(),
        vec![vec![
            ("Yes".to_owned(), format!("/answer {id} yes")),
            ("No".to_owned(), format!("/answer {id} no"))
        ]]
    );

    let long = "an option label far too long to fit on a phone's button, so it is shortened there";
    let custom = s.ask(json!({"session_id": "tg", "prompt": "Name?", "options": ["Aurora", long], "allow_custom": true, "targets": [target]})).await;
    let shown = s.shown(GROUP, custom["id"].as_str().unwrap()).await;
    assert!(
        shown
            .text
            .contains("You may also reply with your own answer."),
        "{}",
        shown.text
    );
    assert!(shown.text.contains(long), "whole in the text");
    let label = &shown.buttons()[1][0].0;
    assert!(
        label.ends_with('…') && label.chars().count() <= 44,
        "{label}"
    );

    let approval = s
        .ask(json!({
            "session_id": "tg", "kind": "approval", "prompt": "May the agent run this?", "targets": [target],
            "action": {"tool": "shell", "args": {"command": "rm -rf build/"}}, "answerers": ["telegram:7"],
        }))
        .await;
    let shown = s.shown(GROUP, approval["id"].as_str().unwrap()).await;
    let labels: Vec<Vec<String>> = shown
        .buttons()
        .into_iter()
        .map(|r| r.into_iter().map(|b| b.0).collect())
        .collect();
    assert_eq!(
        labels,
        vec![
            vec!["Allow once".to_owned(), "Always allow".to_owned()],
            vec!["Reject".to_owned()]
        ]
    );

    // 25 options with long multibyte labels: every callback_data within 64 bytes, or the fake
    // (like Telegram) would refuse the message and it would never appear.
    let options: Vec<String> = (1..=25)
        .map(|n| format!("{n} {}", "日本語🚀".repeat(20)))
        .collect();
    let many = s.ask(json!({"session_id": "tg", "prompt": "Pick some", "options": options, "multi": true, "targets": [target]})).await;
    let shown = s.shown(GROUP, many["id"].as_str().unwrap()).await;
    assert_eq!(shown.buttons().len(), 26, "25 toggles and a Decline row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_mark_code_with_entities_not_backticks() {
    let s = setup().await;
    let body = json!({"session_id": "tg", "prompt": "Ship?", "options": ["yes", "no"], "targets": [format!("telegram:{GROUP}")]});
    let q = s.ask(body).await;
    let id = q["id"].as_str().unwrap();
    s.fake.say(GROUP, &alice(), &format!("/answer {id} maybe`"));
    let fake = s.fake.clone();
    let call = eventually_some(WITHIN, "the reply", move || {
        let fake = fake.clone();
        async move {
            fake.calls()
                .into_iter()
                .find(|c| c.method == "sendmessage" && c.body["entities"].is_array())
        }
    })
    .await;
    let text = call.body["text"].as_str().unwrap();
    let entities = call.body["entities"].as_array().unwrap();
    assert!(!entities.is_empty(), "{text}");
    assert!(entities.iter().all(|e| e["type"] == "code"), "{entities:?}");
    assert!(
        call.body.get("parse_mode").is_none(),
        "no parse mode to break"
    );
    // The person's stray backtick is kept as typed; askbridge's own pairs became entities.
    assert!(text.matches('`').count() <= 1, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redraw_that_lands_after_the_withdrawal_is_undone() {
    let s = setup().await;
    let body = json!({"session_id": "tg", "prompt": "Which features?", "options": ["dark mode", "offline"], "multi": true, "targets": [format!("telegram:{GROUP}")]});
    let q = s.ask(body).await;
    let id = q["id"].as_str().unwrap().to_owned();
    let shown = s.shown(GROUP, &id).await;
    // The toggle's redraw is slow on its way...
    s.fake.hold_next("editMessageReplyMarkup");
    s.fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("☐ dark mode"));
    let fake = s.fake.clone();
    eventually(WITHIN, "the tap acknowledged", move || {
        let fake = fake.clone();
        async move { !fake.toasts().is_empty() }
    })
    .await;
    // ...while the question is answered elsewhere and the message withdrawn.
    let response = http()
        .post(format!("{}/api/questions/{id}/reply", s.base))
        .json(&json!({"answer": ["offline"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    s.wait_for_text(GROUP, shown.id, "Answered: offline, by api via api")
        .await;
    // The redraw lands on the resolved message, putting buttons back; then it is withdrawn again.
    s.fake.release();
    let fake = s.fake.clone();
    eventually(WITHIN, "the redraw undone", move || {
        let fake = fake.clone();
        async move {
            let redrawn = fake
                .calls()
                .iter()
                .any(|c| c.method == "editmessagereplymarkup" && c.status == 200);
            let message = fake.sent_in(GROUP).into_iter().find(|m| m.id == shown.id);
            redrawn
                && message
                    .is_some_and(|m| m.buttons().is_empty() && m.text.contains("Answered: offline"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_choice_toggles_redraw_the_keyboard_then_submit() {
    let s = setup().await;
    let body = json!({"session_id": "tg", "prompt": "Which features?", "options": ["dark mode", "offline", "export"], "multi": true, "targets": [format!("telegram:{GROUP}")]});
    let q = s.ask(body).await;
    let id = q["id"].as_str().unwrap();
    let shown = s.shown(GROUP, id).await;
    assert_eq!(shown.buttons()[0][0].0, "☐ dark mode");
    s.fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("☐ dark mode"));
    let fake = s.fake.clone();
    let redrawn = eventually_some(WITHIN, "the keyboard redrawn", move || {
        let fake = fake.clone();
        async move {
            fake.sent_in(GROUP)
                .into_iter()
                .find(|m| m.id == shown.id && m.buttons()[0][0].0 == "☑ dark mode")
        }
    })
    .await;
    s.fake
        .tap(GROUP, redrawn.id, &alice(), &redrawn.payload("☐ export"));
    let fake = s.fake.clone();
    let redrawn = eventually_some(WITHIN, "two selected", move || {
        let fake = fake.clone();
        async move {
            fake.sent_in(GROUP).into_iter().find(|m| {
                m.id == redrawn.id && m.buttons().iter().flatten().any(|b| b.0 == "Submit (2)")
            })
        }
    })
    .await;
    assert_eq!(s.status(id).await, "pending", "toggling does not answer");
    s.fake
        .tap(GROUP, redrawn.id, &alice(), &redrawn.payload("Submit (2)"));
    s.wait_for_text(
        GROUP,
        redrawn.id,
        "Answered: dark mode, export, by @alice via telegram",
    )
    .await;
    assert!(
        s.fake.toasts()[0].starts_with("Selected: dark mode."),
        "{:?}",
        s.fake.toasts()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_commands_work_in_groups_and_private_chats() {
    let s = setup().await;
    let (id, shown) = asked_in_group(&s).await;
    let id = id.as_str();
    s.fake
        .say(GROUP, &alice(), &format!("/answer@OtherBot {id} 1"));
    s.fake.say(7, &alice(), "/pending");
    let listed = s
        .reply_to(7, "No questions are waiting for you here.")
        .await;
    assert!(listed.reply_to.is_some());
    s.fake.say(
        GROUP,
        &alice(),
        &format!("/answer@{BOT_USERNAME} {} date-fns", &id[..5]),
    );
    let reply = s
        .reply_to(GROUP, "✓ Answered: date-fns, by @alice via telegram")
        .await;
    assert!(reply.reply_to.is_some(), "a reply to the command");
    s.wait_for_text(GROUP, shown.id, "Answered: date-fns").await;
    assert!(
        !s.fake
            .sent_in(GROUP)
            .iter()
            .any(|m| m.text.contains("dayjs, by")),
        "the command addressed to another bot was ignored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_reply_in_a_private_chat_answers_the_waiting_question() {
    let s = setup().await;
    let q = s.ask(ask_body(&["telegram:7"], &["telegram:7"])).await;
    let id = q["id"].as_str().unwrap();
    s.shown(7, id).await;
    s.fake.say(7, &alice(), "moment.js");
    let refused = s.reply_to(7, "That doesn't answer").await;
    assert!(refused.text.contains("1. dayjs"), "{}", refused.text);
    assert_eq!(s.status(id).await, "pending");
    s.fake.say(7, &alice(), "3");
    s.reply_to(7, "✓ Answered: luxon").await;
    assert_eq!(s.status(id).await, "answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_tap_is_refused_and_changes_nothing() {
    let s = setup().await;
    let q = s
        .ask(ask_body(&[&format!("telegram:{GROUP}")], &["telegram:7"]))
        .await;
    let id = q["id"].as_str().unwrap();
    let shown = s.shown(GROUP, id).await;
    s.fake
        .tap(GROUP, shown.id, &mallory(), &shown.payload("1. dayjs"));
    let fake = s.fake.clone();
    eventually(WITHIN, "the tap answered", move || {
        let fake = fake.clone();
        async move { !fake.toasts().is_empty() }
    })
    .await;
    s.settle().await;
    assert_eq!(
        s.fake.toasts(),
        vec!["You can't answer this question.".to_owned()]
    );
    assert_eq!(s.status(id).await, "pending");
    assert!(
        s.message(GROUP, shown.id).await.markup.is_some(),
        "the buttons stay"
    );
    assert!(!s.fake.methods().contains(&"editmessagetext".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_anonymous_bot_and_edited_messages_never_resolve() {
    let s = setup().await;
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let id = q["id"].as_str().unwrap();
    s.shown(GROUP, id).await;
    let command = format!("/answer {id} 1");
    let mut forwarded = s.fake.text_message(GROUP, &alice(), &command);
    forwarded["forward_origin"] =
        json!({"type": "user", "date": 1_700_000_000, "sender_user": mallory().json()});
    s.fake.push("message", forwarded);
    let mut anonymous = s.fake.text_message(GROUP, &alice(), &command);
    anonymous["sender_chat"] = json!({"id": GROUP, "type": "supergroup", "title": "Ops"});
    s.fake.push("message", anonymous);
    let mut from_bot = s.fake.text_message(GROUP, &alice(), &command);
    from_bot["from"]["is_bot"] = json!(true);
    s.fake.push("message", from_bot);
    let mut edited = s.fake.text_message(GROUP, &alice(), &command);
    edited["edit_date"] = json!(1_700_000_100);
    s.fake.push("edited_message", edited);
    s.settle().await;
    assert_eq!(s.status(id).await, "pending");
    assert!(
        s.fake.sent_in(GROUP).iter().all(|m| m.reply_to.is_none()),
        "no replies at all"
    );
    // The same command, typed plainly, does count.
    s.fake.say(GROUP, &alice(), &command);
    s.reply_to(GROUP, "✓ Answered: dayjs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_update_makes_one_transition() {
    let s = setup().await;
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let id = q["id"].as_str().unwrap();
    let shown = s.shown(GROUP, id).await;
    let update = s
        .fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("2. date-fns"));
    s.fake.redeliver(update);
    s.wait_for_text(GROUP, shown.id, "Answered: date-fns").await;
    s.settle().await;
    let answered: Vec<Value> = serde_json::from_value(
        http()
            .get(format!("{}/api/questions?status=answered", s.base))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()["questions"]
            .clone(),
    )
    .unwrap();
    assert_eq!(answered.len(), 1);
    assert_eq!(
        s.fake
            .sent_in(GROUP)
            .iter()
            .filter(|m| m.reply_to.is_some())
            .count(),
        0,
        "no second reply"
    );
    let edits = s
        .fake
        .methods()
        .iter()
        .filter(|m| *m == "editmessagetext")
        .count();
    assert_eq!(edits, 1, "one transition, one edit");
    // A typed command delivered twice: one reply.
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let id = q["id"].as_str().unwrap();
    s.shown(GROUP, id).await;
    let update = s.fake.say(GROUP, &alice(), &format!("/answer {id} 1"));
    s.fake.redeliver(update);
    s.reply_to(GROUP, "✓ Answered: dayjs").await;
    s.settle().await;
    assert_eq!(
        s.fake
            .sent_in(GROUP)
            .iter()
            .filter(|m| m.reply_to.is_some())
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_waited_out_and_nothing_is_dropped() {
    let s = setup().await;
    s.fake.rate_limit_next(2, 1);
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let shown = s.shown(GROUP, q["id"].as_str().unwrap()).await;
    let statuses: Vec<u16> = s
        .fake
        .calls()
        .into_iter()
        .filter(|c| c.method == "sendmessage")
        .map(|c| c.status)
        .collect();
    assert_eq!(
        statuses,
        vec![429, 429, 200],
        "waited out twice, then sent once"
    );
    assert!(shown.markup.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_on_another_surface_withdraws_the_telegram_message() {
    let s = setup().await;
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let id = q["id"].as_str().unwrap();
    let shown = s.shown(GROUP, id).await;
    let r = http()
        .post(format!("{}/api/questions/{id}/reply", s.base))
        .json(&json!({"answer": "dayjs"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let edited = s
        .wait_for_text(GROUP, shown.id, "✅ Answered: dayjs, by api via api")
        .await;
    assert!(edited.markup.is_none());
    // A late tap on the withdrawn message's (cached) button is told, not spun.
    s.fake
        .tap(GROUP, shown.id, &alice(), &format!("/answer {id} 2"));
    let fake = s.fake.clone();
    eventually(WITHIN, "the late tap answered", move || {
        let fake = fake.clone();
        async move {
            fake.toasts()
                .iter()
                .any(|t| t == "Already answered: dayjs, by api via api")
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_and_decline_edit_the_message() {
    let s = setup().await;
    let target = format!("telegram:{GROUP}");
    let expiring = s.ask(json!({"session_id": "tg", "prompt": "Quick?", "options": ["a"], "timeout_s": 0.3, "targets": [target]})).await;
    let shown = s.shown(GROUP, expiring["id"].as_str().unwrap()).await;
    let edited = s
        .wait_for_text(GROUP, shown.id, "⌛ Expired: no answer")
        .await;
    assert!(edited.markup.is_none());
    let declined = s.ask(ask_body(&[&target], &[])).await;
    let shown = s.shown(GROUP, declined["id"].as_str().unwrap()).await;
    s.fake.say(
        GROUP,
        &alice(),
        &format!("/decline {} not my call", declined["id"].as_str().unwrap()),
    );
    s.wait_for_text(
        GROUP,
        shown.id,
        "🚫 Declined: not my call (by @alice via telegram)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_mode_checks_the_secret_in_constant_time() {
    let secret = "hook_secret-1";
    let s = setup_with(Some(WebhookOptions {
        url: "https://askbridge.example/telegram/webhook".into(),
        secret: secret.into(),
    }))
    .await;
    let fake = s.fake.clone();
    let registered = eventually_some(WITHIN, "the webhook registered", move || {
        let fake = fake.clone();
        async move { fake.calls().into_iter().find(|c| c.method == "setwebhook") }
    })
    .await;
    assert_eq!(
        registered.body["url"],
        "https://askbridge.example/telegram/webhook"
    );
    assert_eq!(registered.body["secret_token"], secret);
    assert!(
        !s.fake.methods().contains(&"getupdates".to_owned()),
        "no polling in webhook mode"
    );
    let q = s.ask(ask_body(&[&format!("telegram:{GROUP}")], &[])).await;
    let id = q["id"].as_str().unwrap();
    s.shown(GROUP, id).await;
    let message = s
        .fake
        .text_message(GROUP, &alice(), &format!("/answer {id} 2"));
    let update = json!({"update_id": 5000, "message": message});
    let url = format!("{}/telegram/webhook", s.base);
    for wrong in [None, Some("nope"), Some("hook_secret-2")] {
        let mut request = http().post(&url).json(&update);
        if let Some(wrong) = wrong {
            request = request.header(SECRET_HEADER, wrong);
        }
        assert_eq!(request.send().await.unwrap().status(), 401, "{wrong:?}");
    }
    s.settle().await;
    assert_eq!(
        s.status(id).await,
        "pending",
        "refused updates change nothing"
    );
    for _ in 0..2 {
        let response = http()
            .post(&url)
            .header(SECRET_HEADER, secret)
            .json(&update)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    s.reply_to(GROUP, "✓ Answered: date-fns").await;
    s.settle().await;
    assert_eq!(
        s.fake
            .sent_in(GROUP)
            .iter()
            .filter(|m| m.reply_to.is_some())
            .count(),
        1,
        "a webhook retry is a duplicate"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_outages_are_retryable_and_never_show_the_token() {
    let s = setup().await;
    s.fake.stop();
    let telegram_channel = s.bridge.channel_for(&"telegram:1".into()).unwrap();
    let question = s
        .bridge
        .create(
            askbridge_core::NewQuestion::ask("During an outage?")
                .session("tg")
                .targets(["chat:1"]),
        )
        .await
        .unwrap();
    let error = telegram_channel
        .show(&question, &"telegram:1".into())
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    let text = format!("{error} {error:?}");
    assert!(!text.contains("TEST-token-never-logged"), "{text}");
    assert_eq!(
        s.bridge.get(&question.id).await.unwrap().status,
        Status::Pending
    );
    // The delivery error keeps teloxide's error (token-free), and its chain says nothing twice.
    let text = askbridge_core::error::Chain(&error).to_string();
    assert_eq!(text, error.to_string(), "the chain says nothing twice");
    assert!(text.starts_with("telegram: "), "{text}");
    let askbridge_core::Error::Delivery(delivery) = error else {
        panic!("a delivery failure: {text}");
    };
    let kept = delivery
        .get_ref()
        .downcast_ref::<askbridge_telegram::BotApiError>()
        .expect("teloxide's error is kept");
    assert_eq!(format!("telegram: {kept}"), text);
    assert!(!format!("{kept:?}").contains("TEST-token-never-logged"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_on_telegram_once_reject_with_feedback_and_a_stranger_denied() {
    let s = setup().await;
    let target = format!("telegram:{GROUP}");
    let body = |command: &str| {
        json!({
            "session_id": "agent", "kind": "approval", "prompt": "May the agent run this?", "targets": [target],
            "action": {"tool": "shell", "args": {"command": command}}, "answerers": ["telegram:7"],
        })
    };
    let once = s.ask(body("make clean")).await;
    let id = once["id"].as_str().unwrap();
    let shown = s.shown(GROUP, id).await;
    assert!(
        shown.text.contains("Action: shell\n  command: make clean"),
        "{}",
        shown.text
    );
    // A stranger in the group taps Allow: denied, audited, nothing changes.
    s.fake
        .tap(GROUP, shown.id, &mallory(), &shown.payload("Allow once"));
    let fake = s.fake.clone();
    eventually(WITHIN, "the stranger told", move || {
        let fake = fake.clone();
        async move {
            fake.toasts()
                .iter()
                .any(|t| t == "You can't answer this question.")
        }
    })
    .await;
    assert_eq!(s.status(id).await, "pending");
    s.fake
        .tap(GROUP, shown.id, &alice(), &shown.payload("Allow once"));
    s.wait_for_text(
        GROUP,
        shown.id,
        "✅ Answered: allowed once, by @alice via telegram",
    )
    .await;
    // Reject with feedback, typed: the words reach whoever asked.
    let rejected = s.ask(body("rm -rf /")).await;
    let rid = rejected["id"].as_str().unwrap();
    let shown = s.shown(GROUP, rid).await;
    s.fake.say(
        GROUP,
        &alice(),
        &format!("/answer {rid} reject that would wipe the disk"),
    );
    s.wait_for_text(
        GROUP,
        shown.id,
        "🚫 Rejected: that would wipe the disk (by @alice via telegram)",
    )
    .await;
    let q: Value = http()
        .get(format!("{}/api/questions/{rid}", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["resolution"]["message"], "that would wipe the disk");
    let audit: Value = http()
        .get(format!("{}/api/audit?session_id=agent", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refused = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "refused" && e["by"] == "telegram:66");
    assert!(refused, "the stranger's tap is in the audit trail: {audit}");
}

/// A flow with three asks and a step, driven entirely from Telegram.
fn trip_flows(side_effects: Arc<std::sync::atomic::AtomicUsize>) -> Flows {
    Flows::new()
        .flow("trip", "plans a trip", move |ctx| {
            let side_effects = side_effects.clone();
            async move {
                let city = ctx.input().to_owned();
                let transport = ctx
                    .ask(
                        askbridge_core::NewQuestion::ask(format!("How do we get to {city}?"))
                            .options(["train", "plane", "car"]),
                    )
                    .await?;
                let nights = match ctx
                    .ask(
                        askbridge_core::NewQuestion::ask("How many nights?")
                            .options(["1", "2", "3"]),
                    )
                    .await
                {
                    Ok(nights) => nights.to_string(),
                    Err(askbridge::Interrupt::NoAnswer(askbridge::NoAnswer::Declined {
                        message,
                    })) => {
                        format!("? ({})", message.unwrap_or_default())
                    }
                    Err(other) => return Err(other),
                };
                let booking = ctx
                    .step("book", async move {
                        side_effects.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
                    })
                    .await?;
                let insured = ctx
                    .confirm(
                        askbridge_core::NewQuestion::confirm("Add insurance?")
                            .timeout(Duration::from_millis(500)),
                    )
                    .await?;
                Ok(format!(
                    "{city} by {transport}, {nights} nights, booking #{booking}, insured: {insured}"
                ))
            }
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_started_by_a_message_is_answered_by_taps_plain_replies_declines_and_expiry() {
    let side_effects = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let store = Arc::new(MemoryStore::default());
    let flows = Arc::new(trip_flows(side_effects.clone()));
    let s = setup_bridge(store, |b| b.runner(flows), None).await;
    s.fake.say(7, &alice(), "/trip Lisbon");
    s.reply_to(7, "▶ trip started.").await;
    let first = s.open_question(7, "How do we get to Lisbon?").await;
    s.fake
        .tap(7, first.id, &alice(), &first.payload("2. plane"));
    let second = s.open_question(7, "How many nights?").await;
    s.fake.say(7, &alice(), "a week");
    s.reply_to(7, "That doesn't answer \"How many nights?\"")
        .await;
    s.fake.say(7, &alice(), "2");
    s.reply_to(7, "✓ Answered: 2, by @alice via telegram").await;
    s.wait_for_text(7, second.id, "✅ Answered: 2").await;
    // Nobody answers the insurance question: it expires, and the flow reads it as no.
    let result = s.reply_to_plain(7, "✓ trip:").await;
    assert_eq!(
        result,
        "✓ trip: Lisbon by plane, 2 nights, booking #1, insured: false"
    );
    // A second run declines the nights.
    s.fake.say(7, &alice(), "/trip Porto");
    let first = s.open_question(7, "How do we get to Porto?").await;
    s.fake
        .tap(7, first.id, &alice(), &first.payload("1. train"));
    let nights = s.open_question(7, "How many nights?").await;
    s.fake
        .tap(7, nights.id, &alice(), &nights.payload("Decline"));
    let result = s.reply_to_plain(7, "✓ trip: Porto").await;
    assert_eq!(
        result,
        "✓ trip: Porto by train, ? () nights, booking #2, insured: false"
    );
    assert_eq!(
        side_effects.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one booking per run, whatever the replays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_a_questions_message_answers_that_question_while_another_waits() {
    let s = setup().await;
    let group = format!("telegram:{GROUP}");
    let first = s.ask(ask_body(&[&group], &["telegram:7"])).await;
    let second = s.ask(ask_body(&[&group], &["telegram:7"])).await;
    let (first, second) = (
        first["id"].as_str().unwrap(),
        second["id"].as_str().unwrap(),
    );
    let first_shown = s.shown(GROUP, first).await;
    let second_shown = s.shown(GROUP, second).await;
    let reply = |from: &User, to: &Sent, text: &str| {
        let mut message = s.fake.text_message(GROUP, from, text);
        message["reply_to_message"] = to.json();
        s.fake.push("message", message)
    };
    // A stranger's reply to the second question's message is refused; nothing changes.
    reply(&mallory(), &second_shown, "luxon");
    s.reply_to(GROUP, "You can't answer this question.").await;
    // Alice has two questions waiting: a plain "luxon" alone would not say which.
    reply(&alice(), &first_shown, "luxon");
    s.reply_to(GROUP, "✓ Answered: luxon").await;
    assert_eq!(s.status(first).await, "answered");
    assert_eq!(s.status(second).await, "pending");
}
