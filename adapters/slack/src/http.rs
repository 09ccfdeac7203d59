//! The routes Slack posts to in HTTP mode: interactions (clicks and selections), slash commands
//! and events (messages in a DM with the app, mentions of it).
//!
//! Every request is signed: `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<ts>:<body>">` with
//! the app's signing secret, compared in constant time; a timestamp more than five minutes off, or
//! a missing header, is refused with 401 before the body is read.
//!
//! Slack wants its 200 within 3 s. Each request goes the one reply path of the bridge's [`Inbox`]
//! in a task of its own, and the 200 waits for that claim (a few milliseconds) but never longer
//! than [`CLAIM_WAIT`]: an askbridge that dies before it has recorded an event gets it again from
//! Slack's retry, and a slow store still gets its answer to Slack in time. The reply, shown to the
//! person alone (`chat.postEphemeral` for a click, the `response_url` for a slash command) or, for
//! a message, in the conversation, is sent after the 200. A delivery Slack retries
//! (`X-Slack-Retry-Num`) carries the same id as the first (the event id, the interaction's
//! trigger id), which the inbox handles once.
//!
//! A click on a modal opener opens its modal and claims nothing; a modal's submission
//! (`view_submission`) is answered in the 200's own body, which Slack reads to close the modal
//! or show errors on its fields (see `modals.rs`).

use crate::sending::SlackChannel;
use crate::{CLAIM_WAIT, SURFACE, Slack};
use askbridge_core::{Identity, Inbound, Inbox, Reply, ReplyTo, Target, Tone};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use slack_morphism::prelude::*;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// Where Slack posts clicks and selections (Interactivity's Request URL).
pub const INTERACTIONS_PATH: &str = "/slack/interactions";
/// Where Slack posts slash commands.
pub const COMMANDS_PATH: &str = "/slack/commands";
/// Where Slack posts events (Event Subscriptions' Request URL).
pub const EVENTS_PATH: &str = "/slack/events";
/// The header holding the request's signature.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// The header holding the request's timestamp (Unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// The header Slack adds to a delivery it retries.
pub const RETRY_HEADER: &str = "x-slack-retry-num";
/// How far a request's timestamp may be from now, in seconds.
const MAX_SKEW_S: i64 = 300;

/// Runs `work` in a task of its own, and returns once it has sent on its `claimed` sender (or
/// dropped it), or after [`CLAIM_WAIT`].
async fn claim_then_ack<F, Fut>(work: F)
where
    F: FnOnce(oneshot::Sender<()>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (claimed, waited) = oneshot::channel();
    tokio::spawn(work(claimed));
    if tokio::time::timeout(CLAIM_WAIT, waited).await.is_err() {
        tracing::warn!("a Slack request is acknowledged before its claim finished");
    }
}

#[derive(Clone)]
struct Hook {
    slack: Slack,
    inbox: Arc<dyn Inbox>,
}

pub(crate) fn router(slack: Slack, inbox: Arc<dyn Inbox>) -> Router {
    Router::new()
        .route(INTERACTIONS_PATH, post(interactions))
        .route(COMMANDS_PATH, post(commands))
        .route(EVENTS_PATH, post(events))
        .with_state(Hook { slack, inbox })
}

/// The `X-Slack-Signature` of `body` sent at `timestamp`, signed with `secret` (for tests and
/// tools that post to askbridge as Slack does).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(3 + digest.len() * 2);
    hex.push_str("v0=");
    for byte in digest {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Checks a request's signature and freshness; `Err` is the status to answer.
fn verify(
    secret: &askbridge_core::Secret,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), StatusCode> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (header(SIGNATURE_HEADER), header(TIMESTAMP_HEADER))
    else {
        tracing::warn!("Slack request without a signature refused");
        return Err(StatusCode::UNAUTHORIZED);
    };
    let fresh = timestamp
        .parse::<i64>()
        .is_ok_and(|ts| (now_s() - ts).abs() <= MAX_SKEW_S);
    if !fresh {
        tracing::warn!(timestamp, "Slack request with a stale timestamp refused");
        return Err(StatusCode::UNAUTHORIZED);
    }
    let expected = sign(secret.expose(), timestamp, body);
    if !askbridge_core::secret::secrets_equal(signature.as_bytes(), expected.as_bytes()) {
        tracing::warn!("Slack request with a wrong signature refused");
        return Err(StatusCode::UNAUTHORIZED);
    }
    Ok(())
}

/// Slack's escaping of `&`, `<`, `>` in message text undone, so typed commands read as typed.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A direct-message channel (`D...`): one person and the app.
fn is_direct(channel: &str) -> bool {
    channel.starts_with('D')
}

