#![allow(clippy::unwrap_used)]
//! Reading replies as mail clients write them: each fixture is a raw mail (`fixtures/*.eml`)
//! with `{{REPLY}}` and `{{ID}}` standing for the question's signed reply address and id.

use askbridge_core::{QuestionId, Secret};
use askbridge_email::{Ignored, MailReply, Policy, ReplyAddresses, read};

const ID: &str = "k3f9x2m8qa";

fn policy(require_dmarc: bool) -> Policy {
    Policy {
        addresses: ReplyAddresses::new("askbridge@askbridge.test", Secret::new("fixture-secret"))
            .unwrap(),
        require_dmarc,
        authserv_id: Some("mx.askbridge.test".into()),
        max_bytes: 1 << 20,
    }
}

fn fixture(name: &str, policy: &Policy) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}.eml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let id = QuestionId::parse(ID).unwrap();
    text.replace("{{REPLY}}", &policy.addresses.for_question(&id))
        .replace("{{ID}}", ID)
        .into_bytes()
}

fn reply(name: &str) -> MailReply {
    let policy = policy(true);
    read(&fixture(name, &policy), &policy).unwrap()
}

#[test]
fn gmail_reply_with_its_quote_and_dmarc_pass() {
    let reply = reply("gmail");
    assert_eq!(reply.question.as_str(), ID);
    assert_eq!(reply.sender.as_str(), "email:alice@example.com");
    assert_eq!(reply.address, "alice@example.com");
    assert_eq!(reply.name.as_deref(), Some("Alice Liddell"));
    assert_eq!(reply.text, "2");
    assert_eq!(
        reply.message_id.as_deref(),
        Some("CAF=gmail-reply-1@mail.gmail.com")
    );
    assert!(reply.threaded);
    assert!(reply.subject.unwrap().contains("Which library?"));
}

#[test]
fn outlook_reply_in_base64_with_its_header_block() {
    let reply = reply("outlook");
    assert_eq!(reply.sender.as_str(), "email:bob@example.org");
    assert_eq!(reply.name.as_deref(), Some("Bob, Ops"));
    // The signature "Bob" is the reply's own text; the choice is read from the first line.
    assert_eq!(reply.text, "date-fns\n\nBob");
}

#[test]
fn apple_mail_reply() {
    let reply = reply("apple");
    assert_eq!(reply.sender.as_str(), "email:carol@icloud.com");
    assert_eq!(reply.text, "dayjs");
}

#[test]
fn html_only_reply_becomes_text() {
    let reply = reply("html_only");
    assert_eq!(reply.text, "Let's go with dayjs & move on.\nThanks");
    assert!(!reply.threaded);
}

#[test]
fn auto_replies_and_bounces_are_ignored() {
    let policy = policy(true);
    assert!(matches!(
        read(&fixture("autoreply", &policy), &policy),
        Err(Ignored::AutoSubmitted(why)) if why == "Auto-Submitted: auto-replied"
    ));
    assert!(matches!(
        read(&fixture("bounce", &policy), &policy),
        Err(Ignored::AutoSubmitted(_))
    ));
    for (header, value) in [
        ("X-Autoreply", "yes"),
        ("Precedence", "bulk"),
        ("Precedence", "junk"),
        ("Precedence", "list"),
    ] {
        let raw = String::from_utf8(fixture("gmail", &policy)).unwrap();
        let raw = format!("{header}: {value}\r\n{raw}");
        assert!(
            matches!(
                read(raw.as_bytes(), &policy),
                Err(Ignored::AutoSubmitted(_))
            ),
            "{header}: {value}"
        );
    }
    let raw = String::from_utf8(fixture("gmail", &policy)).unwrap();
    let raw = format!("Auto-Submitted: no\r\n{raw}");
    assert!(read(raw.as_bytes(), &policy).is_ok());
}

