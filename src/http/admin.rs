//! The other routes: rules, the audit trail, runs, health and metrics.

use super::{ApiError, AppState, JsonBody};
use crate::bridge::RunNews;
use crate::metrics::Scrape;
use askbridge_core::audit::AuditFilter;
use askbridge_core::run::{Origin, Run, RunState};
use askbridge_core::{Actor, Identity, Millis, QuestionId, RuleId, Target, identity};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

pub(super) async fn list_rules(
    State(state): State<AppState>,
) -> Result<Json<serde_json::Value>, ApiError> {
    Ok(Json(json!({ "rules": state.bridge.rules().await? })))
}

pub(super) async fn revoke_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .bridge
        .revoke_rule(&RuleId::new(id), &Actor::api())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
pub(super) struct AuditQuery {
    session_id: Option<String>,
    since: Option<String>,
    limit: Option<usize>,
}

pub(super) async fn audit(
    State(state): State<AppState>,
    Query(query): Query<AuditQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let since = match query.since.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(
            Millis::parse_since(text, Millis::now())
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("since `{text}` is not an RFC 3339 time, epoch milliseconds or a span like 30m, 2h or 7d"),
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
#[serde(deny_unknown_fields)]
pub(super) struct StartRun {
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

pub(super) async fn start_run(
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
        chat: request.chat.filter(|c| !c.is_empty()).map(Target::new),
        user: Identity::new(user),
        user_name: None,
    };
    let run = state
        .bridge
        .start_run(&request.flow, &request.input, origin)
        .await?;
    Ok((StatusCode::CREATED, Json(run)))
}

pub(super) async fn get_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(state.bridge.get_run(&id).await?))
}

#[derive(Debug, Deserialize)]
pub(super) struct RunWaitQuery {
    timeout_s: Option<f64>,
    /// The question the client already knows the run waits on: wait for the next one.
    after: Option<String>,
}

/// `GET /api/runs/{id}/wait?after=<question id>&timeout_s=N`: the run as soon as it waits on a
/// question other than `after` (with that question as `question`) or has ended; as it is after N
/// s otherwise. A client answering a run's questions learns the next one without polling.
pub(super) async fn wait_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<RunWaitQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let timeout = super::questions::wait_timeout(query.timeout_s)?;
    let after = match query.after.as_deref().filter(|a| !a.is_empty()) {
        Some(text) => Some(QuestionId::parse(text).map_err(|_| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("`{text}` is not a question id"),
            )
            .with("field", json!("after"))
        })?),
        None => None,
    };
    let mut shutdown = state.bridge.shutdown_signal();
    let news = tokio::select! {
        news = state.bridge.wait_run(&id, after.as_ref(), timeout) => news?,
        _ = shutdown.changed() => RunNews {
            run: state.bridge.get_run(&id).await?,
            question: None,
        },
    };
    let mut body = serde_json::to_value(&news.run).expect("a run always serialises");
    if let (RunState::Waiting, Some(waiting_on)) = (news.run.state, &news.run.waiting_on) {
        let question = match news.question.filter(|q| q.id == *waiting_on) {
            Some(question) => question,
            None => state.bridge.get(waiting_on).await?,
        };
        body["question"] = super::view::json(&question);
    }
    Ok(Json(body))
}

pub(super) async fn healthz(State(state): State<AppState>) -> Response {
    let store = state.bridge.store();
    // A health check is useful only if it answers quickly: during an outage the store's retries
    // would hold it for seconds, and a load balancer's probe gives up before that.
    let pinged = tokio::time::timeout(Duration::from_millis(900), store.ping()).await;
    let error = match pinged {
        Ok(Ok(())) => {
            let leases = state
                .bridge
                .extension(crate::leader::LeaseBook::default)
                .held();
            // The cluster's shape, when it can be read in what is left of the probe's time.
            let topology = tokio::time::timeout(Duration::from_millis(500), store.topology())
                .await
                .ok()
                .and_then(Result::ok);
            let degraded = topology.as_ref().is_some_and(|t| !t.ok);
            return Json(json!({
                "status": if degraded { "degraded" } else { "ok" },
                "store": store.describe(),
                "topology": topology,
                "leases": leases,
            }))
            .into_response();
        }
        Ok(Err(error)) => error.to_string(),
        Err(_) => "the store did not answer within 0.9 s".to_owned(),
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "status": "unavailable", "store": store.describe(), "error": error })),
    )
        .into_response()
}

pub(super) async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let store = state.bridge.store();
    let pending = store.counts(askbridge_core::Millis::now()).await?.pending;
    let topology = store.topology().await.ok();
    // Which replica holds which chat connection (see `leader`): 1 here, 0 elsewhere.
    let held = state
        .bridge
        .extension(crate::leader::LeaseBook::default)
        .held();
    let leases = [crate::leader::TELEGRAM_POLL, crate::leader::DISCORD_GATEWAY]
        .map(|lease| (lease, held.iter().any(|h| h == lease)));
    let body = state.bridge.metrics().render(&Scrape {
        pending,
        topology: topology.as_ref(),
        leases: &leases,
    });
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], body).into_response())
}

pub(super) async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route; see the README for the API",
    )
}
