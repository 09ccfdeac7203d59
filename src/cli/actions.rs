//! `askbridge approve --actions FILE`: several actions in one approval (a batch), decided one
//! by one. The file holds a JSON array of actions (`{"tool", "args", "allowed"?,
//! "args_schema"?}`), sent as the request's `actions`; the server checks them.
//!
//! Stdout gets one line per decision, in the actions' order, for a script to read:
//! `1 once {"args"}`, `2 always {"args"}`, `3 edit {"the edited args"}`, `4 reject <why>`,
//! `5 respond <text>`; an action undecided when time ran out gets no line. The exit code says
//! whether to run them: 0 when every action may run (once, always, edit), 3 when none may,
//! 7 when some may and some may not (the lines say which), 4, 5 and 130 as for one action.

use super::ask::{read_json, run};
use super::{ApproveArgs, ExitCode};
use askbridge_core::batch::Entry;
use askbridge_core::{Decision, Question, Status};
use serde_json::{Value, json};
use std::path::Path;

/// `askbridge approve --actions FILE`.
pub(crate) async fn approve_actions(args: ApproveArgs, file: &Path) -> u8 {
    let actions = match read_json(file) {
        Ok(Value::Array(actions)) => actions,
        Ok(_) => {
            tell!(
                "askbridge: --actions {}: not a JSON array of actions ([{{\"tool\": ..., \"args\": {{...}}}}, ...])",
                file.display()
            );
            return ExitCode::ERROR;
        }
        Err(error) => {
            tell!("askbridge: --actions {}: {error}", file.display());
            return ExitCode::ERROR;
        }
    };
    let prompt = args
        .prompt
        .clone()
        .unwrap_or_else(|| format!("Allow these {} actions?", actions.len()));
    let body = json!({"prompt": prompt, "kind": "approval", "actions": actions});
    match run(body, &args.common).await {
        Ok(question) => outcome(&question, args.common.json),
        Err(code) => code,
    }
}

/// The line a decision prints.
pub(crate) fn line(entry: &Entry) -> String {
    let n = entry.action;
    let word = entry.decision.as_str();
    match entry.decision {
        Decision::Once | Decision::Always | Decision::Edit => {
            let args = entry.args.clone().unwrap_or(Value::Null);
            format!("{n} {word} {args}")
        }
        Decision::Reject => match &entry.message {
            Some(why) => format!("{n} {word} {why}"),
            None => format!("{n} {word}"),
        },
        Decision::Respond => format!("{n} {word} {}", entry.text.as_deref().unwrap_or_default()),
    }
}

/// The exit code of decisions made on `count` actions: 0 when every one may run, 3 when none
/// may, 7 when some may.
pub(crate) fn code(decisions: &[Entry], count: usize) -> u8 {
    let runs = decisions.iter().filter(|e| e.runs()).count();
    match runs {
        0 => ExitCode::DECLINED,
        n if n == count => ExitCode::ANSWERED,
        _ => ExitCode::SOME,
    }
}

fn outcome(question: &Question, as_json: bool) -> u8 {
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(question).unwrap_or_default()
        );
    }
    let decisions = question
        .resolution
        .as_ref()
        .map(|r| r.decisions.clone())
        .unwrap_or_default();
    if !as_json {
        for entry in &decisions {
            say!("{}", line(entry));
        }
    }
    match question.status {
        Status::Answered => {
            tell!("{}", askbridge_core::render::outcome_line(question));
            code(&decisions, question.actions.len())
        }
        Status::Expired => {
            tell!(
                "no answer in time: {} of {} actions decided",
                decisions.len(),
                question.actions.len()
            );
            ExitCode::TIMEOUT
        }
        Status::Cancelled => {
            tell!("the approval was cancelled");
            ExitCode::CANCELLED
        }
        Status::Declined | Status::Pending => ExitCode::ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::{Identity, Millis};

    fn entry(action: usize, decision: Decision) -> Entry {
        Entry {
            action,
            decision,
            by: Identity::new("telegram:1"),
            by_name: None,
            via: "telegram".into(),
            at: Millis(0),
            args: decision_runs(decision).then(|| json!({"replicas": 3})),
            proposed_args: None,
            digest: None,
            message: (decision == Decision::Reject).then(|| "too broad".into()),
            text: (decision == Decision::Respond).then(|| "done by hand".into()),
            rule_id: None,
            by_rule: false,
            everywhere: false,
        }
    }

    fn decision_runs(decision: Decision) -> bool {
        matches!(decision, Decision::Once | Decision::Always | Decision::Edit)
    }

    #[test]
    fn one_line_per_decision_and_the_code_says_what_may_run() {
        let all = [
            entry(1, Decision::Once),
            entry(2, Decision::Edit),
            entry(3, Decision::Reject),
            entry(4, Decision::Respond),
        ];
        let lines: Vec<String> = all.iter().map(line).collect();
        assert_eq!(
            lines,
            [
                r#"1 once {"replicas":3}"#,
                r#"2 edit {"replicas":3}"#,
                "3 reject too broad",
                "4 respond done by hand"
            ]
        );
        assert_eq!(code(&all, 4), ExitCode::SOME);
        assert_eq!(code(&all[..2], 2), ExitCode::ANSWERED);
        assert_eq!(code(&all[2..], 2), ExitCode::DECLINED);
    }
}
