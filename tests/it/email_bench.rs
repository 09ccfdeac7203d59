//! The email channel's latency, beside Telegram's in the same run and the same bridge (a
//! benchmark, not a test: it asserts only that each step happened):
//!
//! ```sh
//! cargo test --test it email_latency -- --ignored --nocapture
//! ASKBRIDGE_BINARY=target/release/askbridge cargo test --test it email_latency -- --ignored --nocapture
//! ```
//!
//! It measures `askbridge serve` (the debug build the tests use, or `ASKBRIDGE_BINARY`) on a
//! real redis-server, with email and Telegram on at once.
//! Over [`ROUNDS`] questions each: email from `POST /api/questions` to the mail in the
//! recipient's mailbox (Postfix over SMTP, Dovecot over LMTP: the Maildir file that IMAP then
//! shows), and from a reply's delivery into askbridge's mailbox to `GET …/wait` released (IMAP
//! IDLE wakes the reader, which fetches, parses, answers; the confirmation mail goes out after the answer is
//! recorded). Telegram (the fake Bot API on loopback, long
//! polling) from the POST to its `sendMessage`, and from a tap queued to the wait released.
//! Both mailboxes and the fake are watched every 200 µs.

use crate::email::{ALICE, BRIDGE, Held, reply_mail, serve_env};
use crate::fakes::rounds::{ask, line, parked_wait, seen, telegram_round};
use crate::fakes::telegram::FakeTelegram;
use crate::mail_servers::MailServers;
use crate::redis_server::RedisServer;
use crate::support::{Process, askbridge_binary};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ROUNDS: usize = 100;

/// One email round: (POST -> mail held, reply delivered -> wait released).
async fn email_round(servers: &Arc<MailServers>, base: &str, round: usize) -> (Duration, Duration) {
    let known: HashSet<PathBuf> = servers.files(ALICE).into_iter().collect();
    let asked = Instant::now();
    let id = ask(base, &format!("email:{ALICE}"), &format!("email:{ALICE}")).await;
    let question = Arc::new(Mutex::new(None));
    let mailed = {
        let (servers, question, tag) = (servers.clone(), question.clone(), format!("[#{id}]"));
        let mut known = known;
        // Alice's mailbox also receives the confirmations of earlier rounds: only new files
        // are read, to find the one whose subject names this question.
        seen(move || {
            for file in servers.files(ALICE) {
                if known.insert(file.clone())
                    && let Ok(raw) = std::fs::read(&file)
                {
                    let mail = Held {
                        raw,
                        flags: String::new(),
                    };
                    if mail.subject().contains(&tag) {
                        *question.lock().unwrap() = Some(mail);
                        return true;
                    }
                }
            }
            false
        })
        .await
    };
    let address = question.lock().unwrap().take().unwrap().reply_address();
    let waiter = parked_wait(base, &id).await;
    let reply = reply_mail(
        ALICE,
        &address,
        &format!("bench-{round}@example.com"),
        "x@y",
        "pass",
        "2\r\n",
    );
    let before = servers.count(BRIDGE);
    let delivered = {
        let servers = servers.clone();
        seen(move || servers.count(BRIDGE) > before)
    };
    let sender = servers.clone();
    tokio::task::spawn_blocking(move || sender.send(ALICE, &address, reply.as_bytes()))
        .await
        .unwrap();
    let delivered = delivered.await;
    let (released, question) = waiter.await.unwrap();
    assert_eq!(question["status"], "answered", "{question}");
    // The reply moved out of INBOX (so that the next round's count starts from a still
    // mailbox). Its confirmation is not awaited: at most 5 replies a minute go to one address.
    let moved = servers.clone();
    seen(move || moved.folder(BRIDGE, "INBOX").is_empty()).await;
    (
        mailed - asked,
        released.saturating_duration_since(delivered),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: cargo test --test it email_latency -- --ignored --nocapture"]
async fn email_latency_beside_telegram() {
    let servers = Arc::new(MailServers::start());
    let redis = RedisServer::start();
    let fake = FakeTelegram::start();
    let mut env = fake.serve_env(&redis);
    env.extend(serve_env(&servers, "bench-secret"));
    let process = Process::spawn(&["serve"], &env);
    let base = process.base.clone();

    // A round each first, not counted: the mailbox watcher takes its lease and logs in.
    email_round(&servers, &base, 0).await;
    telegram_round(&fake, &base).await;
    let (mut mailed, mut email_released) = (Vec::new(), Vec::new());
    let (mut shown, mut telegram_released) = (Vec::new(), Vec::new());
    // Alternating, so both see the same moments of this shared machine.
    for round in 1..=ROUNDS {
        let (to_mailbox, to_release) = email_round(&servers, &base, round).await;
        mailed.push(to_mailbox);
        email_released.push(to_release);
        let (to_shown, to_release) = telegram_round(&fake, &base).await;
        shown.push(to_shown);
        telegram_released.push(to_release);
    }
    println!("askbridge: {}", askbridge_binary());
    for (what, samples) in [
        (
            "email: POST /api/questions -> mail in the mailbox",
            &mut mailed,
        ),
        (
            "email: reply in askbridge's mailbox -> wait released",
            &mut email_released,
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
