//! The Discord adapter: the real serenity client (REST and gateway) against the fake Discord in
//! `fakes/discord.rs`, with the real bridge behind it. Questions are created through the HTTP API
//! or `Bridge::create` with `discord:<channel id>` targets.

use crate::fakes::discord::{
    APP_ID, BOT_ID, FakeDiscord, FakeUser, Place, Recorded, SentInteraction, TOKEN,
};
use crate::support::{eventually, eventually_some, memory_bridge};
use askbridge::Bridge;
use askbridge::bridge::Attempt;
use askbridge_core::{Actor, Inbox, NewQuestion, Question, QuestionId, Status, render};
use askbridge_discord::Discord;
use askbridge_discord::serenity::http::HttpBuilder;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

const WITHIN: Duration = Duration::from_secs(10);
const CHANNEL: u64 = 555_000_000_000_000_001;
const DM: u64 = 666_000_000_000_000_001;

pub(crate) fn alice() -> FakeUser {
    FakeUser::person(111_000_000_000_000_001, "alice")
}

pub(crate) fn bob() -> FakeUser {
    FakeUser::person(222_000_000_000_000_002, "bob")
}

pub(crate) fn channel() -> Place {
    Place::guild_channel(CHANNEL)
}

/// A serenity `Http` pointed at the fake: the proxy base only counts with the limiter off.
fn http_for(base: &str) -> Arc<askbridge_discord::serenity::http::Http> {
    Arc::new(
        HttpBuilder::new(TOKEN)
            .proxy(base)
            .ratelimiter_disabled(true)
            .build(),
    )
}

/// A fake Discord, a started bridge with the Discord channel, the gateway client running, and
/// the HTTP API.
pub(crate) struct Rig {
    pub(crate) fake: FakeDiscord,
    pub(crate) bridge: Bridge,
    discord: Discord,
    api: Router,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.bridge.shutdown();
    }
}

impl Rig {
    pub(crate) async fn start() -> Rig {
        let fake = FakeDiscord::start().await;
        let discord = Discord::with_http(http_for(&fake.base));
        let rig = Rig::over(fake, discord).await;
        let inbox: Arc<dyn Inbox> = Arc::new(rig.bridge.clone());
        let run = rig.discord.clone();
        let shutdown = rig.bridge.shutdown_signal();
        tokio::spawn(async move { run.run(inbox, shutdown).await });
        rig.fake.wait_ready().await;
        rig
    }

    /// Without the gateway: for the HTTP endpoint and the outage.
    async fn over(fake: FakeDiscord, discord: Discord) -> Rig {
        let (bridge, api) =
            crate::support::memory_bridge_routed(discord.channel(), |inbox| discord.routes(inbox))
                .await;
        Rig {
            fake,
            bridge,
            discord,
            api,
        }
    }

    /// POST /api/questions with `body` (targets default to the test channel).
    pub(crate) async fn ask(&self, mut body: Value) -> Question {
        body["session_id"] = json!("s1");
        if body.get("targets").is_none() {
            body["targets"] = json!([channel().target()]);
        }
        let (status, value) = call(&self.api, "POST", "/api/questions", Some(body), &[]).await;
        assert_eq!(status, StatusCode::CREATED, "{value}");
        serde_json::from_value(value).unwrap()
    }

    pub(crate) async fn get(&self, id: &QuestionId) -> Question {
        self.bridge.get(id).await.unwrap()
    }

    /// The id of the message showing `question` in `place`, as the adapter reported it.
    pub(crate) async fn shown(&self, question: &Question, place: Place) -> u64 {
        let target = place.target();
        eventually_some(WITHIN, "the question is shown on Discord", || async {
            let shown = self.bridge.store().shown(&question.id).await.unwrap();
            shown
                .into_iter()
                .find(|s| s.target == target)
                .map(|s| s.reference.parse::<u64>().unwrap())
        })
        .await
    }

    /// The body of the POST that showed `question` in `place`.
    pub(crate) async fn shown_body(&self, question: &Question, place: Place) -> Value {
        self.shown(question, place).await;
        let posted = self.fake.posted(place.channel);
        posted
            .into_iter()
            .find(|r| {
                r.body["content"]
                    .as_str()
                    .unwrap()
                    .contains(question.id.as_str())
            })
            .expect("the question's message")
            .body
    }

    pub(crate) async fn wait_status(&self, id: &QuestionId, status: Status) -> Question {
        eventually_some(WITHIN, &format!("question {id} is {status}"), || async {
            let question = self.get(id).await;
            (question.status == status).then_some(question)
        })
        .await
    }

    /// Waits until message `message_id` is edited to show no components, and returns it.
    pub(crate) async fn withdrawn(&self, message_id: u64) -> Value {
        eventually_some(WITHIN, "the message is edited to its outcome", || async {
            let message = self.fake.message(message_id)?;
            (message["components"] == json!([]) && !message["edited_timestamp"].is_null())
                .then_some(message)
        })
        .await
    }

    /// Waits for an ephemeral follow-up to `interaction` and returns its text.
    pub(crate) async fn follow_up(&self, interaction: &SentInteraction) -> String {
        let path = format!("/webhooks/{APP_ID}/{}", interaction.token);
        let recorded = eventually_some(WITHIN, "an ephemeral follow-up", || async {
            self.fake
                .requests_to("POST", &path)
                .into_iter()
                .find(|r| r.path == path)
        })
        .await;
        assert_eq!(recorded.status, 200);
        assert_eq!(recorded.body["flags"], 64, "ephemeral: {}", recorded.body);
        recorded.body["content"].as_str().unwrap().to_owned()
    }

    /// Edits of message `message_id` so far.
    pub(crate) fn edits(&self, message_id: u64) -> Vec<Recorded> {
        let path = format!("/channels/{CHANNEL}/messages/{message_id}");
        self.fake
            .requests_to("PATCH", &path)
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// The callback answering `interaction`.
    fn callbacks(&self, interaction: &SentInteraction) -> Vec<Recorded> {
        self.fake.requests_to(
            "POST",
            &format!(
                "/interactions/{}/{}/callback",
                interaction.id, interaction.token
            ),
        )
    }
}

pub(crate) async fn call(
    router: &Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, String)],
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(
            body.map(|b| Body::from(b.to_string()))
                .unwrap_or_else(Body::empty),
        )
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

