//! `askbridge ask`, `confirm`, `approve` and `exec` against a running askbridge: the answer on
//! stdout, each exit code, Ctrl-C withdrawing the question, `exec` cancelling what its command
//! left pending.

use crate::fakes::telegram::FakeTelegram;
use crate::support::{
    Process, askbridge_binary, eventually, eventually_some, http, memory_bridge,
    pending_in_session, serve_api,
};
use askbridge::BridgeOptions;
use askbridge::bridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge_core::Identity;
use serde_json::{Value, json};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{Child, Command};

const WITHIN: Duration = Duration::from_secs(15);

/// `askbridge <args>` against `base`, with a clean environment.
pub(crate) fn cli(base: &str, args: &[&str]) -> Child {
    Command::new(askbridge_binary())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("ASKBRIDGE_URL", base)
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

pub(crate) async fn finish(child: Child) -> (i32, String, String) {
    let output = tokio::time::timeout(WITHIN, child.wait_with_output())
        .await
        .expect("the command ended")
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

pub(crate) async fn post(base: &str, path: &str, body: Value) -> u16 {
    http()
        .post(format!("{base}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn server() -> String {
    let (bridge, _) = memory_bridge().await;
    serve_api(bridge).await
}

#[tokio::test]
async fn ask_prints_the_answer_and_exits_0() {
    let base = server().await;
    let child = cli(
        &base,
        &[
            "ask",
            "Which lib?",
            "--options",
            "dayjs,luxon",
            "--session",
            "c1",
        ],
    );
    let q = pending_in_session(&base, "c1").await;
    assert_eq!(q["options"], json!(["dayjs", "luxon"]));
    let id = q["id"].as_str().unwrap();
    assert_eq!(
        post(
            &base,
            &format!("/api/questions/{id}/reply"),
            json!({"answer": "luxon"})
        )
        .await,
        200
    );
    let (code, stdout, _) = finish(child).await;
    assert_eq!((code, stdout.as_str()), (0, "luxon\n"));
    // --json: the whole question, with its resolution and outcome line.
    let child = cli(
        &base,
        &[
            "ask",
            "Which?",
            "--options",
            "a,b",
            "--multi",
            "--session",
            "c2",
            "--json",
        ],
    );
    let id = pending_in_session(&base, "c2").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    post(
        &base,
        &format!("/api/questions/{id}/reply"),
        json!({"answer": ["a", "b"]}),
    )
    .await;
    let (code, stdout, _) = finish(child).await;
    assert_eq!(code, 0);
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["resolution"]["value"], json!(["a", "b"]));
    assert_eq!(printed["outcome"], "Answered: a, b, by api via api");
}

#[tokio::test]
async fn confirm_exits_0_for_yes_and_1_for_no() {
    let base = server().await;
    for (answer, expected) in [(true, 0), (false, 1)] {
        let session = format!("yn-{answer}");
        let child = cli(&base, &["confirm", "Deploy?", "--session", &session]);
        let id = pending_in_session(&base, &session).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        post(
            &base,
            &format!("/api/questions/{id}/reply"),
            json!({"answer": answer}),
        )
        .await;
        let (code, _, _) = finish(child).await;
        assert_eq!(code, expected, "answered {answer}");
    }
}

#[tokio::test]
async fn a_decline_exits_3_with_the_message_on_stderr() {
    let base = server().await;
    let child = cli(&base, &["ask", "Ship it?", "--session", "d"]);
    let id = pending_in_session(&base, "d").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    post(
        &base,
        &format!("/api/questions/{id}/reject"),
        json!({"message": "not on Fridays"}),
    )
    .await;
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(code, 3);
    assert_eq!(stdout, "");
    assert!(stderr.contains("not on Fridays"), "{stderr}");
}

#[tokio::test]
async fn a_timeout_exits_4_unless_a_default_answers() {
    let base = server().await;
    let (code, _, stderr) = finish(cli(&base, &["ask", "Anyone?", "--timeout", "1s"])).await;
    assert_eq!(code, 4, "{stderr}");
    let (code, stdout, stderr) = finish(cli(
        &base,
        &["confirm", "Proceed?", "--timeout", "1s", "--default", "no"],
    ))
    .await;
    assert_eq!((code, stdout.as_str()), (1, "no\n"), "{stderr}");
    assert!(stderr.contains("default"), "{stderr}");
}

#[tokio::test]
async fn an_unreachable_server_exits_2_naming_the_url() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, stderr) = finish(cli(&base, &["ask", "Hello?"])).await;
    assert_eq!(code, 2);
    assert!(stderr.contains(&base), "{stderr}");
    // A usage error is 2 as well.
    let (code, _, _) = finish(cli(&base, &["ask"])).await;
    assert_eq!(code, 2);
}

#[tokio::test]
async fn ctrl_c_cancels_the_question_and_exits_130() {
    let base = server().await;
    let child = cli(&base, &["ask", "Wait for me?", "--session", "int"]);
    let id = pending_in_session(&base, "int").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let (code, _, stderr) = finish(child).await;
    assert_eq!(code, 130, "{stderr}");
    let q: Value = http()
        .get(format!("{base}/api/questions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["status"], "cancelled");
}

/// A running askbridge whose one approver is the API, its base URL.
pub(crate) async fn api_approving_server() -> String {
    let bridge = Bridge::builder(Arc::new(MemoryStore::default()))
        .options(BridgeOptions {
            approvers: vec![Identity::new("api")],
            ..BridgeOptions::default()
        })
        .start()
        .await
        .unwrap();
    serve_api(bridge).await
}

#[tokio::test]
async fn approve_exits_0_when_allowed_and_3_when_rejected() {
    let base = api_approving_server().await;
    let args = r#"{"workspace": "prod"}"#;
    let child = cli(
        &base,
        &[
            "approve",
            "--tool",
            "terraform",
            "--args",
            args,
            "--session",
            "ap1",
        ],
    );
    let q = pending_in_session(&base, "ap1").await;
    assert_eq!(q["action"]["tool"], "terraform");
    let id = q["id"].as_str().unwrap();
    post(
        &base,
        &format!("/api/questions/{id}/reply"),
        json!({"answer": "once"}),
    )
    .await;
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!((code, stdout.as_str()), (0, "once\n"), "{stderr}");
    let child = cli(&base, &["approve", "--tool", "rm", "--session", "ap2"]);
    let id = pending_in_session(&base, "ap2").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    post(
        &base,
        &format!("/api/questions/{id}/reject"),
        json!({"message": "too risky"}),
    )
    .await;
    let (code, _, stderr) = finish(child).await;
    assert_eq!(code, 3);
    assert!(stderr.contains("too risky"), "{stderr}");
}

#[tokio::test]
async fn approve_prints_the_edited_arguments_and_refuses_what_it_does_not_allow() {
    let base = api_approving_server().await;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    let fields = json!({"type": "object", "properties": {
        "workspace": {"type": "string", "enum": ["staging", "prod"]}}});
    std::fs::write(&schema, fields.to_string()).unwrap();
    let child = cli(
        &base,
        &[
            "approve",
            "--tool",
            "terraform",
            "--args",
            r#"{"workspace": "prod"}"#,
            "--allow",
            "once,edit,reject",
            "--schema",
            schema.to_str().unwrap(),
            "--session",
            "ap-edit",
        ],
    );
    let q = pending_in_session(&base, "ap-edit").await;
    assert_eq!(q["allowed"], json!(["once", "edit", "reject"]));
    let reply = format!("/api/questions/{}/reply", q["id"].as_str().unwrap());
    let refused = post(&base, &reply, json!({"decision": "always"})).await;
    assert_eq!(refused, 422, "always is not offered");
    let wrong = json!({"decision": "edit", "args": {"workspace": "dev"}});
    assert_eq!(post(&base, &reply, wrong).await, 422);
    let edit = json!({"decision": "edit", "args": {"workspace": "staging"}});
    assert_eq!(post(&base, &reply, edit).await, 200);
    let (code, stdout, stderr) = finish(child).await;
    assert_eq!(
        (code, stdout.as_str()),
        (0, "{\"workspace\":\"staging\"}\n"),
        "{stderr}"
    );
    assert!(stderr.contains("approved with changes"), "{stderr}");

    let child = cli(
        &base,
        &[
            "approve",
            "--tool",
            "ask_user",
            "--allow",
            "respond,reject",
            "--session",
            "ap-r",
        ],
    );
    let id = pending_in_session(&base, "ap-r").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let respond = json!({"decision": "respond", "text": "the blue one"});
    assert_eq!(
        post(&base, &format!("/api/questions/{id}/reply"), respond).await,
        200
    );
    let (code, stdout, _) = finish(child).await;
    assert_eq!((code, stdout.as_str()), (6, "the blue one\n"));
    let bad = cli(&base, &["approve", "--tool", "x", "--allow", "once,maybe"]);
    let (code, _, stderr) = finish(bad).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("maybe"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_cancels_what_its_killed_command_left_pending() {
    const GROUP: i64 = -100_777;
    let fake = FakeTelegram::start();
    let server = Process::spawn(
        &["serve", "--ephemeral"],
        &[
            ("TELEGRAM_BOT_TOKEN", "1:fake".into()),
            ("TELEGRAM_API_URL", fake.base.clone()),
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
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > {pid}; {bin} ask 'First?' --options a,b --to telegram:{GROUP}; {bin} ask 'Second?' --options c,d --to telegram:{GROUP}",
        pid = pid_file.display(),
        bin = askbridge_binary(),
    );
    let exec = cli(
        &base,
        &["exec", "--session", "job", "--", "sh", "-c", &script],
    );
    let first = pending_in_session(&base, "job").await;
    let first_id = first["id"].as_str().unwrap().to_owned();
    post(
        &base,
        &format!("/api/questions/{first_id}/reply"),
        json!({"answer": "a"}),
    )
    .await;
    let second = eventually_some(WITHIN, "the second question", || {
        let base = base.clone();
        async move {
            let q = pending_in_session(&base, "job").await;
            (q["prompt"] == "Second?").then_some(q)
        }
    })
    .await;
    let second_id = second["id"].as_str().unwrap().to_owned();
    // The command dies without a word.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    std::process::Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    let (code, _, stderr) = finish(exec).await;
    assert_eq!(
        code,
        128 + 9,
        "exec exits with the command's status: {stderr}"
    );
    let q: Value = http()
        .get(format!("{base}/api/questions/{second_id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(q["status"], "cancelled");
    // And Telegram shows it withdrawn.
    let probe = fake.clone();
    eventually(
        WITHIN,
        "the second question withdrawn on Telegram",
        move || {
            let fake = probe.clone();
            async move {
                fake.sent_in(GROUP).iter().any(|m| {
                    m.text.contains("Second?")
                        && m.text.contains("Cancelled")
                        && m.buttons().is_empty()
                })
            }
        },
    )
    .await;
}

#[tokio::test]
async fn help_and_completions_come_from_the_command_definition() {
    let (code, stdout, _) = finish(cli("http://127.0.0.1:9", &["ask", "--help"])).await;
    assert_eq!(code, 0);
    assert!(
        stdout.contains("--answerers") && stdout.contains("ASKBRIDGE_URL"),
        "{stdout}"
    );
    let (code, stdout, _) = finish(cli("http://127.0.0.1:9", &["completions", "bash"])).await;
    assert_eq!(code, 0);
    assert!(
        stdout.contains("askbridge") && stdout.contains("confirm"),
        "{stdout}"
    );
}

#[tokio::test]
async fn ask_takes_a_form_a_quorum_and_reminders_and_prints_a_forms_answer_as_json() {
    let base = server().await;
    let dir = tempfile::tempdir().unwrap();
    let form = dir.path().join("deploy.json");
    std::fs::write(
        &form,
        r#"{"type": "object", "properties": {"env": {"type": "string", "enum": ["staging", "production"]}, "replicas": {"type": "integer", "minimum": 1}}, "required": ["env"]}"#,
    )
    .unwrap();
    let child = cli(
        &base,
        &[
            "ask",
            "Deploy settings?",
            "--form",
            form.to_str().unwrap(),
            "--session",
            "c-form",
            "--answerers",
            "api,telegram:1",
            "--quorum",
            "1",
            "--remind-after",
            "10m",
            "--reminders",
            "2",
        ],
    );
    let q = pending_in_session(&base, "c-form").await;
    assert_eq!(q["kind"], "form");
    assert_eq!(
        q["quorum"],
        json!({"needs": 1, "of": ["api", "telegram:1"]})
    );
    assert_eq!(q["reminders"], json!({"after_s": 600.0, "times": 2}));
    let id = q["id"].as_str().unwrap();
    let answer = json!({"answer": {"env": "production", "replicas": 2}});
    assert_eq!(
        post(&base, &format!("/api/questions/{id}/reply"), answer).await,
        200
    );
    let (code, stdout, _) = finish(child).await;
    assert_eq!(code, 0);
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed, json!({"env": "production", "replicas": 2}));
}
