//! A fake Discord on 127.0.0.1 for the real serenity client: REST under `/api/v10` (axum) and a
//! websocket gateway (tokio-tungstenite 0.21, serenity's version).
//!
//! It behaves like Discord where askbridge depends on it: it checks the bot token, enforces the
//! component and content limits (400, code 50035, as Discord does), refuses a second response to
//! one interaction (40060) and follow-ups to an interaction nobody acknowledged (10015), honours
//! `enforce_nonce`, and can be told to answer the next requests with 429 and a `retry_after`. It
//! never answers 5xx. Every REST request is recorded in order (method, path, JSON body, status,
//! time) so that tests can check what was sent and in which order.
//!
//! The gateway speaks HELLO -> IDENTIFY -> READY (or closes with 4004 for a wrong token), answers
//! heartbeats, and then sends whatever the
//! test dispatches (INTERACTION_CREATE, MESSAGE_CREATE) with every field serenity's models need.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// The bot token the fake accepts.
pub const TOKEN: &str = "fake-token.MTIzNDU2.abcdefXYZ";
/// The bot's user id.
pub const BOT_ID: u64 = 900_000_000_000_000_001;
/// The application id.
pub const APP_ID: u64 = 900_000_000_000_000_002;
/// A guild the tests' channels are in.
pub const GUILD_ID: u64 = 800_000_000_000_000_001;

const TIMESTAMP: &str = "2026-12-02T11:00:00.000000+00:00";

/// Someone on Discord.
#[derive(Clone, Debug)]
pub struct FakeUser {
    pub id: u64,
    pub name: String,
    pub bot: bool,
}

impl FakeUser {
    pub fn person(id: u64, name: &str) -> Self {
        FakeUser {
            id,
            name: name.into(),
            bot: false,
        }
    }

    pub fn bot(id: u64, name: &str) -> Self {
        FakeUser {
            id,
            name: name.into(),
            bot: true,
        }
    }

    /// askbridge's own bot user.
    pub fn askbridge() -> Self {
        FakeUser::bot(BOT_ID, "askbridge")
    }

    /// The identity askbridge gives this user.
    pub fn identity(&self) -> String {
        format!("discord:{}", self.id)
    }

    fn json(&self) -> Value {
        json!({
            "id": self.id.to_string(),
            "username": self.name,
            "discriminator": "0",
            "global_name": null,
            "avatar": null,
            "bot": self.bot,
        })
    }
}

/// Where something happens: a guild text channel or a DM channel.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub channel: u64,
    pub guild: Option<u64>,
}

impl Place {
    pub fn guild_channel(channel: u64) -> Self {
        Place {
            channel,
            guild: Some(GUILD_ID),
        }
    }

    pub fn dm(channel: u64) -> Self {
        Place {
            channel,
            guild: None,
        }
    }

    /// The target askbridge uses for this channel.
    pub fn target(&self) -> String {
        format!("discord:{}", self.channel)
    }
}

/// One REST request as the fake saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The path after `/api/v10`.
    pub path: String,
    pub body: Value,
    pub status: u16,
    pub at: Instant,
}

impl Recorded {
    pub fn is(&self, method: &str, path_prefix: &str) -> bool {
        self.method == method && self.path.starts_with(path_prefix)
    }
}

/// A dispatched interaction: its id, token and payload (to dispatch again, as a resume would).
#[derive(Clone, Debug)]
pub struct SentInteraction {
    pub id: u64,
    pub token: String,
    pub payload: Value,
}

struct StoredMessage {
    channel: u64,
    json: Value,
}

struct Shared {
    gateway_url: String,
    heartbeat_ms: u64,
    log: Mutex<Vec<Recorded>>,
    next_id: AtomicU64,
    messages: Mutex<HashMap<u64, StoredMessage>>,
    nonces: Mutex<HashMap<String, u64>>,
    /// Interaction token -> interaction id, for every interaction the fake dispatched.
    interactions: Mutex<HashMap<String, u64>>,
    acknowledged: Mutex<HashSet<u64>>,
    /// (requests left to refuse, retry_after seconds).
    rate_limit: Mutex<(usize, f64)>,
    /// While false, interaction callbacks are held before they are answered.
    callbacks_released: watch::Sender<bool>,
    gateway: Mutex<Option<mpsc::UnboundedSender<Value>>>,
    frames: Mutex<Vec<Value>>,
    seq: AtomicU64,
    commands: Mutex<Option<Value>>,
    /// When each message posted successfully arrived.
    arrivals: super::Arrivals,
}

