//! A fake Slack Web API on 127.0.0.1, for the real slack-morphism client.
//!
//! It behaves as Slack does where it matters to askbridge: every call needs the bot token as a
//! bearer token (`invalid_auth` otherwise); a message whose blocks break a Block Kit limit is
//! refused whole with `invalid_blocks` (button text <= 75 characters, `value` <= 2,000,
//! `action_id` <= 255 and unique in the message, <= 25 elements per actions block, <= 50 blocks,
//! <= 100 options in a select, option text <= 75, section text <= 3,000); a channel the app is not
//! in answers `not_in_channel`; `chat.update` of a message that does not exist answers
//! `message_not_found`; a queued rate limit answers 429 with `Retry-After`. `views.open` needs a
//! trigger id and refuses a view that breaks a limit with `invalid_arguments` (title, submit and
//! close <= 24 characters, <= 100 blocks, block ids unique and <= 255, labels and hints <= 2,000,
//! placeholders <= 150, option values <= 150, <= 10 checkboxes, text inputs' `max_length` <= 3,000,
//! `private_metadata` <= 3,000, inputs only with a submit button). Every call, and every post to a
//! `response_url`, is recorded in order.

use super::{Arrivals, Server};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

/// The bot token the fake accepts.
pub const TOKEN: &str = "xoxb-1111-2222-fakeSlackTokenSecret";
/// The app-level token the fake accepts for `apps.connections.open` (Socket Mode), and only there.
pub const APP_TOKEN: &str = "xapp-1-A0FAKE-3333-fakeAppLevelTokenSecret";
/// The app's bot user.
pub const BOT_USER: &str = "UASKBOT";

/// One recorded call.
#[derive(Clone, Debug)]
pub struct Call {
    /// The Web API method (`chat.postMessage`), or `response_url`.
    pub method: String,
    /// The JSON body.
    pub body: Value,
    /// What the fake answered (HTTP status).
    pub status: u16,
    /// Slack's error code, when it refused.
    pub error: Option<String>,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    /// (channel, ts) -> the message as it stands.
    messages: BTreeMap<(String, String), Value>,
    next_ts: u64,
    /// Rate limits to answer next: Retry-After seconds.
    limits: VecDeque<u64>,
    not_in: HashSet<String>,
    /// The Socket Mode server `apps.connections.open` hands out.
    socket_url: Option<String>,
}

/// The fake Web API.
pub struct FakeSlack {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    inner: Arc<Mutex<Inner>>,
    arrivals: Arc<Arrivals>,
    _server: Server,
}

/// The handlers' state: the fake's data, and when each `chat.postMessage` arrived.
type Shared = (Arc<Mutex<Inner>>, Arc<Arrivals>);

impl FakeSlack {
    pub fn start() -> FakeSlack {
        let inner = Arc::new(Mutex::new(Inner {
            next_ts: 1_700_000_000_000_100,
            ..Inner::default()
        }));
        let arrivals = Arc::new(Arrivals::default());
        let app = Router::new()
            .route("/api/{method}", any(api))
            .route("/response/{id}", post(response_url))
            .with_state((Arc::clone(&inner), Arc::clone(&arrivals)));
        let server = Server::start(app);
        FakeSlack {
            base: server.base.clone(),
            inner,
            arrivals,
            _server: server,
        }
    }

    /// The Web API base to give the client (`SLACK_API_URL`).
    pub fn api_url(&self) -> String {
        format!("{}/api", self.base)
    }

