//! Outcomes as sentences a model can act on, with the same outcome as structured content.

use askbridge_core::{Answer, Kind, Question, Status, render};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

fn value_text(value: &Answer) -> String {
    match value {
        Answer::Text(text) => text.clone(),
        Answer::List(items) => items.join(", "),
        Answer::Bool(true) => "yes".into(),
        Answer::Bool(false) => "no".into(),
        Answer::Object(_) => value.to_string(),
    }
}

/// The result of a question as it is now.
pub(super) fn result(question: &Question) -> CallToolResult {
    if question.is_batch() && !question.is_pending() {
        return super::batch::result(question);
    }
    let resolution = question.resolution.as_ref();
    let edited = resolution.and_then(|r| r.edited.as_ref());
    let mut result = CallToolResult::success(vec![ContentBlock::text(sentence(question))]);
    result.structured_content = Some(json!({
        "id": question.id,
        "status": question.status,
        "value": resolution.and_then(|r| r.value.as_ref()),
        "by": resolution.map(|r| r.by().to_string()),
        "via": resolution.map(|r| r.via().to_string()),
        "message": resolution.and_then(|r| r.message.as_ref()),
    }));
    if let (Some(edited), Some(content)) = (edited, result.structured_content.as_mut()) {
        content["args"] = edited.approved.args.clone();
        content["digest"] = json!(edited.approved.digest());
        content["proposed_args"] = edited.proposed.args.clone();
    }
    result
}

/// The outcome of `question` as a sentence saying what the model may do next.
fn sentence(question: &Question) -> String {
    let id = &question.id;
    let resolution = question.resolution.as_ref();
    let value = resolution.and_then(|r| r.value.as_ref());
    let by = resolution
        .map(|r| {
            r.by_name()
                .map_or_else(|| r.by().to_string(), str::to_owned)
        })
        .unwrap_or_default();
    let via = resolution.map(|r| r.via().to_string()).unwrap_or_default();
    let message = resolution.and_then(|r| r.message.clone());
    let approval = question.kind == Kind::Approval;
    let edited = resolution.and_then(|r| r.edited.as_ref());
    match (question.status, value) {
        (Status::Pending, _) => format!(
            "Pending: question {id} is waiting for an answer. Call get_answer with id \"{id}\" to wait for it."
        ),
        (Status::Answered, Some(_)) if approval && edited.is_some() => format!(
            "Approved with changes: run it with these arguments instead: {} ({by} via {via}). Do not run it with the arguments you proposed.",
            edited
                .map(|e| e.approved.args.to_string())
                .unwrap_or_default()
        ),
        (Status::Answered, Some(Answer::Text(word))) if approval && word == "respond" => format!(
            "{by} answered in the tool's place (via {via}); do not run the action, take this as its result: {}",
            message.as_deref().unwrap_or_default()
        ),
        (Status::Answered, Some(value)) if approval => format!(
            "Approved: {by} allowed it {} (via {via}). You may run the action, with exactly the arguments you asked about.",
            value_text(value)
        ),
        (Status::Answered, Some(value)) => {
            format!(
                "The person answered: {} (by {by} via {via}).",
                value_text(value)
            )
        }
        (Status::Answered, None) => format!("Answered by {by} via {via}."),
        (Status::Declined, _) if approval => format!(
            "Rejected by {by}{}. Do not run the action.",
            message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        (Status::Declined, _) => format!(
            "The person declined to answer{}.",
            message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        (Status::Expired, Some(value)) => format!(
            "Nobody answered in time; the default was used: {}.",
            value_text(value)
        ),
        (Status::Expired, None) if approval => {
            "Nobody answered in time, so the action is not approved. Do not run it.".to_owned()
        }
        (Status::Expired, None) => "Nobody answered in time, and there is no default.".to_owned(),
        (Status::Cancelled, _) => format!(
            "The question was cancelled: {}.",
            render::outcome_line(question)
        ),
    }
}

/// A failure to ask or wait, as an error result (the model sees why).
pub(super) fn failure(why: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why.to_owned())])
}

/// Pending questions, one line each.
pub(super) fn listing(questions: &[Question]) -> CallToolResult {
    if questions.is_empty() {
        return CallToolResult::success(vec![ContentBlock::text("No questions are waiting.")]);
    }
    let lines: Vec<String> = questions
        .iter()
        .map(|q| {
            format!(
                "{}: {} ({})",
                q.id,
                q.prompt,
                render::time_left(q, askbridge_core::Millis::now())
            )
        })
        .collect();
    CallToolResult::success(vec![ContentBlock::text(lines.join("\n"))])
}
