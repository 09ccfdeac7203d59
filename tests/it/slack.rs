//! The Slack adapter: the real slack-morphism client against the fake Slack Web API in
//! `fakes/slack.rs`, with the real bridge behind it, and signed requests posted to askbridge's
//! `/slack/*` routes as Slack posts them. Questions are created through the HTTP API with
//! `slack:<channel id>` targets.

use crate::fakes::slack::{BOT_USER, Call, FakeSlack, TOKEN};
use crate::support::{eventually, eventually_some};
use askbridge::Bridge;
use askbridge_core::{Question, QuestionId, Secret, Status};
use askbridge_slack::{Slack, SlackOptions};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

pub(crate) const WITHIN: Duration = Duration::from_secs(10);
const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub(crate) const CHANNEL: &str = "C0PUBLIC1";
const DM: &str = "D0ALICE01";
pub(crate) const ALICE: &str = "U0ALICE01";
pub(crate) const BOB: &str = "U0BOB0001";

/// A fake Slack, a started bridge with the Slack channel, and askbridge's HTTP app (the API and
/// the Slack routes).
pub(crate) struct Rig {
    pub(crate) fake: FakeSlack,
    pub(crate) bridge: Bridge,
    slack: Slack,
    app: Router,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.bridge.shutdown();
    }
}

impl Rig {
    pub(crate) async fn start() -> Rig {
        let fake = FakeSlack::start();
        let slack = Slack::connect(SlackOptions {
            bot_token: Secret::new(TOKEN),
            app_token: None,
            signing_secret: Some(Secret::new(SECRET)),
            api_url: Some(fake.api_url()),
        })
        .await
        .unwrap();
        assert_eq!(slack.bot_user(), BOT_USER);
        let (bridge, app) =
            crate::support::memory_bridge_routed(slack.channel(), |inbox| slack.routes(inbox))
                .await;
        // Kept for calls the bridge makes only on timers (reminders).
        Rig {
            fake,
            bridge,
            slack,
            app,
        }
    }

