//! The question routes: ask, list, read, reply, reject, wait, cancel a session.

use super::error::optional_json;
use super::idempotency::Keyed;
use super::view::{self, QuestionJson};
use super::{ApiError, AppState, DEFAULT_WAIT_S, JsonBody, MAX_WAIT_S};
use crate::bridge::{Attempt, ProgramReply, Said};
use crate::store::{Cursor, HistoryFilter, ListFilter, MAX_PAGE_BYTES};
use askbridge_core::{Actor, Answer, Decision, NewQuestion, QuestionId, Status, Target};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;

mod batch;
use batch::BatchDecision;

fn parse_id(text: &str) -> Result<QuestionId, ApiError> {
    QuestionId::parse(text).map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("There is no question {text}."),
        )
    })
}

/// `POST /api/questions`; with an `Idempotency-Key`, a retry gets the first question (200).
pub(super) async fn create(
    State(state): State<AppState>,
    Keyed {
        value: request,
        key,
    }: Keyed<NewQuestion>,
) -> Result<(StatusCode, QuestionJson), ApiError> {
    let Some(key) = key else {
        // Boxed (here and in `attempt`): the bridge's future is the handler's largest part by
        // far, and every move of the handler's future (axum boxes it) copied all of it.
        let question = Box::pin(state.bridge.create(request)).await?;
        return Ok((StatusCode::CREATED, QuestionJson(question)));
    };
    if let Some(id) = key.reserve(&state, "questions").await? {
        let question = state.bridge.get(&parse_id(&id)?).await?;
        return Ok((StatusCode::OK, QuestionJson(question)));
    }
    let made = Box::pin(state.bridge.create(request)).await;
    let id = made.as_ref().ok().map(|q| q.id.to_string());
    key.settle(&state, "questions", id.as_deref()).await;
    Ok((StatusCode::CREATED, QuestionJson(made?)))
}

#[derive(Debug, Deserialize)]
pub(super) struct ListQuery {
    session_id: Option<String>,
    status: Option<String>,
    target: Option<String>,
    limit: Option<usize>,
}

pub(super) async fn list(
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
        target: query.target.filter(|t| !t.is_empty()).map(Target::new),
        limit: query.limit.unwrap_or(0),
    };
    let questions = state.bridge.list(&filter).await?;
    let questions: Vec<serde_json::Value> = questions.iter().map(view::json).collect();
    Ok(Json(json!({ "questions": questions })))
}

pub(super) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<QuestionJson, ApiError> {
    Ok(QuestionJson(state.bridge.get(&parse_id(&id)?).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplyBody {
    #[serde(default)]
    answer: Option<Answer>,
    /// An approval's decision (`once`, `always`, `edit`, `reject`, `respond`): the same as
    /// `answer`, in LangChain's word.
    #[serde(default)]
    decision: Option<Decision>,
    #[serde(default)]
    by: Option<String>,
    /// An approval rejection's feedback.
    #[serde(default)]
    message: Option<String>,
    /// An approval's response (with `respond`).
    #[serde(default)]
    text: Option<String>,
    /// The approved action's digest as the replier saw it.
    #[serde(default)]
    digest: Option<String>,
    /// An approval's edited arguments (with `edit`).
    #[serde(default)]
    args: Option<serde_json::Value>,
    /// A batch: the action `decision` is about.
    #[serde(default)]
    action: Option<usize>,
    /// A batch: several decisions at once.
    #[serde(default)]
    decisions: Option<Vec<BatchDecision>>,
    /// A batch: one decision for every action still undecided.
    #[serde(default)]
    all: Option<Decision>,
}

/// A reply body's parts as the reply path takes them: `decision` stands for `answer`, `text`
/// for `message`; one of `answer` and `decision` is needed.
pub(super) fn program_reply(
    answer: Option<Answer>,
    decision: Option<Decision>,
    message: Option<String>,
    text: Option<String>,
    digest: Option<String>,
    args: Option<serde_json::Value>,
) -> Result<ProgramReply, ApiError> {
    let answer = match (answer, decision) {
        (Some(answer), None) => answer,
        (None, Some(decision)) => Answer::Text(decision.as_str().to_owned()),
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "give the answer, or for an approval its decision (one of the two)",
            )
            .with("field", json!("answer")));
        }
    };
    if text.is_some() && message.is_some() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "give a response's text in text or message, not both",
        )
        .with("field", json!("text")));
    }
    Ok(ProgramReply {
        answer,
        message: text.or(message),
        digest,
        args,
    })
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RejectBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

/// The HTTP caller: always the identity `api` (the token says who may call, not who they are).
/// `by` is kept as the display name, so "Answered: …, by ops:alice via api" reads well, but it
/// never lets a caller pass for an answerer: a question limited to `telegram:42` refuses the API
/// unless `api` is among its answerers too.
pub(super) fn api_actor(by: Option<String>) -> Result<Actor, ApiError> {
    let name = by.map(|b| b.trim().to_owned()).filter(|b| !b.is_empty());
    if let Some(name) = &name {
        askbridge_core::actor::check_name(name)?;
    }
    Ok(Actor::api().named(name))
}

