//! The HTTP API (axum).
//!
//! [`app`] builds the whole router from an [`AppState`], so tests drive it with `oneshot` and the
//! binary serves it. Every error leaves through [`ApiError`], one JSON shape for all:
//! `{"error": "...", "field"?: "...", "question"?: {...}}` — the framework's own refusals too
//! (405, 413, a bad query), which `error::json_errors` rewrites. `guard.rs` stands in front of
//! everything but the chat webhooks, and hands what it lets through to `error::json_errors`.
//!
//! | route | does |
//! |---|---|
//! | `POST /api/questions` | ask (201 with the question; 200 with the first one for a retry with the same `Idempotency-Key`) |
//! | `GET /api/questions?session_id=&status=` | list (pending by default) |
//! | `GET /api/questions/{id}` | one question |
//! | `POST /api/questions/{id}/reply` | answer: `{"answer": string \| [string] \| bool, "by"?}` |
//! | `POST /api/questions/{id}/reject` | decline: `{"message"?, "by"?}` |
//! | `POST /api/questions/{id}/cancel` | the asker withdraws it |
//! | `GET /api/questions/{id}/wait?timeout_s=N` | long-poll until resolved |
//! | `POST /api/sessions/{session_id}/cancel` | cancel a session's pending questions |
//! | `POST /api/sessions/{session_id}/lease` | hold a session open (`askbridge exec` renews it) |
//! | `POST /api/sessions/{session_id}/close` | close a session: cancel its pending questions, refuse new ones |
//! | `POST /api/runs`, `GET /api/runs`, `GET /api/runs/{id}` | start a flow without blocking; list runs (paged); read a run |
//! | `GET /api/runs/{id}/wait?after=&timeout_s=` | long-poll until the run waits on a new question or ends |
//! | `GET /api/history?status=&session_id=&after=&limit=` | resolved questions, most recently resolved first, paged |
//! | `POST /api/runs/{id}/answer` | answer the question the run waits on; respond with its next step |
//! | `GET /api/rules`, `DELETE /api/rules/{id}` | "always allow" rules |
//! | `GET /api/audit?session_id=&since=` | the audit trail |
//! | `GET /api/events?session_id=` | Server-Sent Events, pending questions replayed first |
//! | `GET /api/stats` | pending now, outcomes in the last hour, time to answer ([`stats`]) |
//! | `GET /api/openapi.json` | this API in OpenAPI 3.1 |
//! | `GET /healthz`, `GET /metrics` | health (checks the store), Prometheus metrics (token unless `ASKBRIDGE_METRICS_PUBLIC`) |
//! | `POST/GET/DELETE /mcp` | MCP over streamable HTTP ([`crate::mcp`]), token as for `/api` |
//! | `GET /` | the ops page ([`ops_page`]), outside the token layer: it holds no data |

mod admin;
mod error;
mod events;
mod guard;
mod idempotency;
mod mcp_gate;
mod mcp_sessions;
pub mod ops_page;
mod questions;
mod replay;
mod runs;
mod sessions;
pub mod stats;
mod token;
mod view;

pub use error::{ApiError, JsonBody};
pub use events::{EventBacklog, EventSocket};
pub use guard::HostPolicy;

use crate::bridge::Bridge;
use askbridge_core::Secret;
use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use std::sync::Arc;
use token::RequireToken;

/// Longest `wait` the API accepts, in seconds.
pub const MAX_WAIT_S: f64 = 600.0;
/// `wait`'s default, in seconds.
pub const DEFAULT_WAIT_S: f64 = 30.0;

/// What every handler gets.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The bridge.
    pub bridge: Bridge,
    /// The API token, when one is required.
    token: Option<Secret>,
    /// Extra routes (chat webhooks) merged at the top level.
    extra: Option<Router>,
    /// The names requests may address (see [`guard`]).
    hosts: HostPolicy,
    /// Whether `/metrics` is served without the token.
    metrics_public: bool,
    /// How often an MCP tool call that waits reports progress.
    mcp_progress: std::time::Duration,
    /// The leader leases this process holds, for `/healthz` and `/metrics`.
    leases: Arc<crate::leader::LeaseBook>,
    /// MCP sessions held at once (`ASKBRIDGE_MAX_MCP_SESSIONS`).
    mcp_sessions: usize,
    /// How long an idle MCP session is kept (`ASKBRIDGE_MCP_SESSION_IDLE_S`).
    mcp_session_idle: std::time::Duration,
    /// The event streams' shared replay.
    replays: Arc<replay::Replays>,
}

