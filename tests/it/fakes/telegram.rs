//! A fake Telegram Bot API on 127.0.0.1, for the real teloxide client.
//!
//! It behaves as Telegram does where it matters to askbridge (see shared/notes/platforms.md):
//! method names are matched case-insensitively (teloxide writes `SendMessage`), `getMe` carries
//! every field teloxide's `Me` needs, `callback_data` longer than 64 bytes is refused with
//! `BUTTON_DATA_INVALID` and a keyboard of more than 100 buttons (or 8 in a row) with
//! `BUTTONS_TOO_MUCH`, editing without `reply_markup` removes the keyboard, updates are
//! confirmed by the next `getUpdates` offset, a queued 429 carries `retry_after`, and it never
//! answers 5xx (teloxide sleeps 10 s on those). Every call is recorded in order.

use super::{Arrivals, Server};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// The bot's own user id and username.
pub const BOT_ID: i64 = 999;
pub const BOT_USERNAME: &str = "AskBot";

/// Marks a queued copy that must be delivered again whatever the offset.
const REDELIVERY: &str = "_redelivery";

/// One recorded Bot API call.
#[derive(Clone, Debug)]
pub struct Call {
    /// Lower-case method name.
    pub method: String,
    /// The JSON body.
    pub body: Value,
    /// What the fake answered (HTTP status).
    pub status: u16,
}

/// A message the bot sent, as it stands now.
#[derive(Clone, Debug)]
pub struct Sent {
    pub chat: i64,
    pub id: i64,
    pub text: String,
    pub markup: Option<Value>,
    pub reply_to: Option<i64>,
}

