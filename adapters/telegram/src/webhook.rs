//! Webhook mode: Telegram posts updates to askbridge's own HTTP server, so several askbridge
//! replicas behind a load balancer can share one bot (long polling allows one consumer only).
//!
//! The secret Telegram echoes in `X-Telegram-Bot-Api-Secret-Token` is compared in constant time;
//! anything else is refused with 401 before the body is even parsed. An accepted update is
//! handled before the 200 goes back, so an askbridge that dies mid-update gets it again from
//! Telegram's retry (handling takes milliseconds; the inbox drops a retry of one it finished).

use crate::{Telegram, WEBHOOK_PATH};
use askbridge_core::Inbox;
use askbridge_core::secret::secrets_equal;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use std::sync::Arc;
use teloxide::types::Update;

/// The header Telegram puts the secret in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

#[derive(Clone)]
struct Hook {
    telegram: Telegram,
    inbox: Arc<dyn Inbox>,
    secret: Arc<str>,
}

pub(crate) fn router(telegram: Telegram, inbox: Arc<dyn Inbox>, secret: String) -> Router {
    let hook = Hook {
        telegram,
        inbox,
        secret: secret.into(),
    };
    Router::new()
        .route(WEBHOOK_PATH, post(receive))
        .with_state(hook)
}

async fn receive(State(hook): State<Hook>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let presented = headers
        .get(SECRET_HEADER)
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !secrets_equal(presented, hook.secret.as_bytes()) {
        tracing::warn!("Telegram webhook call with a wrong or missing secret refused");
        return StatusCode::UNAUTHORIZED;
    }
    let update: Update = match serde_json::from_slice(&body) {
        Ok(update) => update,
        Err(error) => {
            tracing::warn!(%error, "unreadable Telegram webhook body");
            // 200 all the same: Telegram would otherwise retry something that will never parse.
            return StatusCode::OK;
        }
    };
    hook.telegram.handle_update(hook.inbox, update).await;
    StatusCode::OK
}