/// Every component of a message body, row by row: (type, label, custom_id).
pub(crate) fn components(body: &Value) -> Vec<Vec<(u64, String, String)>> {
    body["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row["components"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["type"].as_u64().unwrap(),
                        c["label"].as_str().unwrap_or("").to_owned(),
                        c["custom_id"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .collect()
}

/// True when the recorded message is a reply to message `id`.
fn replies_to(posted: &Recorded, id: u64) -> bool {
    posted.body["message_reference"]["message_id"].as_str() == Some(id.to_string().as_str())
}

/// The outcome edit askbridge makes: the question's text, a blank line, the outcome.
fn outcome_content(question: &Question) -> String {
    format!(
        "{}\n\n{}",
        render::question_text(
            question,
            2000 - 2 - render::outcome_line(question).chars().count()
        ),
        render::outcome_line(question)
    )
}

#[tokio::test]
async fn the_gateway_session_identifies_registers_commands_and_heartbeats() {
    let rig = Rig::start().await;
    let frames = rig.fake.gateway_frames();
    let identify = frames.iter().find(|f| f["op"] == 2).expect("IDENTIFY");
    // GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT
    assert_eq!(
        identify["d"]["intents"],
        1 | (1 << 9) | (1 << 12) | (1 << 15)
    );
    let commands = rig.fake.commands().unwrap();
    let names: Vec<&str> = commands
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["answer", "pending"]);
    let options = &commands[0]["options"];
    assert_eq!(options[0]["name"], "id");
    assert_eq!(options[0]["type"], 3);
    assert_eq!(options[0]["autocomplete"], true);
    assert_eq!(options[0]["required"], true);
    assert_eq!(options[1]["name"], "choice");
    // Heartbeats every 500 ms are acknowledged, so the session stays up: one IDENTIFY only.
    eventually(WITHIN, "two heartbeats", || async {
        rig.fake
            .gateway_frames()
            .iter()
            .filter(|f| f["op"] == 1)
            .count()
            >= 2
    })
    .await;
    let frames = rig.fake.gateway_frames();
    assert_eq!(frames.iter().filter(|f| f["op"] == 2).count(), 1);
    assert!(frames.iter().all(|f| f["op"] != 6), "no resume");
    assert!(
        rig.fake.unknown_routes().is_empty(),
        "{:?}",
        rig.fake.unknown_routes()
    );
    // Every request carried the bot token (the fake answers 401 otherwise).
    assert!(rig.fake.requests().iter().all(|r| r.status != 401));
}

#[tokio::test]
async fn an_ask_question_is_one_message_with_a_button_per_option_and_decline() {
    let rig = Rig::start().await;
    let long = "a very long option label ".repeat(4);
    let options = json!([
        "dayjs",
        "date-fns",
        "luxon",
        "moment",
        "temporal",
        "none",
        long.trim()
    ]);
    let q = rig
        .ask(json!({"prompt": "Which library?", "detail": "For the date picker.", "options": options}))
        .await;
    let body = rig.shown_body(&q, channel()).await;
    assert_eq!(body["content"], render::question_text(&q, 2000));
    let rows = components(&body);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].len(), 5);
    assert_eq!(rows[1].len(), 3);
    let all: Vec<&(u64, String, String)> = rows.iter().flatten().collect();
    for (n, (kind, _, custom_id)) in all.iter().take(7).enumerate() {
        assert_eq!(*kind, 2);
        assert_eq!(*custom_id, format!("/answer {} {}", q.id, n + 1));
    }
    assert_eq!(all[0].1, "dayjs");
    let shortened = &all[6].1;
    assert_eq!(shortened.chars().count(), 80);
    assert!(shortened.ends_with('…'));
    assert_eq!(all[7].1, "Decline");
    assert_eq!(all[7].2, format!("/decline {}", q.id));
    // Nobody is pinged by a prompt or label, and a re-sent show is deduplicated by Discord.
    assert_eq!(body["allowed_mentions"]["parse"], json!([]));
    assert_eq!(body["enforce_nonce"], true);
    assert!(body["nonce"].as_str().unwrap().starts_with(q.id.as_str()));
}

#[tokio::test]
async fn twenty_four_options_fill_five_rows_and_more_become_a_select_menu() {
    let rig = Rig::start().await;
    let options: Vec<String> = (1..=24).map(|n| format!("option {n}")).collect();
    let q = rig
        .ask(json!({"prompt": "Which?", "options": options}))
        .await;
    let rows = components(&rig.shown_body(&q, channel()).await);
    assert_eq!(
        rows.iter().map(Vec::len).collect::<Vec<_>>(),
        [5, 5, 5, 5, 5]
    );
    assert_eq!(rows[4][4].2, format!("/decline {}", q.id));

    let options: Vec<String> = (1..=25).map(|n| format!("option {n}")).collect();
    let q = rig
        .ask(json!({"prompt": "Which?", "options": options}))
        .await;
    let body = rig.shown_body(&q, channel()).await;
    let select = &body["components"][0]["components"][0];
    assert_eq!(select["type"], 3);
    assert_eq!(select["custom_id"], format!("/answer {}", q.id));
    assert_eq!(select["min_values"], 1);
    assert_eq!(select["max_values"], 1);
    let values: Vec<&str> = select["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values.len(), 25);
    assert_eq!(values[16], "17");
    assert_eq!(select["options"][16]["label"], "option 17");
    assert_eq!(
        components(&body)[1],
        [(2, "Decline".to_owned(), format!("/decline {}", q.id))]
    );

    let message = rig.shown(&q, channel()).await;
    rig.fake.select(
        &alice(),
        channel(),
        message,
        &format!("/answer {}", q.id),
        &["17"],
    );
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().value.unwrap().to_string(),
        "option 17"
    );
    rig.withdrawn(message).await;
}

