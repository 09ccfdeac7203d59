//! `askbridge exec -- cmd args...`: runs a command whose questions belong to one session.
//!
//! The child gets `ASKBRIDGE_URL`, `ASKBRIDGE_API_TOKEN` and `ASKBRIDGE_SESSION`; `askbridge ask`
//! (and any HTTP client that reads them) asks in that session. When the child exits, is killed,
//! or `exec` itself is interrupted, the session is closed: its questions still pending are
//! cancelled — every surface withdraws their buttons — and a later ask in it (a background
//! process the command left) is refused, so nobody answers a question whose asker is gone.
//! `exec` exits with the child's status (128 + the signal when a signal ended it).
//!
//! The command runs in a process group of its own, and SIGINT / SIGTERM go to the whole group
//! (then SIGKILL, after a grace), so background processes do not outlive an interrupted exec.
//! While it runs, exec renews a lease on its session; if exec is killed outright and cannot
//! close the session, the lease lapses and the server's sweeper closes it instead.

use super::client::api;
use super::{ExecArgs, ExitCode};
use askbridge::client::{ApiClient, ApiError};
use serde_json::json;
use std::time::Duration;

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
    let renewal = match hold(&api, &session).await {
        Ok(renewal) => renewal,
        Err(why) => {
            eprintln!("askbridge: {why}");
            return ExitCode::ERROR;
        }
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(rest)
        .env("ASKBRIDGE_URL", api.base())
        .env("ASKBRIDGE_SESSION", &session)
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    if let Some(token) = api.token() {
        command.env("ASKBRIDGE_API_TOKEN", token);
    }
    let interrupted = interrupts();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("askbridge: cannot run `{program}`: {error}");
            close(&api, &session).await;
            return ExitCode::ERROR;
        }
    };
    // The group's id is the child's pid, read now: once the child is reaped it is gone, while
    // the group may live on.
    let group = child.id();
    let renewing = renewal.map(|every| tokio::spawn(renew(api.clone(), session.clone(), every)));
    let code = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => exit_code(status),
            Err(error) => {
                eprintln!("askbridge: cannot wait for `{program}`: {error}");
                ExitCode::ERROR
            }
        },
        signal = interrupted => {
            stop_group(&mut child, group, signal).await;
            128 + signal as u8
        }
    };
    if let Some(renewing) = renewing {
        renewing.abort();
    }
    close(&api, &session).await;
    code
}

/// Takes the session's lease: `Ok(Some(every))` to renew it that often, `Ok(None)` when the
/// server keeps no leases (an older askbridge), `Err` when the session is closed.
async fn hold(api: &ApiClient, session: &str) -> Result<Option<Duration>, String> {
    match api.post(&lease_path(session), &json!({"open": true})).await {
        Ok(body) => {
            let every = body["renew_every_ms"].as_u64().unwrap_or(10_000).max(100);
            Ok(Some(Duration::from_millis(every)))
        }
        Err(ApiError::Refused { status: 404, .. }) => {
            eprintln!(
                "askbridge: this askbridge keeps no session leases (an older version); if exec is killed, its questions stay pending"
            );
            Ok(None)
        }
        Err(error @ ApiError::Refused { .. }) => {
            Err(format!("cannot hold session `{session}`: {error}"))
        }
        // askbridge may come up while the command runs: keep trying.
        Err(error) => {
            eprintln!("askbridge: cannot hold session `{session}` yet (retrying): {error}");
            Ok(Some(RENEW_UNKNOWN))
        }
    }
}

/// How often the lease is renewed when the server has not said (it could not be reached).
const RENEW_UNKNOWN: Duration = Duration::from_secs(10);

/// Renews the session's lease every `every` while the command runs.
async fn renew(api: ApiClient, session: String, every: Duration) {
    let mut warned = false;
    loop {
        tokio::time::sleep(every).await;
        match api.post(&lease_path(&session), &json!({})).await {
            Ok(_) => warned = false,
            Err(error) if !warned => {
                warned = true;
                eprintln!("askbridge: cannot renew session `{session}` (retrying): {error}");
            }
            Err(_) => {}
        }
    }
}

fn lease_path(session: &str) -> String {
    format!("/api/sessions/{session}/lease")
}

/// Passes `signal` to the command's whole group, gives it a moment, then kills what is left.
async fn stop_group(child: &mut tokio::process::Child, group: Option<u32>, signal: i32) {
    let Some(group) = group else {
        return;
    };
    signal_group(group, signal);
    let grace = async {
        let _ = child.wait().await;
        while group_alive(group) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(GRACE, grace).await;
    signal_group(group, 9);
    let _ = child.kill().await;
}

/// How long the command's group has to end after SIGINT or SIGTERM before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Closes the session: its pending questions are cancelled, later asks in it refused. An older
/// askbridge without `close` gets the cancel it knows.
async fn close(api: &ApiClient, session: &str) {
    let reason = json!({"reason": "the command that asked it ended"});
    match api
        .post(&format!("/api/sessions/{session}/close"), &reason)
        .await
    {
        Ok(body) => report(&body),
        Err(ApiError::Refused { status: 404, .. }) => cancel_leftovers(api, session).await,
        Err(error) => eprintln!("askbridge: cannot close session `{session}`: {error}"),
    }
}

fn report(body: &serde_json::Value) {
    let cancelled = body["cancelled"].as_u64().unwrap_or_default();
    if cancelled > 0 {
        eprintln!("askbridge: {cancelled} question(s) left pending by the command were cancelled");
    }
}

/// Cancels the session's pending questions.
async fn cancel_leftovers(api: &ApiClient, session: &str) {
    let path = format!("/api/sessions/{session}/cancel");
    let reason = json!({"reason": "the command that asked it ended"});
    match api.post(&path, &reason).await {
        Ok(body) => report(&body),
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

/// Listens for SIGINT and SIGTERM from now on; the future completes with the signal's number.
/// Called before the command starts: a signal that came between the start and the first poll
/// would otherwise take its default action, ending exec alone and leaving the command's group.
fn interrupts() -> impl std::future::Future<Output = i32> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listening = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        async move {
            match listening {
                (Ok(mut int), Ok(mut term)) => tokio::select! {
                    _ = int.recv() => 2,
                    _ = term.recv() => 15,
                },
                _ => std::future::pending().await,
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
            2
        }
    }
}

/// Sends `signal` to every process of `group` (the command and whatever it started).
#[cfg(unix)]
fn signal_group(group: u32, signal: i32) {
    let _ = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(format!("-{group}"))
        .stderr(std::process::Stdio::null())
        .status();
}

/// Is any process of `group` left?
#[cfg(unix)]
fn group_alive(group: u32) -> bool {
    std::process::Command::new("kill")
        .arg("-0")
        .arg("--")
        .arg(format!("-{group}"))
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(not(unix))]
fn signal_group(_: u32, _: i32) {}

#[cfg(not(unix))]
fn group_alive(_: u32) -> bool {
    false
}