    /// POST /api/questions with `body` (targets default to the test channel).
    pub(crate) async fn ask(&self, mut body: Value) -> Question {
        body["session_id"] = json!("s1");
        if body.get("targets").is_none() {
            body["targets"] = json!([format!("slack:{CHANNEL}")]);
        }
        let request = Request::post("/api/questions")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, value) = send(&self.app, request).await;
        assert_eq!(status, StatusCode::CREATED, "{value}");
        serde_json::from_value(value).unwrap()
    }

    pub(crate) async fn get(&self, id: &QuestionId) -> Question {
        self.bridge.get(id).await.unwrap()
    }

    pub(crate) async fn wait_status(&self, id: &QuestionId, status: Status) -> Question {
        eventually_some(WITHIN, &format!("question {id} is {status}"), || async {
            let question = self.get(id).await;
            (question.status == status).then_some(question)
        })
        .await
    }

    /// The ts of the message showing `question` in the test channel, and the post's body.
    pub(crate) async fn shown(&self, question: &Question) -> (String, Value) {
        let ts = eventually_some(WITHIN, "the question is shown on Slack", || async {
            let shown = self.bridge.store().shown(&question.id).await.unwrap();
            shown.into_iter().next().map(|s| s.reference)
        })
        .await;
        let post = self
            .fake
            .calls_of("chat.postMessage")
            .into_iter()
            .rfind(|c| c.status == 200 && blocks_text(&c.body).contains(question.id.as_str()))
            .expect("the question's post");
        (ts, post.body)
    }

    /// Waits until message `ts` has been updated to show no elements, and returns it.
    pub(crate) async fn withdrawn(&self, ts: &str) -> Value {
        eventually_some(WITHIN, "the message is updated to its outcome", || async {
            let message = self.fake.message(CHANNEL, ts)?;
            (self
                .fake
                .calls_of("chat.update")
                .iter()
                .any(|c| c.body["ts"] == ts)
                && elements(&message).is_empty())
            .then_some(message)
        })
        .await
    }

    /// POSTs `body` to `path` signed as Slack signs it, `age_s` seconds ago, with `secret`.
    pub(crate) async fn post_signed(
        &self,
        path: &str,
        content_type: &str,
        body: &str,
        signing: Signing,
    ) -> (StatusCode, Value) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut request = Request::post(path).header("content-type", content_type);
        match signing {
            Signing::Good | Signing::Retry(_) => {
                let ts = now.to_string();
                request = request.header("x-slack-request-timestamp", &ts).header(
                    "x-slack-signature",
                    askbridge_slack::sign(SECRET, &ts, body.as_bytes()),
                );
                if let Signing::Retry(n) = signing {
                    request = request.header("x-slack-retry-num", n.to_string());
                }
            }
            Signing::Wrong => {
                let ts = now.to_string();
                request = request.header("x-slack-request-timestamp", &ts).header(
                    "x-slack-signature",
                    askbridge_slack::sign("not the secret", &ts, body.as_bytes()),
                );
            }
            Signing::Stale => {
                let ts = (now - 6 * 60).to_string();
                request = request.header("x-slack-request-timestamp", &ts).header(
                    "x-slack-signature",
                    askbridge_slack::sign(SECRET, &ts, body.as_bytes()),
                );
            }
            Signing::Missing => {}
        }
        send(
            &self.app,
            request.body(Body::from(body.to_owned())).unwrap(),
        )
        .await
    }

    /// A click on the element whose value (or option value) is `value`, by `user`.
    pub(crate) async fn click(&self, user: &str, value: &str, trigger: &str) -> StatusCode {
        let action = json!({"type": "button", "action_id": "askbridge-0", "value": value,
                            "action_ts": "1700000000.000200"});
        self.act(user, action, trigger).await
    }

    /// A block action `action` by `user` (a click, a selection).
    pub(crate) async fn act(&self, user: &str, action: Value, trigger: &str) -> StatusCode {
        self.act_in(CHANNEL, user, action, trigger).await
    }

    /// A block action `action` by `user` in `channel`.
    async fn act_in(&self, channel: &str, user: &str, action: Value, trigger: &str) -> StatusCode {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": user, "username": user.to_lowercase(), "name": user.to_lowercase()},
            "channel": {"id": channel, "name": "general"},
            "trigger_id": trigger,
            "response_url": self.fake.response_url(trigger),
            "actions": [action],
        });
        let started = Instant::now();
        let (status, _) = self.interact(&payload).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "acknowledged within Slack's 3 s"
        );
        status
    }

    /// Posts an interaction's `payload` as Slack does (form-encoded, signed); returns the answer.
    pub(crate) async fn interact(&self, payload: &Value) -> (StatusCode, Value) {
        let body = form(&[("payload", &payload.to_string())]);
        self.post_signed(
            "/slack/interactions",
            "application/x-www-form-urlencoded",
            &body,
            Signing::Good,
        )
        .await
    }

    /// A slash command `command text` by `user` in `channel`, answered at `response`.
    async fn command(&self, user: &str, channel: &str, command: &str, text: &str, response: &str) {
        let response_url = self.fake.response_url(response);
        let body = form(&[
            ("token", "legacy"),
            ("team_id", "T0FAKE"),
            ("channel_id", channel),
            ("user_id", user),
            ("user_name", &user.to_lowercase()),
            ("command", command),
            ("text", text),
            ("response_url", &response_url),
            ("trigger_id", &format!("trigger-{response}")),
        ]);
        let (status, _) = self
            .post_signed(
                "/slack/commands",
                "application/x-www-form-urlencoded",
                &body,
                Signing::Good,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }

    /// The text posted to the response_url `id`, once it is.
    async fn response(&self, id: &str) -> String {
        eventually_some(WITHIN, "a reply at the response_url", || async {
            self.fake
                .calls_of("response_url")
                .into_iter()
                .find(|c| c.body["id"] == id)
                .map(|c| {
                    assert_eq!(c.status, 200, "{:?}", c.error);
                    c.body["body"]["text"].as_str().unwrap().to_owned()
                })
        })
        .await
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Signing {
    Good,
    Retry(u32),
    Wrong,
    Stale,
    Missing,
}

pub(crate) fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// Every text of a message's blocks, joined.
pub(crate) fn blocks_text(message: &Value) -> String {
    message["blocks"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"]["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// Every interactive element of a message (actions blocks' elements, sections' accessories).
pub(crate) fn elements(message: &Value) -> Vec<Value> {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|b| match (b["elements"].as_array(), b.get("accessory")) {
            (Some(elements), _) => elements.clone(),
            (None, Some(accessory)) => vec![accessory.clone()],
            _ => Vec::new(),
        })
        .collect()
}

pub(crate) fn ephemerals(rig: &Rig) -> Vec<Call> {
    rig.fake.calls_of("chat.postEphemeral")
}

#[tokio::test]
async fn a_click_answers_and_the_message_is_updated_without_its_buttons() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let (ts, posted) = rig.shown(&q).await;
    let values: Vec<Value> = elements(&posted)
        .iter()
        .map(|e| e["value"].clone())
        .collect();
    assert_eq!(
        values,
        [
            json!(format!("/answer {} 1", q.id)),
            json!(format!("/answer {} 2", q.id)),
            json!(format!("/decline {}", q.id)),
        ]
    );
    assert!(
        blocks_text(&posted).contains(&format!("/answer {}", q.id)),
        "the command to type"
    );

    let status = rig
        .click(ALICE, &format!("/answer {} 2", q.id), "trigger-1")
        .await;
    assert_eq!(status, StatusCode::OK);
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().by().as_str(),
        format!("slack:{ALICE}")
    );
    let message = rig.withdrawn(&ts).await;
    let text = blocks_text(&message);
    assert!(
        text.ends_with(&format!(
            "Answered: luxon, by @{} via slack",
            ALICE.to_lowercase()
        )),
        "{text}"
    );
    // The click resolved it: the updated message says so, and nothing more is sent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(ephemerals(&rig).is_empty(), "{:?}", ephemerals(&rig));
}

#[tokio::test]
async fn a_multi_choice_is_a_multi_select_whose_choices_make_one_answer() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which ones?", "options": ["a", "b", "c"], "multi": true}))
        .await;
    let (ts, posted) = rig.shown(&q).await;
    let parts = elements(&posted);
    assert_eq!(parts[0]["type"], "multi_static_select");
    let values: Vec<String> = parts[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(values[2], format!("/answer {} 3", q.id));
    assert_eq!(parts[1]["value"], format!("/decline {}", q.id));
    let chosen = json!({
        "type": "multi_static_select", "action_id": parts[0]["action_id"],
        "selected_options": [{"value": values[0]}, {"value": values[2]}],
        "action_ts": "1700000000.000300",
    });
    assert_eq!(
        rig.act(ALICE, chosen, "trigger-multi").await,
        StatusCode::OK
    );
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        serde_json::to_value(answered.resolution.unwrap().value).unwrap(),
        json!(["a", "c"])
    );
    rig.withdrawn(&ts).await;
}

