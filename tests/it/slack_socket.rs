//! Slack over Socket Mode: askbridge's Socket Mode client and the real slack-morphism Web API client
//! against the fakes in `fakes/slack.rs` (which hands out the socket's URL from
//! `apps.connections.open`) and `fakes/slack_socket.rs` (which enforces the 3 s acknowledgement
//! and sends unacknowledged envelopes again, to another connection), with real bridges behind:
//! in this process on a memory store or one real redis-server, or `askbridge serve` processes.

use crate::fakes::slack::{APP_TOKEN, FakeSlack, TOKEN};
use crate::fakes::slack_socket::{ACK_WITHIN, FakeSocket};
use crate::support::{
    Process, RedisServer, eventually, eventually_some, get_json, post_json, redis_store_on,
};
use askbridge::Bridge;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{Store, StoreOptions};
use askbridge_core::audit::{AuditEvent, AuditFilter};
use askbridge_core::{Answer, Inbox, Question, QuestionId, Secret, Status};
use askbridge_slack::{Slack, SlackOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const WITHIN: Duration = Duration::from_secs(20);
pub(crate) use crate::fakes::rounds::{ALICE, CHANNEL, slack_click as click, slack_fakes as fakes};

/// A bridge over `store` with the Slack channel, receiving over Socket Mode.
struct Replica {
    bridge: Bridge,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.bridge.shutdown();
    }
}

async fn replica(web: &FakeSlack, store: Arc<dyn Store>) -> Replica {
    let slack = Slack::connect(SlackOptions {
        bot_token: Secret::new(TOKEN),
        app_token: Some(Secret::new(APP_TOKEN)),
        signing_secret: None,
        api_url: Some(web.api_url()),
    })
    .await
    .unwrap();
    assert!(slack.uses_socket_mode());
    let channel = slack.channel();
    let (bridge, _) = crate::support::bridge_with(store, |b| b.channel(channel)).await;
    let inbox: Arc<dyn Inbox> = Arc::new(bridge.clone());
    let shutdown = bridge.shutdown_signal();
    tokio::spawn(async move { slack.run_socket(inbox, shutdown).await.unwrap() });
    Replica { bridge }
}

async fn memory_replica(web: &FakeSlack) -> Replica {
    replica(web, Arc::new(MemoryStore::default())).await
}

async fn ask(bridge: &Bridge) -> Question {
    let request = json!({"session_id": "s1", "prompt": "Which library?",
                         "options": ["dayjs", "luxon"], "targets": [format!("slack:{CHANNEL}")]});
    bridge
        .create(serde_json::from_value(request).unwrap())
        .await
        .unwrap()
}

/// The ts of the message showing question `id` (through any replica: the store is shared).
async fn shown(bridge: &Bridge, id: &QuestionId) -> String {
    eventually_some(WITHIN, "the question is shown on Slack", || async {
        let shown = bridge.store().shown(id).await.unwrap();
        shown.into_iter().next().map(|s| s.reference)
    })
    .await
}

/// The open connections, once there are `count`.
async fn connections(socket: &FakeSocket, count: usize) -> Vec<usize> {
    eventually_some(
        WITHIN,
        &format!("{count} Socket Mode connections"),
        || async {
            let open = socket.open();
            (open.len() == count).then_some(open)
        },
    )
    .await
}

/// The connection that acknowledged envelope `id`, once one has; every acknowledgement so far
/// within Slack's 3 s.
async fn acked(socket: &FakeSocket, id: &str) -> usize {
    let (by, after) = eventually_some(WITHIN, &format!("envelope {id} acknowledged"), || async {
        socket.envelope(id).acked
    })
    .await;
    assert!(after <= ACK_WITHIN, "{id} acknowledged after {after:?}");
    assert_eq!(socket.failures(), Vec::<String>::new());
    by
}

/// Asks on `bridge`, clicks option `choice` at `at` over the socket, and waits for the
/// acknowledgement and the answer. Returns the question as answered, its message's ts and the
/// envelope's id.
async fn ask_and_click(
    socket: &FakeSocket,
    bridge: &Bridge,
    choice: usize,
    at: &str,
) -> (Question, String, String) {
    let question = ask(bridge).await;
    let ts = shown(bridge, &question.id).await;
    let envelope = socket.send(
        "interactive",
        click(ALICE, question.id.as_str(), &ts, choice, at),
    );
    acked(socket, &envelope).await;
    (wait_answered(bridge, &question).await, ts, envelope)
}

async fn wait_answered(bridge: &Bridge, question: &Question) -> Question {
    eventually_some(WITHIN, "the question is answered", || async {
        let now = bridge.get(&question.id).await.unwrap();
        (now.status == Status::Answered).then_some(now)
    })
    .await
}

