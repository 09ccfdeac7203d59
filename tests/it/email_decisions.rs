//! An approval's decisions by mail, against the real mail servers of `email.rs`: the mail names
//! the decisions offered; a reply `edit {json}` (its JSON over several lines) resolves it as
//! edited, `respond <text>` (several paragraphs kept) as responded, through the grammar every
//! surface shares; an edit breaking the schema and a decision the approval does not offer each
//! get a polite refusal in the thread and decide nothing.

use crate::approvals_edit::{assert_edited, deploy, deploy_schema};
use crate::email::{Setup, setup_with};
use crate::mails::{ALICE, BRIDGE, Held, reply_mail};
use serde_json::{Value, json};

fn approval(allowed: &[&str]) -> Value {
    json!({
        "session_id": "mail",
        "kind": "approval",
        "prompt": "Deploy the invoice service?",
        "action": {"tool": "deploy", "args": deploy().args},
        "allowed": allowed,
        "args_schema": deploy_schema(),
        "targets": [format!("email:{ALICE}")],
        "answerers": [format!("email:{ALICE}")],
    })
}

/// Asks `body`; returns its id and the question mail, Alice's `count`th.
pub(crate) async fn ask(s: &Setup, body: Value, count: usize) -> (String, Held) {
    let id = s.ask(body).await;
    let mails = s.wait_for_mails(ALICE, count).await;
    let mail = mails
        .into_iter()
        .find(|m| m.subject().contains(&id))
        .unwrap();
    (id, mail)
}

/// Alice replies `body` to `mail` (askbridge's `count`th mail received); the text of the mail
/// askbridge sends back in the thread (Alice's `back`th).
pub(crate) async fn reply(s: &Setup, mail: &Held, body: &str, count: usize, back: usize) -> String {
    let to = mail.reply_address();
    let message_id = mail.header("Message-ID").unwrap();
    let own_id = format!("reply-{count}@mail.example.com");
    let raw = reply_mail(
        ALICE,
        &to,
        &own_id,
        message_id.trim_matches(['<', '>']),
        "pass",
        body,
    );
    s.reply_and_poll(ALICE, &to, &raw, count).await;
    let mails = s.wait_for_mails(ALICE, back).await;
    let answer = mails
        .iter()
        .find(|m| m.header("In-Reply-To").as_deref() == Some(&format!("<{own_id}>")))
        .unwrap_or_else(|| panic!("no mail back in the thread of {own_id}"));
    answer.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_edited_responded_or_refused_by_mail_reply() {
    let s = setup_with(false, false).await;
    let (id, mail) = ask(&s, approval(&["once", "edit", "respond", "reject"]), 1).await;
    let text = mail.text();
    assert!(
        text.contains("once, edit, respond or reject"),
        "the mail names exactly the decisions offered: {text}"
    );
    assert!(
        text.contains(&format!("/answer {id} edit {{json}}")),
        "{text}"
    );

    // An edit breaking the schema: refused politely, naming the argument; nothing decided.
    let refusal = reply(
        &s,
        &mail,
        "edit {\"env\": \"production\", \"replicas\": 11}\r\n",
        1,
        2,
    )
    .await;
    println!("edit with replicas 11 -> {refusal}");
    assert!(refusal.contains("args.replicas"), "{refusal}");
    assert_eq!(s.question(&id).await["status"], "pending");

    // The JSON may run over several lines; the quote below it is not read.
    let body = "edit {\"env\": \"production\",\r\n  \"replicas\": 3}\r\n\r\n\
                On Mon, Dec 7, 2026 at 10:00 AM askbridge <askbridge@askbridge.test> wrote:\r\n\
                > Deploy the invoice service?\r\n";
    let confirmation = reply(&s, &mail, body, 2, 3).await;
    println!("edit with replicas 3 -> {confirmation}");
    let q = s.question(&id).await;
    assert_eq!(q["status"], "answered", "{q}");
    let approved = json!({"env": "production", "replicas": 3});
    assert_edited(&q["resolution"], &format!("email:{ALICE}"), approved);
    assert!(
        confirmation.contains("Approved with changes"),
        "{confirmation}"
    );

    // Respond: the person's text, every paragraph of it, is the tool's result.
    let (id, mail) = ask(&s, approval(&["once", "respond", "reject"]), 4).await;
    let said = "respond Not now: the invoices run until 18:00.\r\n\r\nTry again tonight.\r\n";
    let confirmation = reply(&s, &mail, said, 3, 5).await;
    println!("respond -> {confirmation}");
    let q = s.question(&id).await;
    assert_eq!(q["status"], "answered", "{q}");
    assert_eq!(q["resolution"]["value"], "respond", "{q}");
    assert_eq!(
        q["resolution"]["message"], "Not now: the invoices run until 18:00.\n\nTry again tonight.",
        "{q}"
    );

    // A decision this approval does not offer: a polite refusal saying which it offers.
    let (id, mail) = ask(&s, approval(&["once", "reject"]), 6).await;
    assert!(mail.text().contains("once or reject"), "{}", mail.text());
    let refusal = reply(&s, &mail, "respond use the blue one\r\n", 4, 7).await;
    println!("respond where not offered -> {refusal}");
    assert!(
        refusal.contains("This approval does not offer \"respond\"; choose once or reject."),
        "{refusal}"
    );
    assert!(
        refusal.contains("Reply to this mail with once or reject on the first line"),
        "what would work, for this approval: {refusal}"
    );
    let refusal = reply(
        &s,
        &mail,
        "edit {\"env\": \"production\", \"replicas\": 3}",
        5,
        8,
    )
    .await;
    assert!(refusal.contains("does not offer \"edit\""), "{refusal}");
    assert_eq!(s.question(&id).await["status"], "pending");
    let audit = s.audit().await;
    let refused = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "refused" && e["question_id"] == id.as_str())
        .count();
    assert_eq!(refused, 2, "both refusals audited: {audit}");
    assert_eq!(s.servers.folder(BRIDGE, "INBOX").len(), 0);
}
