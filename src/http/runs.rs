//! The run routes: start a flow, read a run, learn its next step without polling, and answer
//! it in the same round trip.

use super::idempotency::Keyed;
use super::view::RunJson;
use super::{ApiError, AppState, JsonBody};
use crate::bridge::{RunNews, Said, Storing};
use crate::store::{Cursor, MAX_PAGE_BYTES, RunFilter, json_size};
use askbridge_core::run::{Origin, Run, RunState};
use askbridge_core::{Answer, Identity, QuestionId, Target, identity};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

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
    /// Respond once the run waits on its first question (inline as `question`) or has ended,
    /// waiting at most this long, instead of at once.
    #[serde(default)]
    wait_s: Option<f64>,
}

/// `POST /api/runs`; with an `Idempotency-Key`, a retry gets the first run (200), at its next
/// step when `wait_s` asks for it.
pub(super) async fn start_run(
    State(state): State<AppState>,
    Keyed {
        value: request,
        key,
    }: Keyed<StartRun>,
) -> Result<(StatusCode, RunJson), ApiError> {
    let wait = wait_of(&request)?;
    let Some(key) = key else {
        let run = start(&state, request, wait).await?;
        return Ok((StatusCode::CREATED, respond(&state, run, wait).await?));
    };
    if let Some(id) = key.reserve(&state, "runs").await? {
        let run = state.bridge.get_run(&id).await?;
        return Ok((StatusCode::OK, respond(&state, run, wait).await?));
    }
    // Recorded before any wait for the first question: a retry meanwhile finds the run.
    let made = start(&state, request, wait).await;
    let id = made.as_ref().ok().map(|run| run.id.to_string());
    key.settle(&state, "runs", id.as_deref()).await;
    Ok((StatusCode::CREATED, respond(&state, made?, wait).await?))
}

/// A run as `POST /api/runs` answers with it: at once, or at its first question when the
/// request waits.
async fn respond(state: &AppState, run: Run, wait: Option<Duration>) -> Result<RunJson, ApiError> {
    Ok(match wait {
        // Like LangGraph's first `invoke`: the run as it is at its first question.
        Some(timeout) => next_step(state, run.id.as_str(), None, timeout).await?,
        None => RunJson {
            run: Arc::new(run),
            question: None,
        },
    })
}

fn wait_of(request: &StartRun) -> Result<Option<Duration>, ApiError> {
    request
        .wait_s
        .map(|s| {
            super::questions::wait_timeout(Some(s)).map_err(|e| e.with("field", json!("wait_s")))
        })
        .transpose()
}

async fn start(
    state: &AppState,
    request: StartRun,
    wait: Option<Duration>,
) -> Result<Run, ApiError> {
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
    // A client waiting for the first question learns of the run only with it: the run is
    // stored with that question, in one write instead of two.
    let storing = match wait {
        Some(_) => Storing::WithFirstStep,
        None => Storing::AtStart,
    };
    Ok(state
        .bridge
        .start_run(&request.flow, &request.input, origin, storing)
        .await?)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunListQuery {
    /// `live` (waiting and running, the default), `waiting`, `running`, `ended` (done and
    /// failed), `done` or `failed`.
    state: Option<String>,
    /// The `next` of the previous page.
    after: Option<String>,
    /// At most this many (default 50, at most 500).
    limit: Option<usize>,
}

/// `GET /api/runs`: one page of runs, newest first — live runs by start, ended ones by end —
/// and the cursor of the next page. Served from per-bucket indexes on Redis: a page costs the
/// same with a hundred runs or a million.
pub(super) async fn list_runs(
    State(state): State<AppState>,
    Query(query): Query<RunListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (ended, only) = match query.state.as_deref().unwrap_or("live") {
        "live" | "" => (false, None),
        "waiting" => (false, Some(RunState::Waiting)),
        "running" => (false, Some(RunState::Running)),
        "ended" => (true, None),
        "done" => (true, Some(RunState::Done)),
        "failed" => (true, Some(RunState::Failed)),
        other => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "state `{other}` is not one of live, waiting, running, ended, done, failed"
                ),
            )
            .with("field", json!("state")));
        }
    };
    let after = super::error::cursor_param("after", query.after.as_deref(), Cursor::parse)?;
    let filter = RunFilter {
        ended,
        state: only,
        after,
        limit: query.limit.unwrap_or(0),
    };
    let page = state.bridge.store().list_runs(&filter).await?.within_bytes(
        MAX_PAGE_BYTES,
        json_size,
        |run| filter.place(run),
    );
    let next = page.next.as_ref().map(Cursor::to_string);
    Ok(Json(json!({ "runs": page.items, "next": next })))
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
) -> Result<RunJson, ApiError> {
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
    next_step(&state, &id, after.as_ref(), timeout).await
}