/// What the audit trail holds of `user` on session s1: (answers, refusals).
async fn audited(bridge: &Bridge, user: &str) -> (usize, usize) {
    let entries = bridge
        .store()
        .audit(&AuditFilter {
            session_id: Some("s1".into()),
            by: Some(format!("slack:{user}")),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    let count = |event: AuditEvent| entries.iter().filter(|e| e.event == event).count();
    (count(AuditEvent::Resolved), count(AuditEvent::Refused))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_over_the_socket_answers_within_the_ack_limit_and_the_message_is_withdrawn() {
    let (web, socket) = fakes();
    let one = memory_replica(&web).await;
    connections(&socket, 1).await;
    let (answered, ts, _) = ask_and_click(&socket, &one.bridge, 2, "1700000001.000100").await;
    let resolution = answered.resolution.expect("a resolution");
    assert_eq!(resolution.value, Some(Answer::Text("luxon".into())));
    eventually(
        WITHIN,
        "the message is updated without its buttons",
        || async {
            web.message(CHANNEL, &ts).is_some_and(|m| {
                let blocks = m["blocks"].as_array().cloned().unwrap_or_default();
                !blocks.iter().any(|b| b["type"] == "actions")
            }) && !web.calls_of("chat.update").is_empty()
        },
    )
    .await;

    // A slash command takes the same dispatch as in HTTP mode, answered at its response_url.
    let command = socket.send(
        "slash_commands",
        json!({"command": "/pending", "text": "", "user_id": ALICE, "user_name": "alice",
               "channel_id": CHANNEL, "trigger_id": "trigger-pending",
               "response_url": web.response_url("pending")}),
    );
    acked(&socket, &command).await;
    eventually(WITHIN, "/pending answered at its response_url", || async {
        web.calls_of("response_url")
            .iter()
            .any(|c| c.body["id"] == "pending")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_envelope_twice_counts_once() {
    let (web, socket) = fakes();
    let one = memory_replica(&web).await;
    let open = connections(&socket, 1).await;
    let (_, _, envelope) = ask_and_click(&socket, &one.bridge, 1, "1700000002.000100").await;
    socket.resend_to(&envelope, open[0]);
    eventually(WITHIN, "the repeat acknowledged too", || async {
        socket.envelope(&envelope).acks.len() == 2
    })
    .await;
    // The repeat's acknowledgement went after its commit: handled, it would have left a refusal.
    assert_eq!(audited(&one.bridge, ALICE).await, (1, 0));
    assert!(web.calls_of("chat.postEphemeral").is_empty());
    assert_eq!(socket.failures(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_both_connect_and_a_retry_on_the_other_counts_once() {
    let redis = RedisServer::start();
    let (web, socket) = fakes();
    let store = || async { Arc::new(redis_store_on(&redis, StoreOptions::default()).await) };
    let first = replica(&web, store().await).await;
    let second = replica(&web, store().await).await;
    let open = connections(&socket, 2).await;
    let question = ask(&first.bridge).await;
    let ts = shown(&second.bridge, &question.id).await;

    let envelope = socket.send_to(
        open[0],
        "interactive",
        click(ALICE, question.id.as_str(), &ts, 2, "1700000003.000100"),
    );
    assert_eq!(acked(&socket, &envelope).await, open[0]);
    wait_answered(&second.bridge, &question).await;
    // Slack retries it on the other replica's connection.
    socket.resend_to(&envelope, open[1]);
    eventually(
        WITHIN,
        "the retry acknowledged by the other replica",
        || async {
            let acks = socket.envelope(&envelope).acks;
            acks.len() == 2 && acks[1].0 == open[1]
        },
    )
    .await;
    assert_eq!(socket.envelope(&envelope).sent_to, vec![open[0], open[1]]);
    assert_eq!(socket.failures(), Vec::<String>::new());
    // The retry's acknowledgement went after its commit: handled, it would have left a refusal.
    assert_eq!(audited(&second.bridge, ALICE).await, (1, 0));
    assert!(web.calls_of("chat.postEphemeral").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slacks_socket_down_at_start_is_retried_until_it_is_back() {
    let (web, socket) = fakes();
    socket.set_up(false);
    let one = memory_replica(&web).await;
    eventually(
        WITHIN,
        "connection attempts while Slack is down",
        || async { web.calls_of("apps.connections.open").len() >= 2 },
    )
    .await;
    assert!(socket.open().is_empty());
    socket.set_up(true);
    connections(&socket, 1).await;
    ask_and_click(&socket, &one.bridge, 1, "1700000004.000100").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_message_reconnects_and_loses_nothing() {
    let (web, socket) = fakes();
    let one = memory_replica(&web).await;
    let old = connections(&socket, 1).await[0];
    let (first, second) = (ask(&one.bridge).await, ask(&one.bridge).await);
    let first_ts = shown(&one.bridge, &first.id).await;
    let second_ts = shown(&one.bridge, &second.id).await;

    socket.disconnect(old);
    // A click still on its way over the old connection.
    let on_old = socket.send_to(
        old,
        "interactive",
        click(ALICE, first.id.as_str(), &first_ts, 1, "1700000005.000100"),
    );
    let new = eventually_some(WITHIN, "a new connection", || async {
        socket.open().into_iter().find(|c| *c != old)
    })
    .await;
    let on_new = socket.send_to(
        new,
        "interactive",
        click(
            ALICE,
            second.id.as_str(),
            &second_ts,
            2,
            "1700000005.000200",
        ),
    );
    acked(&socket, &on_old).await;
    acked(&socket, &on_new).await;
    wait_answered(&one.bridge, &first).await;
    wait_answered(&one.bridge, &second).await;
    assert_eq!(socket.greeted(), 2);
    assert_eq!(audited(&one.bridge, ALICE).await, (2, 0));
}

// `askbridge serve` processes.

fn kill(signal: &str, process: &Process) {
    let sent = std::process::Command::new("kill")
        .args([signal, &process.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_a_replica_loses_no_click() {
    let redis = RedisServer::start();
    let (web, socket) = fakes();
    let env = [
        ("REDIS_URL", redis.url()),
        ("SLACK_BOT_TOKEN", TOKEN.to_owned()),
        ("SLACK_APP_TOKEN", APP_TOKEN.to_owned()),
        ("SLACK_API_URL", web.api_url()),
    ];
    let mut doomed = Process::spawn(&["serve"], &env);
    let doomed_connection = connections(&socket, 1).await[0];
    let survivor = Process::spawn(&["serve"], &env);
    let open = connections(&socket, 2).await;
    let survivor_connection = open.into_iter().find(|c| *c != doomed_connection).unwrap();

    let question = json!({"session_id": "s1", "prompt": "Deploy?", "options": ["yes", "no"],
                          "targets": [format!("slack:{CHANNEL}")]});
    let created: Value = post_json(&survivor.base, "/api/questions", question)
        .await
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().expect("a question id").to_owned();
    eventually(WITHIN, "the question is posted", || async {
        web.calls_of("chat.postMessage")
            .iter()
            .any(|c| c.status == 200 && c.body.to_string().contains(&id))
    })
    .await;
    // The fake's first message.
    let ts = "1700000000.000101";

    // The click reaches a replica that can no longer answer, and dies unacknowledged.
    kill("-STOP", &doomed);
    let envelope = socket.send_to(
        doomed_connection,
        "interactive",
        click(ALICE, &id, ts, 1, "1700000006.000100"),
    );
    doomed.kill();
    assert_eq!(acked(&socket, &envelope).await, survivor_connection);
    assert_eq!(
        socket.envelope(&envelope).sent_to,
        vec![doomed_connection, survivor_connection]
    );
    eventually(WITHIN, "answered by the surviving replica", || async {
        let question = get_json(&survivor.base, &format!("/api/questions/{id}")).await;
        question["status"] == "answered" && question["resolution"]["value"] == "yes"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_its_socket_mode_and_no_token_or_connection_url() {
    let (web, socket) = fakes();
    let mut serve = tokio::process::Command::new(crate::support::askbridge_binary())
        .args(["serve", "--ephemeral"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .env(
            "ASKBRIDGE_HTTP_ADDR",
            format!("127.0.0.1:{}", crate::support::free_port()),
        )
        .env("ASKBRIDGE_LOG", "debug")
        .env("SLACK_BOT_TOKEN", TOKEN)
        .env("SLACK_APP_TOKEN", APP_TOKEN)
        .env("SLACK_API_URL", web.api_url())
        .current_dir(std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let log = Arc::new(std::sync::Mutex::new(String::new()));
    let mut lines = BufReader::new(serve.stderr.take().unwrap()).lines();
    let reading = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut log = reading.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    connections(&socket, 1).await;
    eventually(WITHIN, "serve logs its Socket Mode connection", || async {
        let log = log.lock().unwrap();
        log.contains("connected to Slack (Socket Mode)") && log.contains("mode=\"socket\"")
    })
    .await;
    serve.kill().await.unwrap();
    let log = log.lock().unwrap().clone();
    for secret in [TOKEN, APP_TOKEN, "ticket=", socket.url.as_str()] {
        assert!(!log.contains(secret), "`{secret}` in the log: {log}");
    }
}