#[tokio::test]
async fn multi_choice_is_a_select_menu_with_min_and_max() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b", "c", "d"], "multi": true}))
        .await;
    let body = rig.shown_body(&q, channel()).await;
    let select = &body["components"][0]["components"][0];
    assert_eq!(select["type"], 3);
    assert_eq!(select["min_values"], 1);
    assert_eq!(select["max_values"], 4);
    let message = rig.shown(&q, channel()).await;
    rig.fake.select(
        &alice(),
        channel(),
        message,
        &format!("/answer {}", q.id),
        &["1", "3"],
    );
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    let edited = rig.withdrawn(message).await;
    assert_eq!(
        edited["content"].as_str().unwrap(),
        outcome_content(&answered)
    );
    assert!(
        edited["content"]
            .as_str()
            .unwrap()
            .ends_with("Answered: a, c, by @alice via discord")
    );
}

#[tokio::test]
async fn confirm_and_approval_questions_get_their_own_buttons() {
    let rig = Rig::start().await;
    let confirm = rig
        .ask(json!({"prompt": "Archive 87 emails?", "kind": "confirm"}))
        .await;
    let rows = components(&rig.shown_body(&confirm, channel()).await);
    assert_eq!(
        rows,
        [vec![
            (2, "Yes".to_owned(), format!("/answer {} yes", confirm.id)),
            (2, "No".to_owned(), format!("/answer {} no", confirm.id)),
        ]]
    );
    let approval = rig
        .ask(json!({
            "prompt": "May the agent run this?",
            "kind": "approval",
            "action": {"tool": "shell", "args": {"command": "rm -rf build"}},
            "answerers": ["discord:111000000000000001"],
        }))
        .await;
    let digest = approval.action.as_ref().unwrap().short_digest();
    let body = rig.shown_body(&approval, channel()).await;
    assert!(
        body["content"]
            .as_str()
            .unwrap()
            .contains("Action: shell\n  command: rm -rf build"),
        "{body}"
    );
    let rows = components(&body);
    assert_eq!(
        rows,
        [vec![
            (
                2,
                "Allow once".to_owned(),
                format!("/answer {} once #{digest}", approval.id)
            ),
            (
                2,
                "Always allow".to_owned(),
                format!("/answer {} always #{digest}", approval.id)
            ),
            (
                2,
                "Reject".to_owned(),
                format!("/answer {} reject #{digest}", approval.id)
            ),
        ]]
    );

    let message = rig.shown(&confirm, channel()).await;
    rig.fake.click(
        &alice(),
        channel(),
        message,
        &rows_custom_id(&rig, &confirm, 1).await,
    );
    let answered = rig.wait_status(&confirm.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().value,
        Some(askbridge_core::Answer::Bool(false))
    );

    let message = rig.shown(&approval, channel()).await;
    rig.fake.click(
        &alice(),
        channel(),
        message,
        &format!("/answer {} always #{digest}", approval.id),
    );
    rig.wait_status(&approval.id, Status::Answered).await;
    let edited = rig.withdrawn(message).await;
    assert!(
        edited["content"]
            .as_str()
            .unwrap()
            .ends_with("Answered: always allowed in this session, by @alice via discord"),
        "{edited}"
    );
}

/// The custom_id of the `index`-th component of `question`'s message, as sent.
async fn rows_custom_id(rig: &Rig, question: &Question, index: usize) -> String {
    let rows = components(&rig.shown_body(question, channel()).await);
    rows.into_iter().flatten().nth(index).unwrap().2
}

#[tokio::test]
async fn a_click_resolves_the_question_and_the_message_shows_the_outcome() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "date-fns", "luxon"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let click = rig
        .fake
        .click(&alice(), channel(), message, &format!("/answer {} 2", q.id));

    // Through the HTTP API, as the asking program sees it.
    let resolved = eventually_some(WITHIN, "answered over the API", || async {
        let (_, value) = call(
            &rig.api,
            "GET",
            &format!("/api/questions/{}", q.id),
            None,
            &[],
        )
        .await;
        (value["status"] == "answered").then_some(value)
    })
    .await;
    assert_eq!(resolved["resolution"]["value"], "date-fns");
    assert_eq!(resolved["resolution"]["by"], alice().identity());
    assert_eq!(resolved["resolution"]["by_name"], "@alice");
    assert_eq!(resolved["resolution"]["via"], "discord");

    let edited = rig.withdrawn(message).await;
    let question = rig.get(&q.id).await;
    assert_eq!(
        edited["content"].as_str().unwrap(),
        outcome_content(&question)
    );
    assert!(
        edited["content"]
            .as_str()
            .unwrap()
            .ends_with("\n\nAnswered: date-fns, by @alice via discord")
    );

    // The click was acknowledged with a deferred update; no private follow-up for a success.
    let requests = rig.fake.requests();
    let ack = requests
        .iter()
        .find(|r| r.path.starts_with(&format!("/interactions/{}/", click.id)))
        .expect("the click was acknowledged");
    assert_eq!(ack.body["type"], 6);
    assert_eq!(ack.status, 204);
    assert!(rig.fake.requests_to("POST", "/webhooks/").is_empty());
}

