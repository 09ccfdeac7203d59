//! Slack's latency, beside Telegram's in the same run and the same `askbridge serve` (a
//! benchmark, not a test: it asserts only that each step happened):
//!
//! ```sh
//! cargo test --test it slack_latency -- --ignored --nocapture
//! ASKBRIDGE_BINARY=target/release/askbridge cargo test --test it slack_latency -- --ignored --nocapture
//! ```
//!
//! One process on a real redis-server with Slack (Socket Mode: the fake Web API and the fake
//! socket of `fakes/`) and Telegram (the fake Bot API, long polling) on at once. Over [`ROUNDS`]
//! questions each, alternating: from `POST /api/questions` to the fake's `chat.postMessage` (or
//! `sendMessage`), and from a click sent down the socket (or a tap queued) to `GET …/wait`
//! released. It prints the first round's Slack calls as the fakes recorded them: the question,
//! the click's envelope and its acknowledgement, the withdrawal.

use crate::fakes::rounds::{line, seen, slack_fakes, slack_round, telegram_round};
use crate::fakes::slack::{FakeSlack, TOKEN};
use crate::fakes::slack_socket::FakeSocket;
use crate::fakes::telegram::FakeTelegram;
use crate::redis_server::RedisServer;
use crate::slack::{blocks_text, elements};
use crate::support::{Process, askbridge_binary};
use std::sync::Arc;

const ROUNDS: usize = 200;

/// The first round as the fakes recorded it.
fn transcript(web: &FakeSlack, socket: &FakeSocket, envelope: &str) {
    println!("--- one question on Slack, as the fakes recorded it");
    for call in web.calls() {
        if !call.method.starts_with("chat.") {
            continue;
        }
        let buttons: Vec<String> = elements(&call.body)
            .iter()
            .filter_map(|e| {
                Some(format!(
                    "[{}: {}]",
                    e["text"]["text"].as_str()?,
                    e["value"].as_str()?
                ))
            })
            .collect();
        println!(
            "web  {} -> {}: {} {}",
            call.method,
            call.status,
            blocks_text(&call.body)
                .replace("\n\n", " / ")
                .replace('\n', " / "),
            buttons.join(" ")
        );
    }
    let sent = socket.envelope(envelope);
    println!(
        "sock {} envelope {envelope}: {} by {}, sent to connection(s) {:?}, acknowledged {:?}",
        sent.kind,
        sent.payload["actions"][0]["value"],
        sent.payload["user"]["id"],
        sent.sent_to,
        sent.acked
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: cargo test --test it slack_latency -- --ignored --nocapture"]
async fn slack_latency_beside_telegram() {
    let redis = RedisServer::start();
    let (web, socket) = slack_fakes();
    let (web, socket) = (Arc::new(web), Arc::new(socket));
    let telegram = FakeTelegram::start();
    let mut env = telegram.serve_env(&redis);
    env.extend([
        ("SLACK_BOT_TOKEN", TOKEN.to_owned()),
        ("SLACK_APP_TOKEN", crate::fakes::slack::APP_TOKEN.to_owned()),
        ("SLACK_API_URL", web.api_url()),
    ]);
    let process = Process::spawn(&["serve"], &env);
    let base = process.base.clone();
    let open = socket.clone();
    seen(move || !open.open().is_empty()).await;

    // A round each first, not counted; the first Slack round is the transcript's.
    let (_, _, envelope) = slack_round(&web, &socket, &base, 0).await;
    let (withdrawn, acked, id) = (web.clone(), socket.clone(), envelope.clone());
    seen(move || !withdrawn.calls_of("chat.update").is_empty()).await;
    seen(move || acked.envelope(&id).acked.is_some()).await;
    transcript(&web, &socket, &envelope);
    telegram_round(&telegram, &base).await;
    let (mut posted, mut slack_released) = (Vec::new(), Vec::new());
    let (mut shown, mut telegram_released) = (Vec::new(), Vec::new());
    // Alternating, so both see the same moments of this shared machine.
    for round in 1..=ROUNDS {
        let (to_posted, to_release, _) = slack_round(&web, &socket, &base, round).await;
        posted.push(to_posted);
        slack_released.push(to_release);
        let (to_shown, to_release) = telegram_round(&telegram, &base).await;
        shown.push(to_shown);
        telegram_released.push(to_release);
    }
    println!("askbridge: {}", askbridge_binary());
    for (what, samples) in [
        (
            "slack: POST /api/questions -> chat.postMessage",
            &mut posted,
        ),
        (
            "slack: click sent down the socket -> wait released",
            &mut slack_released,
        ),
        ("telegram: POST /api/questions -> sendMessage", &mut shown),
        (
            "telegram: tap queued -> wait released",
            &mut telegram_released,
        ),
    ] {
        println!("{}", line(what, samples));
    }
}
