//! The email channel against real mail servers (see `mail_servers.rs`): askbridge submits its
//! mails to Postfix over SMTP, Postfix delivers them into Dovecot over LMTP, and askbridge reads
//! the replies from Dovecot over IMAP. A person's replies are raw mails sent to Postfix as a
//! remote server would; DMARC cannot be checked offline, so they carry the
//! `Authentication-Results` header the test means them to have.

use crate::mail_servers::MailServers;
use crate::mails::{ALICE, BOB, BRIDGE, Held, reply_mail, serve_env};
use crate::support::{bridge_with, eventually, http};
use askbridge::Bridge;
use askbridge::http::{AppState, app};
use askbridge::store::memory::MemoryStore;
use askbridge_core::{Inbox, Secret};
use askbridge_email::{Email, EmailOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const WITHIN: Duration = Duration::from_secs(20);

pub(crate) struct Setup {
    pub(crate) servers: MailServers,
    email: Email,
    pub(crate) bridge: Bridge,
    pub(crate) base: String,
}

async fn setup() -> Setup {
    setup_with(false, false).await
}

/// Mail servers, and askbridge serving the API (and, with `public`, the one-click links' page
/// under its own address as `ASKBRIDGE_PUBLIC_URL`; with `notify`, `EMAIL_NOTIFY_RESOLVED`).
pub(crate) async fn setup_with(public: bool, notify: bool) -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let servers = MailServers::start();
    let email = email_for(&servers, public.then(|| base.clone()), notify);
    let store = Arc::new(MemoryStore::default());
    let (bridge, _) = bridge_with(store, |builder| builder.channel(email.channel())).await;
    let mut state = AppState::new(bridge.clone(), None);
    if let Some(page) = email.routes(Arc::new(bridge.clone())) {
        state = state.with_routes(page);
    }
    let router = app(state);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Setup {
        servers,
        email,
        bridge,
        base,
    }
}

/// The email channel on `servers`, askbridge's mailbox watched, DMARC required.
pub(crate) fn email_for(servers: &MailServers, public_url: Option<String>, notify: bool) -> Email {
    Email::new(EmailOptions {
        smtp_url: Secret::new(format!("smtp://127.0.0.1:{}", servers.smtp)),
        imap_url: Some(Secret::new(format!(
            "imap://askbridge%40askbridge.test:bridge-pw@127.0.0.1:{}/INBOX",
            servers.imap
        ))),
        from: Some(format!("askbridge <{BRIDGE}>")),
        reply_address: BRIDGE.into(),
        secret: Secret::new("test-email-secret"),
        require_dmarc: true,
        authserv_id: Some("mx.askbridge.test".into()),
        public_url,
        notify_resolved: notify,
    })
    .unwrap()
}

/// The mails `user` holds (INBOX and folders), oldest first.
pub(crate) fn held(servers: &MailServers, user: &str) -> Vec<Held> {
    servers
        .mailbox(user)
        .into_iter()
        .map(|(raw, flags)| Held { raw, flags })
        .collect()
}