/// A click counts while Discord is still taking its acknowledgement (the claim does not wait for
/// a round trip to Discord; the acknowledgement is sent once the click is handled), and what the
/// clicker is told waits for it: Discord refuses a follow-up to an interaction not acknowledged
/// yet.
#[tokio::test]
async fn a_click_counts_while_discord_takes_its_acknowledgement() {
    let rig = Rig::start().await;
    let confirm =
        json!({"prompt": "Deploy?", "kind": "confirm", "answerers": [alice().identity()]});
    let (q, other) = (rig.ask(confirm.clone()).await, rig.ask(confirm).await);
    let message = rig.shown(&q, channel()).await;
    let other_message = rig.shown(&other, channel()).await;
    rig.fake.hold_callbacks();
    let click = rig.fake.click(
        &alice(),
        channel(),
        message,
        &format!("/answer {} yes", q.id),
    );
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(answered.resolution.unwrap().by(), alice().identity());
    eventually(WITHIN, "the click's acknowledgement is sent", || async {
        !rig.callbacks(&click).is_empty()
    })
    .await;
    let held = rig.callbacks(&click);
    assert_eq!(held.len(), 1, "one acknowledgement, held");
    assert_eq!(held[0].body["type"], 6);
    // A stranger's click while acknowledgements are held: refused privately once acknowledged.
    let stranger = rig.fake.click(
        &bob(),
        channel(),
        other_message,
        &format!("/answer {} no", other.id),
    );
    eventually(WITHIN, "the stranger's acknowledgement arrives", || async {
        !rig.callbacks(&stranger).is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        rig.fake.requests_to("POST", "/webhooks/").is_empty(),
        "no follow-up before the acknowledgement"
    );
    rig.fake.release_callbacks();
    assert_eq!(
        rig.follow_up(&stranger).await,
        "You can't answer this question."
    );
    assert_eq!(rig.get(&other.id).await.status, Status::Pending);
    rig.withdrawn(message).await;
}

#[tokio::test]
async fn a_typed_command_answers_and_is_replied_to() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "date-fns", "luxon"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let typed = rig.fake.say(
        &alice(),
        channel(),
        &format!("/answer {} 3", &q.id.as_str()[..5]),
    );
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    let resolution = answered.resolution.unwrap();
    assert_eq!(resolution.value.as_ref().unwrap().to_string(), "luxon");
    assert_eq!(resolution.by(), alice().identity());
    let reply = eventually_some(WITHIN, "a reply to the typed command", || async {
        rig.fake
            .posted(CHANNEL)
            .into_iter()
            .find(|r| replies_to(r, typed))
    })
    .await;
    assert_eq!(
        reply.body["content"],
        "✓ Answered: luxon, by @alice via discord"
    );
    assert_eq!(reply.body["allowed_mentions"]["replied_user"], false);
    rig.withdrawn(message).await;
}

#[tokio::test]
async fn in_a_dm_pending_lists_and_a_plain_reply_answers() {
    let rig = Rig::start().await;
    let dm = Place::dm(DM);
    let q = rig
        .ask(json!({"prompt": "Ship it?", "kind": "confirm", "targets": [dm.target()]}))
        .await;
    let message = rig.shown(&q, dm).await;
    // A leading mention of the bot is not part of the command.
    let pending = rig.fake.say(&alice(), dm, &format!("<@{BOT_ID}> /pending"));
    let reply = eventually_some(WITHIN, "the /pending reply", || async {
        rig.fake
            .posted(DM)
            .into_iter()
            .find(|r| replies_to(r, pending))
    })
    .await;
    let text = reply.body["content"].as_str().unwrap();
    assert!(
        text.contains(q.id.as_str()) && text.contains("Ship it?"),
        "{text}"
    );
    // One question waits in this private chat: a plain "yes" answers it.
    rig.fake.say(&alice(), dm, "yes");
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().value,
        Some(askbridge_core::Answer::Bool(true))
    );
    let path = format!("/channels/{DM}/messages/{message}");
    eventually(WITHIN, "the DM message is edited", || async {
        rig.fake
            .requests_to("PATCH", &path)
            .iter()
            .any(|r| r.body["components"] == json!([]))
    })
    .await;
}

#[tokio::test]
async fn a_strangers_click_is_refused_privately_and_changes_nothing() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"], "answerers": [alice().identity()]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let before = rig.fake.message(message).unwrap();
    let click = rig
        .fake
        .click(&bob(), channel(), message, &format!("/answer {} 1", q.id));
    assert_eq!(
        rig.follow_up(&click).await,
        "You can't answer this question."
    );
    assert_eq!(rig.get(&q.id).await.status, Status::Pending);
    assert!(rig.edits(message).is_empty());
    assert_eq!(rig.fake.message(message).unwrap(), before);
    // Bob typing it fares no better.
    let typed = rig
        .fake
        .say(&bob(), channel(), &format!("/answer {} 1", q.id));
    let reply = eventually_some(WITHIN, "a refusal to bob", || async {
        rig.fake
            .posted(CHANNEL)
            .into_iter()
            .find(|r| replies_to(r, typed))
    })
    .await;
    assert_eq!(reply.body["content"], "You can't answer this question.");
    assert_eq!(rig.get(&q.id).await.status, Status::Pending);

    rig.fake
        .click(&alice(), channel(), message, &format!("/answer {} 2", q.id));
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    assert_eq!(answered.resolution.unwrap().by(), alice().identity());
}

#[tokio::test]
async fn a_form_clicked_on_asks_the_next_field_privately_with_its_buttons() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Settings?", "kind": "form", "answerers": [alice().identity()],
            "form": {"type": "object", "properties": {
                "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
                "notify": {"type": "boolean", "title": "Notify"}},
              "required": ["env", "notify"]}}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let click = rig
        .fake
        .click(&alice(), channel(), message, &format!("/answer {} 2", q.id));
    let next = rig.follow_up(&click).await;
    assert!(next.contains("✓ Environment: production"), "{next}");
    assert!(next.contains("Field 2 of 2: Notify"), "{next}");
    let path = format!("/webhooks/{APP_ID}/{}", click.token);
    let body = rig.fake.requests_to("POST", &path).pop().unwrap().body;
    let labels: Vec<&str> = body["components"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row["components"].as_array().unwrap())
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Yes", "No", "Back"]);
    assert_eq!(rig.get(&q.id).await.status, Status::Pending);
}