/// A rig showing a confirm that Alice and Bob must both say yes to: the question, its message's
/// ts and the yes command.
async fn quorum_shown() -> (Rig, Question, String, String) {
    let rig = Rig::start().await;
    let voters = [format!("slack:{ALICE}"), format!("slack:{BOB}")];
    let q = rig
        .ask(json!({"prompt": "Ship?", "kind": "confirm", "quorum": {"needs": 2, "of": voters}}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    let yes = format!("/answer {} yes", q.id);
    (rig, q, ts, yes)
}

#[tokio::test]
async fn a_quorum_on_slack_redraws_its_progress_then_resolves() {
    let (rig, q, ts, yes) = quorum_shown().await;
    rig.click(ALICE, &yes, "trigger-vote-1").await;
    // The vote counts, the voter is told, and the message shows the progress with its buttons.
    let told = eventually_some(WITHIN, "the voter is told", || async {
        ephemerals(&rig).into_iter().next()
    })
    .await;
    assert_eq!(told.body["user"], ALICE);
    let redrawn = eventually_some(WITHIN, "the progress is redrawn", || async {
        let message = rig.fake.message(CHANNEL, &ts)?;
        blocks_text(&message).contains("1 of 2").then_some(message)
    })
    .await;
    assert_eq!(elements(&redrawn).len(), 2, "Yes and No stay");
    assert!(rig.get(&q.id).await.is_pending());
    rig.click(BOB, &yes, "trigger-vote-2").await;
    rig.wait_status(&q.id, Status::Answered).await;
    rig.withdrawn(&ts).await;
}

/// A vote's redraw that reaches Slack after the question was answered (here held back by a
/// rate limit) does not leave the answered question showing its buttons: it is withdrawn again.
#[tokio::test]
async fn a_late_progress_redraw_does_not_bring_the_buttons_back() {
    let (rig, q, ts, yes) = quorum_shown().await;
    // Alice's two calls (her ephemeral line and the progress redraw) are told to wait 1 s.
    rig.fake.rate_limit_next(2, 1);
    rig.click(ALICE, &yes, "trigger-vote-1").await;
    eventually_some(WITHIN, "the redraw is held back", || async {
        let updates = rig.fake.calls_of("chat.update");
        updates.iter().any(|c| c.status == 429).then_some(())
    })
    .await;
    rig.click(BOB, &yes, "trigger-vote-2").await;
    rig.wait_status(&q.id, Status::Answered).await;
    // The held-back redraw lands after the withdrawal...
    eventually_some(WITHIN, "the late redraw lands", || async {
        let updates = rig.fake.calls_of("chat.update");
        let landed = updates.iter().filter(|c| c.status == 200).count() >= 2;
        landed.then_some(())
    })
    .await;
    // ...and is undone: the message ends showing the outcome, without buttons.
    let message = rig.withdrawn(&ts).await;
    assert!(blocks_text(&message).contains("Answered"), "{message}");
    let last = rig
        .fake
        .calls_of("chat.update")
        .into_iter()
        .rfind(|c| c.status == 200)
        .unwrap();
    assert!(
        elements(&last.body).is_empty(),
        "the last edit is the outcome: {}",
        last.body
    );
}

#[tokio::test]
async fn a_strangers_click_gets_a_line_only_they_see_and_changes_nothing() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Deploy?", "kind": "confirm", "answerers": [format!("slack:{ALICE}")]}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    assert_eq!(
        rig.click(BOB, &format!("/answer {} yes", q.id), "trigger-2")
            .await,
        StatusCode::OK
    );
    let line = eventually_some(WITHIN, "an ephemeral line", || async {
        ephemerals(&rig).into_iter().next()
    })
    .await;
    assert_eq!(line.body["user"], BOB);
    assert_eq!(line.body["channel"], CHANNEL);
    assert_eq!(line.body["text"], "You can't answer this question.");
    assert!(rig.get(&q.id).await.is_pending());
    assert!(rig.fake.calls_of("chat.update").is_empty());
    assert!(!elements(&rig.fake.message(CHANNEL, &ts).unwrap()).is_empty());
}

