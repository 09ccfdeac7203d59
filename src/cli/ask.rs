//! `ask`, `confirm` and `approve`: a question from the shell, waited for, the answer on stdout
//! and the outcome in the exit code (see [`ExitCode`]).
//!
//! The wait is a loop of long polls (`GET /api/questions/{id}/wait`, a minute each), so no client
//! or proxy timeout cuts a wait of hours, and a server restart in between only costs a retry:
//! the question is in the store. Ctrl-C (or SIGTERM) cancels the question — every surface
//! withdraws its buttons — and exits 130.

use super::client::api;
use super::{ApproveArgs, AskArgs, Common, ConfirmArgs, ExitCode};
use askbridge::client::{ApiClient, ApiError};
use askbridge_core::{Answer, Decision, Question, Status};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How long the server may stay unreachable during a wait before the command gives up.
const UNREACHABLE_FOR: Duration = Duration::from_secs(60);

/// `askbridge ask`.
pub(crate) async fn ask(args: AskArgs) -> u8 {
    let mut body = json!({
        "prompt": args.prompt,
        "options": args.options,
        "multi": args.multi,
        "allow_custom": args.allow_custom,
    });
    if let Some(path) = &args.form {
        match read_json(path) {
            Ok(schema) => {
                body["kind"] = json!("form");
                body["form"] = schema;
            }
            Err(error) => {
                tell!("askbridge: --form {}: {error}", path.display());
                return ExitCode::ERROR;
            }
        }
    }
    if let Some(default) = &args.default {
        body["default"] = if args.multi {
            json!(default.split(',').map(str::trim).collect::<Vec<_>>())
        } else {
            json!(default)
        };
    }
    match run(body, &args.common).await {
        Ok(question) => outcome(&question, args.common.json, Kind::Ask),
        Err(code) => code,
    }
}

/// `askbridge confirm`.
pub(crate) async fn confirm(args: ConfirmArgs) -> u8 {
    let mut body = json!({"prompt": args.prompt, "kind": "confirm"});
    if let Some(default) = &args.default {
        body["default"] = json!(default == "yes");
    }
    match run(body, &args.common).await {
        Ok(question) => outcome(&question, args.common.json, Kind::Confirm),
        Err(code) => code,
    }
}

/// `askbridge approve`.
pub(crate) async fn approve(args: ApproveArgs) -> u8 {
    let Some(tool) = args.tool.clone() else {
        tell!("askbridge: approve needs --tool (or --actions FILE)");
        return ExitCode::ERROR;
    };
    let action_args: Value = match serde_json::from_str(&args.args) {
        Ok(value) => value,
        Err(error) => {
            tell!("askbridge: --args is not JSON: {error}");
            return ExitCode::ERROR;
        }
    };
    let prompt = args
        .prompt
        .clone()
        .unwrap_or_else(|| format!("Allow {tool}?"));
    let mut body = json!({
        "prompt": prompt,
        "kind": "approval",
        "action": {"tool": tool, "args": action_args},
    });
    if let Some(allow) = &args.allow {
        match Decision::parse_list(allow) {
            Ok(allowed) => body["allowed"] = json!(allowed),
            Err(why) => {
                tell!("askbridge: --allow: {why}");
                return ExitCode::ERROR;
            }
        }
    }
    if let Some(path) = &args.schema {
        match read_json(path) {
            Ok(schema) => body["args_schema"] = schema,
            Err(error) => {
                tell!("askbridge: --schema {}: {error}", path.display());
                return ExitCode::ERROR;
            }
        }
    }
    match run(body, &args.common).await {
        Ok(question) => outcome(&question, args.common.json, Kind::Approve),
        Err(code) => code,
    }
}

/// A file's JSON.
pub(super) fn read_json(path: &std::path::Path) -> Result<Value, String> {
    std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ask,
    Confirm,
    Approve,
}

/// Asks, then waits for the resolution (or Ctrl-C). `Err` holds the exit code of a failure,
/// already explained on stderr.
pub(super) async fn run(mut body: Value, common: &Common) -> Result<Question, u8> {
    let api = api(&common.remote).map_err(|error| {
        tell!("askbridge: {error:#}");
        ExitCode::ERROR
    })?;
    let session = common
        .session
        .clone()
        .unwrap_or_else(|| format!("cli-{}", askbridge_core::QuestionId::random()));
    body["session_id"] = json!(session);
    body["targets"] = json!(common.targets);
    body["answerers"] = json!(common.answerers);
    if let Some(timeout) = common.timeout {
        body["timeout_s"] = json!(timeout);
    }
    if let Some(detail) = &common.detail {
        body["detail"] = json!(detail);
    }
    if let Some(after) = common.remind_after {
        body["remind_after_s"] = json!(after);
        body["reminders"] = json!(common.reminders.unwrap_or(1));
    }
    if let Some(needs) = common.quorum {
        body["quorum"] = json!({"needs": needs, "of": common.answerers});
    }
    let created = api.post("/api/questions", &body).await.map_err(failed)?;
    let id = created["id"].as_str().unwrap_or_default().to_owned();
    tokio::select! {
        waited = wait(&api, &id, created) => waited,
        () = interrupted() => {
            let reason = json!({"reason": "the script that asked it was interrupted"});
            match api.post(&format!("/api/questions/{id}/cancel"), &reason).await {
                Ok(_) => tell!("askbridge: interrupted; question {id} cancelled"),
                Err(error) => tell!("askbridge: interrupted; cannot cancel question {id}: {error}"),
            }
            Err(ExitCode::INTERRUPTED)
        }
    }
}

