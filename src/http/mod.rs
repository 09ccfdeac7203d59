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
//! | `GET /api/rules`, `DELETE /api/rules/{id}` | "always allow" rules |
//! | `GET /api/audit?session_id=&since=` | the audit trail |
//! | `GET /api/events?session_id=` | Server-Sent Events, pending questions replayed first |
//! | `GET /api/stats` | pending now, outcomes in the last hour, time to answer ([`stats`]) |
//! | `GET /healthz`, `GET /metrics` | health (checks the store), Prometheus metrics |
//! | `GET /` | the ops page ([`ops_page`]), outside the token layer: it holds no data |

mod events;
pub mod ops_page;
pub mod stats;

use crate::Error;
use crate::bridge::{Bridge, ProgramReply};
use crate::config::Secret;
use crate::store::ListFilter;
use askbridge_core::audit::AuditFilter;
use askbridge_core::run::{Origin, Run};
use askbridge_core::secret::secrets_equal;
use askbridge_core::{
    Actor, Answer, Millis, NewQuestion, Question, QuestionId, Status, Transition, identity,
};
use axum::body::Bytes;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use regex::Regex;
use serde::Deserialize;
use serde_json::json;
use std::sync::LazyLock;
use std::time::Duration;

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
        .route("/questions", post(create_question).get(list_questions))
        .route("/questions/{id}", get(get_question))
        .route("/questions/{id}/reply", post(reply))
        .route("/questions/{id}/reject", post(reject))
        .route("/questions/{id}/wait", get(wait))
        .route("/sessions/{session_id}/cancel", post(cancel_session))
        .route("/rules", get(list_rules))
        .route("/rules/{id}", axum::routing::delete(revoke_rule))
        .route("/audit", get(audit))
        .route("/runs", post(start_run))
        .route("/runs/{id}", get(get_run))
        .route("/events", get(events::stream))
        .route("/stats", get(stats::stats))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    let extra = state.extra.clone();
    let router = Router::new()
        .nest("/api", api)
        .merge(ops_page::routes())
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(state);
    match extra {
        Some(extra) => router.merge(extra),
        None => router,
    }
}

/// Every API error, as JSON with the right status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: serde_json::Value,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: json!({ "error": message.into() }),
        }
    }

    fn with(mut self, key: &str, value: serde_json::Value) -> Self {
        self.body[key] = value;
        self
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        use askbridge_core::Error as Model;
        let message = error.to_string();
        match error {
            Error::Model(Model::Invalid { field, .. }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message).with("field", json!(field))
            }
            Error::Model(Model::NotFit { .. }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
            }
            Error::Model(Model::Delivery { .. }) => ApiError::new(StatusCode::BAD_GATEWAY, message),
            Error::Model(_) => ApiError::new(StatusCode::BAD_REQUEST, message),
            Error::NotFound(_) | Error::UnknownRun(_) | Error::UnknownRule(_) => {
                ApiError::new(StatusCode::NOT_FOUND, message)
            }
            Error::AlreadyResolved(question) => ApiError::new(StatusCode::CONFLICT, message)
                .with("resolution", json!(question.resolution))
                .with("question", json!(question)),
            Error::Forbidden => ApiError::new(StatusCode::FORBIDDEN, message),
            Error::UnknownTarget { .. } => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
                .with("field", json!("targets")),
            Error::NoSurface | Error::UnknownFlow(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
            }
            Error::Redis(_) | Error::Embedded(_) => {
                tracing::error!(error = %message, "store failure answering an API request");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("the store is unavailable: {message}"),
                )
            }
            Error::Declined { .. }
            | Error::Timeout { .. }
            | Error::Cancelled { .. }
            | Error::Pending { .. }
            | Error::Diverged { .. }
            | Error::Flow(_)
            | Error::LeaseLost
            | Error::IdTaken
            | Error::Config { .. } => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message),
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

