//! One question's life as the mailboxes hold it: asked of Alice and Bob, answered by Alice's
//! reply, confirmed to her, Bob told (`EMAIL_NOTIFY_RESOLVED`), her reply flagged and moved.
//! Checked: the thread (each mail names its parent in `In-Reply-To` and `References`) and the
//! flags. Printed with `--nocapture` (the headers that matter, then the bodies):
//!
//! ```sh
//! cargo test --test it one_questions_life -- --nocapture
//! ```

use crate::email::{ask_body, setup_with};
use crate::mails::{ALICE, BOB, BRIDGE, Held, reply_mail};
use serde_json::json;

const SHOWN: [&str; 12] = [
    "Date",
    "From",
    "To",
    "Reply-To",
    "Subject",
    "Message-ID",
    "In-Reply-To",
    "References",
    "Auto-Submitted",
    "Authentication-Results",
    "MIME-Version",
    "Content-Type",
];

fn show(title: &str, mail: &Held) {
    println!("===== {title} (Maildir flags: {:?})", mail.flags);
    for name in SHOWN {
        if let Some(value) = mail.header(name) {
            println!("{name}: {value}");
        }
    }
    println!("(Subject decoded: {})", mail.subject());
    println!("--- text/plain\n{}", mail.text().trim_end());
    let alternative = mail
        .header("Content-Type")
        .is_some_and(|t| t.starts_with("multipart/alternative"));
    if let Some(html) = mail.html().filter(|_| alternative) {
        println!("--- text/html\n{}", html.trim_end());
    }
    println!();
}

fn id_of(header: Option<String>) -> String {
    header
        .unwrap_or_default()
        .trim_matches(['<', '>'])
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_questions_life_as_the_mailboxes_hold_it() {
    let s = setup_with(false, true).await;
    let alice = format!("email:{ALICE}");
    let mut body = ask_body(&[&alice]);
    body["targets"] = json!([alice, format!("email:{BOB}")]);
    let id = s.ask(body).await;
    let asked = "❓ Which library";
    let question = s.wait_for_mail(ALICE, &id, asked).await;
    let to_bob = s.wait_for_mail(BOB, &id, asked).await;
    let parent = id_of(question.header("Message-ID"));

    let reply = reply_mail(
        ALICE,
        &question.reply_address(),
        "life-1@mail.example.com",
        &parent,
        "pass",
        "2\r\n\r\nOn Mon, Dec 7, 2026 at 10:00 AM askbridge <askbridge@askbridge.test> wrote:\r\n> Which library for <dates>?\r\n",
    );
    s.reply_and_poll(ALICE, &question.reply_address(), &reply, 1)
        .await;
    let confirmation = s.wait_for_mail(ALICE, "", "✓ Answered: date-fns").await;
    let notice = s.wait_for_mail(BOB, &id, "Answered: date-fns").await;
    let held = s.servers.folder(BRIDGE, askbridge_email::PROCESSED);
    assert_eq!(held.len(), 1, "the reply, moved");
    let (raw, flags) = held.into_iter().next().unwrap();
    let read = Held { raw, flags };

    show("1. the question, in Alice's INBOX", &question);
    show("   the same question, in Bob's INBOX", &to_bob);
    show(
        "2. Alice's reply, in askbridge's Askbridge folder after it was read",
        &read,
    );
    show("3. the confirmation, in Alice's INBOX", &confirmation);
    show("4. the notice, in Bob's INBOX", &notice);

    assert_eq!(id_of(read.header("In-Reply-To")), parent);
    assert_eq!(
        id_of(confirmation.header("In-Reply-To")),
        "life-1@mail.example.com"
    );
    assert!(
        confirmation
            .header("References")
            .unwrap_or_default()
            .contains("life-1@mail.example.com"),
        "the confirmation is in the reply's thread"
    );
    assert_eq!(
        id_of(notice.header("In-Reply-To")),
        id_of(to_bob.header("Message-ID")),
        "Bob's notice is in his question's thread"
    );
    assert!(read.flags.contains('S'), "{}", read.flags);
    for mail in [&question, &to_bob, &confirmation, &notice] {
        assert_eq!(
            mail.header("Auto-Submitted").as_deref(),
            Some("auto-replied")
        );
    }
}
