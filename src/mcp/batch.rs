//! `request_approval` with `actions`: several actions proposed in one turn, asked as one
//! approval (a batch) and answered with a decision per action, in order, each with the
//! arguments to run it with, in words a model can act on and as structured content.

use askbridge_core::{Decision, NewQuestion, Question, Status, render};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::schemars;
use serde::Deserialize;
use serde_json::{Value, json};

/// One action of `request_approval`'s `actions`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ActionParams {
    /// The tool, like `shell`.
    pub tool: String,
    /// Its arguments; its approval holds for exactly these.
    #[serde(default)]
    pub args: Value,
    /// The decisions the person may make on it (default: once, always, reject).
    pub allowed: Option<Vec<String>>,
    /// A JSON Schema of its arguments, which edited arguments must fit.
    pub args_schema: Option<Value>,
}

/// The question `request_approval` asks: one action (`tool`, `args`) or several (`actions`).
pub(super) fn approval_request(
    tool: Option<String>,
    args: Value,
    prompt: Option<String>,
    allowed: Option<Vec<String>>,
    args_schema: Option<Value>,
    actions: Option<Vec<ActionParams>>,
) -> Result<NewQuestion, String> {
    let decisions = |words: Option<Vec<String>>, what: &str| match words {
        Some(words) => Decision::parse_list(&words.join(","))
            .map(Some)
            .map_err(|why| format!("{what}: {why}")),
        None => Ok(None),
    };
    match (tool, actions) {
        (Some(tool), None) => {
            let prompt = prompt.unwrap_or_else(|| format!("Allow {tool}?"));
            Ok(NewQuestion {
                allowed: decisions(allowed, "allowed")?,
                args_schema,
                ..NewQuestion::ask(prompt).approve(askbridge_core::approval::Action { tool, args })
            })
        }
        (None, Some(actions)) => {
            let count = actions.len();
            let mut batch = Vec::with_capacity(count);
            for (index, item) in actions.into_iter().enumerate() {
                let what = format!("actions[{index}].allowed");
                let mut action = askbridge_core::batch::BatchAction::new(
                    askbridge_core::approval::Action::new(item.tool, item.args),
                );
                action.allowed = decisions(item.allowed, &what)?.unwrap_or_default();
                action.args_schema = item.args_schema;
                batch.push(action);
            }
            let prompt = prompt.unwrap_or_else(|| format!("Allow these {count} actions?"));
            Ok(NewQuestion::ask(prompt).approve_all(batch))
        }
        (Some(_), Some(_)) => {
            Err("Give either tool (one action) or actions (several), not both.".into())
        }
        (None, None) => {
            Err("Name the action: tool and args, or actions: [{tool, args}, ...].".into())
        }
    }
}

/// A decided batch: per action what was decided and what to run, then the same as JSON
/// (`decisions`: one entry per action decided, with `args` to run with).
pub(super) fn result(question: &Question) -> CallToolResult {
    let decisions = question
        .resolution
        .as_ref()
        .map(|r| r.decisions.clone())
        .unwrap_or_default();
    let mut lines = vec![match question.status {
        Status::Answered => "Each action was decided:".to_owned(),
        Status::Expired => {
            "Nobody decided every action in time; an action without a decision is not approved."
                .to_owned()
        }
        _ => format!(
            "The approval was cancelled: {}. An action without a decision is not approved.",
            render::outcome_line(question)
        ),
    }];
    for item in &question.actions {
        let tool = &item.action.tool;
        let n = item.n;
        let entry = decisions.iter().find(|e| e.action == n);
        let line = match entry.map(|e| (e.decision, e)) {
            None => format!("{n}. {tool}: not decided; do not run it."),
            Some((Decision::Once | Decision::Always, e)) => format!(
                "{n}. {tool}: approved by {} ({}); run it with exactly the arguments you proposed.",
                e.who(),
                e.decision.as_str()
            ),
            Some((Decision::Edit, e)) => format!(
                "{n}. {tool}: approved with changes by {}; run it with these arguments instead: {}",
                e.who(),
                e.args.clone().unwrap_or_default()
            ),
            Some((Decision::Respond, e)) => format!(
                "{n}. {tool}: {} answered in the tool's place; do not run it, take this as its result: {}",
                e.who(),
                e.text.as_deref().unwrap_or_default()
            ),
            Some((Decision::Reject, e)) => format!(
                "{n}. {tool}: rejected by {}{}. Do not run it.",
                e.who(),
                e.message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ),
        };
        lines.push(line);
    }
    let mut result = CallToolResult::success(vec![ContentBlock::text(lines.join("\n"))]);
    result.structured_content = Some(json!({
        "id": question.id,
        "status": question.status,
        "digest": question.batch_digest,
        "decisions": decisions,
    }));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(tool: &str) -> ActionParams {
        ActionParams {
            tool: tool.into(),
            args: json!({"path": "/tmp"}),
            allowed: Some(vec!["once".into(), "edit".into(), "reject".into()]),
            args_schema: None,
        }
    }

    #[test]
    fn one_action_or_several_and_never_both_or_neither() {
        let batch = approval_request(
            None,
            Value::Null,
            None,
            None,
            None,
            Some(vec![action("ls"), action("rm")]),
        )
        .unwrap();
        assert_eq!(batch.actions.len(), 2);
        assert_eq!(batch.prompt, "Allow these 2 actions?");
        assert_eq!(batch.actions[1].allowed[1], Decision::Edit);
        let one = approval_request(Some("ls".into()), json!({}), None, None, None, None).unwrap();
        assert!(one.actions.is_empty() && one.action.is_some());
        let both = approval_request(
            Some("ls".into()),
            json!({}),
            None,
            None,
            None,
            Some(vec![action("rm")]),
        );
        assert!(both.unwrap_err().contains("not both"));
        assert!(approval_request(None, json!({}), None, None, None, None).is_err());
        let mut bad = action("rm");
        bad.allowed = Some(vec!["maybe".into()]);
        let refused = approval_request(None, json!({}), None, None, None, Some(vec![bad]));
        assert!(refused.unwrap_err().starts_with("actions[0].allowed"));
    }
}