#[tokio::test]
async fn a_replayed_interaction_makes_one_transition_and_a_late_click_is_told() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["dayjs", "luxon"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let click = rig
        .fake
        .click(&alice(), channel(), message, &format!("/answer {} 1", q.id));
    // A gateway resume replays the same interaction.
    rig.fake
        .dispatch("INTERACTION_CREATE", click.payload.clone());
    rig.wait_status(&q.id, Status::Answered).await;
    rig.withdrawn(message).await;
    eventually(
        WITHIN,
        "both deliveries reached Discord's callback",
        || async { rig.callbacks(&click).len() == 2 },
    )
    .await;
    let statuses: Vec<u16> = rig.callbacks(&click).iter().map(|r| r.status).collect();
    assert!(
        statuses.contains(&204) && statuses.contains(&400),
        "{statuses:?}"
    );

    // A second click (another interaction) after the answer gets told, privately.
    let late = rig
        .fake
        .click(&alice(), channel(), message, &format!("/answer {} 2", q.id));
    assert_eq!(
        rig.follow_up(&late).await,
        "Already answered: dayjs, by @alice via discord"
    );
    let question = rig.get(&q.id).await;
    assert_eq!(
        question.resolution.unwrap().value.unwrap().to_string(),
        "dayjs"
    );
    assert_eq!(rig.edits(message).len(), 1, "one transition, one edit");
    // Nothing was said about the replay.
    let path = format!("/webhooks/{APP_ID}/{}", click.token);
    assert!(rig.fake.requests_to("POST", &path).is_empty());
}

#[tokio::test]
async fn an_answer_elsewhere_withdraws_the_buttons() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let (status, _) = call(
        &rig.api,
        "POST",
        &format!("/api/questions/{}/reply", q.id),
        Some(json!({"answer": "luxon"})),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let edited = rig.withdrawn(message).await;
    assert!(
        edited["content"]
            .as_str()
            .unwrap()
            .ends_with("Answered: luxon, by api via api")
    );

    // Cancelled by the program that asked (the bridge directly).
    let q = rig
        .ask(json!({"prompt": "Deploy?", "kind": "confirm"}))
        .await;
    let message = rig.shown(&q, channel()).await;
    rig.bridge
        .cancel_session("s1", Actor::new("askbridge", "stop"), None)
        .await
        .unwrap();
    let edited = rig.withdrawn(message).await;
    let question = rig.get(&q.id).await;
    assert_eq!(
        edited["content"].as_str().unwrap(),
        outcome_content(&question)
    );
    // A client that still shows the button (an old render) clicks it: told privately.
    let click = rig.fake.click(
        &alice(),
        channel(),
        message,
        &format!("/answer {} yes", q.id),
    );
    let text = rig.follow_up(&click).await;
    assert!(text.starts_with("This question was withdrawn."), "{text}");
}

#[tokio::test]
async fn expiry_edits_the_message_and_a_late_click_is_told() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Quick?", "kind": "confirm", "timeout_s": 0.5}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let edited = rig.withdrawn(message).await;
    assert!(
        edited["content"]
            .as_str()
            .unwrap()
            .ends_with("\n\nExpired: no answer"),
        "{edited}"
    );
    assert_eq!(rig.get(&q.id).await.status, Status::Expired);
    let click = rig.fake.click(
        &alice(),
        channel(),
        message,
        &format!("/answer {} yes", q.id),
    );
    assert_eq!(
        rig.follow_up(&click).await,
        "This question has expired. Expired: no answer"
    );
}

#[tokio::test]
async fn a_429_is_waited_out_and_the_request_sent_again() {
    let rig = Rig::start().await;
    rig.fake.rate_limit_next(2, 0.25);
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let attempts = rig
        .fake
        .requests_to("POST", &format!("/channels/{CHANNEL}/messages"));
    let statuses: Vec<u16> = attempts.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 429, 200]);
    // Sent again only after Discord's retry_after each time.
    assert!(attempts[1].at - attempts[0].at >= Duration::from_millis(250));
    assert!(attempts[2].at - attempts[1].at >= Duration::from_millis(250));
    assert_eq!(rig.fake.posted(CHANNEL).len(), 1);

    // An edit that meets a 429 gets through too.
    rig.fake.rate_limit_next(1, 0.1);
    rig.bridge
        .attempt(Attempt::reply(
            &q.id,
            askbridge_core::Answer::Text("a".into()).into(),
            Actor::new("api", "api"),
            &"api".into(),
        ))
        .await
        .unwrap();
    rig.withdrawn(message).await;
    let statuses: Vec<u16> = rig.edits(message).iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 200]);
}

#[tokio::test]
async fn messages_from_bots_are_ignored() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"]}))
        .await;
    rig.shown(&q, channel()).await;
    let command = format!("/answer {} 1", q.id);
    let other_bot = rig.fake.say(
        &FakeUser::bot(333_000_000_000_000_003, "otherbot"),
        channel(),
        &command,
    );
    let ourselves = rig.fake.say(&FakeUser::askbridge(), channel(), &command);
    // A person after them: once the person is answered, the bots' messages were long handled.
    let typed = rig
        .fake
        .say(&alice(), channel(), &format!("/answer {} 2", q.id));
    let answered = rig.wait_status(&q.id, Status::Answered).await;
    let resolution = answered.resolution.unwrap();
    assert_eq!(resolution.by(), alice().identity());
    assert_eq!(resolution.value.unwrap().to_string(), "b");
    eventually(WITHIN, "alice's reply", || async {
        rig.fake
            .posted(CHANNEL)
            .iter()
            .any(|r| replies_to(r, typed))
    })
    .await;
    for ignored in [other_bot, ourselves] {
        assert!(
            !rig.fake
                .posted(CHANNEL)
                .iter()
                .any(|r| replies_to(r, ignored)),
            "no reply to a bot"
        );
    }
}