    /// A `response_url` pointing at the fake.
    pub fn response_url(&self, id: &str) -> String {
        format!("{}/response/{id}", self.base)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.inner.lock().unwrap().calls.clone()
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    /// The message `ts` in `channel` as it stands.
    pub fn message(&self, channel: &str, ts: &str) -> Option<Value> {
        self.inner
            .lock()
            .unwrap()
            .messages
            .get(&(channel.to_owned(), ts.to_owned()))
            .cloned()
    }

    /// The next `count` calls answer 429 with `Retry-After: seconds`.
    pub fn rate_limit_next(&self, count: usize, seconds: u64) {
        let mut inner = self.inner.lock().unwrap();
        inner.limits.extend(std::iter::repeat_n(seconds, count));
    }

    /// Stops answering, as an outage would.
    pub fn stop(&self) {
        self._server.stop();
    }

    /// `apps.connections.open` hands out `url` (a fake Socket Mode server).
    pub fn socket_mode(&self, url: &str) {
        self.inner.lock().unwrap().socket_url = Some(url.to_owned());
    }

    /// The ts of one of the `count` newest messages in `channel` whose text or blocks hold
    /// `needle`: cheap with thousands posted (the latency rounds read one each round).
    pub fn find_newest(&self, channel: &str, needle: &str, count: usize) -> Option<String> {
        let inner = self.inner.lock().unwrap();
        let range = (channel.to_owned(), String::new())..(channel.to_owned(), "~".to_owned());
        let mut newest = inner.messages.range(range).rev().take(count);
        newest
            .find_map(|((_, ts), message)| message.to_string().contains(needle).then(|| ts.clone()))
    }

    /// When each `chat.postMessage` that succeeded arrived.
    pub fn arrivals(&self) -> &Arrivals {
        &self.arrivals
    }

    /// The app is not a member of `channel`.
    pub fn not_in_channel(&self, channel: &str) {
        self.inner.lock().unwrap().not_in.insert(channel.to_owned());
    }
}

fn ok(body: Value) -> (StatusCode, Value) {
    (StatusCode::OK, body)
}

fn refuse(code: &str) -> (StatusCode, Value) {
    (StatusCode::OK, json!({"ok": false, "error": code}))
}

async fn api(
    State((inner, arrivals)): State<Shared>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = std::time::Instant::now();
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|_| {
            // Form-encoded calls: kept as text.
            Value::String(String::from_utf8_lossy(&body).into_owned())
        })
    };
    let mut inner = inner.lock().unwrap();
    let token = if method == "apps.connections.open" {
        APP_TOKEN
    } else {
        TOKEN
    };
    let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {token}"));
    let (status, answer, retry_after) = if !authorized {
        let (s, a) = refuse("invalid_auth");
        (s, a, None)
    } else if let Some(seconds) = inner.limits.pop_front() {
        (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"ok": false, "error": "ratelimited"}),
            Some(seconds),
        )
    } else {
        let (s, a) = answer(&mut inner, &method, &body);
        (s, a, None)
    };
    if method == "chat.postMessage" && answer["ok"] == true {
        arrivals.record(&body, at);
    }
    inner.calls.push(Call {
        method,
        body,
        status: status.as_u16(),
        error: answer["error"].as_str().map(str::to_owned),
    });
    let mut response = (status, axum::Json(answer)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    response
}

fn answer(inner: &mut Inner, method: &str, body: &Value) -> (StatusCode, Value) {
    let channel = body["channel"].as_str().unwrap_or_default().to_owned();
    match method {
        "auth.test" => ok(json!({
            "ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "askbridge",
            "team_id": "T0FAKE", "user_id": BOT_USER, "bot_id": "B0FAKE",
        })),
        "chat.postMessage" | "chat.update" | "chat.postEphemeral" => {
            if channel.is_empty() {
                return refuse("channel_not_found");
            }
            if inner.not_in.contains(&channel) {
                return refuse("not_in_channel");
            }
            if let Err(why) = check_blocks(body) {
                return (
                    StatusCode::OK,
                    json!({"ok": false, "error": "invalid_blocks", "errors": [why]}),
                );
            }
            let message = json!({"text": body["text"], "blocks": body["blocks"]});
            match method {
                "chat.postMessage" => {
                    inner.next_ts += 1;
                    let ts = format!(
                        "{}.{:06}",
                        inner.next_ts / 1_000_000,
                        inner.next_ts % 1_000_000
                    );
                    let mut stored = message.clone();
                    stored["thread_ts"] = body["thread_ts"].clone();
                    inner.messages.insert((channel.clone(), ts.clone()), stored);
                    let mut message = message;
                    message["ts"] = json!(ts);
                    ok(json!({"ok": true, "channel": channel, "ts": ts, "message": message}))
                }
                "chat.update" => {
                    let ts = body["ts"].as_str().unwrap_or_default().to_owned();
                    let key = (channel.clone(), ts.clone());
                    if !inner.messages.contains_key(&key) {
                        return refuse("message_not_found");
                    }
                    inner.messages.insert(key, message.clone());
                    ok(json!({"ok": true, "channel": channel, "ts": ts, "message": message}))
                }
                _ => {
                    if body["user"].as_str().unwrap_or_default().is_empty() {
                        return refuse("user_not_found");
                    }
                    ok(json!({"ok": true, "message_ts": "1.000001"}))
                }
            }
        }
        "views.open" => {
            if body["trigger_id"].as_str().unwrap_or_default().is_empty() {
                return refuse("invalid_trigger_id");
            }
            if let Err(why) = check_view(&body["view"]) {
                return (
                    StatusCode::OK,
                    json!({"ok": false, "error": "invalid_arguments", "response_metadata": {"messages": [why]}}),
                );
            }
            inner.next_ts += 1;
            let mut view = body["view"].clone();
            view["id"] = json!(format!("V{}", inner.next_ts));
            view["team_id"] = json!("T0FAKE");
            view["hash"] = json!(format!("h{}", inner.next_ts));
            view["state"] = json!({"values": {}});
            ok(json!({"ok": true, "view": view}))
        }
        "apps.connections.open" => match &inner.socket_url {
            Some(url) => {
                ok(json!({"ok": true, "url": format!("{url}?ticket=t{}", inner.calls.len())}))
            }
            None => refuse("not_allowed_token_type"),
        },
        _ => refuse("unknown_method"),
    }
}

