//! The command grammar's meaning (through the `Inbox` every text surface uses) and the console.

use crate::support::{Call, eventually, memory_bridge, message};
use askbridge::console::Console;
use askbridge::store::ListFilter;
use askbridge_core::question::DEFAULT_TIMEOUT;
use askbridge_core::{Inbound, Inbox, Millis, NewQuestion, Question, QuestionId, Status, Tone};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn ask(bridge: &askbridge::Bridge, request: NewQuestion) -> Question {
    bridge
        .create(request.session("s").targets(["chat:1"]))
        .await
        .unwrap()
}

async fn reply(bridge: &askbridge::Bridge, m: Inbound) -> askbridge_core::Reply {
    bridge.handle(m).await.expect("a reply")
}

#[tokio::test]
async fn typed_answers_by_number_label_and_prefix() {
    let (bridge, _) = memory_bridge().await;
    for (text, expected) in [
        ("/answer {id} 2", "luxon"),
        ("/answer {id} DAYJS", "dayjs"),
        ("/answer {prefix} 1", "dayjs"),
    ] {
        let q = ask(
            &bridge,
            NewQuestion::ask("Which?").options(["dayjs", "luxon"]),
        )
        .await;
        let text = text
            .replace("{id}", q.id.as_str())
            .replace("{prefix}", &q.id.as_str()[..5]);
        let r = reply(&bridge, message("chat:7", "chat:1", &text)).await;
        assert_eq!(r.tone, Tone::Done, "{text}: {}", r.text);
        assert_eq!(
            r.text,
            format!("✓ Answered: {expected}, by @chat_7 via chat")
        );
        assert_eq!(bridge.get(&q.id).await.unwrap().status, Status::Answered);
    }
}

#[tokio::test]
async fn telegram_style_bot_suffix_and_multi_choice() {
    let (bridge, _) = memory_bridge().await;
    let q = ask(
        &bridge,
        NewQuestion::ask("Which?")
            .options(["a", "b", "c", "d"])
            .multi(),
    )
    .await;
    let r = reply(
        &bridge,
        message(
            "chat:7",
            "chat:1",
            &format!("/answer@AskBot {} 1-2,4", q.id),
        ),
    )
    .await;
    assert_eq!(r.text, "✓ Answered: a, b, d, by @chat_7 via chat");
}

#[tokio::test]
async fn bad_input_gets_one_polite_line_and_changes_nothing() {
    let (bridge, _) = memory_bridge().await;
    let q = ask(
        &bridge,
        NewQuestion::ask("Which?")
            .options(["dayjs", "luxon"])
            .answerers(["chat:7"]),
    )
    .await;
    let id = q.id.as_str();
    let cases = [
        ("chat:7", "/frobnicate", "Unknown command /frobnicate"),
        ("chat:7", "/answer", "Usage: /answer <id> <choice>"),
        (
            "chat:7",
            &format!("/answer {id}") as &str,
            "Usage: /answer <id> <choice>",
        ),
        (
            "chat:7",
            "/answer zzzzzzzzzz 1",
            "There is no question zzzzzzzzzz",
        ),
        ("chat:7", "/answer zzzz 1", "no pending question `zzzz`"),
        ("chat:7", "/answer ab 1", "too short"),
        ("chat:7", &format!("/answer {id} 3"), "There is no option 3"),
        (
            "chat:7",
            &format!("/answer {id} moment"),
            "`moment` is not one of the options",
        ),
        (
            "chat:8",
            &format!("/answer {id} 1"),
            "You can't answer this question.",
        ),
        (
            "chat:8",
            &format!("/decline {id}"),
            "You can't answer this question.",
        ),
    ];
    for (sender, text, expected) in cases {
        let r = reply(&bridge, message(sender, "chat:1", text)).await;
        assert_eq!(r.tone, Tone::Refused, "{text}");
        assert!(
            r.text.contains(expected),
            "{text}: got {:?}, expected {expected:?}",
            r.text
        );
        assert!(
            !r.text.contains('\n') || r.text.starts_with("That"),
            "one line: {:?}",
            r.text
        );
    }
    assert!(
        bridge.get(&q.id).await.unwrap().is_pending(),
        "nothing changed"
    );
    let r = reply(
        &bridge,
        message("chat:7", "chat:1", &format!("/answer {id} 1")),
    )
    .await;
    assert_eq!(r.tone, Tone::Done);
    let late = reply(
        &bridge,
        message("chat:7", "chat:1", &format!("/answer {id} 2")),
    )
    .await;
    assert_eq!(late.text, "Already answered: dayjs, by @chat_7 via chat");
}

