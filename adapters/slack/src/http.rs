//! The routes Slack posts to in HTTP mode: interactions (clicks and selections), slash commands
//! and events (messages in a DM with the app, mentions of it).
//!
//! Every request is signed: `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<ts>:<body>">` with
//! the app's signing secret, compared in constant time; a timestamp more than five minutes off, or
//! a missing header, is refused with 401 before the body is read. What a request means, and when
//! its 200 may go, is `inbound/`'s, shared with Socket Mode.

use crate::Slack;
use crate::inbound::{EventCallback, Hook, Interaction};
use askbridge_core::{Inbox, Secret};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

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

/// The routes' state: what requests go to, and the secret they are signed with.
#[derive(Clone)]
struct Signed {
    hook: Hook,
    secret: Secret,
}

pub(crate) fn router(slack: Slack, secret: Secret, inbox: Arc<dyn Inbox>) -> Router {
    Router::new()
        .route(INTERACTIONS_PATH, post(interactions))
        .route(COMMANDS_PATH, post(commands))
        .route(EVENTS_PATH, post(events))
        .with_state(Signed {
            hook: Hook { slack, inbox },
            secret,
        })
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
fn verify(secret: &Secret, headers: &HeaderMap, body: &[u8]) -> Result<(), StatusCode> {
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

fn form(body: &[u8]) -> HashMap<String, String> {
    serde_urlencoded::from_bytes(body).unwrap_or_default()
}

async fn interactions(
    State(Signed { hook, secret }): State<Signed>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(status) = verify(&secret, &headers, &body) {
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
    match hook.interaction(interaction).await {
        // A modal's submission: Slack reads what to do with the modal in the 200's body.
        Some(body) => axum::Json(body).into_response(),
        None => StatusCode::OK.into_response(),
    }
}

async fn commands(
    State(Signed { hook, secret }): State<Signed>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    if let Err(status) = verify(&secret, &headers, &body) {
        return status;
    }
    match hook.command(form(&body)).await {
        Ok(()) => StatusCode::OK,
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

/// What `/slack/events` is posted: a URL check, or an event.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    challenge: Option<String>,
    #[serde(flatten)]
    callback: EventCallback,
}

async fn events(
    State(Signed { hook, secret }): State<Signed>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(status) = verify(&secret, &headers, &body) {
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
        tracing::info!(retry, event_id = ?envelope.callback.event_id, "Slack retried an event");
    }
    hook.event(envelope.callback).await;
    StatusCode::OK.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