#[tokio::test]
async fn an_answer_elsewhere_updates_the_slack_message() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    let request = Request::post(format!("/api/questions/{}/reply", q.id))
        .header("content-type", "application/json")
        .body(Body::from(json!({"answer": "luxon"}).to_string()))
        .unwrap();
    assert_eq!(send(&rig.app, request).await.0, StatusCode::OK);
    let message = rig.withdrawn(&ts).await;
    assert!(blocks_text(&message).ends_with("Answered: luxon, by api via api"));
    // A click on the old message afterwards is told privately.
    rig.click(ALICE, &format!("/answer {} 1", q.id), "trigger-late")
        .await;
    let line = eventually_some(WITHIN, "an ephemeral line", || async {
        ephemerals(&rig).into_iter().next()
    })
    .await;
    assert!(
        line.body["text"]
            .as_str()
            .unwrap()
            .starts_with("Already answered"),
        "{}",
        line.body
    );
}

#[tokio::test]
async fn slash_commands_answer_and_list_privately() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    rig.command(ALICE, CHANNEL, "/pending", "", "r-pending")
        .await;
    let listed = rig.response("r-pending").await;
    assert!(listed.contains(q.id.as_str()), "{listed}");
    rig.command(ALICE, CHANNEL, "/whoami", "", "r-whoami").await;
    let whoami = rig.response("r-whoami").await;
    assert!(whoami.contains(&format!("slack:{ALICE}")), "{whoami}");
    rig.command(
        ALICE,
        CHANNEL,
        "/answer",
        &format!("{} dayjs", q.id),
        "r-answer",
    )
    .await;
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().by().as_str(),
        format!("slack:{ALICE}")
    );
    rig.response("r-answer").await;
    rig.withdrawn(&ts).await;
}

#[tokio::test]
async fn a_question_cannot_ping_the_channel_or_forge_a_link() {
    let rig = Rig::start().await;
    let q = rig
        .ask(
            json!({"prompt": "<!channel> ship & <https://evil.example|the docs>?",
                    "options": ["<@U0BOSS001>", "no"]}),
        )
        .await;
    let (_, posted) = rig.shown(&q).await;
    let text = format!("{}\n{}", posted["text"], blocks_text(&posted));
    assert!(
        !text.contains("<!channel>") && !text.contains("<https") && !text.contains("<@"),
        "{text}"
    );
    assert!(
        text.contains("&lt;!channel&gt; ship &amp; &lt;https://evil.example|the docs&gt;?"),
        "{text}"
    );
    for element in elements(&posted) {
        let label = element["text"]["text"].as_str().unwrap_or_default();
        assert!(
            !label.contains("<@") || element["text"]["type"] == "plain_text",
            "{label}"
        );
    }
}