#[tokio::test]
async fn ambiguous_prefixes_list_the_matches() {
    let (bridge, _) = memory_bridge().await;
    for id in ["abcd000000", "abcd111111"] {
        let q = NewQuestion::ask("?")
            .session("s")
            .targets(["chat:1"])
            .into_question(
                QuestionId::parse(id).unwrap(),
                Millis::now(),
                DEFAULT_TIMEOUT,
            )
            .unwrap();
        bridge.store().insert(&q).await.unwrap();
    }
    let r = reply(&bridge, message("chat:7", "chat:1", "/answer abcd x")).await;
    assert_eq!(r.tone, Tone::Refused);
    assert!(
        r.text
            .contains("matches several questions (abcd000000, abcd111111)"),
        "{}",
        r.text
    );
    let r = reply(&bridge, message("chat:7", "chat:1", "/answer ABCD1 x")).await;
    assert_eq!(
        r.text, "✓ Answered: x, by @chat_7 via chat",
        "a longer prefix, in any case, is unique"
    );
}

#[tokio::test]
async fn duplicate_deliveries_make_one_transition() {
    let (bridge, _) = memory_bridge().await;
    let q = ask(&bridge, NewQuestion::ask("Which?").options(["a", "b"])).await;
    let mut m = message("chat:7", "chat:1", &format!("/answer {} 1", q.id));
    m.delivery_id = Some("update-77".into());
    assert_eq!(reply(&bridge, m.clone()).await.tone, Tone::Done);
    assert!(
        bridge.handle(m).await.is_none(),
        "the re-delivery is dropped silently"
    );
}

#[tokio::test]
async fn decline_pending_show_and_help() {
    let (bridge, _) = memory_bridge().await;
    let a = ask(&bridge, NewQuestion::ask("First?").options(["x"])).await;
    let b = ask(&bridge, NewQuestion::confirm("Second?")).await;
    let listed = reply(&bridge, message("chat:7", "chat:1", "/pending")).await;
    assert!(
        listed.text.contains(a.id.as_str()) && listed.text.contains(b.id.as_str()),
        "{}",
        listed.text
    );
    assert!(
        listed.text.contains(&format!("/answer {} yes", b.id)),
        "{}",
        listed.text
    );
    let elsewhere = reply(&bridge, message("chat:7", "chat:2", "/pending")).await;
    assert_eq!(elsewhere.text, "No questions are waiting for you here.");
    let shown = reply(
        &bridge,
        message("chat:7", "chat:1", &format!("/show {}", a.id)),
    )
    .await;
    assert!(
        shown.text.contains("First?") && shown.text.contains("1. x"),
        "{}",
        shown.text
    );
    let declined = reply(
        &bridge,
        message(
            "chat:7",
            "chat:1",
            &format!("/decline {} not my call", a.id),
        ),
    )
    .await;
    assert_eq!(
        declined.text,
        "✓ Declined: not my call (by @chat_7 via chat)"
    );
    assert!(
        reply(&bridge, message("chat:7", "chat:1", "/help"))
            .await
            .text
            .contains("/answer <id> <choice>")
    );
}

#[tokio::test]
async fn a_plain_reply_answers_the_one_question_waiting_for_the_sender() {
    let (bridge, _) = memory_bridge().await;
    let q = ask(
        &bridge,
        NewQuestion::ask("Which?")
            .options(["dayjs", "luxon"])
            .answerers(["chat:7"]),
    )
    .await;
    let wrong = reply(&bridge, message("chat:7", "chat:1", "moment")).await;
    assert_eq!(wrong.tone, Tone::Refused);
    assert!(
        wrong.text.contains("1. dayjs") && wrong.text.contains("2. luxon"),
        "{}",
        wrong.text
    );
    assert!(bridge.get(&q.id).await.unwrap().is_pending());
    assert!(
        bridge
            .handle(message("chat:8", "chat:1", "2"))
            .await
            .is_none(),
        "others' chatter in a group is ignored"
    );
    let right = reply(&bridge, message("chat:7", "chat:1", "2")).await;
    assert_eq!(right.text, "✓ Answered: luxon, by @chat_7 via chat");
}