#[tokio::test]
async fn slash_commands_answer_and_autocomplete_pending_ids() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which library?", "options": ["dayjs", "luxon"], "answerers": [alice().identity()]}))
        .await;
    let message = rig.shown(&q, channel()).await;

    let typed = &q.id.as_str()[..3];
    let completion = rig.fake.autocomplete(&alice(), channel(), typed);
    let answer = eventually_some(WITHIN, "the autocomplete answer", || async {
        rig.callbacks(&completion).into_iter().next()
    })
    .await;
    assert_eq!(answer.body["type"], 8);
    assert_eq!(
        answer.body["data"]["choices"],
        json!([{"name": format!("{} — Which library?", q.id), "value": q.id.as_str()}])
    );
    // Bob may not answer it, so it is not offered to him.
    let completion = rig.fake.autocomplete(&bob(), channel(), "");
    let answer = eventually_some(WITHIN, "bob's autocomplete answer", || async {
        rig.callbacks(&completion).into_iter().next()
    })
    .await;
    assert_eq!(answer.body["data"]["choices"], json!([]));

    let slash = rig.fake.slash(
        &alice(),
        channel(),
        "answer",
        &[("id", q.id.as_str()), ("choice", "2")],
    );
    rig.wait_status(&q.id, Status::Answered).await;
    let original = format!("/webhooks/{APP_ID}/{}/messages/@original", slash.token);
    let reply = eventually_some(WITHIN, "the deferred response filled in", || async {
        rig.fake.requests_to("PATCH", &original).into_iter().next()
    })
    .await;
    assert_eq!(
        reply.body["content"],
        "✓ Answered: luxon, by @alice via discord"
    );
    let defer = &rig.callbacks(&slash)[0];
    assert_eq!(defer.body["type"], 5);
    assert_eq!(defer.body["data"]["flags"], 64);
    assert!(defer.at <= reply.at);
    rig.withdrawn(message).await;

    let pending = rig.fake.slash(&alice(), channel(), "pending", &[]);
    let original = format!("/webhooks/{APP_ID}/{}/messages/@original", pending.token);
    let reply = eventually_some(WITHIN, "the /pending response", || async {
        rig.fake.requests_to("PATCH", &original).into_iter().next()
    })
    .await;
    assert_eq!(
        reply.body["content"],
        "No questions are waiting for you here."
    );
}

#[tokio::test]
async fn a_quorums_progress_redraws_the_message_with_its_buttons() {
    let rig = Rig::start().await;
    let mut q = rig
        .ask(json!({"prompt": "Ship?", "kind": "confirm", "quorum": {"needs": 2, "of": ["discord:4242", "api"]}}))
        .await;
    let message = rig.shown(&q, channel()).await;
    q.votes.push(askbridge_core::quorum::Vote {
        by: "discord:4242".into(),
        by_name: Some("@alice".into()),
        via: "discord".into(),
        at: askbridge_core::Millis::now(),
        value: askbridge_core::Answer::Bool(true),
        tally: "yes".into(),
    });
    rig.discord
        .channel()
        .refresh(&q, &channel().target().into(), &message.to_string())
        .await
        .unwrap();
    let edit = rig.edits(message).pop().expect("the message was edited");
    let content = edit.body["content"].as_str().unwrap();
    assert!(content.contains("1 of 2 said yes: @alice"), "{content}");
    assert!(
        !edit.body["components"].as_array().unwrap().is_empty(),
        "buttons kept"
    );
}

#[tokio::test]
async fn a_reminder_replies_to_the_question_and_pings_only_its_discord_answerers() {
    let rig = Rig::start().await;
    let q = rig
        .ask(json!({"prompt": "Which?", "options": ["a", "b"]}))
        .await;
    let message = rig.shown(&q, channel()).await;
    let mention: Vec<askbridge_core::Identity> =
        vec!["discord:4242".into(), "telegram:7".into(), "api".into()];
    rig.discord
        .channel()
        .remind(
            &q,
            &channel().target().into(),
            &message.to_string(),
            "⏰ Reminder: still waiting @everyone",
            &mention,
        )
        .await
        .unwrap();
    let reminder = rig
        .fake
        .posted(CHANNEL)
        .into_iter()
        .find(|r| {
            r.body["content"]
                .as_str()
                .is_some_and(|c| c.contains("Reminder"))
        })
        .expect("the reminder was posted");
    let body = &reminder.body;
    assert_eq!(body["message_reference"]["message_id"], message.to_string());
    assert_eq!(body["message_reference"]["fail_if_not_exists"], false);
    let content = body["content"].as_str().unwrap();
    assert!(content.ends_with("<@4242>"), "{content}");
    assert!(
        !content.contains("<@7>"),
        "a Telegram answerer is not a Discord user: {content}"
    );
    // Only the answerer is pinged: not @everyone in the text, not the author replied to.
    assert_eq!(body["allowed_mentions"]["users"], json!(["4242"]));
    assert_eq!(body["allowed_mentions"]["parse"], json!([]));
    assert_eq!(body["allowed_mentions"]["replied_user"], false);
}

#[tokio::test]
async fn say_posts_plain_text_and_errors_name_no_token() {
    let rig = Rig::start().await;
    rig.bridge
        .say(&channel().target().into(), "Deploy finished @everyone")
        .await
        .unwrap();
    let posted = rig.fake.posted(CHANNEL);
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].body["content"], "Deploy finished @everyone");
    assert_eq!(posted[0].body["allowed_mentions"]["parse"], json!([]));
    assert!(posted[0].body.get("components").is_none());

    let channel_of = rig.discord.channel();
    let q = rig.ask(json!({"prompt": "Which?", "options": ["a"]})).await;
    let error = channel_of
        .show(&q, &"discord:not-a-number".into())
        .await
        .unwrap_err();
    assert!(!error.is_retryable());
    // A message that is gone: permanent (the bridge stops trying), and no secret in the text.
    let error = channel_of
        .withdraw(&q, &channel().target().into(), "123456789")
        .await
        .unwrap_err();
    assert!(!error.is_retryable(), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("Unknown Message") && text.contains("10008"),
        "{text}"
    );
    assert!(!text.contains(TOKEN));
}

#[tokio::test]
async fn a_token_the_gateway_refuses_stops_the_client_with_an_error() {
    let fake = FakeDiscord::start().await;
    let wrong = "wrong-token.c2VjcmV0.xyz";
    let http = HttpBuilder::new(wrong)
        .proxy(&fake.base)
        .ratelimiter_disabled(true)
        .build();
    let discord = Discord::with_http(Arc::new(http));
    let (bridge, _) = memory_bridge().await;
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    let result = tokio::time::timeout(WITHIN, discord.run(inbox, bridge.shutdown_signal()))
        .await
        .expect("run returns instead of reconnecting forever");
    let error = result.unwrap_err();
    assert!(
        matches!(error, askbridge_discord::Error::Unauthorized(_)),
        "{error:?}"
    );
    assert!(!error.to_string().contains(wrong));
    // Refused by the gateway itself (Get Gateway needs no token).
    assert!(identified(&fake));
    bridge.shutdown();
}

