//! How a question reads over HTTP: its stored JSON, plus `outcome`, the line every surface shows
//! for a resolved question ("Answered: dayjs, by @alice via telegram"), rendered here once so the
//! ops page (and any client) shows askbridge's own words instead of re-deriving them.
//!
//! Bodies are serialised straight from these views, not through a `serde_json::Value` tree:
//! every ask, reply and run step answers with one, and the tree cost a map and a string per
//! field on the hot path.

use askbridge_core::run::Run;
use askbridge_core::{Question, render};
use axum::Json;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;

/// A question as clients read it: its fields, and `outcome` when it is resolved.
#[derive(Debug, Serialize)]
pub(super) struct QuestionView<'a> {
    #[serde(flatten)]
    question: &'a Question,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<String>,
}

impl<'a> QuestionView<'a> {
    pub(super) fn of(question: &'a Question) -> Self {
        QuestionView {
            question,
            outcome: (!question.is_pending()).then(|| render::outcome_line(question)),
        }
    }
}

/// The JSON of `question`, with `outcome` when it is resolved, for bodies built as values.
pub(super) fn json(question: &Question) -> serde_json::Value {
    serde_json::to_value(QuestionView::of(question)).expect("a question always serialises")
}

/// A question as a response body (see [`QuestionView`]).
#[derive(Debug)]
pub(super) struct QuestionJson(pub(super) Question);

impl IntoResponse for QuestionJson {
    fn into_response(self) -> Response {
        Json(QuestionView::of(&self.0)).into_response()
    }
}

/// A run as a response body, with the question it waits on inline as `question` when the
/// caller has it.
#[derive(Debug)]
pub(super) struct RunJson {
    pub(super) run: Arc<Run>,
    pub(super) question: Option<Arc<Question>>,
}

impl IntoResponse for RunJson {
    fn into_response(self) -> Response {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(flatten)]
            run: &'a Run,
            #[serde(skip_serializing_if = "Option::is_none")]
            question: Option<QuestionView<'a>>,
        }
        Json(Body {
            run: &self.run,
            question: self.question.as_deref().map(QuestionView::of),
        })
        .into_response()
    }
}