/// The run once it waits on a question other than `after` (inline as `question`) or has ended,
/// or as it is after `timeout` (or at shutdown).
async fn next_step(
    state: &AppState,
    id: &str,
    after: Option<&QuestionId>,
    timeout: Duration,
) -> Result<RunJson, ApiError> {
    let mut shutdown = state.bridge.shutdown_signal();
    let news = tokio::select! {
        news = state.bridge.wait_run(id, after, timeout) => news?,
        _ = shutdown.changed() => RunNews {
            run: Arc::new(state.bridge.get_run(id).await?),
            question: None,
        },
    };
    let question = match (news.run.state, &news.run.waiting_on) {
        (RunState::Waiting, Some(waiting_on)) => Some(match news.question {
            Some(question) if question.id == *waiting_on => question,
            _ => Arc::new(state.bridge.get(waiting_on).await?),
        }),
        _ => None,
    };
    Ok(RunJson {
        run: news.run,
        question,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerRun {
    #[serde(default)]
    answer: Option<Answer>,
    /// An approval's decision, as on `/api/questions/{id}/reply`.
    #[serde(default)]
    decision: Option<askbridge_core::Decision>,
    /// An approval's response (with `respond`).
    #[serde(default)]
    text: Option<String>,
    /// An approval's edited arguments (with `edit`).
    #[serde(default)]
    args: Option<serde_json::Value>,
    /// The question answered; the one the run waits on when absent. When given and the run
    /// waits on another, nothing is answered (409).
    #[serde(default)]
    question_id: Option<String>,
    #[serde(default)]
    by: Option<String>,
    /// An approval rejection's feedback.
    #[serde(default)]
    message: Option<String>,
    /// The approved action's digest as the replier saw it.
    #[serde(default)]
    digest: Option<String>,
    /// How long to wait for the run's next step.
    #[serde(default)]
    timeout_s: Option<f64>,
}

/// `POST /api/runs/{id}/answer`: answers the question the run waits on and responds with the
/// run at its next step — its next question inline, or its end — in one round trip, as
/// LangGraph's `Command(resume=...)` returns the next interrupt. The answer takes the same path
/// as `POST /api/questions/{id}/reply` (same checks, same refusals).
pub(super) async fn answer_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AnswerRun>,
) -> Result<RunJson, ApiError> {
    let timeout = super::questions::wait_timeout(body.timeout_s)?;
    let expected = match body.question_id.as_deref().filter(|q| !q.is_empty()) {
        Some(text) => Some(QuestionId::parse(text).map_err(|_| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("`{text}` is not a question id"),
            )
            .with("field", json!("question_id"))
        })?),
        None => None,
    };
    let said = Said::Program(super::questions::program_reply(
        body.answer,
        body.decision,
        body.message,
        body.text,
        body.digest,
        body.args,
    )?);
    let by = (super::questions::api_actor(body.by)?, Target::api());
    let answer = state.bridge.answer_run(&id, expected.as_ref(), said, by);
    let question = Box::pin(answer).await?;
    next_step(&state, &id, Some(&question), timeout).await
}