pub(super) async fn reply(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody<ReplyBody>,
) -> Result<QuestionJson, ApiError> {
    if let Some(reply) = body.batch()? {
        return attempt(&state, &id, Said::Batch(reply), body.by).await;
    }
    let said = Said::Program(program_reply(
        body.answer,
        body.decision,
        body.message,
        body.text,
        body.digest,
        body.args,
    )?);
    attempt(&state, &id, said, body.by).await
}

/// The one path every HTTP answer takes (see `bridge::resolve`), as the identity `api`.
pub(super) async fn attempt(
    state: &AppState,
    id: &str,
    said: Said,
    by: Option<String>,
) -> Result<QuestionJson, ApiError> {
    let attempt = Attempt {
        id: parse_id(id)?,
        said,
        actor: api_actor(by)?,
        chat: Target::api(),
    };
    Ok(QuestionJson(Box::pin(state.bridge.attempt(attempt)).await?))
}

pub(super) async fn reject(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<QuestionJson, ApiError> {
    let body: RejectBody = optional_json(&body)?;
    let message = body.message.filter(|m| !m.trim().is_empty());
    attempt(&state, &id, Said::Decline(message), body.by).await
}

/// `POST /api/questions/{id}/cancel`: the asker withdraws the question.
pub(super) async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<QuestionJson, ApiError> {
    let reason = cancel_reason(&body)?;
    let question = state
        .bridge
        .cancel_question(&parse_id(&id)?, Actor::api(), reason)
        .await?;
    Ok(QuestionJson(question))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelBody {
    reason: Option<String>,
}

/// A cancel's optional `{"reason": "..."}`, shown on every surface (`Cancelled: <reason>`).
pub(super) fn cancel_reason(body: &[u8]) -> Result<Option<String>, ApiError> {
    let body: CancelBody = optional_json(body)?;
    Ok(askbridge_core::answer::decline_message(
        body.reason.as_deref(),
    )?)
}

#[derive(Debug, Deserialize)]
pub(super) struct WaitQuery {
    timeout_s: Option<f64>,
}

/// A long-poll's `timeout_s`: [`DEFAULT_WAIT_S`] when absent, at most [`MAX_WAIT_S`].
pub(super) fn wait_timeout(seconds: Option<f64>) -> Result<Duration, ApiError> {
    let seconds = seconds.unwrap_or(DEFAULT_WAIT_S);
    if seconds.is_finite() && (0.0..=MAX_WAIT_S).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("timeout_s must be between 0 and {MAX_WAIT_S}"),
        )
        .with("field", json!("timeout_s")))
    }
}

pub(super) async fn wait(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<QuestionJson, ApiError> {
    let id = parse_id(&id)?;
    let timeout = wait_timeout(query.timeout_s)?;
    let mut shutdown = state.bridge.shutdown_signal();
    let waited = tokio::select! {
        waited = state.bridge.wait(&id, timeout) => waited?,
        _ = shutdown.changed() => state.bridge.get(&id).await?,
    };
    Ok(QuestionJson(waited))
}

pub(super) async fn cancel_session(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let reason = cancel_reason(&body)?;
    let cancelled = state
        .bridge
        .cancel_session(&session_id, Actor::api(), reason)
        .await?;
    Ok(Json(json!({ "cancelled": cancelled })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HistoryQuery {
    /// Only of this outcome: answered, declined, expired or cancelled.
    status: Option<String>,
    session_id: Option<String>,
    /// The `next` of the previous page.
    after: Option<String>,
    limit: Option<usize>,
}

/// The listing place of a question kept with its JSON and that JSON's size.
fn sized_place<T, U>(
    (question, _, _): &(askbridge_core::Question, T, U),
) -> (askbridge_core::Millis, &str) {
    HistoryFilter::place(question)
}

/// `GET /api/history`: resolved questions, most recently resolved first, a page at a time, each
/// with its full resolution; `next` is the cursor of the following page.
pub(super) async fn history(
    State(state): State<AppState>,
    Query(query): Query<HistoryQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let status = match query.status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(
            Status::parse(text)
                .filter(|s| *s != Status::Pending)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!(
                            "unknown outcome `{text}`: use answered, declined, expired or cancelled"
                        ),
                    )
                    .with("field", json!("status"))
                })?,
        ),
    };
    let after = super::error::cursor_param("after", query.after.as_deref(), Cursor::parse)?;
    let filter = HistoryFilter {
        status,
        session_id: query.session_id.filter(|s| !s.is_empty()),
        after,
        limit: query.limit.unwrap_or(0),
    };
    let page = state.bridge.store().history(&filter).await?;
    // Each question as JSON with its size: the page is bounded in bytes as well as by count.
    let page = page
        .map(|question| {
            let json = view::json(&question);
            let size = json.to_string().len();
            (question, json, size)
        })
        .within_bytes(MAX_PAGE_BYTES, |(_, _, size)| *size, sized_place);
    let next = page.next.as_ref().map(Cursor::to_string);
    let questions: Vec<serde_json::Value> =
        page.items.into_iter().map(|(_, json, _)| json).collect();
    Ok(Json(json!({ "questions": questions, "next": next })))
}
