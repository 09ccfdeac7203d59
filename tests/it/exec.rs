//! `askbridge exec` leaves no orphans: its command runs in a process group of its own, its
//! session is closed when it ends (a late ask in it is refused), and when exec itself is killed
//! outright its session's lease lapses and the sweeper cancels what the command left pending.

use crate::fakes::telegram::FakeTelegram;
use crate::support::{
    Process, askbridge_binary, eventually, eventually_some, http, memory_bridge,
    pending_in_session, serve_api,
};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

const WITHIN: Duration = Duration::from_secs(15);
const GROUP: i64 = -100_778;

fn exec(base: &str, session: &str, script: &str) -> Child {
    Command::new(askbridge_binary())
        .args(["exec", "--session", session, "--", "sh", "-c", script])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ASKBRIDGE_URL", base)
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn status_of(base: &str, id: &str) -> Value {
    http()
        .get(format!("{base}/api/questions/{id}"))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["status"]
        .clone()
}

/// Kills the process whose pid `file` holds, if it is still there (an orphan the test made).
fn kill_pid_in(file: &std::path::Path) {
    if let Ok(pid) = std::fs::read_to_string(file) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", pid.trim()])
            .stderr(Stdio::null())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grandchild_asking_after_the_command_ended_is_refused() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let dir = tempfile::tempdir().unwrap();
    let (out, pid) = (dir.path().join("out"), dir.path().join("pid"));
    let script = format!(
        "( echo $$ > /dev/null; sh -c 'echo $$ > {pid}; sleep 1; exec {bin} ask Late? --options a,b --to chat:1'; echo \"exit $?\" ) > {out} 2>&1 &",
        pid = pid.display(),
        out = out.display(),
        bin = askbridge_binary(),
    );
    let child = exec(&base, "gone", &script);
    let output = tokio::time::timeout(WITHIN, child.wait_with_output())
        .await
        .expect("exec ended with its command")
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let printed = eventually_some(WITHIN, "the grandchild's ask ended", || {
        let out = out.clone();
        async move {
            let text = std::fs::read_to_string(&out).ok()?;
            text.contains("exit ").then_some(text)
        }
    })
    .await;
    kill_pid_in(&pid);
    assert!(!printed.contains("exit 0"), "{printed}");
    assert!(
        printed.contains("closed"),
        "the refusal says why: {printed}"
    );
    let list: Value = http()
        .get(format!("{base}/api/questions?session_id=gone"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        list["questions"],
        serde_json::json!([]),
        "nothing was asked"
    );
    // A new exec naming the session opens it again.
    let again = exec(&base, "gone", "true");
    let output = tokio::time::timeout(WITHIN, again.wait_with_output())
        .await
        .expect("the second exec ended")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_exec_has_its_commands_question_cancelled_once_its_lease_lapses() {
    let fake = FakeTelegram::start();
    let server = Process::spawn(
        &["serve", "--ephemeral"],
        &[
            ("TELEGRAM_BOT_TOKEN", "1:fake".into()),
            ("TELEGRAM_API_URL", fake.base.clone()),
            ("ASKBRIDGE_SESSION_LEASE_S", "1".into()),
        ],
    );
    let base = server.base.clone();
    let probe = fake.clone();
    eventually(WITHIN, "Telegram connected", move || {
        let fake = probe.clone();
        async move { fake.methods().iter().any(|m| m == "deletewebhook") }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let pid = dir.path().join("pid");
    let script = format!(
        "echo $$ > {pid}; exec {bin} ask 'Still there?' --options a,b --to telegram:{GROUP}",
        pid = pid.display(),
        bin = askbridge_binary(),
    );
    let mut child = exec(&base, "killed", &script);
    let id = pending_in_session(&base, "killed").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let cancelled = tokio::time::timeout(WITHIN, async {
        while status_of(&base, &id).await != "cancelled" {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    kill_pid_in(&pid);
    assert!(
        cancelled.is_ok(),
        "the question is still {}",
        status_of(&base, &id).await
    );
}

/// Is process `pid` still running (a zombie nobody reaped yet counts as gone)?
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_exec_ends_the_commands_background_processes_too() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let dir = tempfile::tempdir().unwrap();
    let pid = dir.path().join("pid");
    // A shell's background job ignores SIGINT; exec ends it anyway, after a grace period.
    let script = format!("sleep 1000 & echo $! > {pid}; wait", pid = pid.display());
    let child = exec(&base, "int", &script);
    let background = eventually_some(WITHIN, "the background process started", || {
        let pid = pid.clone();
        async move {
            let text = std::fs::read_to_string(&pid).ok()?;
            let text = text.trim().to_owned();
            (!text.is_empty()).then_some(text)
        }
    })
    .await;
    let exec_pid = child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &exec_pid])
        .status()
        .unwrap();
    // Waits for exec itself: the background process holds its stderr open while it lives.
    let mut child = child;
    let status = tokio::time::timeout(WITHIN, child.wait())
        .await
        .expect("exec ended")
        .unwrap();
    let gone = tokio::time::timeout(WITHIN, async {
        while alive(&background) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    kill_pid_in(&pid);
    assert_eq!(status.code(), Some(130));
    assert!(gone.is_ok(), "the background process outlived exec");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_exec_reaches_the_commands_children_at_once() {
    let (bridge, _) = memory_bridge().await;
    let base = serve_api(bridge).await;
    let dir = tempfile::tempdir().unwrap();
    let pid = dir.path().join("pid");
    // A child of the command in the foreground of its pipeline: it keeps SIGINT's default
    // action, so the group's SIGINT ends it well before exec's grace runs out.
    let script = format!(
        "sh -c 'echo $$ > {pid}; exec sleep 1000' | cat",
        pid = pid.display()
    );
    let mut child = exec(&base, "int-now", &script);
    let grandchild = eventually_some(WITHIN, "the grandchild started", || {
        let pid = pid.clone();
        async move {
            let text = std::fs::read_to_string(&pid).ok()?;
            let text = text.trim().to_owned();
            (!text.is_empty()).then_some(text)
        }
    })
    .await;
    let exec_pid = child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &exec_pid])
        .status()
        .unwrap();
    let gone = tokio::time::timeout(Duration::from_secs(2), async {
        while alive(&grandchild) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    kill_pid_in(&pid);
    let _ = tokio::time::timeout(WITHIN, child.wait()).await;
    assert!(gone.is_ok(), "SIGINT did not reach the command's child");
}