/// Turns axum's JSON rejection into our shape, naming the field serde complained about.
fn json_rejection(rejection: JsonRejection) -> ApiError {
    let detail = rejection.body_text();
    let field = FIELD_IN_ERROR
        .captures(&detail)
        .and_then(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().to_owned());
    let error = ApiError::new(rejection.status(), detail.clone());
    match field {
        Some(field) => error.with("field", json!(field)),
        None => error,
    }
}

/// Reads a JSON body that may be absent altogether (then the type's default).
fn optional_json<T: Default + serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
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
        let error = ApiError::new(status, format!("Failed to parse the JSON body: {detail}"));
        match field {
            Some(field) => error.with("field", json!(field)),
            None => error,
        }
    })
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
        Some(token) if secrets_equal(token, expected.expose().as_bytes()) => {
            next.run(request).await
        }
        Some(_) => ApiError::new(StatusCode::UNAUTHORIZED, "wrong API token").into_response(),
        None => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this API needs `Authorization: Bearer <ASKBRIDGE_API_TOKEN>`",
        )
        .into_response(),
    }
}

fn parse_id(text: &str) -> Result<QuestionId, ApiError> {
    QuestionId::parse(text).map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("There is no question {text}."),
        )
    })
}

async fn create_question(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<NewQuestion>,
) -> Result<(StatusCode, Json<Question>), ApiError> {
    let question = state.bridge.create(request).await?;
    Ok((StatusCode::CREATED, Json(question)))
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    session_id: Option<String>,
    status: Option<String>,
    target: Option<String>,
    limit: Option<usize>,
}

async fn list_questions(
    State(state): State<AppState>,
    Query(query): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let status = match query.status.as_deref() {
        None | Some("") => None,
        Some(text) => Some(Status::parse(text).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "unknown status `{text}`: use pending, answered, declined, expired or cancelled"
                ),
            )
            .with("field", json!("status"))
        })?),
    };
    let filter = ListFilter {
        session_id: query.session_id.filter(|s| !s.is_empty()),
        status,
        target: query.target.filter(|t| !t.is_empty()),
        limit: query.limit.unwrap_or(0),
    };
    let questions = state.bridge.list(&filter).await?;
    Ok(Json(json!({ "questions": questions })))
}

async fn get_question(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Question>, ApiError> {
    Ok(Json(state.bridge.get(&parse_id(&id)?).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyBody {
    answer: Answer,
    #[serde(default)]
    by: Option<String>,
    /// An approval rejection's feedback.
    #[serde(default)]
    message: Option<String>,
    /// The approved action's digest as the replier saw it.
    #[serde(default)]
    digest: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RejectBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

/// The HTTP caller: always the identity `api` (the token says who may call, not who they are).
/// `by` is kept as the display name, so "Answered: …, by ops:alice via api" reads well, but it
/// never lets a caller pass for an answerer: a question limited to `telegram:42` refuses the API
/// unless `api` is among its answerers too.
fn api_actor(by: Option<String>) -> Result<Actor, ApiError> {
    let name = by.map(|b| b.trim().to_owned()).filter(|b| !b.is_empty());
    if let Some(name) = &name {
        if name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "`by` must be one line of at most 100 characters",
            )
            .with("field", json!("by")));
        }
    }
    Ok(Actor {
        by: identity::API.to_owned(),
        by_name: name,
        via: identity::API.to_owned(),
    })
}

async fn reply(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ReplyBody>,
) -> Result<Json<Question>, ApiError> {
    let id = parse_id(&id)?;
    let actor = api_actor(body.by)?;
    let reply = ProgramReply {
        answer: body.answer,
        message: body.message,
        digest: body.digest,
    };
    let result = state
        .bridge
        .answer(&id, reply, actor.clone(), identity::API)
        .await;
    Ok(Json(audited(&state, &actor, &id, result).await?))
}

/// Passes a result on, recording a refused attempt in the audit trail first.
async fn audited(
    state: &AppState,
    actor: &Actor,
    id: &QuestionId,
    result: Result<Question, Error>,
) -> Result<Question, Error> {
    if let Err(error) = &result {
        let question = match error {
            Error::AlreadyResolved(question) => Some(question.as_ref()),
            _ => None,
        };
        if !matches!(error, Error::Redis(_) | Error::Embedded(_)) {
            state
                .bridge
                .audit_refusal(actor, Some(id.to_string()), question, &error.to_string())
                .await;
        }
    }
    result
}

async fn reject(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Question>, ApiError> {
    let id = parse_id(&id)?;
    let body: RejectBody = optional_json(&body)?;
    let actor = api_actor(body.by)?;
    let transition = Transition::Decline {
        message: body.message.filter(|m| !m.trim().is_empty()),
    };
    let result = state
        .bridge
        .resolve(&id, transition, actor.clone(), identity::API)
        .await;
    Ok(Json(audited(&state, &actor, &id, result).await?))
}

async fn list_rules(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    Ok(Json(json!({ "rules": state.bridge.rules().await? })))
}

async fn revoke_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .bridge
        .revoke_rule(&id, &Actor::new(identity::API, identity::API))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
struct AuditQuery {
    session_id: Option<String>,
    since: Option<String>,
    limit: Option<usize>,
}

async fn audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let since = match query.since.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(
            Millis::parse_rfc3339(text)
                .or_else(|| text.parse().ok().map(Millis))
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("since `{text}` is not an RFC 3339 time or epoch milliseconds"),
                    )
                    .with("field", json!("since"))
                })?,
        ),
    };
    let filter = AuditFilter {
        session_id: query.session_id.filter(|s| !s.is_empty()),
        since,
        limit: query.limit.unwrap_or(0),
    };
    Ok(Json(
        json!({ "entries": state.bridge.audit(&filter).await? }),
    ))
}