/// Long-polls until the question leaves pending.
async fn wait(api: &ApiClient, id: &str, mut current: Value) -> Result<Question, u8> {
    let mut unreachable_since: Option<Instant> = None;
    loop {
        if current["status"] != "pending" {
            return serde_json::from_value(current).map_err(|error| {
                tell!("askbridge: unexpected answer shape: {error}");
                ExitCode::ERROR
            });
        }
        let query = [("timeout_s", "60".to_owned())];
        let path = format!("/api/questions/{id}/wait");
        match api.get_within(&path, &query, Duration::from_secs(90)).await {
            Ok(question) => {
                unreachable_since = None;
                current = question;
            }
            Err(ApiError::Unreachable { .. } | ApiError::NotJson(_))
                if unreachable_since.is_none_or(|at| at.elapsed() < UNREACHABLE_FOR) =>
            {
                // A restart of askbridge: the question is in its store; try again shortly.
                unreachable_since.get_or_insert_with(Instant::now);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(error) => return Err(failed(error)),
        }
    }
}

fn failed(error: ApiError) -> u8 {
    tell!("askbridge: {error}");
    ExitCode::ERROR
}

/// Completes on Ctrl-C or SIGTERM.
async fn interrupted() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// Prints the outcome and gives its exit code.
fn outcome(question: &Question, as_json: bool, kind: Kind) -> u8 {
    if as_json {
        let mut value = serde_json::to_value(question).unwrap_or_default();
        value["outcome"] = json!(askbridge_core::render::outcome_line(question));
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
    }
    let resolution = question.resolution.as_ref();
    let value = resolution.and_then(|r| r.value.as_ref());
    let message = resolution.and_then(|r| r.message.clone());
    if let (Status::Answered, Some(edited)) =
        (question.status, resolution.and_then(|r| r.edited.as_ref()))
    {
        // Approved with changes: the arguments to run with, on stdout.
        tell!(
            "approved with changes (digest {})",
            edited.approved.short_digest()
        );
        if !as_json {
            say!("{}", edited.approved.args);
        }
        return ExitCode::ANSWERED;
    }
    let responded = Some(&Answer::Text(Decision::Respond.as_str().to_owned()));
    if kind == Kind::Approve && question.status == Status::Answered && value == responded {
        tell!("responded: nothing runs; the response is on stdout");
        if !as_json {
            say!("{}", message.unwrap_or_default());
        }
        return ExitCode::RESPONDED;
    }
    match question.status {
        Status::Answered => answered(value, as_json, kind),
        Status::Declined => {
            let by = resolution.map(|r| r.by().to_string()).unwrap_or_default();
            match message {
                Some(message) => tell!("declined by {by}: {message}"),
                None => tell!("declined by {by}"),
            }
            ExitCode::DECLINED
        }
        Status::Expired => match value {
            Some(_) => {
                tell!("no answer in time; the default was used");
                answered(value, as_json, kind)
            }
            None => {
                tell!("no answer in time");
                ExitCode::TIMEOUT
            }
        },
        Status::Cancelled => {
            tell!(
                "the question was cancelled{}",
                message.map(|m| format!(": {m}")).unwrap_or_default()
            );
            ExitCode::CANCELLED
        }
        Status::Pending => ExitCode::ERROR,
    }
}

fn answered(value: Option<&Answer>, as_json: bool, kind: Kind) -> u8 {
    let print = |text: &str| {
        if !as_json {
            say!("{text}");
        }
    };
    match value {
        Some(Answer::Bool(yes)) => {
            print(if *yes { "yes" } else { "no" });
            if kind == Kind::Confirm && !yes {
                ExitCode::NO
            } else {
                ExitCode::ANSWERED
            }
        }
        Some(Answer::Object(fields)) => {
            print(&serde_json::Value::Object(fields.clone()).to_string());
            ExitCode::ANSWERED
        }
        Some(Answer::Text(text)) => {
            print(text);
            ExitCode::ANSWERED
        }
        Some(Answer::List(items)) => {
            for item in items {
                print(item);
            }
            ExitCode::ANSWERED
        }
        None => ExitCode::ANSWERED,
    }
}