fn form(body: &[u8]) -> HashMap<String, String> {
    serde_urlencoded::from_bytes(body).unwrap_or_default()
}

#[derive(Debug, Deserialize)]
struct Interaction {
    #[serde(rename = "type")]
    kind: String,
    user: User,
    channel: Option<Conversation>,
    trigger_id: Option<String>,
    #[serde(default)]
    actions: Vec<Action>,
    /// A modal's view, on its submission.
    view: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    username: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Conversation {
    id: String,
}

#[derive(Debug, Deserialize)]
struct Action {
    #[serde(rename = "type")]
    kind: String,
    action_id: Option<String>,
    value: Option<String>,
    selected_option: Option<Choice>,
    #[serde(default)]
    selected_options: Vec<Choice>,
    action_ts: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    value: String,
}

impl Action {
    /// The command the action stands for: a button's value, a chosen option's value, or the
    /// command several chosen options make.
    fn command(&self) -> Option<String> {
        match self.kind.as_str() {
            "button" => self.value.clone(),
            "static_select" => self.selected_option.as_ref().map(|c| c.value.clone()),
            "multi_static_select" => {
                let values: Vec<String> = self
                    .selected_options
                    .iter()
                    .map(|c| c.value.clone())
                    .collect();
                crate::blocks::select_command(&values)
            }
            _ => None,
        }
    }
}

/// Whether a reply to a click needs saying: a refusal or information does, and so does a
/// success that left the question open (a vote counted). A click that resolved the question
/// shows in the message itself.
fn worth_saying(reply: &Reply) -> bool {
    reply.tone != Tone::Done || reply.question.as_ref().is_none_or(|q| q.is_pending())
}

async fn interactions(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(status) = verify(&hook.slack.signing_secret, &headers, &body) {
        return status.into_response();
    }
    let Some(payload) = form(&body).remove("payload") else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let interaction: Interaction = match serde_json::from_str(&payload) {
        Ok(interaction) => interaction,
        Err(error) => {
            tracing::warn!(%error, "unreadable Slack interaction");
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    match interaction.kind.as_str() {
        "block_actions" => {}
        "view_submission" => return submission(hook, interaction).await,
        other => {
            tracing::debug!(kind = other, "Slack interaction of another kind ignored");
            return StatusCode::OK.into_response();
        }
    }
    if let Some(click) = modal_click(&interaction) {
        crate::modals::open(&hook.slack, hook.inbox.as_ref(), click).await;
        return StatusCode::OK.into_response();
    }
    claim_then_ack(|claimed| click(hook, interaction, claimed)).await;
    StatusCode::OK.into_response()
}

/// A click on a button that opens a modal, if it is one.
fn modal_click(interaction: &Interaction) -> Option<crate::modals::Click<'_>> {
    let action = interaction.actions.first()?;
    let id = action.action_id.as_deref()?;
    if id != crate::blocks::REASON_ACTION && id != crate::blocks::FORM_ACTION {
        return None;
    }
    Some(crate::modals::Click {
        channel: &interaction.channel.as_ref()?.id,
        user: &interaction.user.id,
        trigger: interaction.trigger_id.as_deref()?,
        action: id,
        command: action.value.as_deref()?,
    })
}

/// A modal's submission: Slack reads what to do with the modal in the 200's body.
async fn submission(hook: Hook, interaction: Interaction) -> Response {
    let Some(view) = interaction.view else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let user = interaction.user;
    let by = crate::modals::Submitter {
        name: user.username.or(user.name),
        id: user.id,
    };
    axum::Json(crate::modals::submitted(hook.inbox, by, &view).await).into_response()
}

async fn click(hook: Hook, interaction: Interaction, claimed: oneshot::Sender<()>) {
    let Some(channel) = interaction.channel.as_ref().map(|c| c.id.clone()) else {
        return;
    };
    let Some(action) = interaction.actions.first() else {
        return;
    };
    let Some(text) = action.command() else {
        return;
    };
    let delivery = interaction
        .trigger_id
        .clone()
        .or_else(|| action.action_ts.clone())
        .map(|id| format!("interaction:{id}"));
    let user = &interaction.user;
    let inbound = Inbound {
        via: SURFACE.into(),
        chat: Target::compose(SURFACE, &channel),
        sender: Identity::compose(SURFACE, &user.id),
        sender_name: user
            .username
            .as_ref()
            .or(user.name.as_ref())
            .map(|name| format!("@{name}")),
        text,
        private: is_direct(&channel),
        delivery_id: delivery,
        in_reply_to: None,
    };
    let prepared = hook.inbox.prepare(inbound).await;
    let reply = prepared.commit().await;
    let _ = claimed.send(());
    let Some(reply) = reply else {
        return;
    };
    if !worth_saying(&reply) {
        return;
    }
    let sender = SlackChannel::new(Arc::clone(&hook.slack.client));
    if let Err(error) = sender
        .ephemeral(
            &SlackChannelId(channel.clone()),
            &SlackUserId(user.id.clone()),
            &reply.text,
        )
        .await
    {
        tracing::warn!(%error, channel, "cannot tell a Slack user about their click");
    }
}

async fn commands(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if let Err(status) = verify(&hook.slack.signing_secret, &headers, &body) {
        return status;
    }
    let mut fields = form(&body);
    let mut take = |name: &str| fields.remove(name).unwrap_or_default();
    let (command, text, user, user_name, channel, trigger, response_url) = (
        take("command"),
        take("text"),
        take("user_id"),
        take("user_name"),
        take("channel_id"),
        take("trigger_id"),
        take("response_url"),
    );
    if command.is_empty() || user.is_empty() || channel.is_empty() {
        return StatusCode::BAD_REQUEST;
    }
    let Ok(response_url) = response_url.parse::<url::Url>() else {
        return StatusCode::BAD_REQUEST;
    };
    let inbound = Inbound {
        via: SURFACE.into(),
        chat: Target::compose(SURFACE, &channel),
        sender: Identity::compose(SURFACE, &user),
        sender_name: (!user_name.is_empty()).then(|| format!("@{user_name}")),
        text: format!("{command} {text}").trim().to_owned(),
        private: is_direct(&channel),
        delivery_id: (!trigger.is_empty()).then(|| format!("command:{trigger}")),
        in_reply_to: None,
    };
    claim_then_ack(|claimed| async move {
        let reply = hook.inbox.handle(inbound).await;
        let _ = claimed.send(());
        let Some(reply) = reply else {
            return;
        };
        let sender = SlackChannel::new(Arc::clone(&hook.slack.client));
        if let Err(error) = sender
            .respond(&SlackResponseUrl(response_url), &reply.text)
            .await
        {
            tracing::warn!(%error, "cannot answer a Slack slash command");
        }
    })
    .await;
    StatusCode::OK
}

#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    challenge: Option<String>,
    event_id: Option<String>,
    event: Option<Event>,
}

#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    user: Option<String>,
    bot_id: Option<String>,
    subtype: Option<String>,
    text: Option<String>,
    channel: Option<String>,
    channel_type: Option<String>,
    ts: Option<String>,
    thread_ts: Option<String>,
    /// Who wrote a thread's first message (on a message in a thread).
    parent_user_id: Option<String>,
}