impl Sent {
    /// The buttons, row by row, as (label, callback_data).
    pub fn buttons(&self) -> Vec<Vec<(String, String)>> {
        let Some(markup) = &self.markup else {
            return Vec::new();
        };
        markup["inline_keyboard"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|row| {
                        row.as_array()
                            .unwrap()
                            .iter()
                            .map(|b| {
                                (
                                    b["text"].as_str().unwrap().to_owned(),
                                    b["callback_data"].as_str().unwrap_or_default().to_owned(),
                                )
                            })
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The payload of the button labelled `label`.
    pub fn payload(&self, label: &str) -> String {
        self.buttons()
            .into_iter()
            .flatten()
            .find(|(l, _)| l == label)
            .map(|(_, data)| data)
            .unwrap_or_else(|| panic!("no button {label:?} in {:?}", self.buttons()))
    }
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    queue: Vec<Value>,
    history: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    messages: BTreeMap<(i64, i64), Sent>,
    rate_limits: VecDeque<u32>,
    /// A method whose next call waits for [`FakeTelegram::release`] (lowercase name).
    held: Option<(String, Arc<Notify>)>,
}

/// See the module documentation.
#[derive(Clone)]
pub struct FakeTelegram {
    pub base: String,
    state: Arc<Mutex<Inner>>,
    new_update: Arc<Notify>,
    arrivals: Arc<Arrivals>,
    server: Arc<Server>,
}

/// A Telegram user for building updates.
#[derive(Clone, Debug)]
pub struct User {
    pub id: i64,
    pub username: &'static str,
}

impl User {
    pub fn json(&self) -> Value {
        json!({"id": self.id, "is_bot": false, "first_name": self.username, "username": self.username})
    }
}

fn chat_json(chat: i64) -> Value {
    if chat > 0 {
        json!({"id": chat, "type": "private", "first_name": "Someone"})
    } else {
        json!({"id": chat, "type": "supergroup", "title": "Ops"})
    }
}

fn bot_json() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Ask", "username": BOT_USERNAME})
}

fn ok(result: Value) -> Response {
    (
        StatusCode::OK,
        axum::Json(json!({"ok": true, "result": result})),
    )
        .into_response()
}

fn fail(status: StatusCode, description: &str, parameters: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    (status, axum::Json(body)).into_response()
}

impl Sent {
    /// The message as Telegram quotes it (in a tap, or as a `reply_to_message`).
    pub fn json(&self) -> Value {
        let mut message = json!({"message_id": self.id, "date": 1_700_000_000, "chat": chat_json(self.chat), "from": bot_json(), "text": self.text});
        if let Some(markup) = &self.markup {
            message["reply_markup"] = markup.clone();
        }
        message
    }
}

impl FakeTelegram {
    /// The environment of an `askbridge serve` on `redis` with Telegram against this fake.
    pub fn serve_env(&self, redis: &crate::support::RedisServer) -> Vec<(&'static str, String)> {
        vec![
            ("REDIS_URL", redis.url()),
            ("TELEGRAM_BOT_TOKEN", "1:fake".to_owned()),
            ("TELEGRAM_API_URL", self.base.clone()),
        ]
    }

    pub fn start() -> Self {
        let state = Arc::new(Mutex::new(Inner {
            next_update_id: 1,
            next_message_id: 100,
            ..Inner::default()
        }));
        let new_update = Arc::new(Notify::new());
        let arrivals = Arc::new(Arrivals::default());
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .with_state((state.clone(), new_update.clone(), arrivals.clone()));
        let server = Server::start(app);
        FakeTelegram {
            base: server.base.clone(),
            state,
            new_update,
            arrivals,
            server: Arc::new(server),
        }
    }

    /// Stops answering (a Telegram outage: connections are refused).
    pub fn stop(&self) {
        self.server.stop();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.state.lock().unwrap()
    }

    /// What the bot said, edited and toasted, one line each, as people saw it.
    pub fn transcript(&self) -> String {
        let mut lines = Vec::new();
        for call in self.calls() {
            let text = call.body["text"].as_str().unwrap_or_default();
            match call.method.as_str() {
                "sendmessage" => lines.push(format!("bot  > {text}")),
                "editmessagetext" => lines.push(format!("bot  ~ (message edited) {text}")),
                "answercallbackquery" => lines.push(format!("toast: {text}")),
                _ => {}
            }
        }
        lines.join("\n")
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The method names called, in order.
    pub fn methods(&self) -> Vec<String> {
        self.calls().into_iter().map(|c| c.method).collect()
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.lock().messages.values().cloned().collect()
    }

    pub fn sent_in(&self, chat: i64) -> Vec<Sent> {
        self.sent().into_iter().filter(|m| m.chat == chat).collect()
    }

    /// The `count` newest messages in `chat`, newest first: cheap with thousands sent (the
    /// latency rounds read one each round).
    pub fn newest_in(&self, chat: i64, count: usize) -> Vec<Sent> {
        let inner = self.lock();
        let range = inner.messages.range((chat, i64::MIN)..=(chat, i64::MAX));
        range.rev().take(count).map(|(_, m)| m.clone()).collect()
    }

    /// When each `sendMessage` that succeeded arrived.
    pub fn arrivals(&self) -> &Arrivals {
        &self.arrivals
    }

    /// Holds the next call of `method` until [`FakeTelegram::release`]: a request slow on its
    /// way, for races.
    pub fn hold_next(&self, method: &str) {
        self.lock().held = Some((method.to_lowercase(), Arc::new(Notify::new())));
    }

    /// Lets the held call through.
    pub fn release(&self) {
        if let Some((_, gate)) = self.lock().held.take() {
            gate.notify_one();
        }
    }

    /// The next `count` sendMessage calls are refused with 429 and `retry_after`.
    pub fn rate_limit_next(&self, count: usize, retry_after: u32) {
        self.lock()
            .rate_limits
            .extend(std::iter::repeat_n(retry_after, count));
    }

    /// Queues an update (the JSON without `update_id`) and returns its id.
    pub fn push(&self, kind: &str, payload: Value) -> i64 {
        let mut state = self.lock();
        let id = state.next_update_id;
        state.next_update_id += 1;
        let mut update = json!({"update_id": id});
        update[kind] = payload;
        state.history.push(update.clone());
        state.queue.push(update);
        drop(state);
        self.new_update.notify_waiters();
        id
    }

    /// Delivers an update again, as Telegram does when the bot's confirmation was lost (the
    /// copy is sent whatever offset the bot has confirmed).
    pub fn redeliver(&self, update_id: i64) {
        let mut state = self.lock();
        let mut copy = state
            .history
            .iter()
            .find(|u| u["update_id"] == update_id)
            .cloned()
            .expect("a pushed update");
        copy[REDELIVERY] = json!(true);
        state.queue.push(copy);
        drop(state);
        self.new_update.notify_waiters();
    }

    /// A text message from `from` in `chat` (an update builder; adjust before pushing).
    pub fn text_message(&self, chat: i64, from: &User, text: &str) -> Value {
        let id = {
            let mut state = self.lock();
            state.next_message_id += 1;
            state.next_message_id
        };
        json!({"message_id": id, "date": 1_700_000_000, "chat": chat_json(chat), "from": from.json(), "text": text})
    }

    /// Sends a text message from `from` in `chat`; returns the update id.
    pub fn say(&self, chat: i64, from: &User, text: &str) -> i64 {
        let message = self.text_message(chat, from, text);
        self.push("message", message)
    }

    /// `from` taps the button carrying `data` on the bot's message `message` in `chat`.
    pub fn tap(&self, chat: i64, message: i64, from: &User, data: &str) -> i64 {
        let shown = self
            .lock()
            .messages
            .get(&(chat, message))
            .cloned()
            .expect("tapped message exists");
        let query_id = format!("cq-{}-{}", message, self.lock().next_update_id);
        self.push(
            "callback_query",
            json!({"id": query_id, "from": from.json(), "chat_instance": "ci-1", "data": data, "message": shown.json()}),
        )
    }

    /// The text of the toast answering the callback query of update `update_id`'s tap, once
    /// answered.
    pub fn toast_of(&self, update_id: i64) -> Option<String> {
        let suffix = format!("-{update_id}");
        self.calls()
            .into_iter()
            .filter(|c| c.method == "answercallbackquery")
            .find(|c| {
                c.body["callback_query_id"]
                    .as_str()
                    .is_some_and(|q| q.ends_with(&suffix))
            })
            .map(|c| c.body["text"].as_str().unwrap_or_default().to_owned())
    }

    /// Every toast's text, in order.
    pub fn toasts(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == "answercallbackquery")
            .map(|c| c.body["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

type Shared = (Arc<Mutex<Inner>>, Arc<Notify>, Arc<Arrivals>);

async fn handle(
    State((state, new_update, arrivals)): State<Shared>,
    headers: axum::http::HeaderMap,
    Path((bot, method)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let at = std::time::Instant::now();
    if !bot.starts_with("bot") {
        return fail(StatusCode::NOT_FOUND, "Not Found", None);
    }
    let method = method.to_lowercase();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let body: Value = if body.is_empty() {
        json!({})
    } else if let Some(boundary) = content_type.split("boundary=").nth(1) {
        multipart_fields(&String::from_utf8_lossy(&body), boundary.trim_matches('"'))
    } else {
        serde_json::from_slice(&body).unwrap_or(json!({}))
    };
    if method == "getupdates" {
        return get_updates(&state, &new_update, &body).await;
    }
    let gate = {
        let state = state.lock().unwrap();
        state
            .held
            .as_ref()
            .filter(|(held, _)| *held == method)
            .map(|(_, gate)| gate.clone())
    };
    if let Some(gate) = gate {
        gate.notified().await;
    }
    let response = {
        let mut state = state.lock().unwrap();
        answer(&mut state, &method, &body)
    };
    let status = response.status().as_u16();
    if method == "sendmessage" && status == 200 {
        arrivals.record(&body, at);
    }
    state.lock().unwrap().calls.push(Call {
        method,
        body,
        status,
    });
    response
}

/// The text fields of a multipart/form-data body (teloxide sends methods that may carry files,
/// like setWebhook, that way), each parsed as JSON when it is JSON.
fn multipart_fields(body: &str, boundary: &str) -> Value {
    let mut fields = serde_json::Map::new();
    for part in body.split(&format!("--{boundary}")) {
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let Some(name) = head
            .split("name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let value = value.trim_end_matches("\r\n");
        let parsed =
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        fields.insert(name.to_owned(), parsed);
    }
    Value::Object(fields)
}

async fn get_updates(state: &Arc<Mutex<Inner>>, new_update: &Notify, body: &Value) -> Response {
    let offset = body["offset"].as_i64().unwrap_or(0);
    // Long poll, but briefly: teloxide's HTTP timeout must never be reached.
    let wait = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(1));
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let notified = new_update.notified();
        {
            let mut state = state.lock().unwrap();
            // An offset confirms every update below it (a forced re-delivery aside).
            state.queue.retain(|u| {
                u["update_id"].as_i64().unwrap() >= offset || u.get(REDELIVERY).is_some()
            });
            if !state.queue.is_empty() {
                let mut updates = std::mem::take(&mut state.queue);
                for update in &mut updates {
                    if let Some(object) = update.as_object_mut() {
                        object.remove(REDELIVERY);
                    }
                }
                state.calls.push(Call {
                    method: "getupdates".into(),
                    body: body.clone(),
                    status: 200,
                });
                return ok(Value::Array(updates));
            }
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return ok(json!([]));
        }
    }
}

fn markup_error(markup: &Value) -> Option<&'static str> {
    let rows = markup["inline_keyboard"].as_array()?;
    let count: usize = rows.iter().map(|r| r.as_array().map_or(0, Vec::len)).sum();
    if count > 100 || rows.iter().any(|r| r.as_array().map_or(0, Vec::len) > 8) {
        return Some("Bad Request: BUTTONS_TOO_MUCH");
    }
    for button in markup["inline_keyboard"]
        .as_array()?
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
    {
        let data = button["callback_data"].as_str().unwrap_or_default();
        if data.is_empty() || data.len() > 64 {
            return Some("Bad Request: BUTTON_DATA_INVALID");
        }
    }
    None
}

fn answer(state: &mut Inner, method: &str, body: &Value) -> Response {
    match method {
        "getme" => ok(json!({
            "id": BOT_ID, "is_bot": true, "first_name": "Ask", "username": BOT_USERNAME,
            "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
            "can_connect_to_business": false, "has_main_web_app": false
        })),
        "deletewebhook" | "setwebhook" | "setmycommands" => ok(json!(true)),
        "getwebhookinfo" => {
            ok(json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0}))
        }
        "answercallbackquery" => ok(json!(true)),
        "sendmessage" => {
            if let Some(retry_after) = state.rate_limits.pop_front() {
                return fail(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!("Too Many Requests: retry after {retry_after}"),
                    Some(json!({"retry_after": retry_after})),
                );
            }
            let text = body["text"].as_str().unwrap_or_default().to_owned();
            if text.is_empty() || text.chars().count() > 4096 {
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message text is empty or too long",
                    None,
                );
            }
            let markup = body.get("reply_markup").cloned().filter(|m| !m.is_null());
            if let Some(error) = markup.as_ref().and_then(markup_error) {
                return fail(StatusCode::BAD_REQUEST, error, None);
            }
            let chat = body["chat_id"].as_i64().unwrap_or_default();
            state.next_message_id += 1;
            let sent = Sent {
                chat,
                id: state.next_message_id,
                text,
                markup,
                reply_to: body["reply_parameters"]["message_id"].as_i64(),
            };
            let json = sent.json();
            state.messages.insert((chat, sent.id), sent);
            ok(json)
        }
        "editmessagetext" | "editmessagereplymarkup" => {
            let key = (
                body["chat_id"].as_i64().unwrap_or_default(),
                body["message_id"].as_i64().unwrap_or_default(),
            );
            let Some(sent) = state.messages.get_mut(&key) else {
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message to edit not found",
                    None,
                );
            };
            let markup = body.get("reply_markup").cloned().filter(|m| !m.is_null());
            if let Some(error) = markup.as_ref().and_then(markup_error) {
                return fail(StatusCode::BAD_REQUEST, error, None);
            }
            let text = if method == "editmessagetext" {
                body["text"].as_str().unwrap_or_default().to_owned()
            } else {
                sent.text.clone()
            };
            if text == sent.text && markup == sent.markup {
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                    None,
                );
            }
            sent.text = text;
            // Telegram drops the keyboard when an edit carries none.
            sent.markup = markup;
            ok(sent.json())
        }
        _ => fail(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}
