//! `/mcp`'s service and what stands before it. rmcp keeps every session it is asked for (10,000
//! `initialize` calls once took 1.3 GB), and answers a body that is not JSON-RPC with a 415 and
//! plain text. Here a POST is read and checked first: what is not JSON-RPC gets a 400 with a
//! JSON-RPC error, and an `initialize` past [`AppState::with_mcp_sessions`] sessions gets a 503
//! with one naming the setting. The count is read when the call comes, so calls racing at the cap
//! may pass it by a few.

use super::AppState;
use crate::mcp::{AskServer, BridgeBackend, McpOptions};
use axum::Json;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use std::sync::Arc;

/// The largest JSON-RPC body read (the API's own bound).
const MAX_BODY: usize = 2 * 1024 * 1024;

/// What the gate needs: the sessions and their cap.
#[derive(Clone, Debug)]
pub(super) struct Gate {
    sessions: Arc<LocalSessionManager>,
    max: usize,
}

/// MCP over streamable HTTP: each MCP session gets a server of its own, in a session of its own,
/// asking through this process's bridge; and the [`Gate`] before it. Host names are checked by
/// the guard (one setting for the API and `/mcp`), so rmcp's own check is off.
pub(super) fn service(
    state: &AppState,
) -> (StreamableHttpService<AskServer, LocalSessionManager>, Gate) {
    let (bridge, every) = (state.bridge.clone(), state.mcp_progress);
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(state.mcp_session_idle);
    let sessions = Arc::new(manager);
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
        sessions.clone(),
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    );
    let gate = Gate {
        sessions,
        max: state.mcp_sessions,
    };
    (service, gate)
}

/// A JSON-RPC error answer.
fn refusal(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, Json(body)).into_response()
}

/// The middleware (see the module documentation).
pub(super) async fn gate(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
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
    let fresh = !parts.headers.contains_key("mcp-session-id");
    if fresh {
        let message: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let held = gate.sessions.sessions.read().await.len();
        if message["method"] == "initialize" && held >= gate.max {
            tracing::warn!(
                held,
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
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