async fn events(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(status) = verify(&hook.slack.signing_secret, &headers, &body) {
        return status.into_response();
    }
    let envelope: Envelope = match serde_json::from_slice(&body) {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(%error, "unreadable Slack event");
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    match envelope.kind.as_str() {
        "url_verification" => {
            return axum::Json(serde_json::json!({ "challenge": envelope.challenge }))
                .into_response();
        }
        "event_callback" => {}
        other => {
            tracing::debug!(kind = other, "Slack envelope of another kind ignored");
            return StatusCode::OK.into_response();
        }
    }
    if let Some(retry) = headers.get(RETRY_HEADER).and_then(|v| v.to_str().ok()) {
        tracing::info!(retry, event_id = ?envelope.event_id, "Slack retried an event");
    }
    if let (Some(event), Some(event_id)) = (envelope.event, envelope.event_id)
        && let Some((inbound, thread)) = hook.slack.inbound_from(event, event_id)
    {
        claim_then_ack(|claimed| async move {
            let reply = hook.inbox.handle(inbound.clone()).await;
            let _ = claimed.send(());
            let Some(reply) = reply else {
                return;
            };
            let Some(channel) = inbound.chat.address().map(|c| SlackChannelId(c.to_owned())) else {
                return;
            };
            let sender = SlackChannel::new(Arc::clone(&hook.slack.client));
            let text = crate::blocks::escape(&askbridge_core::render::shorten(&reply.text, 150));
            let blocks = crate::blocks::text_blocks(&reply.text);
            if let Err(error) = sender.post(&channel, text, blocks, thread).await {
                tracing::warn!(%error, "cannot reply on Slack");
            }
        })
        .await;
    }
    StatusCode::OK.into_response()
}

impl Slack {
    /// The [`Inbound`] for an event, and the thread to reply in, or `None` when it must not
    /// count: messages from bots (this one included), edits and every other subtype, messages
    /// in channels that do not mention the app (a mention arrives as its own event) unless they
    /// are in the thread of one of the app's messages. A message in a thread carries the
    /// thread's `ts`: a reply to a question's message answers that question.
    fn inbound_from(&self, event: Event, event_id: String) -> Option<(Inbound, Option<SlackTs>)> {
        let mention = format!("<@{}>", self.bot_user);
        let mentions = event.text.as_ref().is_some_and(|t| t.contains(&mention));
        // A message in a thread replies to the thread's first message (a question's, maybe).
        let reply_to = event
            .thread_ts
            .clone()
            .filter(|t| Some(t) != event.ts.as_ref());
        let under_ours = event.parent_user_id.as_deref() == Some(&*self.bot_user);
        let why_not = if event.bot_id.is_some() {
            Some("from a bot")
        } else if let Some(subtype) = &event.subtype {
            tracing::debug!(subtype, "Slack message with a subtype ignored");
            Some("an edit or another subtype")
        } else if event.user.as_deref() == Some(&*self.bot_user) {
            Some("from askbridge itself")
        } else if event.kind == "message"
            && event.channel_type.as_deref() != Some("im")
            && (reply_to.is_none() || !under_ours || mentions)
        {
            Some("a channel message outside the app's threads, or a mention (that is app_mention)")
        } else if !matches!(event.kind.as_str(), "message" | "app_mention") {
            Some("an event of another kind")
        } else {
            None
        };
        if let Some(reason) = why_not {
            tracing::debug!(reason, "Slack event ignored");
            return None;
        }
        let (user, channel, text) = (event.user?, event.channel?, event.text?);
        let text = unescape(text.replace(&mention, " ").trim());
        let private = is_direct(&channel);
        // A channel message (not a mention) reaches askbridge only for being in its thread: it
        // answers that thread's question or nothing.
        let only = event.kind == "message" && !private;
        let in_reply_to = reply_to.map(|message| ReplyTo { message, only });
        // In a channel, answer in the thread of the message that mentioned the app.
        let thread = if private {
            None
        } else {
            event.thread_ts.or(event.ts).map(SlackTs)
        };
        let inbound = Inbound {
            via: SURFACE.into(),
            chat: Target::compose(SURFACE, &channel),
            sender: Identity::compose(SURFACE, &user),
            sender_name: None,
            text,
            private,
            delivery_id: Some(format!("event:{event_id}")),
            in_reply_to,
        };
        Some((inbound, thread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::Secret;

    fn headers(signature: Option<&str>, timestamp: i64) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(TIMESTAMP_HEADER, timestamp.to_string().parse().unwrap());
        if let Some(signature) = signature {
            headers.insert(SIGNATURE_HEADER, signature.parse().unwrap());
        }
        headers
    }

    #[test]
    fn signatures_are_checked_with_their_time() {
        let secret = Secret::new("8f742231b10e8888abcd99yyyzzz85a5");
        let body = b"token=x&command=%2Fpending";
        let now = now_s();
        let good = sign(secret.expose(), &now.to_string(), body);
        assert_eq!(verify(&secret, &headers(Some(&good), now), body), Ok(()));
        let forged = sign("another secret", &now.to_string(), body);
        assert!(verify(&secret, &headers(Some(&forged), now), body).is_err());
        assert!(verify(&secret, &headers(Some(&good), now), b"token=y").is_err());
        let old = now - 301;
        let stale = sign(secret.expose(), &old.to_string(), body);
        assert!(verify(&secret, &headers(Some(&stale), old), body).is_err());
        assert!(verify(&secret, &headers(None, now), body).is_err());
    }

    #[test]
    fn the_signature_matches_slacks_example() {
        // The example in Slack's "Verifying requests from Slack".
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        assert_eq!(
            sign("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", body),
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
    }

    #[test]
    fn a_multi_selection_is_one_command() {
        let action: Action = serde_json::from_value(serde_json::json!({
            "type": "multi_static_select",
            "selected_options": [{"value": "/answer k 1"}, {"value": "/answer k 3"}],
        }))
        .unwrap();
        assert_eq!(action.command().as_deref(), Some("/answer k 1,3"));
    }

    #[test]
    fn typed_text_is_unescaped() {
        assert_eq!(
            unescape("/answer k &lt;b&gt; &amp;amp;"),
            "/answer k <b> &amp;"
        );
    }
}
