//! The HTTP API (axum).
//!
//! [`app`] builds the whole router from an [`AppState`], so tests drive it with `oneshot` and the
//! binary serves it. Every error leaves through [`ApiError`], one JSON shape for all:
//! `{"error": "...", "field"?: "...", "question"?: {...}}`.
//!
//! | route | does |
//! |---|---|
//! | `POST /api/questions` | ask (201 with the question) |
//! | `GET /api/questions?session_id=&status=` | list (pending by default) |
//! | `GET /api/questions/{id}` | one question |
//! | `POST /api/questions/{id}/reply` | answer: `{"answer": string \| [string] \| bool, "by"?}` |
//! | `POST /api/questions/{id}/reject` | decline: `{"message"?, "by"?}` |
//! | `GET /api/questions/{id}/wait?timeout_s=N` | long-poll until resolved |
//! | `POST /api/sessions/{session_id}/cancel` | cancel a session's pending questions |
//! | `POST /api/runs`, `GET /api/runs/{id}` | start a flow without blocking; read a run |
//! | `GET /api/runs/{id}/wait?after=&timeout_s=` | long-poll until the run waits on a new question or ends |
//! | `GET /api/rules`, `DELETE /api/rules/{id}` | "always allow" rules |
//! | `GET /api/audit?session_id=&since=` | the audit trail |
//! | `GET /api/events?session_id=` | Server-Sent Events, pending questions replayed first |
//! | `GET /api/stats` | pending now, outcomes in the last hour, time to answer ([`stats`]) |
//! | `GET /healthz`, `GET /metrics` | health (checks the store), Prometheus metrics |
//! | `GET /` | the ops page ([`ops_page`]), outside the token layer: it holds no data |

mod admin;
mod error;
mod events;
pub mod ops_page;
mod questions;
pub mod stats;
mod view;

pub use error::{ApiError, JsonBody};

use crate::bridge::Bridge;
use askbridge_core::Secret;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};

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
}

impl AppState {
    /// State for `bridge`, requiring `token` on `/api` routes when given.
    pub fn new(bridge: Bridge, token: Option<&Secret>) -> Self {
        AppState {
            bridge,
            token: token.cloned(),
            extra: None,
        }
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
        .route("/questions/{id}/wait", get(questions::wait))
        .route(
            "/sessions/{session_id}/cancel",
            post(questions::cancel_session),
        )
        .route("/rules", get(admin::list_rules))
        .route("/rules/{id}", delete(admin::revoke_rule))
        .route("/audit", get(admin::audit))
        .route("/runs", post(admin::start_run))
        .route("/runs/{id}", get(admin::get_run))
        .route("/runs/{id}/wait", get(admin::wait_run))
        .route("/events", get(events::stream))
        .route("/stats", get(stats::stats))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    let extra = state.extra.clone();
    let router = Router::new()
        .nest("/api", api)
        .merge(ops_page::routes())
        .route("/healthz", get(admin::healthz))
        .route("/metrics", get(admin::metrics))
        .fallback(admin::not_found)
        .with_state(state);
    match extra {
        Some(extra) => router.merge(extra),
        None => router,
    }
}

/// Checks `Authorization: Bearer <token>` in constant time.
async fn require_token(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = &state.token else {
        return next.run(request).await;
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| token.trim().as_bytes());
    match presented {
        Some(token) if expected.matches(token) => next.run(request).await,
        Some(_) => ApiError::new(StatusCode::UNAUTHORIZED, "wrong API token").into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this API needs `Authorization: Bearer <ASKBRIDGE_API_TOKEN>`",
        )
        .into_response(),
    }
}