impl Setup {
    pub(crate) async fn ask(&self, body: Value) -> String {
        let response = http()
            .post(format!("{}/api/questions", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let question: Value = response.json().await.unwrap();
        question["id"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn question(&self, id: &str) -> Value {
        http()
            .get(format!("{}/api/questions/{id}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    fn mailbox(&self, user: &str) -> Vec<Held> {
        held(&self.servers, user)
    }

    /// Waits until `user` holds `count` mails.
    pub(crate) async fn wait_for_mails(&self, user: &str, count: usize) -> Vec<Held> {
        eventually(WITHIN, &format!("{count} mails for {user}"), || async {
            self.servers.mailbox(user).len() >= count
        })
        .await;
        self.mailbox(user)
    }

    /// Polls askbridge's mailbox once, as the background loop does.
    async fn poll(&self) -> usize {
        let inbox: Arc<dyn Inbox> = Arc::new(self.bridge.clone());
        self.email.poll_once(inbox.as_ref()).await.unwrap()
    }

    /// Sends a reply and waits until askbridge's mailbox holds `count` mails, then polls.
    pub(crate) async fn reply_and_poll(&self, from: &str, to: &str, raw: &str, count: usize) {
        self.servers.send(from, to, raw.as_bytes());
        self.wait_for_mails(BRIDGE, count).await;
        assert_eq!(self.poll().await, 1, "one new mail read");
    }

    pub(crate) async fn audit(&self) -> Value {
        http()
            .get(format!("{}/api/audit?session_id=mail", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

pub(crate) fn ask_body(answerers: &[&str]) -> Value {
    json!({
        "session_id": "mail",
        "prompt": "Which library for <dates>?",
        "detail": "We format dates in the invoice & the receipt.",
        "options": ["dayjs", "date-fns"],
        "targets": [format!("email:{ALICE}")],
        "answerers": answerers,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asked_by_mail_answered_by_a_reply_and_confirmed_by_mail() {
    let s = setup().await;
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;

    // The question is in Alice's mailbox, as her mail client will show it.
    let mails = s.wait_for_mails(ALICE, 1).await;
    let question = &mails[0];
    assert_eq!(
        question.subject(),
        format!("❓ Which library for <dates>? [#{id}]")
    );
    assert_eq!(
        question.header("Auto-Submitted").as_deref(),
        Some("auto-replied")
    );
    let reply_to = question.header("Reply-To").unwrap();
    assert!(reply_to.contains(&format!("askbridge+{id}.")), "{reply_to}");
    let reply_address = reply_to.trim_matches(['<', '>']).to_owned();
    let message_id = question.header("Message-ID").unwrap();
    assert!(
        message_id.starts_with(&format!("<askbridge.{id}.")),
        "{message_id}"
    );
    let message_id = message_id.trim_matches(['<', '>']).to_owned();
    let text = question.text();
    assert!(text.contains("1. dayjs\n2. date-fns"), "{text}");
    assert!(
        text.contains("We format dates in the invoice & the receipt."),
        "{text}"
    );
    assert!(
        text.contains(&format!("/answer {id} <1-2 or name>")),
        "{text}"
    );
    let html = question.html().unwrap();
    assert!(html.contains("Which library for &lt;dates&gt;?"), "{html}");
    assert!(html.contains("invoice &amp; the receipt"), "{html}");
    assert!(
        html.contains(&format!("href=\"mailto:{reply_address}?subject=")),
        "{html}"
    );
    assert!(
        html.contains(&format!("body=%2Fanswer%20{id}%202\"")),
        "{html}"
    );

    // Alice replies "2" above Gmail's quote.
    let reply = reply_mail(
        ALICE,
        &reply_address,
        "reply-1@mail.example.com",
        &message_id,
        "pass",
        "2\r\n\r\nOn Mon, Dec 7, 2026 at 10:00 AM askbridge <askbridge@askbridge.test> wrote:\r\n> Which library?\r\n",
    );
    s.reply_and_poll(ALICE, &reply_address, &reply, 1).await;
    let q = s.question(&id).await;
    assert_eq!(q["status"], "answered", "{q}");
    assert_eq!(q["resolution"]["by"], format!("email:{ALICE}"), "{q}");
    assert_eq!(q["resolution"]["value"], "date-fns", "{q}");

    // The confirmation arrives in the thread.
    let mails = s.wait_for_mails(ALICE, 2).await;
    let confirmation = mails
        .iter()
        .find(|m| m.text().contains("Answered"))
        .unwrap();
    assert!(
        confirmation.text().starts_with("✓ Answered: date-fns"),
        "{}",
        confirmation.text()
    );
    assert_eq!(
        confirmation.header("In-Reply-To").as_deref(),
        Some("<reply-1@mail.example.com>")
    );
    assert_eq!(
        confirmation.header("Auto-Submitted").as_deref(),
        Some("auto-replied")
    );
    assert_eq!(confirmation.subject(), "Re: Which library?");

    // The same mail delivered again counts once and is not confirmed twice.
    s.reply_and_poll(ALICE, &reply_address, &reply, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.mailbox(ALICE).len(), 2, "no second confirmation");
    let audit = s.audit().await;
    let answered = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "resolved")
        .count();
    assert_eq!(answered, 1, "{audit}");

    // Every mail read is flagged seen (and ours) and moved to the processed folder, none
    // deleted.
    assert!(
        s.servers.folder(BRIDGE, "INBOX").is_empty(),
        "moved out of INBOX"
    );
    let held = s.servers.folder(BRIDGE, askbridge_email::PROCESSED);
    assert_eq!(held.len(), 2);
    assert!(
        held.iter().all(|(_, flags)| flags.contains('S')),
        "{:?}",
        held.iter().map(|(_, flags)| flags).collect::<Vec<_>>()
    );
    assert_eq!(s.poll().await, 0, "nothing unread is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_forgeries_and_robots_answer_nothing_and_get_no_mail() {
    let s = setup().await;
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;
    let question = s.wait_for_mails(ALICE, 1).await.remove(0);
    let reply_address = question.reply_address();
    let message_id = question
        .header("Message-ID")
        .unwrap()
        .trim_matches(['<', '>'])
        .to_owned();

    // Bob, with a genuine DMARC pass for his own domain, at the right reply address: not an
    // answerer, so refused and audited by the bridge; no mail goes back to him.
    let bob = reply_mail(
        BOB,
        &reply_address,
        "bob-1@example.org",
        &message_id,
        "pass",
        "1\r\n",
    );
    s.reply_and_poll(BOB, &reply_address, &bob, 1).await;

    // A reply address with a made-up tag.
    let (local, domain) = reply_address.rsplit_once('@').unwrap();
    let (head, _) = local.rsplit_once('.').unwrap();
    let forged_address = format!("{head}.0123456789abcdef@{domain}");
    let forged = reply_mail(
        ALICE,
        &forged_address,
        "forged-1@evil.test",
        &message_id,
        "pass",
        "1\r\n",
    );
    s.reply_and_poll("mallory@evil.test", &forged_address, &forged, 2)
        .await;

    // Alice's address in From, but our server found no DMARC pass for it.
    let spoofed = reply_mail(
        ALICE,
        &reply_address,
        "spoofed-1@evil.test",
        &message_id,
        "fail",
        "1\r\n",
    );
    s.reply_and_poll("mallory@evil.test", &reply_address, &spoofed, 3)
        .await;

    // Alice's out-of-office.
    let ooo = reply_mail(
        ALICE,
        &reply_address,
        "ooo-1@example.com",
        &message_id,
        "pass",
        "I am away.\r\n",
    )
    .replacen("From:", "Auto-Submitted: auto-replied\r\nFrom:", 1);
    s.reply_and_poll(ALICE, &reply_address, &ooo, 4).await;

    let q = s.question(&id).await;
    assert_eq!(q["status"], "pending", "{q}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.mailbox(ALICE).len(), 1, "nothing mailed to Alice");
    assert_eq!(
        s.mailbox(BOB).len(),
        0,
        "nothing mailed to Bob: {}",
        s.servers.postfix_log()
    );
    let audit = s.audit().await;
    let refused = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "refused" && e["by"] == format!("email:{BOB}"));
    assert!(refused, "Bob's reply is in the audit trail: {audit}");
    let spoof = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "refused" && e["by"] == format!("email-unverified:{ALICE}"));
    assert!(
        spoof,
        "the reply without a DMARC pass is in the audit trail: {audit}"
    );
    assert_eq!(s.mailbox(BRIDGE).len(), 4, "nothing deleted");

    // Mail to the mailbox's own address (in a person's own mailbox, theirs): read, not
    // answered, and left where it was, unseen; the four replies above were moved.
    let lunch = format!(
        "From: Carol <carol@example.net>\r\nTo: <{BRIDGE}>\r\nSubject: Lunch?\r\n\
         Message-ID: <lunch-1@example.net>\r\n\r\nAt noon?\r\n"
    );
    s.reply_and_poll("carol@example.net", BRIDGE, &lunch, 5)
        .await;
    let inbox = s.servers.folder(BRIDGE, "INBOX");
    assert_eq!(inbox.len(), 1, "only Carol's mail stays");
    assert!(!inbox[0].1.contains('S'), "left unseen: {:?}", inbox[0].1);
    assert_eq!(
        s.servers.folder(BRIDGE, askbridge_email::PROCESSED).len(),
        4
    );
    assert_eq!(s.poll().await, 0, "read once");
}

/// Dovecot going away between polls costs a failed poll (whose error names no password); the
/// next poll after it is back reads what arrived meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_restart_costs_one_poll_and_loses_nothing() {
    let mut s = setup().await;
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;
    let question = s.wait_for_mails(ALICE, 1).await.remove(0);
    let reply_address = question.reply_address();
    assert_eq!(s.poll().await, 0);

    s.servers.stop_dovecot();
    let inbox: Arc<dyn Inbox> = Arc::new(s.bridge.clone());
    let error = s
        .email
        .poll_once(inbox.as_ref())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("IMAP 127.0.0.1"), "{error}");
    assert!(!error.contains("bridge-pw"), "{error}");
    // Postfix keeps the reply queued while its LMTP peer is down.
    let reply = reply_mail(
        ALICE,
        &reply_address,
        "after-restart@example.com",
        "x@y",
        "pass",
        "dayjs\r\n",
    );
    s.servers.send(ALICE, &reply_address, reply.as_bytes());
    s.servers.start_dovecot();

    eventually(WITHIN, "the queued reply answers", || async {
        let _ = s.poll().await;
        s.question(&id).await["resolution"]["value"] == "dayjs"
    })
    .await;
}

mod binary {
    use super::*;
    use crate::support::Process;

    const BASE_WITHIN: Duration = Duration::from_secs(30);

    async fn status(base: &str, id: &str) -> Value {
        http()
            .get(format!("{base}/api/questions/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// A question mailed to Alice; with `open`, answerable by anyone who sees it (the API too).
    async fn ask(base: &str, prompt: &str, open: bool) -> String {
        let answerers = if open {
            vec![]
        } else {
            vec![format!("email:{ALICE}")]
        };
        let created: Value = http()
            .post(format!("{base}/api/questions"))
            .json(&json!({
                "session_id": "mail", "prompt": prompt, "options": ["dayjs", "date-fns"],
                "targets": [format!("email:{ALICE}")], "answerers": answerers,
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        created["id"].as_str().unwrap().to_owned()
    }

    fn find<'a>(mails: &'a [Held], what: &str) -> Option<&'a Held> {
        mails
            .iter()
            .find(|m| m.subject().contains(what) || m.text().contains(what))
    }

    /// `askbridge serve` from its settings alone: the channel mails, the background loop (under
    /// its lease) reads an Outlook-shaped reply and an HTML-only one, and a reply to a question
    /// answered elsewhere is told so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serve_runs_email_from_its_settings() {
        let servers = MailServers::start();
        let process = Process::spawn(
            &["serve", "--ephemeral"],
            &serve_env(&servers, "binary-secret"),
        );
        let base = process.base.clone();
        let mailbox = |user: &str| held(&servers, user);
        let wait = |user: &'static str, what: String| {
            let mailbox = &mailbox;
            async move {
                eventually(BASE_WITHIN, &format!("{what} for {user}"), || async {
                    find(&mailbox(user), &what).is_some()
                })
                .await;
                let mails = mailbox(user);
                find(&mails, &what)
                    .map(|m| Held {
                        raw: m.raw.clone(),
                        flags: m.flags.clone(),
                    })
                    .unwrap()
            }
        };

        // Outlook: the answer above its "From: … Sent: …" block, in base64.
        let first = ask(&base, "First question?", false).await;
        let mail = wait(ALICE, format!("[#{first}]")).await;
        let reply_address = mail.reply_address();
        let outlook_body = "date-fns\r\n\r\n________________________________\r\nFrom: askbridge <askbridge@askbridge.test>\r\nSent: Monday, December 7, 2026 9:00 AM\r\nTo: Alice\r\nSubject: First question?\r\n\r\n1. dayjs\r\n";
        let outlook = reply_mail(
            ALICE,
            &reply_address,
            "outlook-1@example.com",
            "x@y",
            "pass",
            outlook_body,
        );
        servers.send(ALICE, &reply_address, outlook.as_bytes());
        eventually(BASE_WITHIN, "the Outlook reply answers", || async {
            status(&base, &first).await["resolution"]["value"] == "date-fns"
        })
        .await;
        wait(ALICE, "✓ Answered: date-fns".to_owned()).await;

        // HTML only: the answer by name, above a blockquote.
        let second = ask(&base, "Second question?", false).await;
        let mail = wait(ALICE, format!("[#{second}]")).await;
        let reply_address = mail.reply_address();
        let html = reply_mail(
            ALICE,
            &reply_address,
            "html-1@example.com",
            "x@y",
            "pass",
            "<div>dayjs</div><blockquote>Second question? 1. dayjs 2. date-fns</blockquote>\r\n",
        )
        .replace("Content-Type: text/plain", "Content-Type: text/html");
        servers.send(ALICE, &reply_address, html.as_bytes());
        eventually(BASE_WITHIN, "the HTML reply answers", || async {
            status(&base, &second).await["resolution"]["value"] == "dayjs"
        })
        .await;

        // Answered elsewhere first: the reply is told so.
        let third = ask(&base, "Third question?", true).await;
        let mail = wait(ALICE, format!("[#{third}]")).await;
        let reply_address = mail.reply_address();
        let answered = http()
            .post(format!("{base}/api/questions/{third}/reply"))
            .json(&json!({"answer": "dayjs"}))
            .send()
            .await
            .unwrap();
        assert!(
            answered.status().is_success(),
            "{:?}",
            answered.text().await
        );
        let late = reply_mail(
            ALICE,
            &reply_address,
            "late-1@example.com",
            "x@y",
            "pass",
            "2\r\n",
        );
        servers.send(ALICE, &reply_address, late.as_bytes());
        let told = wait(ALICE, "Already answered".to_owned()).await;
        assert!(told.text().contains("dayjs"), "{}", told.text());
        assert_eq!(status(&base, &third).await["resolution"]["value"], "dayjs");
    }
}

impl Setup {
    /// Waits until `user` holds a mail whose text starts with `start` and whose subject names
    /// `id` ("" for any: a confirmation's subject is the reply's). By content, because a mailbox
    /// lists mails delivered within one second in no particular order.
    pub(crate) async fn wait_for_mail(&self, user: &str, id: &str, start: &str) -> Held {
        let find = || {
            self.mailbox(user).into_iter().find(|mail| {
                (id.is_empty() || mail.subject().contains(&format!("[#{id}]")))
                    && mail.text().starts_with(start)
            })
        };
        eventually(
            WITHIN,
            &format!("{user}'s mail \"{start}…\" about {id}"),
            || async { find().is_some() },
        )
        .await;
        find().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_elsewhere_each_recipient_hears_of_it_in_the_thread_but_not_the_replier() {
    let s = setup_with(false, true).await;
    let alice = format!("email:{ALICE}");
    let mut body = ask_body(&[&alice, "api"]);
    body["targets"] = json!([alice, format!("email:{BOB}")]);

    // Answered over the API: both recipients are told, in the question's thread.
    let id = s.ask(body.clone()).await;
    let asked = "❓ Which library";
    let questions = [
        s.wait_for_mail(ALICE, &id, asked).await,
        s.wait_for_mail(BOB, &id, asked).await,
    ];
    let answered = http()
        .post(format!("{}/api/questions/{id}/reply", s.base))
        .json(&json!({"answer": "dayjs"}))
        .send()
        .await
        .unwrap();
    assert!(answered.status().is_success());
    for (who, question) in [ALICE, BOB].into_iter().zip(questions) {
        let notice = s.wait_for_mail(who, &id, "Answered: dayjs, by api").await;
        assert_eq!(
            notice.header("In-Reply-To"),
            question.header("Message-ID"),
            "in {who}'s thread"
        );
        assert_eq!(
            notice.header("Auto-Submitted").as_deref(),
            Some("auto-replied")
        );
    }

    // Answered by Alice's own reply: she gets the confirmation only; Bob hears of it.
    let id = s.ask(body).await;
    let question = s.wait_for_mail(ALICE, &id, asked).await;
    let reply_address = question.reply_address();
    let parent = question.header("Message-ID").unwrap();
    let reply = reply_mail(
        ALICE,
        &reply_address,
        "notify-1@example.com",
        parent.trim_matches(['<', '>']),
        "pass",
        "2\r\n",
    );
    s.reply_and_poll(ALICE, &reply_address, &reply, 1).await;
    s.wait_for_mail(BOB, &id, "Answered: date-fns, by Someone via email")
        .await;
    s.wait_for_mail(ALICE, "", "✓ Answered: date-fns").await;
    // Bob's notice and any of Alice's went out in the same settle, before Bob's was delivered;
    // a moment for delivery, and Alice still has only her two questions, the first one's
    // notice, and her confirmation.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.mailbox(ALICE).len(), 4, "no notice to the replier");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mailbox_is_watched_with_idle_on_one_connection_and_across_a_restart() {
    let mut s = setup().await;
    let logins = |s: &Setup| s.servers.dovecot_log().matches(" Login: user=").count();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let inbox: Arc<dyn Inbox> = Arc::new(s.bridge.clone());
    let watcher = {
        let email = s.email.clone();
        tokio::spawn(async move { email.run(inbox, stopped).await })
    };
    eventually(WITHIN, "the watcher logged in", || async {
        logins(&s) >= 1
    })
    .await;
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;
    let address = s.wait_for_mails(ALICE, 1).await[0].reply_address();
    let reply = reply_mail(
        ALICE,
        &address,
        "idle-1@example.com",
        "x@y",
        "pass",
        "2\r\n",
    );
    s.servers.send(ALICE, &address, reply.as_bytes());
    eventually(WITHIN, "the reply answers, with no poll called", || async {
        s.question(&id).await["resolution"]["value"] == "date-fns"
    })
    .await;
    // Longer than a poll's interval (5 s): a watcher that polled would have logged in again.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        logins(&s),
        1,
        "one IMAP session, idling: {}",
        s.servers.dovecot_log()
    );

    // Dovecot restarts under the IDLE; the watcher comes back and reads what arrived meanwhile.
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;
    let address = s.wait_for_mail(ALICE, &id, "❓").await.reply_address();
    s.servers.stop_dovecot();
    let reply = reply_mail(
        ALICE,
        &address,
        "idle-2@example.com",
        "x@y",
        "pass",
        "dayjs\r\n",
    );
    s.servers.send(ALICE, &address, reply.as_bytes());
    s.servers.start_dovecot();
    eventually(
        Duration::from_secs(90),
        "the reply after the restart answers",
        || async { s.question(&id).await["resolution"]["value"] == "dayjs" },
    )
    .await;
    stop.send_replace(true);
    watcher.await.unwrap().unwrap();
}
