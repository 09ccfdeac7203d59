//! How a question reads over HTTP: its stored JSON, plus `outcome`, the line every surface shows
//! for a resolved question ("Answered: dayjs, by @alice via telegram"), rendered here once so the
//! ops page (and any client) shows askbridge's own words instead of re-deriving them.

use askbridge_core::{Question, render};
use axum::Json;
use axum::response::{IntoResponse, Response};

/// The JSON of `question`, with `outcome` when it is resolved.
pub(super) fn json(question: &Question) -> serde_json::Value {
    let mut value = serde_json::to_value(question).expect("a question always serialises");
    if !question.is_pending() {
        value["outcome"] = render::outcome_line(question).into();
    }
    value
}

/// A question as a response body (see [`json`]).
#[derive(Debug)]
pub(super) struct QuestionJson(pub(super) Question);

impl IntoResponse for QuestionJson {
    fn into_response(self) -> Response {
        Json(json(&self.0)).into_response()
    }
}