#[tokio::test]
async fn a_retried_event_counts_once_and_bots_are_ignored() {
    let rig = Rig::start().await;
    let q = rig
        .ask(
            json!({"prompt": "Which library?", "options": ["dayjs", "luxon"],
                    "targets": [format!("slack:{DM}")]}),
        )
        .await;
    eventually(WITHIN, "the question is shown in the DM", || async {
        !rig.bridge.store().shown(&q.id).await.unwrap().is_empty()
    })
    .await;
    let event = |id: &str, extra: Value| {
        let mut event = json!({"type": "message", "channel": DM, "channel_type": "im",
                               "user": ALICE, "text": format!("/answer {} 1", q.id),
                               "ts": "1700000001.000100"});
        for (k, v) in extra.as_object().unwrap() {
            event[k] = v.clone();
        }
        json!({"type": "event_callback", "event_id": id, "team_id": "T0FAKE", "event": event})
            .to_string()
    };
    // A bot's message, and an edit, never answer.
    let bot = event("Ev0BOT", json!({"bot_id": "B0OTHER", "user": "U0OTHERBOT"}));
    let edit = event("Ev0EDIT", json!({"subtype": "message_changed"}));
    for body in [bot, edit] {
        let (status, _) = rig
            .post_signed("/slack/events", "application/json", &body, Signing::Good)
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.get(&q.id).await.is_pending());

    let body = event("Ev0ANSWER", json!({}));
    let (first, _) = rig
        .post_signed("/slack/events", "application/json", &body, Signing::Good)
        .await;
    let (retry, _) = rig
        .post_signed(
            "/slack/events",
            "application/json",
            &body,
            Signing::Retry(1),
        )
        .await;
    assert_eq!((first, retry), (StatusCode::OK, StatusCode::OK));
    rig.wait_status(&q.id, Status::Answered).await;
    let replies = || {
        rig.fake
            .calls_of("chat.postMessage")
            .into_iter()
            .filter(|c| c.body["channel"] == DM && !blocks_text(&c.body).contains("❓"))
            .count()
    };
    eventually(WITHIN, "a reply in the DM", || async { replies() == 1 }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(replies(), 1, "the retried delivery is not handled again");
}

#[tokio::test]
async fn a_reminder_replies_in_the_thread_and_mentions_only_slack_answerers() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"]}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    let mention: Vec<askbridge_core::Identity> = vec![
        format!("slack:{ALICE}").as_str().into(),
        "telegram:7".into(),
        "api".into(),
    ];
    rig.slack
        .channel()
        .remind(
            &q,
            &format!("slack:{CHANNEL}").as_str().into(),
            &ts,
            "⏰ Reminder: still waiting <!channel>",
            &mention,
        )
        .await
        .unwrap();
    let reminder = rig
        .fake
        .calls_of("chat.postMessage")
        .into_iter()
        .find(|c| {
            c.body["text"]
                .as_str()
                .is_some_and(|t| t.contains("Reminder"))
        })
        .expect("the reminder was posted");
    assert_eq!(reminder.body["thread_ts"], ts.as_str());
    let text = reminder.body["text"].as_str().unwrap();
    assert!(text.ends_with(&format!("<@{ALICE}>")), "{text}");
    assert!(
        text.contains("&lt;!channel&gt;") && !text.contains("<!channel>"),
        "{text}"
    );
    assert!(!text.contains("telegram"), "{text}");
}

