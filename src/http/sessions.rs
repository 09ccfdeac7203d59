//! The session routes `askbridge exec` uses: a lease it renews while its command runs, and a
//! close when it ends (see `bridge/leased.rs` for why both are kept in the store).

use super::error::optional_json;
use super::{ApiError, AppState};
use askbridge_core::Actor;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::json;

/// The lease's body: `open` for the first lease of a holder (opens a closed session again).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeaseBody {
    #[serde(default)]
    open: bool,
}

/// `POST /api/sessions/{session_id}/lease`: holds the session open for the configured lease.
pub(super) async fn hold(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let body: LeaseBody = optional_json(&body)?;
    let until = state.bridge.hold_session(&session_id, body.open).await?;
    let lease = state.bridge.options().session_lease;
    Ok(Json(json!({
        "session_id": session_id,
        "lease_until": until.0,
        "renew_every_ms": (lease / 3).as_millis() as u64,
    })))
}

/// `POST /api/sessions/{session_id}/close`: cancels the session's pending questions (with the
/// body's optional `reason`) and refuses new ones.
pub(super) async fn close(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let reason = super::questions::cancel_reason(&body)?;
    let cancelled = state
        .bridge
        .close_session(&session_id, Actor::api(), reason)
        .await?;
    Ok(Json(json!({ "cancelled": cancelled, "closed": true })))
}
