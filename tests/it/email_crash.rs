//! `askbridge serve` SIGKILLed while its mailbox reader holds a reply, then restarted: the
//! question is answered exactly once, its sender confirmed once, and the reply ends in the
//! processed folder. The real binary on a real redis-server and real mail servers; the kill
//! lands exactly at the point under test through `ASKBRIDGE_EMAIL_TEST_HOLD`, with which the
//! reader writes a file there and stops (see `adapters/email/src/mailbox.rs`).

use crate::email::{ask_body, held};
use crate::mail_servers::MailServers;
use crate::mails::{ALICE, BRIDGE, reply_mail, serve_env};
use crate::redis_server::RedisServer;
use crate::support::{Process, eventually, get_json, post_json};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// Time for the lease the killed process held to lapse (6 s), and the next one to read.
const AFTER_RESTART: Duration = Duration::from_secs(40);

fn serve(servers: &MailServers, redis: &RedisServer, hold: Option<&Path>, point: &str) -> Process {
    let mut env = serve_env(servers, "crash-secret");
    env.push(("REDIS_URL", redis.url()));
    if let Some(file) = hold {
        env.push((
            "ASKBRIDGE_EMAIL_TEST_HOLD",
            format!("{point}:{}", file.display()),
        ));
    }
    Process::spawn(&["serve"], &env)
}

/// Killed at `point` (`fetched`: the reply read, nothing recorded; `handled`: the answer
/// recorded and confirmed, the mail not flagged yet; `flagged`: flagged, not moved yet), then
/// restarted.
async fn killed_at(point: &str) {
    let servers = MailServers::start();
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let hold = dir.path().join("held");
    let mut first = serve(&servers, &redis, Some(&hold), point);
    let body = ask_body(&[&format!("email:{ALICE}")]);
    let created: Value = post_json(&first.base, "/api/questions", body)
        .await
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    eventually(AFTER_RESTART, "the question mail", || async {
        !held(&servers, ALICE).is_empty()
    })
    .await;
    let question = held(&servers, ALICE).remove(0);
    let address = question.reply_address();
    let reply = reply_mail(
        ALICE,
        &address,
        "crash-1@example.com",
        "x@y",
        "pass",
        "2\r\n",
    );
    servers.send(ALICE, &address, reply.as_bytes());
    eventually(AFTER_RESTART, "the reader holds the reply", || async {
        hold.exists()
    })
    .await;
    let before = get_json(&first.base, &format!("/api/questions/{id}")).await;
    let expected = if point == "fetched" {
        "pending"
    } else {
        "answered"
    };
    assert_eq!(before["status"], expected, "at {point}: {before}");
    first.kill();

    let second = serve(&servers, &redis, None, point);
    eventually(
        AFTER_RESTART,
        "the reply read after the restart",
        || async {
            servers.folder(BRIDGE, "INBOX").is_empty()
                && servers.folder(BRIDGE, askbridge_email::PROCESSED).len() == 1
        },
    )
    .await;
    let q = get_json(&second.base, &format!("/api/questions/{id}")).await;
    assert_eq!(q["status"], "answered", "{q}");
    assert_eq!(q["resolution"]["value"], "date-fns", "{q}");
    let confirmations = || {
        held(&servers, ALICE)
            .iter()
            .filter(|m| m.text().starts_with("✓ Answered: date-fns"))
            .count()
    };
    eventually(AFTER_RESTART, "the confirmation", || async {
        confirmations() >= 1
    })
    .await;
    // The confirmation went out before the mail was moved; a moment for a second one to arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(confirmations(), 1, "confirmed once");
    let audit = get_json(&second.base, "/api/audit?session_id=mail").await;
    let entries = audit["entries"].as_array().unwrap();
    let resolved = entries.iter().filter(|e| e["event"] == "resolved").count();
    let refused = entries.iter().filter(|e| e["event"] == "refused").count();
    assert_eq!((resolved, refused), (1, 0), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_fetching_a_reply_answers_it_once_after_the_restart() {
    killed_at("fetched").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_answering_before_flagging_answers_once_and_confirms_once() {
    killed_at("handled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_flagging_before_moving_the_next_read_moves_it() {
    killed_at("flagged").await;
}