#[tokio::test]
async fn a_mention_in_a_channel_is_typed_text_answered_in_its_thread() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"]}))
        .await;
    rig.shown(&q).await;
    let event = json!({
        "type": "event_callback", "event_id": "Ev0MENTION", "team_id": "T0FAKE",
        "event": {"type": "app_mention", "channel": CHANNEL, "user": ALICE,
                  "text": format!("<@{BOT_USER}> /answer {} b", q.id), "ts": "1700000002.000100"},
    });
    // The same words as a plain channel message (Slack sends both when subscribed to both)
    // count only through the mention.
    let plain = json!({
        "type": "event_callback", "event_id": "Ev0PLAIN", "team_id": "T0FAKE",
        "event": {"type": "message", "channel": CHANNEL, "channel_type": "channel", "user": ALICE,
                  "text": format!("<@{BOT_USER}> /answer {} a", q.id), "ts": "1700000002.000100"},
    });
    for body in [plain, event] {
        let (status, _) = rig
            .post_signed(
                "/slack/events",
                "application/json",
                &body.to_string(),
                Signing::Good,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        serde_json::to_value(answered.resolution.unwrap().value).unwrap(),
        json!("b")
    );
    let reply = eventually_some(WITHIN, "a reply in the thread", || async {
        rig.fake
            .calls_of("chat.postMessage")
            .into_iter()
            .find(|c| c.body["thread_ts"] == "1700000002.000100")
    })
    .await;
    assert_eq!(reply.body["channel"], CHANNEL);
}

#[tokio::test]
async fn a_429_is_waited_out_and_the_post_sent_again() {
    let rig = Rig::start().await;
    rig.fake.rate_limit_next(1, 1);
    let started = Instant::now();
    let q = rig.ask(json!({"prompt": "Ship?", "kind": "confirm"})).await;
    rig.shown(&q).await;
    let statuses: Vec<u16> = rig
        .fake
        .calls_of("chat.postMessage")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, [429, 200]);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After waited out"
    );
}