/// See the module documentation. Dropping it stops the servers.
pub struct FakeDiscord {
    /// `http://127.0.0.1:<port>`: what serenity's proxy base is set to.
    pub base: String,
    state: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn error(status: StatusCode, code: u64, message: &str) -> (StatusCode, Value) {
    (status, json!({"code": code, "message": message}))
}

impl FakeDiscord {
    /// Starts the REST server and the gateway on free loopback ports.
    pub async fn start() -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").await.unwrap()).await
    }

    /// Starts on `listener` (a test reserves the port first to play an outage).
    pub async fn start_on(listener: TcpListener) -> Self {
        let gateway = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gateway_url = format!("ws://{}", gateway.local_addr().unwrap());
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Shared {
            gateway_url,
            // Short, so that every test exercises heartbeats and their acknowledgements.
            heartbeat_ms: 500,
            log: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1_000_000_000_000_000_000),
            messages: Mutex::new(HashMap::new()),
            nonces: Mutex::new(HashMap::new()),
            interactions: Mutex::new(HashMap::new()),
            acknowledged: Mutex::new(HashSet::new()),
            rate_limit: Mutex::new((0, 0.0)),
            callbacks_released: watch::channel(true).0,
            gateway: Mutex::new(None),
            frames: Mutex::new(Vec::new()),
            seq: AtomicU64::new(1),
            commands: Mutex::new(None),
            arrivals: super::Arrivals::default(),
        });
        let app = Router::new().fallback(rest).with_state(state.clone());
        let rest_task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        let gateway_state = state.clone();
        let gateway_task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = gateway.accept().await else {
                    return;
                };
                tokio::spawn(gateway_connection(gateway_state.clone(), stream));
            }
        });
        FakeDiscord {
            base,
            state,
            tasks: vec![rest_task, gateway_task],
        }
    }

    fn next_id(&self) -> u64 {
        self.state.next_id.fetch_add(1, Ordering::SeqCst)
    }

    /// Every REST request so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.log.lock().unwrap().clone()
    }

    /// The requests with this method whose path starts with `path_prefix`.
    pub fn requests_to(&self, method: &str, path_prefix: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.is(method, path_prefix))
            .collect()
    }

    /// Requests the fake did not know (it answered 404 without a Discord meaning).
    pub fn unknown_routes(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.status == 404 && r.body.get("fake_unknown_route").is_some())
            .collect()
    }

    /// The message with this id as it stands (content, components...).
    pub fn message(&self, id: u64) -> Option<Value> {
        let messages = self.state.messages.lock().unwrap();
        messages.get(&id).map(|m| m.json.clone())
    }

    /// The id of one of the `count` newest stored messages that holds `text` (in its content or
    /// its components), as the latency rounds find their question's.
    pub fn newest_holding(&self, text: &str, count: usize) -> Option<u64> {
        let messages = self.state.messages.lock().unwrap();
        let mut ids: Vec<u64> = messages.keys().copied().collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.into_iter()
            .take(count)
            .find(|id| messages[id].json.to_string().contains(text))
    }

    /// When each message posted successfully arrived.
    pub fn arrivals(&self) -> &super::Arrivals {
        &self.state.arrivals
    }

    /// The id of a stored message whose content contains `text`.
    pub fn message_containing(&self, text: &str) -> Option<u64> {
        let messages = self.state.messages.lock().unwrap();
        messages
            .iter()
            .find(|(_, m)| m.json["content"].as_str().unwrap_or("").contains(text))
            .map(|(id, _)| *id)
    }

    /// The messages posted successfully to `channel`, in order, as the bodies sent.
    pub fn posted(&self, channel: u64) -> Vec<Recorded> {
        self.requests_to("POST", &format!("/channels/{channel}/messages"))
            .into_iter()
            .filter(|r| r.status == 200)
            .collect()
    }

    /// Answers the next `count` REST requests with 429 and `retry_after` seconds.
    pub fn rate_limit_next(&self, count: usize, retry_after: f64) {
        *self.state.rate_limit.lock().unwrap() = (count, retry_after);
    }

    /// Holds interaction callbacks (they are recorded, then wait) until [`Self::release_callbacks`].
    pub fn hold_callbacks(&self) {
        self.state.callbacks_released.send_replace(false);
    }

    pub fn release_callbacks(&self) {
        self.state.callbacks_released.send_replace(true);
    }

    /// Marks `interaction` as acknowledged by the HTTP response of an interactions endpoint
    /// (which the fake does not see), so that Discord would accept its follow-ups.
    pub fn acknowledged_by_http(&self, interaction: &SentInteraction) {
        self.state
            .acknowledged
            .lock()
            .unwrap()
            .insert(interaction.id);
    }

    /// The application commands registered with `PUT /applications/{app}/commands`.
    pub fn commands(&self) -> Option<Value> {
        self.state.commands.lock().unwrap().clone()
    }

    /// What the client sent on the gateway (IDENTIFY, heartbeats...).
    pub fn gateway_frames(&self) -> Vec<Value> {
        self.state.frames.lock().unwrap().clone()
    }

    /// True once a client has identified and been sent READY.
    pub fn connected(&self) -> bool {
        self.state.gateway.lock().unwrap().is_some()
    }

    /// Sends a dispatch (op 0) to the connected client.
    pub fn dispatch(&self, event: &str, data: Value) {
        let sender = self.state.gateway.lock().unwrap().clone();
        let sender = sender.expect("no gateway client connected");
        sender.send(json!({"t": event, "d": data})).unwrap();
    }

    fn interaction(
        &self,
        kind: u8,
        user: &FakeUser,
        place: Place,
        data: Value,
        message: Option<Value>,
    ) -> SentInteraction {
        let id = self.next_id();
        let token = format!("interaction-token-{id}");
        self.state
            .interactions
            .lock()
            .unwrap()
            .insert(token.clone(), id);
        let mut payload = json!({
            "id": id.to_string(),
            "application_id": APP_ID.to_string(),
            "type": kind,
            "data": data,
            "channel_id": place.channel.to_string(),
            "channel": {"id": place.channel.to_string(), "type": if place.guild.is_some() { 0 } else { 1 }},
            "token": token,
            "version": 1,
            "app_permissions": "0",
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": place.guild.unwrap_or(0).to_string()},
            "context": if place.guild.is_some() { 0 } else { 1 },
            "attachment_size_limit": 10_485_760,
        });
        match place.guild {
            Some(guild) => {
                payload["guild_id"] = json!(guild.to_string());
                payload["guild_locale"] = json!("en-US");
                payload["member"] = json!({
                    "user": user.json(),
                    "nick": null,
                    "avatar": null,
                    "roles": [],
                    "joined_at": TIMESTAMP,
                    "premium_since": null,
                    "deaf": false,
                    "mute": false,
                    "flags": 0,
                    "pending": false,
                    "permissions": "0",
                    "communication_disabled_until": null,
                });
            }
            None => payload["user"] = user.json(),
        }
        if let Some(message) = message {
            payload["message"] = message;
        }
        SentInteraction { id, token, payload }
    }

    fn shown_message(&self, message_id: u64) -> Value {
        self.message(message_id)
            .unwrap_or_else(|| panic!("message {message_id} was never posted"))
    }

    /// A button click on message `message_id` (type 3, component type 2), dispatched.
    pub fn click(
        &self,
        user: &FakeUser,
        place: Place,
        message_id: u64,
        custom_id: &str,
    ) -> SentInteraction {
        let message = self.shown_message(message_id);
        let sent = self.interaction(
            3,
            user,
            place,
            json!({"custom_id": custom_id, "component_type": 2}),
            Some(message),
        );
        self.dispatch("INTERACTION_CREATE", sent.payload.clone());
        sent
    }

    /// A selection in a string select menu (component type 3), dispatched.
    pub fn select(
        &self,
        user: &FakeUser,
        place: Place,
        message_id: u64,
        custom_id: &str,
        values: &[&str],
    ) -> SentInteraction {
        let message = self.shown_message(message_id);
        let sent = self.interaction(
            3,
            user,
            place,
            json!({"custom_id": custom_id, "component_type": 3, "values": values}),
            Some(message),
        );
        self.dispatch("INTERACTION_CREATE", sent.payload.clone());
        sent
    }

    /// A slash command interaction (type 2), not dispatched (the endpoint tests post it).
    pub fn slash_payload(
        &self,
        user: &FakeUser,
        place: Place,
        name: &str,
        options: &[(&str, &str)],
    ) -> SentInteraction {
        let options: Vec<Value> = options
            .iter()
            .map(|(name, value)| json!({"name": name, "type": 3, "value": value}))
            .collect();
        self.interaction(
            2,
            user,
            place,
            json!({"id": "700000000000000001", "name": name, "type": 1, "options": options}),
            None,
        )
    }

    /// A slash command, dispatched.
    pub fn slash(
        &self,
        user: &FakeUser,
        place: Place,
        name: &str,
        options: &[(&str, &str)],
    ) -> SentInteraction {
        let sent = self.slash_payload(user, place, name, options);
        self.dispatch("INTERACTION_CREATE", sent.payload.clone());
        sent
    }

    /// Autocompletion of `/answer`'s `id` with `typed` so far (type 4), dispatched.
    pub fn autocomplete(&self, user: &FakeUser, place: Place, typed: &str) -> SentInteraction {
        let sent = self.interaction(
            4,
            user,
            place,
            json!({"id": "700000000000000001", "name": "answer", "type": 1, "options": [
                {"name": "id", "type": 3, "value": typed, "focused": true},
            ]}),
            None,
        );
        self.dispatch("INTERACTION_CREATE", sent.payload.clone());
        sent
    }

    /// A button click not dispatched (for the HTTP endpoint).
    pub fn click_payload(
        &self,
        user: &FakeUser,
        place: Place,
        message_id: u64,
        custom_id: &str,
    ) -> SentInteraction {
        let message = self.shown_message(message_id);
        self.interaction(
            3,
            user,
            place,
            json!({"custom_id": custom_id, "component_type": 2}),
            Some(message),
        )
    }

    /// Discord's PING (type 1) for the HTTP endpoint.
    pub fn ping_payload(&self) -> Value {
        json!({
            "id": self.next_id().to_string(),
            "application_id": APP_ID.to_string(),
            "type": 1,
            "token": "ping-token",
            "version": 1,
        })
    }

    /// A typed message (MESSAGE_CREATE), dispatched; returns its id.
    pub fn say(&self, user: &FakeUser, place: Place, content: &str) -> u64 {
        let id = self.next_id();
        let mut message = message_json(id, place.channel, user, content, json!([]), 0);
        if let Some(guild) = place.guild {
            message["guild_id"] = json!(guild.to_string());
        }
        self.dispatch("MESSAGE_CREATE", message);
        id
    }

    /// A typed reply to message `to` (MESSAGE_CREATE with a `message_reference`), dispatched;
    /// returns its id.
    pub fn reply(&self, user: &FakeUser, place: Place, to: u64, content: &str) -> u64 {
        let id = self.next_id();
        let mut message = message_json(id, place.channel, user, content, json!([]), 0);
        message["type"] = json!(19);
        message["message_reference"] = json!({"type": 0, "message_id": to.to_string(), "channel_id": place.channel.to_string()});
        if let Some(guild) = place.guild {
            message["guild_id"] = json!(guild.to_string());
            message["message_reference"]["guild_id"] = json!(guild.to_string());
        }
        self.dispatch("MESSAGE_CREATE", message);
        id
    }

    /// Waits until a client has identified and, after READY, registered its commands.
    pub async fn wait_ready(&self) {
        crate::support::eventually(Duration::from_secs(10), "the bot is ready", || async {
            self.connected() && self.commands().is_some()
        })
        .await;
    }
}