/// Slack's limits on a modal view.
pub fn check_view(view: &Value) -> Result<(), String> {
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    if view["type"] != "modal" {
        return Err("not a modal".into());
    }
    let title = chars(&view["title"]["text"]);
    if title == 0 || title > 24 {
        return Err(format!("title of {title} characters (1 to 24)"));
    }
    if chars(&view["submit"]["text"]) > 24 || chars(&view["close"]["text"]) > 24 {
        return Err("submit or close text over 24".into());
    }
    if chars(&view["callback_id"]) > 255 || chars(&view["private_metadata"]) > 3000 {
        return Err("callback_id over 255 or private_metadata over 3000".into());
    }
    let blocks = view["blocks"].as_array().ok_or("blocks is not a list")?;
    if blocks.is_empty() || blocks.len() > 100 {
        return Err(format!("{} blocks (1 to 100)", blocks.len()));
    }
    let mut block_ids = HashSet::new();
    for block in blocks {
        if let Some(id) = block["block_id"].as_str()
            && (id.chars().count() > 255 || !block_ids.insert(id.to_owned()))
        {
            return Err(format!("block_id `{id}` over 255 or twice"));
        }
        match block["type"].as_str() {
            Some("section") if chars(&block["text"]["text"]) > 3000 => {
                return Err("section text over 3000".into());
            }
            Some("input") => {
                if view["submit"].is_null() {
                    return Err("an input in a view without submit".into());
                }
                let label = chars(&block["label"]["text"]);
                if label == 0 || label > 2000 || chars(&block["hint"]["text"]) > 2000 {
                    return Err("label empty or over 2000, or hint over 2000".into());
                }
                check_input(&block["element"])?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Slack's limits on an input block's element.
fn check_input(element: &Value) -> Result<(), String> {
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    let id = chars(&element["action_id"]);
    if id == 0 || id > 255 {
        return Err("an input's action_id empty or over 255".into());
    }
    if chars(&element["placeholder"]["text"]) > 150 {
        return Err("placeholder over 150".into());
    }
    if element["max_length"].as_u64().is_some_and(|n| n > 3000) {
        return Err("max_length over 3000".into());
    }
    let most = match element["type"].as_str() {
        Some("checkboxes" | "radio_buttons") => 10,
        Some("static_select" | "multi_static_select") => 100,
        Some(
            "plain_text_input" | "number_input" | "email_text_input" | "url_text_input"
            | "datepicker" | "timepicker" | "datetimepicker",
        ) => return check_initial_text(element),
        other => return Err(format!("input element {other:?} unknown")),
    };
    let options = element["options"].as_array().ok_or("options missing")?;
    if options.is_empty() || options.len() > most {
        return Err(format!("{} options (1 to {most})", options.len()));
    }
    for option in options {
        if chars(&option["text"]["text"]) > 75 || chars(&option["value"]) > 150 {
            return Err("option text over 75 or value over 150".into());
        }
    }
    // An initial option must be one of the options, exactly; initial options one or more.
    let initial = match (&element["initial_option"], &element["initial_options"]) {
        (Value::Null, Value::Null) => vec![],
        (one, Value::Null) => vec![one],
        (Value::Null, Value::Array(many)) if !many.is_empty() => many.iter().collect(),
        _ => return Err("initial_option(s) of the wrong shape".into()),
    };
    if initial.iter().any(|i| !options.contains(i)) {
        return Err("an initial option that is not one of the options".into());
    }
    Ok(())
}

/// A text-like input's initial value: a string within `max_length`, a number input's a number,
/// a date picker's `YYYY-MM-DD`.
fn check_initial_text(element: &Value) -> Result<(), String> {
    if let Some(date) = element.get("initial_date") {
        let date = date.as_str().unwrap_or_default();
        let digits = date.chars().filter(char::is_ascii_digit).count();
        if date.len() != 10 || digits != 8 || &date[4..5] != "-" || &date[7..8] != "-" {
            return Err(format!("initial_date {date:?} is not YYYY-MM-DD"));
        }
    }
    let Some(value) = element.get("initial_value") else {
        return Ok(());
    };
    let text = value.as_str().ok_or("initial_value is not a string")?;
    let longest = element["max_length"].as_u64().unwrap_or(3000);
    if text.chars().count() as u64 > longest {
        return Err("initial_value over max_length".into());
    }
    if element["type"] == "number_input" && text.parse::<f64>().is_err() {
        return Err(format!(
            "number_input initial_value {text:?} is not a number"
        ));
    }
    Ok(())
}

async fn response_url(
    State((inner, _)): State<Shared>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let result = check_blocks(&body);
    let mut inner = inner.lock().unwrap();
    inner.calls.push(Call {
        method: "response_url".into(),
        body: json!({"id": id, "body": body}),
        status: if result.is_ok() { 200 } else { 400 },
        error: result.as_ref().err().cloned(),
    });
    match result {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(_) => (StatusCode::BAD_REQUEST, "invalid_blocks").into_response(),
    }
}

/// Slack's Block Kit limits on a message's blocks.
pub fn check_blocks(body: &Value) -> Result<(), String> {
    let Some(blocks) = body.get("blocks") else {
        return Ok(());
    };
    let blocks = blocks.as_array().ok_or("blocks is not a list")?;
    if blocks.len() > 50 {
        return Err(format!("{} blocks (at most 50)", blocks.len()));
    }
    let mut ids = HashSet::new();
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    for block in blocks {
        if chars(&block["text"]["text"]) > 3000 {
            return Err("section text over 3000 characters".into());
        }
        let elements: Vec<Value> = match (block["elements"].as_array(), block.get("accessory")) {
            (Some(elements), _) => {
                if elements.len() > 25 {
                    return Err(format!("{} elements in an actions block", elements.len()));
                }
                elements.clone()
            }
            (None, Some(accessory)) => vec![accessory.clone()],
            (None, None) => Vec::new(),
        };
        for element in &elements {
            let id = element["action_id"].as_str().unwrap_or_default();
            if id.is_empty() || id.chars().count() > 255 {
                return Err(format!("action_id `{id}` empty or over 255"));
            }
            if !ids.insert(id.to_owned()) {
                return Err(format!("action_id `{id}` twice"));
            }
            if element["type"] == "button" && chars(&element["text"]["text"]) > 75 {
                return Err("button text over 75".into());
            }
            if chars(&element["value"]) > 2000 {
                return Err("value over 2000".into());
            }
            if let Some(options) = element["options"].as_array() {
                if options.is_empty() || options.len() > 100 {
                    return Err(format!("{} options in a select", options.len()));
                }
                for option in options {
                    if chars(&option["text"]["text"]) > 75 || chars(&option["value"]) > 2000 {
                        return Err("option text over 75 or value over 2000".into());
                    }
                }
            }
        }
    }
    Ok(())
}
