//! `/mcp`'s service and what stands before it. rmcp answers a body that is not JSON-RPC with a
//! 415 and plain text, and keeps a worker per session (see [`super::mcp_sessions`] for why the
//! sessions are askbridge's own). Here a POST is read and checked first: what is not JSON-RPC gets
//! a 400 with a JSON-RPC error; an `initialize` opens a session (a 503 naming the setting past
//! [`AppState::with_mcp_sessions`] sessions), a later call must name a session held (400 without
//! one, 404 for one unknown or expired); `DELETE` ends one. rmcp then serves each request on its
//! own, with the session's name in the request's headers for the tools.

use super::AppState;
use super::mcp_sessions::{Busy, Sessions};
use crate::mcp::{AskServer, BridgeBackend, McpOptions};
use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::sync::Arc;

/// The largest JSON-RPC body read (the API's own bound).
const MAX_BODY: usize = 2 * 1024 * 1024;

/// The header naming a request's session.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// The first protocol revision without sessions (its requests carry their version each).
const SESSIONLESS_SINCE: &str = "2026-07-28";

/// What the gate needs: the sessions and their cap.
#[derive(Clone, Debug)]
pub(super) struct Gate {
    sessions: Arc<Sessions>,
    max: usize,
}

/// MCP over streamable HTTP: each request served by a server of its own, asking through this
/// process's bridge; and the [`Gate`] before it. Host names are checked by the guard (one setting
/// for the API and `/mcp`), so rmcp's own check is off.
pub(super) fn service(
    state: &AppState,
) -> (StreamableHttpService<AskServer, LocalSessionManager>, Gate) {
    let (bridge, every) = (state.bridge.clone(), state.mcp_progress);
    let service = StreamableHttpService::new(
        move || {
            let options = McpOptions {
                progress_every: every,
                ..McpOptions::new()
            };
            Ok(AskServer::new(
                Arc::new(BridgeBackend(bridge.clone())),
                options,
            ))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    );
    let gate = Gate {
        sessions: Arc::new(Sessions::new(state.mcp_sessions, state.mcp_session_idle)),
        max: state.mcp_sessions,
    };
    (service, gate)
}

/// A JSON-RPC error answer.
fn refusal(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, Json(body)).into_response()
}

/// The session a request names, if it names one.
fn named_session(request: &axum::http::request::Parts) -> Option<&str> {
    request.headers.get(SESSION_HEADER)?.to_str().ok()
}

fn unknown_session(id: Value) -> Response {
    refusal(
        StatusCode::NOT_FOUND,
        id,
        -32001,
        "this MCP session is unknown or has expired (ASKBRIDGE_MCP_SESSION_IDLE_S); start a new one with initialize".to_owned(),
    )
}

fn session_needed(id: Value) -> Response {
    refusal(
        StatusCode::BAD_REQUEST,
        id,
        -32600,
        "this call needs the Mcp-Session-Id header that initialize answered with".to_owned(),
    )
}

/// The middleware (see the module documentation).
pub(super) async fn gate(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    match *request.method() {
        Method::POST => post(gate, request, next).await,
        // rmcp holds no session to end: the table's entry is the whole of it.
        Method::DELETE => match request.headers().get(SESSION_HEADER) {
            None => session_needed(Value::Null),
            Some(id) if gate.sessions.close(id.to_str().unwrap_or_default()) => {
                StatusCode::ACCEPTED.into_response()
            }
            Some(_) => unknown_session(Value::Null),
        },
        _ => next.run(request).await,
    }
}

async fn post(gate: Gate, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let message = format!(
                "the request body cannot be read: {}",
                askbridge_core::error::Chain(&error)
            );
            return refusal(StatusCode::BAD_REQUEST, Value::Null, -32700, message);
        }
    };
    if let Err(error) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        let (code, what) = match error.classify() {
            serde_json::error::Category::Data => (
                -32600,
                "not a JSON-RPC request, notification or response MCP knows",
            ),
            _ => (-32700, "not JSON"),
        };
        return refusal(
            StatusCode::BAD_REQUEST,
            Value::Null,
            code,
            format!("the body is {what}: {error}"),
        );
    }
    let message: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let busy = match named_session(&parts) {
        Some(id) => match gate.sessions.enter(id) {
            Some(busy) => busy,
            None => return unknown_session(message["id"].clone()),
        },
        None if message["method"] == "initialize" => match gate.sessions.open() {
            Ok(busy) => busy,
            Err(_) => {
                tracing::warn!(
                    max = gate.max,
                    "MCP session cap reached; refusing initialize (ASKBRIDGE_MAX_MCP_SESSIONS)"
                );
                let words = format!(
                    "this server holds as many MCP sessions as it takes ({}, ASKBRIDGE_MAX_MCP_SESSIONS); end one (DELETE /mcp) or try again once idle ones expire",
                    gate.max
                );
                return refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    message["id"].clone(),
                    -32000,
                    words,
                );
            }
        },
        None if sessionless(&parts, &message) => {
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
        }
        None => return session_needed(message["id"].clone()),
    };
    let opened = named_session(&parts).is_none();
    let mut parts = parts;
    let Ok(value) = HeaderValue::from_str(busy.id()) else {
        return unknown_session(message["id"].clone());
    };
    // The tools read the session's name from the request (see `crate::mcp`).
    parts.headers.insert(SESSION_HEADER, value.clone());
    let mut response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if opened {
        if !response.status().is_success() {
            gate.sessions.close(busy.id());
            return response;
        }
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    in_use_until_sent(response, busy)
}

/// A request of the 2026-07-28 revision or later, which has no sessions (rmcp serves it as is).
fn sessionless(parts: &axum::http::request::Parts, message: &Value) -> bool {
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    version.is_some_and(|v| v >= SESSIONLESS_SINCE) || message["method"] == "server/discover"
}

/// Keeps the session in use while the response (a stream of progress notifications, for a tool
/// call waiting on a person) is being sent.
fn in_use_until_sent(response: Response, busy: Busy) -> Response {
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _in_use = &busy;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}