#[test]
fn only_the_topmost_authentication_results_from_our_server_counts() {
    let policy = policy(true);
    match read(&fixture("forged_from", &policy), &policy) {
        Err(Ignored::DmarcFailed { domain, reply }) => {
            assert_eq!(domain, "example.com");
            // What it claims, kept for the audit trail.
            assert_eq!(reply.sender.as_str(), "email:alice@example.com");
            assert_eq!(reply.question.as_str(), ID);
        }
        other => panic!("{other:?}"),
    }
    // Without DMARC required, the same mail is read (the bridge then checks the answerers).
    let lax = self::policy(false);
    assert!(read(&fixture("forged_from", &lax), &lax).is_ok());
    // A pass written by another server, or for another domain, is not ours.
    let raw = String::from_utf8(fixture("gmail", &policy)).unwrap();
    let other = raw.replace(
        "Authentication-Results: mx.askbridge.test;",
        "Authentication-Results: mx.evil.test;",
    );
    assert!(matches!(
        read(other.as_bytes(), &policy),
        Err(Ignored::DmarcFailed { .. })
    ));
    let other = raw.replace("header.from=example.com", "header.from=evil.test");
    assert!(matches!(
        read(other.as_bytes(), &policy),
        Err(Ignored::DmarcFailed { .. })
    ));
    let missing = raw.replace("Authentication-Results:", "X-Was-Authentication-Results:");
    assert!(matches!(
        read(missing.as_bytes(), &policy),
        Err(Ignored::DmarcFailed { .. })
    ));
}

#[test]
fn a_made_up_reply_address_is_refused() {
    let policy = policy(true);
    let raw = String::from_utf8(fixture("gmail", &policy)).unwrap();
    let real = policy
        .addresses
        .for_question(&QuestionId::parse(ID).unwrap());
    let (head, _) = real.split_once('@').unwrap();
    let (head, _) = head.rsplit_once('.').unwrap();
    let forged = raw.replace(&real, &format!("{head}.0123456789abcdef@askbridge.test"));
    assert!(matches!(
        read(forged.as_bytes(), &policy),
        Err(Ignored::ForgedAddress(_))
    ));
    // Another question's id with this question's tag.
    let forged = raw.replace(&real, &real.replace(ID, "k3f9x2m8qb"));
    assert!(matches!(
        read(forged.as_bytes(), &policy),
        Err(Ignored::ForgedAddress(_))
    ));
    // Mail to the base address names no question.
    let plain = raw.replace(&real, "askbridge@askbridge.test");
    assert_eq!(read(plain.as_bytes(), &policy), Err(Ignored::NotForUs));
}

#[test]
fn mail_without_one_sender_too_large_or_from_us_is_ignored() {
    let policy = policy(true);
    let raw = String::from_utf8(fixture("gmail", &policy)).unwrap();
    let two = raw.replace(
        "From: Alice Liddell <alice@Example.COM>",
        "From: alice@example.com, mallory@example.com",
    );
    assert_eq!(read(two.as_bytes(), &policy), Err(Ignored::NoSender));
    let us = raw.replace(
        "Alice Liddell <alice@Example.COM>",
        "askbridge@askbridge.test",
    );
    assert_eq!(read(us.as_bytes(), &policy), Err(Ignored::FromUs));
    let small = Policy {
        max_bytes: 100,
        ..policy.clone()
    };
    assert!(matches!(
        read(raw.as_bytes(), &small),
        Err(Ignored::TooLarge(_))
    ));
    assert!(read(b"", &policy).is_err());
    // Without a Message-ID, the same bytes are the same delivery.
    let bare = raw.replace("Message-ID: <CAF=gmail-reply-1@mail.gmail.com>\r\n", "");
    let (a, b) = (
        read(bare.as_bytes(), &policy).unwrap(),
        read(bare.as_bytes(), &policy).unwrap(),
    );
    assert!(
        a.delivery_id.starts_with("email-sha256:"),
        "{}",
        a.delivery_id
    );
    assert_eq!(a.delivery_id, b.delivery_id);
}
