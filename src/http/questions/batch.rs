//! A batch's reply over HTTP (`action` with `decision`, `decisions`, or `all`), read into the
//! decisions the reply path checks against each action ([`askbridge_core::batch`]).

use super::{ApiError, ReplyBody};
use askbridge_core::Decision;
use askbridge_core::batch::{BatchItem, BatchReply};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;

/// One decision of a batch reply's `decisions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::http) struct BatchDecision {
    action: usize,
    decision: Decision,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    args: Option<serde_json::Value>,
}

impl ReplyBody {
    /// A batch's reply (`action`, `decisions` or `all`), when the body is one.
    pub(super) fn batch(&mut self) -> Result<Option<BatchReply>, ApiError> {
        let unprocessable = |field: &str, why: &str| {
            Err(
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, why.to_owned())
                    .with("field", json!(field)),
            )
        };
        let given = [
            self.action.is_some(),
            self.decisions.is_some(),
            self.all.is_some(),
        ];
        match given.iter().filter(|g| **g).count() {
            0 => return Ok(None),
            1 => {}
            _ => {
                return unprocessable(
                    "action",
                    "give one of action (with decision), decisions or all",
                );
            }
        }
        if self.answer.is_some() {
            return unprocessable("answer", "a batch takes decision, not answer");
        }
        if self.text.is_some() && self.message.is_some() {
            return unprocessable(
                "text",
                "give a response's text in text or message, not both",
            );
        }
        let item =
            |action, decision, message: Option<String>, text: Option<String>, args| BatchItem {
                action,
                decision,
                message: text.or(message),
                args,
            };
        let items = match (self.action, self.decisions.take(), self.all) {
            (Some(n), _, _) => {
                let Some(decision) = self.decision else {
                    return unprocessable("decision", "give the action's decision");
                };
                vec![item(
                    Some(n),
                    decision,
                    self.message.take(),
                    self.text.take(),
                    self.args.take(),
                )]
            }
            (_, Some(decisions), _) => {
                if self.decision.is_some() || self.args.is_some() {
                    return unprocessable(
                        "decision",
                        "with decisions, each item has its own decision",
                    );
                }
                decisions
                    .into_iter()
                    .map(|d| item(Some(d.action), d.decision, d.message, d.text, d.args))
                    .collect()
            }
            (_, _, Some(all)) => {
                vec![item(None, all, self.message.take(), self.text.take(), None)]
            }
            _ => unreachable!("one is given"),
        };
        Ok(Some(BatchReply {
            items,
            digest: self.digest.take(),
        }))
    }
}
