//! The HTTP interactions endpoint: `POST /discord/interactions`, for a bot whose application has
//! an "Interactions Endpoint URL" (Discord then sends interactions there instead of over the
//! gateway).
//!
//! Anyone can reach the URL, so each request must carry Discord's Ed25519 signature over
//! `timestamp + body` (`X-Signature-Ed25519`, `X-Signature-Timestamp`); Discord itself checks at
//! set-up that a bad signature gets 401. serenity's `Verifier` checks the signature only; a
//! signed request replayed later would pass it, so timestamps more than [`MAX_SKEW`] away from
//! now are refused as well (and a replay within that window is a duplicate interaction id, which
//! the inbox drops).
//!
//! The first response travels in the HTTP response body, so a click gets its deferred update
//! (type 6) at once and the inbox work runs in a spawned task afterwards, as on the gateway.

use crate::events::defer_ephemeral;
use crate::{Core, Error};
use askbridge_core::Inbox;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serenity::all::Interaction;
use serenity::builder::CreateInteractionResponse;
use serenity::interactions_endpoint::Verifier;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far a request's timestamp may be from now.
pub(crate) const MAX_SKEW: Duration = Duration::from_secs(5 * 60);

/// A verifier for a public key of 64 hex digits (serenity's `Verifier::new` panics on bad input).
pub(crate) fn verifier(public_key: &str) -> Result<Verifier, Error> {
    let bad = |reason: &str| Error::Config {
        variable: crate::PUBLIC_KEY_VARIABLE,
        reason: reason.to_owned(),
    };
    let hex = public_key.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad(
            "the application's public key is 64 hex digits (General Information in the developer portal)",
        ));
    }
    let mut key = [0u8; 32];
    for (index, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * index..2 * index + 2], 16)
            .map_err(|_| bad("the application's public key is 64 hex digits"))?;
    }
    Verifier::try_new(key).map_err(|error| bad(&error.to_string()))
}

#[derive(Clone)]
struct EndpointState {
    core: Arc<Core>,
    inbox: Arc<dyn Inbox>,
}

pub(crate) fn routes(core: Arc<Core>, inbox: Arc<dyn Inbox>) -> Router {
    if core.verifier.is_none() {
        return Router::new();
    }
    Router::new()
        .route(crate::INTERACTIONS_PATH, post(interaction))
        .with_state(EndpointState { core, inbox })
}

fn unauthorized(why: &'static str) -> Response {
    tracing::info!(why, "Discord interactions endpoint: request refused");
    (StatusCode::UNAUTHORIZED, why).into_response()
}

/// True when `timestamp` (Unix seconds) is within [`MAX_SKEW`] of now.
fn fresh(timestamp: &str, now: SystemTime) -> bool {
    let Ok(seconds) = timestamp.trim().parse::<u64>() else {
        return false;
    };
    let Ok(now) = now.duration_since(UNIX_EPOCH) else {
        return false;
    };
    now.as_secs().abs_diff(seconds) <= MAX_SKEW.as_secs()
}

fn json(response: &CreateInteractionResponse) -> Response {
    match serde_json::to_vec(response) {
        Ok(body) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn interaction(
    State(state): State<EndpointState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(verifier) = &state.core.verifier else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (
        header("x-signature-ed25519"),
        header("x-signature-timestamp"),
    ) else {
        return unauthorized("missing signature headers");
    };
    if verifier.verify(signature, timestamp, &body).is_err() {
        return unauthorized("bad signature");
    }
    if !fresh(timestamp, SystemTime::now()) {
        return unauthorized("stale timestamp");
    }
    let interaction: Interaction = match serde_json::from_slice(&body) {
        Ok(interaction) => interaction,
        Err(error) => {
            tracing::warn!(%error, "Discord interactions endpoint: unreadable interaction");
            return (StatusCode::BAD_REQUEST, "unreadable interaction").into_response();
        }
    };
    match interaction {
        Interaction::Ping(_) => json(&CreateInteractionResponse::Pong),
        Interaction::Component(component) => {
            tokio::spawn(async move {
                // The acknowledgement is the response below.
                let acknowledged = std::future::ready(());
                state
                    .core
                    .handle_component(&*state.inbox, component, acknowledged)
                    .await;
            });
            json(&CreateInteractionResponse::Acknowledge)
        }
        Interaction::Command(command) => {
            tokio::spawn(async move {
                state.core.handle_command(&*state.inbox, command).await;
            });
            json(&defer_ephemeral())
        }
        Interaction::Autocomplete(command) => {
            json(&state.core.autocomplete(&*state.inbox, &command).await)
        }
        // askbridge opens no modals; acknowledge anything else so Discord does not report a failure.
        _ => json(&CreateInteractionResponse::Acknowledge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_keys_are_checked_without_panicking() {
        assert!(verifier("zz").is_err());
        assert!(verifier(&"g".repeat(64)).is_err());
        assert!(verifier(&"é".repeat(32)).is_err());
        // The encoding of Ed25519's base point: a valid public key.
        assert!(
            verifier("5866666666666666666666666666666666666666666666666666666666666666").is_ok()
        );
    }

    #[test]
    fn timestamps_more_than_five_minutes_away_are_stale() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert!(fresh("1700000000", now));
        assert!(fresh("1699999700", now));
        assert!(!fresh("1699999699", now));
        assert!(!fresh("1700000301", now));
        assert!(!fresh("soon", now));
    }
}
