//! One JSON shape for every error: `{"error": "...", "field"?: "...", "question"?: {...}}`, with
//! the status that says what went wrong. Request bodies that do not read are turned into the same
//! shape, naming the field at fault.

use crate::Error;
use askbridge_core::error::Chain;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use regex::Regex;
use serde_json::json;
use std::sync::LazyLock;

/// Every API error, as JSON with the right status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: serde_json::Value,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: json!({ "error": message.into() }),
        }
    }

    pub(super) fn with(mut self, key: &str, value: serde_json::Value) -> Self {
        self.body[key] = value;
        self
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        use askbridge_core::Error as Model;
        // The body says the whole chain: an error's own `Display` leaves its cause to `source()`.
        let message = Chain(&error).to_string();
        match error {
            Error::Model(Model::Invalid { field, .. }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message).with("field", json!(field))
            }
            Error::Model(Model::Argument { field, .. }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message).with("field", json!(field))
            }
            Error::Model(Model::AlreadyDecided { action, .. }) => {
                ApiError::new(StatusCode::CONFLICT, message).with("action", json!(action))
            }
            Error::Model(Model::NotFit { .. }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
            }
            Error::Model(Model::Delivery(_)) => ApiError::new(StatusCode::BAD_GATEWAY, message),
            Error::Model(_) => ApiError::new(StatusCode::BAD_REQUEST, message),
            Error::NotFound(_) | Error::UnknownRun(_) | Error::UnknownRule(_) => {
                ApiError::new(StatusCode::NOT_FOUND, message)
            }
            Error::AlreadyResolved(question) => ApiError::new(StatusCode::CONFLICT, message)
                .with("resolution", json!(question.resolution))
                .with("question", super::view::json(&question)),
            Error::Forbidden => ApiError::new(StatusCode::FORBIDDEN, message),
            Error::AlreadyVoted(question) => ApiError::new(StatusCode::CONFLICT, message)
                .with("question", super::view::json(&question)),
            Error::RunNotWaiting {
                state, waiting_on, ..
            } => ApiError::new(StatusCode::CONFLICT, message)
                .with("state", json!(state))
                .with("waiting_on", json!(waiting_on)),
            Error::UnknownTarget { .. } => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
                .with("field", json!("targets")),
            Error::NoSurface | Error::UnknownFlow(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
            }
            Error::Store(error) if error.is_retryable() => {
                tracing::error!(error = %message, "store failure answering an API request");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
            }
            Error::Store(_) => {
                tracing::error!(error = %message, "corrupt record met answering an API request");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
            }
        }
    }
}

impl From<askbridge_core::Error> for ApiError {
    fn from(error: askbridge_core::Error) -> Self {
        ApiError::from(Error::from(error))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

/// `Json<T>` whose rejections are [`ApiError`]s naming the bad field.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

static FIELD_IN_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:missing|unknown) field `([^`]+)`|target type: ([A-Za-z_][A-Za-z0-9_.\[\]]*): ")
        .expect("the field regex is valid")
});

/// Turns axum's JSON rejection into our shape, in our words ([`in_our_words`]), naming the field
/// serde complained about.
fn json_rejection(rejection: JsonRejection) -> ApiError {
    let detail = rejection.body_text();
    let field = FIELD_IN_ERROR
        .captures(&detail)
        .and_then(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().to_owned());
    let error = ApiError::new(rejection.status(), in_our_words(&detail));
    match field {
        Some(field) => error.with("field", json!(field)),
        None => error,
    }
}

/// Reads a JSON body that may be absent altogether (then the type's default).
pub(super) fn optional_json<T: Default + serde::de::DeserializeOwned>(
    body: &[u8],
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|error| {
        let status = match error.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        let detail = error.to_string();
        let field = FIELD_IN_ERROR
            .captures(&detail)
            .and_then(|c| c.get(1))
            .map(|m| m.as_str().to_owned());
        let error = ApiError::new(status, format!("the JSON body does not read: {detail}"));
        match field {
            Some(field) => error.with("field", json!(field)),
            None => error,
        }
    })
}

impl From<crate::store::Error> for ApiError {
    fn from(error: crate::store::Error) -> Self {
        ApiError::from(Error::from(error))
    }
}

/// Rewrites the framework's own error responses (a query that does not read, a body over the
/// limit, a path that does not parse) into the API's JSON shape; ours pass untouched.
pub(super) async fn json_errors(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "the request body is larger than this server takes (2 MB)".to_owned()
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        in_our_words(&text)
    };
    let mut rewritten = ApiError::new(status, message).into_response();
    for (name, value) in parts.headers.iter() {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
}

/// The framework's sentences, reworded: what the caller sent and what is wrong with it.
fn in_our_words(text: &str) -> String {
    const REWORDED: [(&str, &str); 5] = [
        (
            "Expected request with `Content-Type: application/json`",
            "this route takes `Content-Type: application/json`",
        ),
        (
            "Failed to deserialize query string: ",
            "the query does not read: ",
        ),
        (
            "Failed to deserialize the JSON body into the target type: ",
            "the JSON body does not fit: ",
        ),
        (
            "Failed to parse the JSON body: ",
            "the body is not valid JSON: ",
        ),
        (
            "Failed to buffer the request body: ",
            "the request body cannot be read: ",
        ),
    ];
    for (theirs, ours) in REWORDED {
        if let Some(rest) = text.strip_prefix(theirs) {
            return format!("{ours}{rest}");
        }
    }
    text.to_owned()
}

/// A page cursor from query parameter `field` (the `next` of a previous page): `None` when
/// absent or empty, a 422 naming the field when it does not read.
pub(super) fn cursor_param<T>(
    field: &str,
    text: Option<&str>,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    parse(text).map(Some).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("`{text}` is not a cursor from a previous page's `next`"),
        )
        .with("field", json!(field))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_failure_s_body_says_its_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = Error::from(crate::store::Error::unavailable("redis claim", io));
        let response = ApiError::from(error);
        assert_eq!(response.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            response.body,
            json!({ "error": "store unavailable (redis claim): refused" })
        );
    }
}
