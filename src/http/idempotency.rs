//! The `Idempotency-Key` header of `POST /api/questions` and `POST /api/runs`: [`Keyed`] reads
//! a create's JSON body as [`super::JsonBody`] does, and with it the key and a digest of the
//! request, so that a retry is answered with what the first create made (see
//! `bridge/idempotent.rs`).

use super::{ApiError, AppState};
use crate::bridge::Reserved;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The header's name.
pub(super) const HEADER: &str = "idempotency-key";
/// The longest key accepted.
const MAX_KEY_CHARS: usize = 255;

/// A create's body, and its idempotency key when the client sent one.
pub(super) struct Keyed<T> {
    pub(super) value: T,
    pub(super) key: Option<Key>,
}

/// A client's key, and the digest of the request it came with.
pub(super) struct Key {
    key: String,
    request: String,
}

impl<S, T> FromRequest<S> for Keyed<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Some(key) = request.headers().get(HEADER) else {
            let super::JsonBody(value) = super::JsonBody::from_request(request, state).await?;
            return Ok(Keyed { value, key: None });
        };
        let key = checked(key.as_bytes())?;
        // The body is read once, for its digest, and handed to the JSON reader after; the
        // request's parts (its extensions with any body limit) go to both.
        let (parts, body) = request.into_parts();
        let bytes = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))?;
        let digest = Sha256::new()
            .chain_update(parts.method.as_str())
            .chain_update(parts.uri.path())
            .chain_update(&bytes)
            .finalize();
        let request = hex(&digest);
        let rebuilt = Request::from_parts(parts, Body::from(bytes));
        let super::JsonBody(value) = super::JsonBody::from_request(rebuilt, state).await?;
        Ok(Keyed {
            value,
            key: Some(Key { key, request }),
        })
    }
}

/// The key as sent, if it is 1-255 visible ASCII characters.
fn checked(sent: &[u8]) -> Result<String, ApiError> {
    let fine = !sent.is_empty()
        && sent.len() <= MAX_KEY_CHARS
        && sent.iter().all(|b| b.is_ascii_graphic());
    match std::str::from_utf8(sent) {
        Ok(key) if fine => Ok(key.to_owned()),
        _ => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "the Idempotency-Key header must be 1-{MAX_KEY_CHARS} visible ASCII characters (a random UUID is a good one)"
            ),
        )
        .with("field", json!("Idempotency-Key"))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Key {
    /// The key as stored: scoped to its route (a question's key does not name a run), and
    /// hashed, so that any text a client sends makes a short key of one shape.
    fn stored(&self, route: &str) -> String {
        let digest = Sha256::digest(self.key.as_bytes());
        format!("{route}:{}", hex(&digest))
    }

    /// Reserves the key for a create on `route`: `Some(id)` when a create with the same key
    /// and request made `id` already (answer 200 with it); `None` to go ahead.
    pub(super) async fn reserve(
        &self,
        state: &AppState,
        route: &str,
    ) -> Result<Option<String>, ApiError> {
        match state
            .bridge
            .reserve_key(&self.stored(route), &self.request)
            .await?
        {
            Reserved::Fresh => Ok(None),
            Reserved::Again(id) => Ok(Some(id)),
            Reserved::InFlight => Err(ApiError::new(
                StatusCode::CONFLICT,
                "a request with this Idempotency-Key is being handled right now; retry in a moment",
            )
            .with("field", json!("Idempotency-Key"))),
        }
    }

    /// After the create: records what it made, or frees the key when it failed.
    pub(super) async fn settle(&self, state: &AppState, route: &str, made: Option<&str>) {
        state
            .bridge
            .settle_key(&self.stored(route), &self.request, made)
            .await;
    }
}
