//! How long a person waits by email (`--only email`): one `askbridge serve` on a real
//! redis-server with the email channel on real mail servers (Postfix taking SMTP and delivering
//! over LMTP into Dovecot, which serves the mailboxes over IMAP: tests/it/mail_servers.rs), over
//! `--mail-rounds` questions (100) with `--chat-pending` (1,000) others pending. Those have no
//! target: a thousand mails in the person's mailbox would cost the watcher below, not askbridge.
//!
//! Each round times, from outside, what the person sees: from `POST /api/questions` to the
//! question's mail in the person's mailbox (the Maildir file Dovecot serves), and from the
//! person's reply in askbridge's mailbox to the asker's `GET …/wait` returning (IMAP IDLE wakes
//! askbridge's reader, which fetches, parses and answers). Beside each, its anchor, taken between
//! the rounds: the mail servers' own part of that path without askbridge. A mail handed to
//! Postfix over SMTP for the same mailbox, to its file; and a mail delivered into a mailbox that
//! an IMAP client (async-imap, as askbridge's reader) idles on, to Dovecot telling it. So the
//! ratios say what askbridge adds to the mail servers. No goal is set for them: the issue's
//! p99 <= 2x is against an HTTP round trip, which a mail's path is not.
//!
//! Mailboxes are watched as files every 200 µs (`seen`): Dovecot tells nobody else but an IMAP
//! client, and an IMAP client of ours would be timed in the figure.

use crate::fakes::rounds::{ask, ask_all, line, p50_p99, parked_wait, seen};
use crate::mail_servers::{MailServers, USERS};
use crate::mails::{ALICE, BOB, BRIDGE, Held, reply_mail, serve_env};
use crate::redis_server::RedisServer;
use async_imap::extensions::idle::IdleResponse;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

type Session = async_imap::Session<TcpStream>;

pub async fn email(rounds: usize, pending: usize) {
    let servers = Arc::new(MailServers::start());
    let redis = RedisServer::start_with(&["--appendfsync", "everysec"]);
    let mut env = serve_env(&servers, "bench-secret");
    env.extend([
        ("REDIS_URL", redis.url()),
        // Past five replies a minute from one address, askbridge mails it no more confirmations
        // and says so at each (a warning a round here, after the fifth).
        (
            "ASKBRIDGE_LOG",
            "warn,askbridge_email::receive=error".to_owned(),
        ),
    ]);
    let process = crate::serve_blocking(env).await;
    let base = process.base.clone();
    for _ in 0..pending {
        ask_all(&base, &[], &[]).await;
    }
    let mut bob = idler(&servers, BOB).await;
    // A round of each first, not counted: askbridge's reader takes its lease and logs in.
    email_round(&servers, &base, 0).await;
    mail_to_file(&servers, 0).await;
    bob = idle_told(&servers, bob, 0).await.1;

    let (mut mailed, mut sent) = (Vec::new(), Vec::new());
    let (mut released, mut told) = (Vec::new(), Vec::new());
    // Taking turns, so that each figure and its anchor see the same moments of the machine.
    for round in 1..=rounds {
        let (to_mailbox, to_release) = email_round(&servers, &base, round).await;
        mailed.push(to_mailbox);
        released.push(to_release);
        sent.push(mail_to_file(&servers, round).await);
        let (to_told, session) = idle_told(&servers, bob, round).await;
        told.push(to_told);
        bob = session;
    }
    let _ = bob.logout().await;
    print(
        "email ask -> the mail in the mailbox",
        &mut mailed,
        "a mail sent over SMTP",
        &mut sent,
    );
    print(
        "email reply in the mailbox -> wait released",
        &mut released,
        "a mail delivered -> IDLE told",
        &mut told,
    );
    drop(process);
}

/// One figure beside its anchor, and the ratio of their p99s.
fn print(what: &str, samples: &mut [Duration], anchor: &str, anchors: &mut [Duration]) {
    let (p99, anchor_p99) = (p50_p99(samples).1, p50_p99(anchors).1);
    println!(
        "{}   beside {}   p99/p99 {:.1}",
        line(what, samples),
        line(anchor, anchors).trim_end(),
        p99 / anchor_p99
    );
}