fn message_json(
    id: u64,
    channel: u64,
    author: &FakeUser,
    content: &str,
    components: Value,
    flags: u64,
) -> Value {
    json!({
        "id": id.to_string(),
        "channel_id": channel.to_string(),
        "author": author.json(),
        "content": content,
        "timestamp": TIMESTAMP,
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": false,
        "type": 0,
        "components": components,
        "flags": flags,
    })
}

/// Discord's checks on a message body; `Err` carries what Discord would say.
fn check_message(body: &Value) -> Result<(), String> {
    if let Some(content) = body.get("content").and_then(Value::as_str)
        && content.chars().count() > 2000
    {
        return Err("content: Must be 2000 or fewer in length.".into());
    }
    let Some(rows) = body.get("components") else {
        return Ok(());
    };
    let rows = rows.as_array().ok_or("components: not an array")?;
    if rows.len() > 5 {
        return Err(format!("components: {} rows, at most 5", rows.len()));
    }
    let mut custom_ids = HashSet::new();
    let mut check_custom_id = |id: Option<&str>| -> Result<(), String> {
        let id = id.ok_or("custom_id missing")?;
        let n = id.chars().count();
        if !(1..=100).contains(&n) {
            return Err(format!("custom_id `{id}`: must be 1-100 characters"));
        }
        if !custom_ids.insert(id.to_owned()) {
            return Err(format!(
                "custom_id `{id}`: must be unique (COMPONENT_CUSTOM_ID_DUPLICATED)"
            ));
        }
        Ok(())
    };
    for (r, row) in rows.iter().enumerate() {
        if row["type"] != 1 {
            return Err(format!("components.{r}: an action row is type 1"));
        }
        let parts = row["components"]
            .as_array()
            .ok_or(format!("components.{r}.components missing"))?;
        if parts.is_empty() || parts.len() > 5 {
            return Err(format!("components.{r}: {} components, 1-5", parts.len()));
        }
        for part in parts {
            match part["type"].as_u64() {
                Some(2) => {
                    let label = part["label"].as_str().unwrap_or("");
                    let n = label.chars().count();
                    if !(1..=80).contains(&n) {
                        return Err(format!("button label `{label}`: must be 1-80 characters"));
                    }
                    check_custom_id(part["custom_id"].as_str())?;
                }
                Some(3) => {
                    if parts.len() != 1 {
                        return Err(format!("components.{r}: a select menu is alone in its row"));
                    }
                    check_custom_id(part["custom_id"].as_str())?;
                    let options = part["options"].as_array().ok_or("select options missing")?;
                    if options.is_empty() || options.len() > 25 {
                        return Err(format!("select: {} options, 1-25", options.len()));
                    }
                    for option in options {
                        for field in ["label", "value"] {
                            let n = option[field].as_str().unwrap_or("").chars().count();
                            if !(1..=100).contains(&n) {
                                return Err(format!("select option {field}: 1-100 characters"));
                            }
                        }
                    }
                    let min = part["min_values"].as_u64().unwrap_or(1);
                    let max = part["max_values"].as_u64().unwrap_or(1);
                    if min > max || max > options.len() as u64 {
                        return Err(format!("select: min_values {min}, max_values {max}"));
                    }
                }
                other => {
                    return Err(format!(
                        "components.{r}: unexpected component type {other:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn invalid_form(reason: String) -> (StatusCode, Value) {
    (
        StatusCode::BAD_REQUEST,
        json!({"code": 50035, "message": "Invalid Form Body", "errors": {"_errors": [{"code": "BASE_TYPE_INVALID", "message": reason}]}}),
    )
}

async fn rest(
    State(state): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path()
        .strip_prefix("/api/v10")
        .unwrap_or(uri.path())
        .to_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let at = Instant::now();
    let index = {
        let mut log = state.log.lock().unwrap();
        log.push(Recorded {
            method: method.to_string(),
            path: path.clone(),
            body: body.clone(),
            status: 0,
            at,
        });
        log.len() - 1
    };
    let limited = {
        let mut limit = state.rate_limit.lock().unwrap();
        if limit.0 > 0 {
            limit.0 -= 1;
            Some(limit.1)
        } else {
            None
        }
    };
    let (status, answer, retry_after) = match limited {
        Some(retry_after) => (
            StatusCode::TOO_MANY_REQUESTS,
            // Discord's rate-limit body: no `code`.
            json!({"message": "You are being rate limited.", "retry_after": retry_after, "global": false}),
            Some(retry_after),
        ),
        None => {
            let (status, answer) = route(&state, &method, &path, &headers, &body, at).await;
            (status, answer, None)
        }
    };
    state.log.lock().unwrap()[index].status = status.as_u16();
    let mut response = if status == StatusCode::NO_CONTENT {
        status.into_response()
    } else {
        (status, axum::Json(answer)).into_response()
    };
    if let Some(retry_after) = retry_after {
        let header = (retry_after.ceil() as u64).to_string();
        response
            .headers_mut()
            .insert("retry-after", header.parse().unwrap());
        response
            .headers_mut()
            .insert("x-ratelimit-scope", "user".parse().unwrap());
    }
    response
}

async fn route(
    state: &Shared,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Value,
    at: Instant,
) -> (StatusCode, Value) {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(format!("Bot {TOKEN}").as_str());
    // Webhook and interaction routes are authorised by their token; Get Gateway needs none.
    let open = matches!(
        segments.first(),
        Some(&"webhooks") | Some(&"interactions") | Some(&"gateway")
    ) && segments.get(1) != Some(&"bot");
    if !authorized && !open {
        return error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized");
    }
    let bot = FakeUser::askbridge();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["gateway"]) => (StatusCode::OK, json!({"url": state.gateway_url})),
        ("GET", ["gateway", "bot"]) => (
            StatusCode::OK,
            json!({"url": state.gateway_url, "shards": 1, "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}}),
        ),
        ("GET", ["users", "@me"]) => (StatusCode::OK, bot.json()),
        ("POST", ["channels", channel, "messages"]) => {
            let Ok(channel) = channel.parse::<u64>() else {
                return error(StatusCode::NOT_FOUND, 10003, "Unknown Channel");
            };
            if let Err(reason) = check_message(body) {
                return invalid_form(reason);
            }
            let nonce = body
                .get("nonce")
                .and_then(Value::as_str)
                .filter(|_| body["enforce_nonce"] == true)
                .map(str::to_owned);
            let replayed =
                (nonce.as_ref()).and_then(|nonce| state.nonces.lock().unwrap().get(nonce).copied());
            let message = match replayed {
                // A replay of a nonce answers with the message it posted before.
                Some(existing) => state.messages.lock().unwrap()[&existing].json.clone(),
                None => {
                    let id = state.next_id.fetch_add(1, Ordering::SeqCst);
                    let message = message_json(
                        id,
                        channel,
                        &bot,
                        body["content"].as_str().unwrap_or(""),
                        body.get("components").cloned().unwrap_or(json!([])),
                        body["flags"].as_u64().unwrap_or(0),
                    );
                    state.messages.lock().unwrap().insert(
                        id,
                        StoredMessage {
                            channel,
                            json: message.clone(),
                        },
                    );
                    if let Some(nonce) = nonce {
                        state.nonces.lock().unwrap().insert(nonce, id);
                    }
                    message
                }
            };
            // Once stored, so that whoever the arrival wakes finds the message.
            state.arrivals.record(body, at);
            (StatusCode::OK, message)
        }
        ("PATCH", ["channels", channel, "messages", message]) => {
            let (Ok(channel), Ok(message)) = (channel.parse::<u64>(), message.parse::<u64>())
            else {
                return error(StatusCode::NOT_FOUND, 10008, "Unknown Message");
            };
            if let Err(reason) = check_message(body) {
                return invalid_form(reason);
            }
            let mut messages = state.messages.lock().unwrap();
            let Some(stored) = messages.get_mut(&message).filter(|m| m.channel == channel) else {
                return error(StatusCode::NOT_FOUND, 10008, "Unknown Message");
            };
            for field in ["content", "components"] {
                if let Some(value) = body.get(field) {
                    stored.json[field] = value.clone();
                }
            }
            stored.json["edited_timestamp"] = json!(TIMESTAMP);
            (StatusCode::OK, stored.json.clone())
        }
        ("POST", ["interactions", id, token, "callback"]) => {
            let known = state.interactions.lock().unwrap().get(*token).copied();
            let Some(interaction) = known.filter(|known| known.to_string() == *id) else {
                return error(StatusCode::NOT_FOUND, 10062, "Unknown interaction");
            };
            let mut released = state.callbacks_released.subscribe();
            let _ = released.wait_for(|released| *released).await;
            if !state.acknowledged.lock().unwrap().insert(interaction) {
                return error(
                    StatusCode::BAD_REQUEST,
                    40060,
                    "Interaction has already been acknowledged.",
                );
            }
            (StatusCode::NO_CONTENT, Value::Null)
        }
        ("POST", ["webhooks", app, token])
        | ("PATCH", ["webhooks", app, token, "messages", "@original"]) => {
            let known = state.interactions.lock().unwrap().get(*token).copied();
            let acknowledged =
                known.is_some_and(|id| state.acknowledged.lock().unwrap().contains(&id));
            if *app != APP_ID.to_string() || !acknowledged {
                return error(StatusCode::NOT_FOUND, 10015, "Unknown Webhook");
            }
            if let Err(reason) = check_message(body) {
                return invalid_form(reason);
            }
            let id = state.next_id.fetch_add(1, Ordering::SeqCst);
            (
                StatusCode::OK,
                message_json(
                    id,
                    0,
                    &bot,
                    body["content"].as_str().unwrap_or(""),
                    json!([]),
                    body["flags"].as_u64().unwrap_or(0),
                ),
            )
        }
        ("PUT", ["applications", app, "commands"]) => {
            if *app != APP_ID.to_string() {
                return error(StatusCode::FORBIDDEN, 50001, "Missing Access");
            }
            let mut commands = body.as_array().cloned().unwrap_or_default();
            for (index, command) in commands.iter_mut().enumerate() {
                command["id"] = json!((700_000_000_000_000_001u64 + index as u64).to_string());
                command["application_id"] = json!(APP_ID.to_string());
                command["version"] = json!("1");
            }
            *state.commands.lock().unwrap() = Some(Value::Array(commands.clone()));
            (StatusCode::OK, Value::Array(commands))
        }
        _ => (
            StatusCode::NOT_FOUND,
            json!({"code": 0, "message": "404: Not Found", "fake_unknown_route": path}),
        ),
    }
}

async fn gateway_connection(state: Arc<Shared>, stream: TcpStream) {
    let Ok(socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = socket.split();
    let hello =
        json!({"op": 10, "d": {"heartbeat_interval": state.heartbeat_ms}, "s": null, "t": null});
    if sink.send(Frame::Text(hello.to_string())).await.is_err() {
        return;
    }
    let (sender, mut outgoing) = mpsc::unbounded_channel::<Value>();
    let mut identified = false;
    loop {
        tokio::select! {
            frame = source.next() => {
                let Some(Ok(frame)) = frame else { break };
                let Frame::Text(text) = frame else {
                    if matches!(frame, Frame::Close(_)) { break }
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
                state.frames.lock().unwrap().push(value.clone());
                match value["op"].as_u64() {
                    Some(1) => {
                        let ack = json!({"op": 11, "d": null, "s": null, "t": null});
                        if sink.send(Frame::Text(ack.to_string())).await.is_err() { break }
                    }
                    Some(2) if !identified => {
                        let token = value["d"]["token"].as_str().unwrap_or("");
                        if token != TOKEN && token != format!("Bot {TOKEN}") {
                            let close = CloseFrame {
                                code: CloseCode::Library(4004),
                                reason: "Authentication failed.".into(),
                            };
                            let _ = sink.send(Frame::Close(Some(close))).await;
                            break;
                        }
                        identified = true;
                        let ready = json!({
                            "op": 0,
                            "t": "READY",
                            "s": state.seq.fetch_add(1, Ordering::SeqCst),
                            "d": {
                                "v": 10,
                                "user": FakeUser::askbridge().json(),
                                "guilds": [],
                                "session_id": "fake-session",
                                "resume_gateway_url": state.gateway_url,
                                "shard": [0, 1],
                                "application": {"id": APP_ID.to_string(), "flags": 0},
                            },
                        });
                        if sink.send(Frame::Text(ready.to_string())).await.is_err() { break }
                        *state.gateway.lock().unwrap() = Some(sender.clone());
                    }
                    _ => {}
                }
            }
            Some(dispatch) = outgoing.recv() => {
                let frame = json!({
                    "op": 0,
                    "t": dispatch["t"],
                    "s": state.seq.fetch_add(1, Ordering::SeqCst),
                    "d": dispatch["d"],
                });
                if sink.send(Frame::Text(frame.to_string())).await.is_err() { break }
            }
        }
    }
}