#[derive(Debug, Deserialize)]
struct WaitQuery {
    timeout_s: Option<f64>,
}

async fn wait(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<Json<Question>, ApiError> {
    let id = parse_id(&id)?;
    let seconds = query.timeout_s.unwrap_or(DEFAULT_WAIT_S);
    if !(seconds.is_finite() && (0.0..=MAX_WAIT_S).contains(&seconds)) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("timeout_s must be between 0 and {MAX_WAIT_S}"),
        )
        .with("field", json!("timeout_s")));
    }
    let mut shutdown = state.bridge.shutdown_signal();
    let waited = tokio::select! {
        waited = state.bridge.wait(&id, Duration::from_secs_f64(seconds)) => waited?,
        _ = shutdown.changed() => state.bridge.get(&id).await?,
    };
    Ok(Json(waited))
}

async fn cancel_session(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let cancelled = state
        .bridge
        .cancel_session(&session_id, Actor::new(identity::API, identity::API))
        .await?;
    Ok(Json(json!({ "cancelled": cancelled })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartRun {
    flow: String,
    #[serde(default)]
    input: String,
    /// The chat the run's questions and result go to; without one they are answered over HTTP.
    #[serde(default)]
    chat: Option<String>,
    /// Who may answer (by default); `api` when absent.
    #[serde(default)]
    user: Option<String>,
}

async fn start_run(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<StartRun>,
) -> Result<(StatusCode, Json<Run>), ApiError> {
    // Like a question's answerers, set by whoever creates the run.
    let user = request
        .user
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| identity::API.to_owned());
    if !identity::is_well_formed(&user) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("`{user}` is not an identity like api or telegram:42"),
        )
        .with("field", json!("user")));
    }
    let origin = Origin {
        chat: request.chat.filter(|c| !c.is_empty()),
        user,
        user_name: None,
    };
    let run = state
        .bridge
        .start_run(&request.flow, &request.input, origin)
        .await?;
    Ok((StatusCode::CREATED, Json(run)))
}

async fn get_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.bridge.get_run(&id).await?))
}

async fn healthz(State(state): State<AppState>) -> Response {
    let store = state.bridge.store();
    match store.ping().await {
        Ok(()) => Json(json!({ "status": "ok", "store": store.describe() })).into_response(),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable", "store": store.describe(), "error": error.to_string() })),
        )
            .into_response(),
    }
}

async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let pending = state.bridge.store().count_pending().await?;
    let body = state.bridge.metrics().render(pending);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response())
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route; see the README for the API",
    )
}
