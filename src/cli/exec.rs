//! `askbridge exec -- cmd args...`: runs a command whose questions belong to one session.
//!
//! The child gets `ASKBRIDGE_URL`, `ASKBRIDGE_API_TOKEN` and `ASKBRIDGE_SESSION`; `askbridge ask`
//! (and any HTTP client that reads them) asks in that session. When the child exits, is killed,
//! or `exec` itself is interrupted, the session's questions still pending are cancelled — every
//! surface withdraws their buttons — so nobody answers a question whose asker is gone. `exec`
//! exits with the child's status (128 + the signal when a signal ended it).

use super::client::api;
use super::{ExecArgs, ExitCode};
use askbridge::client::ApiClient;
use serde_json::json;

/// `askbridge exec`.
pub(crate) async fn exec(args: ExecArgs) -> u8 {
    let api = match api(&args.remote) {
        Ok(api) => api,
        Err(error) => {
            eprintln!("askbridge: {error:#}");
            return ExitCode::ERROR;
        }
    };
    let session = args
        .session
        .clone()
        .unwrap_or_else(|| format!("exec-{}", askbridge_core::QuestionId::random()));
    let (program, rest) = match args.command.split_first() {
        Some(split) => split,
        None => {
            eprintln!("askbridge: exec needs a command after --");
            return ExitCode::ERROR;
        }
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(rest)
        .env("ASKBRIDGE_URL", api.base())
        .env("ASKBRIDGE_SESSION", &session)
        .kill_on_drop(true);
    if let Some(token) = api.token() {
        command.env("ASKBRIDGE_API_TOKEN", token);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("askbridge: cannot run `{program}`: {error}");
            return ExitCode::ERROR;
        }
    };
    let code = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => exit_code(status),
            Err(error) => {
                eprintln!("askbridge: cannot wait for `{program}`: {error}");
                ExitCode::ERROR
            }
        },
        signal = interrupted() => {
            // Pass the signal on, give the child a moment, then make sure it is gone.
            forward(&child, signal);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await;
            let _ = child.kill().await;
            128 + signal as u8
        }
    };
    cancel_leftovers(&api, &session).await;
    code
}

/// Cancels the session's pending questions.
async fn cancel_leftovers(api: &ApiClient, session: &str) {
    let path = format!("/api/sessions/{session}/cancel");
    let reason = json!({"reason": "the command that asked it ended"});
    match api.post(&path, &reason).await {
        Ok(body) => {
            let cancelled = body["cancelled"].as_u64().unwrap_or_default();
            if cancelled > 0 {
                eprintln!(
                    "askbridge: {cancelled} question(s) left pending by the command were cancelled"
                );
            }
        }
        Err(error) => {
            eprintln!("askbridge: cannot cancel the command's pending questions: {error}")
        }
    }
}

#[cfg(unix)]
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128 + signal as u8,
        (None, None) => ExitCode::ERROR,
    }
}

#[cfg(not(unix))]
fn exit_code(status: std::process::ExitStatus) -> u8 {
    status.code().map_or(ExitCode::ERROR, |code| code as u8)
}

/// Completes on SIGINT or SIGTERM, with the signal's number.
async fn interrupted() -> i32 {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                _ = int.recv() => 2,
                _ = term.recv() => 15,
            },
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        2
    }
}

#[cfg(unix)]
fn forward(child: &tokio::process::Child, signal: i32) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status();
    }
}

#[cfg(not(unix))]
fn forward(_: &tokio::process::Child, _: i32) {}