fn identified(fake: &FakeDiscord) -> bool {
    fake.gateway_frames().iter().any(|f| f["op"] == 2)
}

#[tokio::test]
async fn a_discord_outage_loses_nothing() {
    // A port with nothing listening: Discord is down.
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = reserved.local_addr().unwrap();
    drop(reserved);
    let discord = Discord::with_http(http_for(&format!("http://{addr}")));
    let q_for_error = NewQuestion::ask("Which?")
        .session("s1")
        .options(["a", "b"])
        .into_question(
            QuestionId::random(),
            askbridge_core::Millis::now(),
            Duration::from_secs(60),
        )
        .unwrap();
    let error = discord
        .channel()
        .show(&q_for_error, &channel().target().into())
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(!error.to_string().contains(TOKEN));

    // The bridge keeps trying; when Discord is back the question appears, once.
    let (bridge, _) = crate::support::memory_bridge_and(discord.channel()).await;
    let q = bridge
        .create(
            NewQuestion::ask("Which?")
                .session("s1")
                .options(["a", "b"])
                .targets([channel().target()]),
        )
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let fake = FakeDiscord::start_on(listener).await;
    let shown = eventually_some(WITHIN, "shown once Discord is back", || async {
        bridge
            .store()
            .shown(&q.id)
            .await
            .unwrap()
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(fake.posted(CHANNEL).len(), 1);
    assert!(fake.message(shown.reference.parse().unwrap()).is_some());
    bridge.shutdown();
}

// ---------------------------------------------------------------------------------------------
// The HTTP interactions endpoint.

mod endpoint {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7u8; 32])
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn signed(key: &SigningKey, timestamp: u64, body: &Value) -> Vec<(&'static str, String)> {
        let timestamp = timestamp.to_string();
        let message = [timestamp.as_bytes(), body.to_string().as_bytes()].concat();
        vec![
            ("x-signature-ed25519", hex(&key.sign(&message).to_bytes())),
            ("x-signature-timestamp", timestamp),
        ]
    }

    async fn rig() -> Rig {
        let fake = FakeDiscord::start().await;
        let discord = Discord::with_http(http_for(&fake.base))
            .with_public_key(&hex(key().verifying_key().as_bytes()))
            .unwrap();
        Rig::over(fake, discord).await
    }

    async fn post(
        rig: &Rig,
        body: &Value,
        headers: Vec<(&'static str, String)>,
    ) -> (StatusCode, Value) {
        call(
            &rig.api,
            "POST",
            "/discord/interactions",
            Some(body.clone()),
            &headers,
        )
        .await
    }

    #[tokio::test]
    async fn a_signed_ping_gets_a_pong_and_bad_or_stale_signatures_get_401() {
        let rig = rig().await;
        let ping = rig.fake.ping_payload();
        let (status, body) = post(&rig, &ping, signed(&key(), now(), &ping)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["type"], 1);

        let stranger = SigningKey::from_bytes(&[8u8; 32]);
        let (status, _) = post(&rig, &ping, signed(&stranger, now(), &ping)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "wrong key");

        let mut tampered = ping.clone();
        tampered["type"] = json!(2);
        let (status, _) = post(&rig, &tampered, signed(&key(), now(), &ping)).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "body changed after signing"
        );

        let (status, _) = post(&rig, &ping, signed(&key(), now() - 301, &ping)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "stale timestamp");
        let (status, _) = post(&rig, &ping, signed(&key(), now() - 240, &ping)).await;
        assert_eq!(status, StatusCode::OK, "four minutes old is still fresh");

        let (status, _) = post(&rig, &ping, Vec::new()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "no signature");
    }

    #[tokio::test]
    async fn a_click_is_acknowledged_in_the_response_and_then_resolves() {
        let rig = rig().await;
        let q = rig
            .ask(json!({"prompt": "Which?", "options": ["dayjs", "luxon"]}))
            .await;
        let message = rig.shown(&q, channel()).await;
        let click =
            rig.fake
                .click_payload(&alice(), channel(), message, &format!("/answer {} 2", q.id));
        // The first response travels in the HTTP body; Discord would then accept follow-ups.
        rig.fake.acknowledged_by_http(&click);
        let (status, body) =
            post(&rig, &click.payload, signed(&key(), now(), &click.payload)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["type"], 6);
        let answered = rig.wait_status(&q.id, Status::Answered).await;
        assert_eq!(
            answered.resolution.unwrap().value.unwrap().to_string(),
            "luxon"
        );
        rig.withdrawn(message).await;
        assert!(
            rig.callbacks(&click).is_empty(),
            "no REST callback besides the response"
        );

        // A stranger's signed slash command: deferred in the response, answered by editing it.
        let slash = rig.fake.slash_payload(&bob(), channel(), "pending", &[]);
        rig.fake.acknowledged_by_http(&slash);
        let (status, body) =
            post(&rig, &slash.payload, signed(&key(), now(), &slash.payload)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["type"], 5);
        assert_eq!(body["data"]["flags"], 64);
        let original = format!("/webhooks/{APP_ID}/{}/messages/@original", slash.token);
        let reply = eventually_some(WITHIN, "the /pending response", || async {
            rig.fake.requests_to("PATCH", &original).into_iter().next()
        })
        .await;
        assert_eq!(
            reply.body["content"],
            "No questions are waiting for you here."
        );
    }

    #[tokio::test]
    async fn without_a_public_key_there_is_no_endpoint() {
        let fake = FakeDiscord::start().await;
        let rig = Rig::over(fake, Discord::with_http(http_for("http://127.0.0.1:9"))).await;
        let ping = rig.fake.ping_payload();
        let (status, _) = post(&rig, &ping, signed(&key(), now(), &ping)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

// ---------------------------------------------------------------------------------------------
// `askbridge serve` with Discord's settings from the environment.

mod binary {
    use super::*;
    use crate::support::{Process, askbridge_binary, free_port, http};
    use ed25519_dalek::{Signer, SigningKey};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    // Multi-threaded: `Process::spawn` blocks while it waits for /healthz, and the fake must
    // answer the process meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serve_runs_discord_from_its_settings() {
        let fake = FakeDiscord::start().await;
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let process = Process::spawn(
            &["serve", "--ephemeral"],
            &[
                ("DISCORD_BOT_TOKEN", TOKEN.to_owned()),
                ("DISCORD_API_URL", fake.base.clone()),
                ("DISCORD_PUBLIC_KEY", hex(key.verifying_key().as_bytes())),
                ("ASKBRIDGE_API_TOKEN", "api-token".to_owned()),
            ],
        );
        fake.wait_ready().await;
        let created: Value = http()
            .post(format!("{}/api/questions", process.base))
            .bearer_auth("api-token")
            .json(&json!({"session_id": "s1", "prompt": "Which library?", "options": ["dayjs", "luxon"], "targets": [channel().target()]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        let message = eventually_some(WITHIN, "the question appears on Discord", || async {
            fake.posted(CHANNEL)
                .into_iter()
                .find(|r| r.body["content"].as_str().unwrap().contains(&id))
        })
        .await;
        assert_eq!(components(&message.body)[0][1].2, format!("/answer {id} 2"));
        let message_id = fake.message_containing(&id).unwrap();
        fake.click(&alice(), channel(), message_id, &format!("/answer {id} 2"));
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
        eventually(WITHIN, "the message is withdrawn", || async {
            fake.message(message_id)
                .is_some_and(|m| m["components"] == json!([]))
        })
        .await;

        // The signed endpoint is served beside the API.
        let ping = fake.ping_payload().to_string();
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            .to_string();
        let signature = key.sign(format!("{timestamp}{ping}").as_bytes());
        let pong = http()
            .post(format!("{}/discord/interactions", process.base))
            .header("x-signature-ed25519", hex(&signature.to_bytes()))
            .header("x-signature-timestamp", timestamp)
            .body(ping)
            .send()
            .await
            .unwrap();
        assert_eq!(pong.status(), 200);
        assert_eq!(pong.json::<Value>().await.unwrap()["type"], 1);
    }

    #[tokio::test]
    async fn serve_stops_on_a_refused_token_without_printing_it() {
        let fake = FakeDiscord::start().await;
        let wrong = "wrong-token.c2VjcmV0.xyz";
        let run = tokio::process::Command::new(askbridge_binary())
            .args(["serve", "--ephemeral"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", std::env::temp_dir())
            .env("ASKBRIDGE_HTTP_ADDR", format!("127.0.0.1:{}", free_port()))
            .env("DISCORD_BOT_TOKEN", wrong)
            .env("DISCORD_API_URL", &fake.base)
            .current_dir(std::env::temp_dir())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(WITHIN, run)
            .await
            .expect("askbridge stops")
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("DISCORD_BOT_TOKEN"), "{stderr}");
        assert!(stderr.contains("refused the bot token"), "{stderr}");
        assert!(!stderr.contains(wrong), "{stderr}");
        assert_eq!(fake.requests_to("GET", "/users/@me").len(), 1);
    }
}

#[tokio::test]
async fn a_reply_to_a_questions_message_answers_that_question_while_another_waits() {
    let rig = Rig::start().await;
    let ask = || {
        json!({"prompt": "Which library?", "options": ["dayjs", "date-fns", "luxon"],
               "answerers": [alice().identity()]})
    };
    let first = rig.ask(ask()).await;
    let second = rig.ask(ask()).await;
    let first_message = rig.shown(&first, channel()).await;
    let second_message = rig.shown(&second, channel()).await;
    let rig = &rig;
    let reply_to = |typed: u64| async move {
        eventually_some(WITHIN, "a reply to the typed message", || async {
            rig.fake
                .posted(CHANNEL)
                .into_iter()
                .find(|r| replies_to(r, typed))
        })
        .await
    };
    // A stranger's reply to the second question's message is refused; nothing changes.
    let stranger = rig.fake.reply(&bob(), channel(), second_message, "luxon");
    assert_eq!(
        reply_to(stranger).await.body["content"],
        "You can't answer this question."
    );
    // Alice has two questions waiting: the reply says which one "luxon" answers.
    let typed = rig.fake.reply(&alice(), channel(), first_message, "luxon");
    let answered = rig.wait_status(&first.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().value.unwrap().to_string(),
        "luxon"
    );
    reply_to(typed).await;
    assert_eq!(rig.get(&second.id).await.status, Status::Pending);
}

/// An approval offers exactly its allowed decisions as buttons; a forged tap on another one
/// changes nothing, and the offered one then decides.
#[tokio::test]
async fn an_approval_offers_exactly_its_allowed_decisions() {
    let rig = Rig::start().await;
    let approval = rig
        .ask(json!({
            "prompt": "May the agent run this?",
            "kind": "approval",
            "action": {"tool": "shell", "args": {"command": "make"}},
            "allowed": ["once", "edit", "respond"],
            "answerers": ["discord:111000000000000001"],
        }))
        .await;
    let digest = approval.action.as_ref().unwrap().short_digest();
    let rows = components(&rig.shown_body(&approval, channel()).await);
    let labels: Vec<String> = rows.into_iter().flatten().map(|(_, l, _)| l).collect();
    assert_eq!(labels, ["Allow once", "Edit", "Respond"]);
    let message = rig.shown(&approval, channel()).await;
    let forged = format!("/answer {} always #{digest}", approval.id);
    rig.fake.click(&alice(), channel(), message, &forged);
    let once = format!("/answer {} once #{digest}", approval.id);
    rig.fake.click(&alice(), channel(), message, &once);
    let answered = rig.wait_status(&approval.id, Status::Answered).await;
    assert_eq!(
        answered.resolution.unwrap().value,
        Some(askbridge_core::Answer::Text("once".into())),
        "the forged always was refused"
    );
}