#[tokio::test]
async fn a_channel_without_the_app_is_a_permanent_failure_saying_to_invite_it() {
    let fake = FakeSlack::start();
    fake.not_in_channel(CHANNEL);
    let slack = Slack::connect(SlackOptions {
        bot_token: Secret::new(TOKEN),
        app_token: None,
        signing_secret: Some(Secret::new(SECRET)),
        api_url: Some(fake.api_url()),
    })
    .await
    .unwrap();
    let q = askbridge_core::NewQuestion::confirm("Ship?")
        .session("s")
        .into_question(
            QuestionId::random(),
            askbridge_core::Millis(0),
            Duration::from_secs(60),
        )
        .unwrap();
    let error = slack
        .channel()
        .show(&q, &format!("slack:{CHANNEL}").as_str().into())
        .await
        .unwrap_err();
    assert!(!error.is_retryable());
    let text = askbridge_core::error::Chain(&error).to_string();
    assert!(text.contains("invite"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}

#[tokio::test]
async fn slack_unreachable_is_a_retryable_failure_that_names_no_token() {
    let fake = FakeSlack::start();
    let slack = Slack::connect(SlackOptions {
        bot_token: Secret::new(TOKEN),
        app_token: None,
        signing_secret: Some(Secret::new(SECRET)),
        api_url: Some(fake.api_url()),
    })
    .await
    .unwrap();
    fake.stop();
    let q = askbridge_core::NewQuestion::confirm("Ship?")
        .session("s")
        .into_question(
            QuestionId::random(),
            askbridge_core::Millis(0),
            Duration::from_secs(60),
        )
        .unwrap();
    let error = slack
        .channel()
        .show(&q, &format!("slack:{CHANNEL}").as_str().into())
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    let text = format!("{} {error:?}", askbridge_core::error::Chain(&error));
    assert!(text.contains("cannot reach Slack"), "{text}");
    assert!(
        !text.contains(TOKEN) && !text.contains("fakeSlackToken"),
        "{text}"
    );
}

#[tokio::test]
async fn every_route_checks_the_signature() {
    let rig = Rig::start().await;
    let challenge =
        json!({"type": "url_verification", "token": "legacy", "challenge": "c-123"}).to_string();
    let (status, body) = rig
        .post_signed(
            "/slack/events",
            "application/json",
            &challenge,
            Signing::Good,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["challenge"], "c-123");
    for signing in [Signing::Wrong, Signing::Stale, Signing::Missing] {
        for (path, content_type, body) in [
            ("/slack/events", "application/json", challenge.clone()),
            (
                "/slack/commands",
                "application/x-www-form-urlencoded",
                "command=%2Fpending".to_owned(),
            ),
            (
                "/slack/interactions",
                "application/x-www-form-urlencoded",
                "payload=%7B%7D".to_owned(),
            ),
        ] {
            let (status, _) = rig.post_signed(path, content_type, &body, signing).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        }
    }
}

// `askbridge serve` with Slack's settings from the environment.

mod binary {
    use super::*;
    use crate::support::{Process, askbridge_binary, free_port, http};

    // Multi-threaded: `Process::spawn` blocks while it waits for /healthz.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serve_runs_slack_from_its_settings() {
        let fake = FakeSlack::start();
        let process = Process::spawn(
            &["serve", "--ephemeral"],
            &[
                ("SLACK_BOT_TOKEN", TOKEN.to_owned()),
                ("SLACK_SIGNING_SECRET", SECRET.to_owned()),
                ("SLACK_API_URL", fake.api_url()),
                ("ASKBRIDGE_API_TOKEN", "api-token".to_owned()),
            ],
        );
        let created: Value = http()
            .post(format!("{}/api/questions", process.base))
            .bearer_auth("api-token")
            .json(&json!({"session_id": "s1", "prompt": "Which library?",
                          "options": ["dayjs", "luxon"], "targets": [format!("slack:{CHANNEL}")]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        let post = eventually_some(WITHIN, "the question appears on Slack", || async {
            fake.calls_of("chat.postMessage")
                .into_iter()
                .find(|c| blocks_text(&c.body).contains(&id))
        })
        .await;
        assert_eq!(elements(&post.body)[1]["value"], format!("/answer {id} 2"));

        let payload = json!({
            "type": "block_actions",
            "user": {"id": ALICE, "username": "alice"},
            "channel": {"id": CHANNEL},
            "trigger_id": "t-serve",
            "actions": [{"type": "button", "action_id": "askbridge-1",
                         "value": format!("/answer {id} 2")}],
        });
        let body = form(&[("payload", &payload.to_string())]);
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .to_string();
        let click = http()
            .post(format!("{}/slack/interactions", process.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-slack-request-timestamp", &ts)
            .header(
                "x-slack-signature",
                askbridge_slack::sign(SECRET, &ts, body.as_bytes()),
            )
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(click.status(), 200);
        eventually(WITHIN, "answered through the binary", || async {
            let question: Value = http()
                .get(format!("{}/api/questions/{id}", process.base))
                .bearer_auth("api-token")
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            question["status"] == "answered" && question["resolution"]["value"] == "luxon"
        })
        .await;
        eventually(
            WITHIN,
            "the message is updated without its buttons",
            || async {
                fake.calls_of("chat.update")
                    .iter()
                    .any(|c| c.status == 200 && elements(&c.body).is_empty())
            },
        )
        .await;
    }

    #[tokio::test]
    async fn serve_stops_on_a_refused_token_without_printing_it() {
        let fake = FakeSlack::start();
        let wrong = "xoxb-wrong-token-9999";
        let run = tokio::process::Command::new(askbridge_binary())
            .args(["serve", "--ephemeral"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", std::env::temp_dir())
            .env("ASKBRIDGE_HTTP_ADDR", format!("127.0.0.1:{}", free_port()))
            .env("ASKBRIDGE_API_TOKEN", "api-token")
            .env("SLACK_BOT_TOKEN", wrong)
            .env("SLACK_SIGNING_SECRET", SECRET)
            .env("SLACK_API_URL", fake.api_url())
            .current_dir(std::env::temp_dir())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(WITHIN, run)
            .await
            .expect("askbridge stops")
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("SLACK_BOT_TOKEN"), "{stderr}");
        assert!(stderr.contains("invalid_auth"), "{stderr}");
        assert!(
            !stderr.contains(wrong) && !stderr.contains(SECRET),
            "{stderr}"
        );
        assert_eq!(fake.calls_of("auth.test").len(), 1);
    }
}

#[tokio::test]
async fn a_reply_in_a_questions_thread_answers_that_question_while_another_waits() {
    let rig = Rig::start().await;
    let ask = || {
        json!({"prompt": "Which library?", "options": ["dayjs", "luxon"],
               "answerers": [format!("slack:{ALICE}")]})
    };
    let first = rig.ask(ask()).await;
    let second = rig.ask(ask()).await;
    let (first_ts, _) = rig.shown(&first).await;
    let (second_ts, _) = rig.shown(&second).await;
    let in_thread = |event_id: &str, user: &str, thread: &str, ts: &str, text: &str| {
        json!({
            "type": "event_callback", "event_id": event_id, "team_id": "T0FAKE",
            "event": {"type": "message", "channel": CHANNEL, "channel_type": "channel",
                      "user": user, "text": text, "ts": ts, "thread_ts": thread,
                      "parent_user_id": BOT_USER},
        })
        .to_string()
    };
    let thread_reply = |ts: &str| {
        let ts = ts.to_owned();
        let rig = &rig;
        async move {
            eventually_some(WITHIN, "a reply in the thread", || async {
                rig.fake.calls_of("chat.postMessage").into_iter().find(|c| {
                    c.body["thread_ts"] == ts.as_str() && !blocks_text(&c.body).contains("❓")
                })
            })
            .await
        }
    };
    // A stranger's reply in the second question's thread is refused there; nothing changes.
    let body = in_thread("Ev0BOB", BOB, &second_ts, "1700000009.000001", "luxon");
    let (status, _) = rig
        .post_signed("/slack/events", "application/json", &body, Signing::Good)
        .await;
    assert_eq!(status, StatusCode::OK);
    let refused = thread_reply(&second_ts).await;
    assert_eq!(
        blocks_text(&refused.body),
        "You can't answer this question."
    );
    // Alice has two questions waiting: the thread says which one "luxon" answers.
    let body = in_thread("Ev0ALICE", ALICE, &first_ts, "1700000009.000002", "luxon");
    rig.post_signed("/slack/events", "application/json", &body, Signing::Good)
        .await;
    let answered = rig.wait_status(&first.id, Status::Answered).await;
    assert_eq!(
        serde_json::to_value(answered.resolution.unwrap().value).unwrap(),
        json!("luxon")
    );
    rig.withdrawn(&first_ts).await;
    assert!(rig.get(&second.id).await.is_pending());
    // Chatter in a channel outside any thread, or in a thread under a person's message, still
    // answers nothing.
    let outside = json!({
        "type": "event_callback", "event_id": "Ev0CHAT", "team_id": "T0FAKE",
        "event": {"type": "message", "channel": CHANNEL, "channel_type": "channel",
                  "user": ALICE, "text": "dayjs", "ts": "1700000009.000003"},
    });
    let under_bob = json!({
        "type": "event_callback", "event_id": "Ev0BOBS", "team_id": "T0FAKE",
        "event": {"type": "message", "channel": CHANNEL, "channel_type": "channel",
                  "user": ALICE, "text": "dayjs", "ts": "1700000009.000004",
                  "thread_ts": "1700000009.000001", "parent_user_id": BOB},
    });
    // A reply in the answered question's thread does not fall to the one still waiting.
    let late = in_thread("Ev0LATE", ALICE, &first_ts, "1700000009.000005", "dayjs");
    for body in [outside.to_string(), under_bob.to_string(), late] {
        rig.post_signed("/slack/events", "application/json", &body, Signing::Good)
            .await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.get(&second.id).await.is_pending());
}

#[tokio::test]
async fn an_escalation_step_shows_the_question_in_its_slack_channel_where_its_answerer_clicks() {
    let rig = Rig::start().await;
    const BOSS_CHANNEL: &str = "C0BOSSES1";
    const BOSS: &str = "U0BOSS001";
    let q = rig
        .ask(json!({"prompt": "Fail over?", "kind": "confirm",
                    "answerers": [format!("slack:{ALICE}")], "timeout_s": 60,
                    "escalate": [{"after_s": 1, "targets": [format!("slack:{BOSS_CHANNEL}")],
                                  "answerers": [format!("slack:{BOSS}")]}]}))
        .await;
    let (ts, _) = rig.shown(&q).await;
    let boss_ts = eventually_some(WITHIN, "the step shows it in the boss channel", || async {
        let shown = rig.bridge.store().shown(&q.id).await.unwrap();
        shown
            .into_iter()
            .find(|s| s.target.as_str() == format!("slack:{BOSS_CHANNEL}"))
            .map(|s| s.reference)
    })
    .await;
    let posted = rig.fake.message(BOSS_CHANNEL, &boss_ts).unwrap();
    assert_eq!(elements(&posted).len(), 2, "Yes and No: {posted}");
    let yes = json!({"type": "button", "action_id": "askbridge-0",
                     "value": format!("/answer {} yes", q.id)});
    let status = rig.act_in(BOSS_CHANNEL, BOSS, yes, "trigger-boss").await;
    assert_eq!(status, StatusCode::OK);
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().by().as_str(),
        format!("slack:{BOSS}")
    );
    rig.withdrawn(&ts).await;
    eventually(
        WITHIN,
        "the boss channel's message is updated too",
        || async {
            rig.fake
                .message(BOSS_CHANNEL, &boss_ts)
                .is_some_and(|m| elements(&m).is_empty())
        },
    )
    .await;
}