/// One email round: (POST -> the mail in Alice's mailbox, her reply in askbridge's mailbox ->
/// the wait released).
async fn email_round(servers: &Arc<MailServers>, base: &str, round: usize) -> (Duration, Duration) {
    let asked = Instant::now();
    // Watched from before the POST, which may answer after the mail is in. Alice is mailed
    // only questions (their subject ends in "[#id]") and confirmations, and one question a round.
    let mailed = arrival(servers, ALICE, |raw| held(raw).subject().contains("[#"));
    let id = ask(base, &format!("email:{ALICE}"), &format!("email:{ALICE}")).await;
    let (mailed, raw) = mailed.await.unwrap();
    let question = held(&raw);
    assert!(
        question.subject().contains(&format!("[#{id}]")),
        "{}",
        question.subject()
    );
    let address = question.reply_address();
    let waiter = parked_wait(base, &id).await;
    let message_id = format!("bench-{round}@example.com");
    let reply = reply_mail(ALICE, &address, &message_id, "x@y", "pass", "2\r\n");
    let delivered = arrival(servers, BRIDGE, holding(message_id));
    send(servers, ALICE, &address, reply).await;
    let (delivered, _) = delivered.await.unwrap();
    let (released, question) = waiter.await.unwrap();
    assert_eq!(question["status"], "answered", "{question}");
    // The reply moved out of INBOX, so that the next round starts from a still mailbox. Its
    // confirmation is not awaited: at most 5 replies a minute go to one address.
    let moved = servers.clone();
    seen(move || moved.folder(BRIDGE, "INBOX").is_empty()).await;
    (
        mailed - asked,
        released.saturating_duration_since(delivered),
    )
}

/// The first anchor: a mail handed to Postfix over SMTP for Alice, to its file in her mailbox.
async fn mail_to_file(servers: &Arc<MailServers>, round: usize) -> Duration {
    let message_id = format!("anchor-{round}@example.org");
    let raw = reply_mail(BOB, ALICE, &message_id, "x@y", "pass", "hi\r\n");
    let delivered = arrival(servers, ALICE, holding(message_id));
    let sent = Instant::now();
    send(servers, BOB, ALICE, raw).await;
    delivered.await.unwrap().0 - sent
}

/// An IMAP client logged in as `user` (one of the servers' `USERS`), its INBOX selected.
async fn idler(servers: &MailServers, user: &str) -> Session {
    let (_, password) = USERS.iter().find(|(name, _)| *name == user).unwrap();
    let stream = TcpStream::connect(("127.0.0.1", servers.imap))
        .await
        .unwrap();
    let mut client = async_imap::Client::new(stream);
    client.read_response().await.unwrap().unwrap();
    let mut session = client
        .login(user, password)
        .await
        .map_err(|(e, _)| e)
        .unwrap();
    session.select("INBOX").await.unwrap();
    session
}

/// The second anchor: a mail delivered into Bob's INBOX while `session` idles on it, to Dovecot
/// telling the session. Returns the session, out of IDLE, for the next round. (Nothing else is
/// mailed to Bob: news in IDLE is this mail.)
async fn idle_told(
    servers: &Arc<MailServers>,
    session: Session,
    round: usize,
) -> (Duration, Session) {
    let mut idle = session.idle();
    idle.init().await.unwrap();
    let message_id = format!("idle-{round}@example.com");
    let raw = reply_mail(ALICE, BOB, &message_id, "x@y", "pass", "hi\r\n");
    let delivered = arrival(servers, BOB, holding(message_id));
    send(servers, ALICE, BOB, raw).await;
    let (news, _stop) = idle.wait_with_timeout(Duration::from_secs(30));
    let heard = news.await.unwrap();
    let told = Instant::now();
    assert!(matches!(heard, IdleResponse::NewData(_)), "IDLE: {heard:?}");
    let (delivered, _) = delivered.await.unwrap();
    let session = idle.done().await.unwrap();
    (told.saturating_duration_since(delivered), session)
}

fn held(raw: &[u8]) -> Held {
    Held {
        raw: raw.to_vec(),
        flags: String::new(),
    }
}

/// Whether a mail's bytes hold `needle` (its Message-ID, say).
fn holding(needle: String) -> impl Fn(&[u8]) -> bool + Send + 'static {
    move |raw| raw.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Watches `user`'s mailbox, from now, for a new mail that `matches`: when it was first seen,
/// and the mail. Spawned, so that it watches from now on, not from when it is awaited; only
/// files new since now are read (a mailbox also holds earlier rounds' mails).
fn arrival(
    servers: &Arc<MailServers>,
    user: &'static str,
    matches: impl Fn(&[u8]) -> bool + Send + 'static,
) -> tokio::task::JoinHandle<(Instant, Vec<u8>)> {
    let servers = servers.clone();
    let mut known: HashSet<PathBuf> = servers.files(user).into_iter().collect();
    let found = Arc::new(Mutex::new(None));
    let slot = found.clone();
    let at = seen(move || {
        for file in servers.files(user) {
            if known.insert(file.clone())
                && let Ok(raw) = std::fs::read(&file)
                && matches(&raw)
            {
                *slot.lock().unwrap() = Some(raw);
                return true;
            }
        }
        false
    });
    tokio::spawn(async move { (at.await, found.lock().unwrap().take().unwrap()) })
}

/// Hands `raw` to Postfix over SMTP, as a remote server would (on a blocking thread).
async fn send(servers: &Arc<MailServers>, from: &'static str, to: &str, raw: String) {
    let (servers, to) = (servers.clone(), to.to_owned());
    tokio::task::spawn_blocking(move || servers.send(from, &to, raw.as_bytes()))
        .await
        .unwrap();
}