#[tokio::test]
async fn with_several_waiting_a_plain_reply_lists_them() {
    let (bridge, _) = memory_bridge().await;
    ask(&bridge, NewQuestion::ask("One?").answerers(["chat:7"])).await;
    ask(&bridge, NewQuestion::ask("Two?").answerers(["chat:7"])).await;
    let r = reply(&bridge, message("chat:7", "chat:1", "hello")).await;
    assert!(
        r.text.starts_with("Several questions are waiting for you"),
        "{}",
        r.text
    );
    assert_eq!(bridge.list(&ListFilter::pending()).await.unwrap().len(), 2);
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A started bridge over a memory store with a fake `chat` channel and `console`.
async fn with_console(console: &Console) -> (askbridge::Bridge, Arc<crate::support::FakeChannel>) {
    let store = Arc::new(askbridge::store::memory::MemoryStore::default());
    let console = Arc::new(console.clone());
    crate::support::bridge_with(store, |builder| builder.channel(console)).await
}

#[tokio::test]
async fn the_console_prints_questions_takes_typed_answers_and_reports_other_surfaces() {
    let buffer = Buffer::default();
    let console = Console::new(Arc::new(Mutex::new(buffer.clone())));
    let (bridge, chat) = with_console(&console).await;
    let first = bridge
        .create(
            NewQuestion::ask("Which library?")
                .session("s")
                .options(["dayjs", "luxon"])
                .targets(["console", "chat:1"]),
        )
        .await
        .unwrap();
    let second = bridge
        .create(
            NewQuestion::confirm("Ship it?")
                .session("s")
                .targets(["console", "chat:1"]),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "both printed", || async {
        buffer.text().contains("Ship it?")
    })
    .await;
    let text = buffer.text();
    assert!(text.contains("1. dayjs\n2. luxon"), "{text}");
    assert!(
        text.contains(&format!("/answer {} <1-2 or name>", first.id)),
        "{text}"
    );
    let (mut typing, input) = tokio::io::duplex(1024);
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    let running = tokio::spawn({
        let console = console.clone();
        async move { console.run(inbox, tokio::io::BufReader::new(input)).await }
    });
    use tokio::io::AsyncWriteExt;
    typing
        .write_all(format!("/answer {} luxon\n", first.id).as_bytes())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(5),
        "the typed answer recorded",
        || async {
            buffer
                .text()
                .contains("✓ Answered: luxon, by console via console")
        },
    )
    .await;
    // Another surface answers the second question first: the console says so.
    bridge
        .handle(message(
            "chat:7",
            "chat:1",
            &format!("/answer {} yes", second.id),
        ))
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "the console told", || async {
        buffer.text().contains(&format!(
            "question {} was resolved on another surface: Answered: yes",
            second.id
        ))
    })
    .await;
    assert!(
        chat.calls()
            .iter()
            .any(|c| matches!(c, Call::Withdraw { id, .. } if *id == second.id.to_string()))
    );
    drop(typing);
    running.await.unwrap();
}

#[tokio::test]
async fn a_preview_predicts_the_reply_and_changes_nothing() {
    let (bridge, _) = memory_bridge().await;
    let q = ask(
        &bridge,
        NewQuestion::ask("Which?")
            .options(["a", "b"])
            .answerers(["chat:7"]),
    )
    .await;
    let tap = message("chat:7", "chat:1", &format!("/answer {} 2", q.id));
    let predicted = bridge
        .prepare(tap.clone())
        .await
        .preview()
        .cloned()
        .unwrap();
    assert_eq!(predicted.text, "✓ Answered: b, by @chat_7 via chat");
    assert!(
        bridge.get(&q.id).await.unwrap().is_pending(),
        "a preview changes nothing"
    );
    let stranger = bridge
        .prepare(message("chat:8", "chat:1", &format!("/answer {} 2", q.id)))
        .await
        .preview()
        .cloned()
        .unwrap();
    assert_eq!(stranger.text, "You can't answer this question.");
    let real = reply(&bridge, tap.clone()).await;
    assert_eq!(real.text, predicted.text);
    let after = bridge
        .prepare(tap.clone())
        .await
        .preview()
        .cloned()
        .unwrap();
    assert_eq!(after.text, "Already answered: b, by @chat_7 via chat");
}

/// A form on the console: each field in turn, a bad value answered with why, the last one
/// skipped, the whole object submitted.
#[tokio::test]
async fn the_console_fills_a_form_one_field_at_a_time() {
    let buffer = Buffer::default();
    let console = Console::new(Arc::new(Mutex::new(buffer.clone())));
    let (bridge, _chat) = with_console(&console).await;
    let schema = serde_json::from_value(serde_json::json!({
        "type": "object",
        "properties": {
            "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
            "note": {"type": "string", "title": "Note"}
        },
        "required": ["env", "replicas"]
    }))
    .unwrap();
    let form = bridge
        .create(
            NewQuestion::ask("Deploy settings?")
                .session("s")
                .targets(["console"])
                .form(schema),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(5), "the form printed", || async {
        buffer.text().contains("Field 1 of 3: Environment")
    })
    .await;
    let (mut typing, input) = tokio::io::duplex(1024);
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    let running = tokio::spawn({
        let console = console.clone();
        async move { console.run(inbox, tokio::io::BufReader::new(input)).await }
    });
    use tokio::io::AsyncWriteExt;
    for (line, then) in [
        (
            format!("/answer {} production", form.id),
            "Field 2 of 3: Replicas",
        ),
        ("eleven".to_owned(), "That does not fit Replicas"),
        ("3".to_owned(), "Field 3 of 3: Note"),
        (
            format!("/skip {}", form.id),
            "✓ Answered: env: production, replicas: 3",
        ),
    ] {
        typing
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        eventually(Duration::from_secs(5), then, || async {
            buffer.text().contains(then)
        })
        .await;
    }
    let answered = bridge.get(&form.id).await.unwrap();
    assert_eq!(
        serde_json::to_value(answered.resolution.unwrap().value).unwrap(),
        serde_json::json!({"env": "production", "replicas": 3})
    );
    drop(typing);
    running.await.unwrap();
}