impl AppState {
    /// State for `bridge`, requiring `token` on `/api` routes when given.
    pub fn new(bridge: Bridge, token: Option<&Secret>) -> Self {
        AppState {
            bridge,
            token: token.cloned(),
            extra: None,
            hosts: HostPolicy::local(),
            metrics_public: false,
            mcp_progress: std::time::Duration::from_secs(15),
            leases: Arc::default(),
            mcp_sessions: 1000,
            mcp_session_idle: std::time::Duration::from_secs(300),
            replays: Arc::default(),
        }
    }

    /// Holds at most `max` MCP sessions at once (`ASKBRIDGE_MAX_MCP_SESSIONS`), each for `idle`
    /// with nothing happening in it (`ASKBRIDGE_MCP_SESSION_IDLE_S`).
    pub fn with_mcp_sessions(mut self, max: usize, idle: std::time::Duration) -> Self {
        self.mcp_sessions = max;
        self.mcp_session_idle = idle;
        self
    }

    /// Reports the leases in `book` (the one [`crate::leader::while_leader`] keeps).
    pub fn with_leases(mut self, book: Arc<crate::leader::LeaseBook>) -> Self {
        self.leases = book;
        self
    }

    /// How often a waiting MCP tool call reports progress (`ASKBRIDGE_MCP_PROGRESS_S`).
    pub fn with_mcp_progress(mut self, every: std::time::Duration) -> Self {
        self.mcp_progress = every;
        self
    }

    /// Accepts requests addressed to these names too (`ASKBRIDGE_ALLOWED_HOSTS`).
    pub fn with_hosts(mut self, hosts: HostPolicy) -> Self {
        self.hosts = hosts;
        self
    }

    /// Serves `/metrics` without the token (`ASKBRIDGE_METRICS_PUBLIC`).
    pub fn with_public_metrics(mut self, public: bool) -> Self {
        self.metrics_public = public;
        self
    }

    /// Adds routes of their own (a chat webhook with its own authentication) beside the API.
    pub fn with_routes(mut self, routes: Router) -> Self {
        self.extra = Some(match self.extra.take() {
            Some(existing) => existing.merge(routes),
            None => routes,
        });
        self
    }
}

/// The whole HTTP application.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/questions", post(questions::create).get(questions::list))
        .route("/questions/{id}", get(questions::get))
        .route("/questions/{id}/reply", post(questions::reply))
        .route("/questions/{id}/reject", post(questions::reject))
        .route("/questions/{id}/cancel", post(questions::cancel))
        .route("/questions/{id}/wait", get(questions::wait))
        .route(
            "/sessions/{session_id}/cancel",
            post(questions::cancel_session),
        )
        .route("/sessions/{session_id}/lease", post(sessions::hold))
        .route("/sessions/{session_id}/close", post(sessions::close))
        .route("/rules", get(admin::list_rules))
        .route("/rules/{id}", delete(admin::revoke_rule))
        .route("/audit", get(admin::audit))
        .route("/history", get(questions::history))
        .route("/runs", post(runs::start_run).get(runs::list_runs))
        .route("/runs/{id}", get(runs::get_run))
        .route("/runs/{id}/wait", get(runs::wait_run))
        .route("/runs/{id}/answer", post(runs::answer_run))
        .route("/events", get(events::stream))
        .route("/stats", get(stats::stats))
        .route("/openapi.json", get(openapi))
        .route_layer(RequireToken::new(state.token.clone()));
    let metrics = Router::new().route("/metrics", get(admin::metrics));
    let metrics = if state.metrics_public {
        metrics
    } else {
        metrics.route_layer(RequireToken::new(state.token.clone()))
    };
    let extra = state.extra.clone();
    let hosts = state.hosts.clone();
    let (mcp_service, mcp_gate) = mcp_gate::service(&state);
    let mcp = Router::new()
        .nest_service("/mcp", mcp_service)
        .layer(middleware::from_fn_with_state(mcp_gate, mcp_gate::gate))
        .layer(RequireToken::new(state.token.clone()));
    let router = Router::new()
        .nest("/api", api)
        .merge(mcp)
        .merge(ops_page::routes())
        .merge(metrics)
        .route("/healthz", get(admin::healthz))
        .fallback(admin::not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(middleware::from_fn_with_state(hosts, guard::guard));
    // Chat webhooks authenticate themselves (a secret header, a signature) and are addressed by
    // their platform under the public name: they sit outside the guards.
    match extra {
        Some(extra) => router.merge(extra),
        None => router,
    }
}

/// The HTTP API described in OpenAPI 3.1.
async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        include_str!("openapi.json"),
    )
        .into_response()
}

/// 405, in the API's JSON shape.
async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "`{} {}` is not a route here; see /api/openapi.json",
            request.method(),
            request.uri().path()
        ),
    )
}
