//! Reading a raw mail: is it a reply to one of our questions, from whom, saying what — or a mail
//! that must be ignored, and why. Pure functions over the bytes, so every shape is tested without
//! a mail server.
//!
//! A mail is ignored (and its sender never mailed back: a reply to a forged sender is backscatter)
//! when it is too large, auto-submitted (RFC 3834 `Auto-Submitted`, `X-Autoreply`,
//! `X-Autorespond`, `Precedence: bulk|junk|list`, a bounce), without one `From` address, not sent
//! to a signed reply address, or — when DMARC is required — without a `dmarc=pass` for the
//! `From` domain in the topmost `Authentication-Results` from our own server's authserv-id.

use crate::address::{ReplyAddresses, canonical};
use crate::quote;
use askbridge_core::{Identity, QuestionId};
use mail_parser::{HeaderValue, MessageParser, PartType};
use sha2::{Digest, Sha256};
use std::fmt;

/// The surface name, and the prefix of targets and identities (`email:<address>`).
pub const SURFACE: &str = "email";

/// What decides whether a mail counts.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The signed reply addresses.
    pub addresses: ReplyAddresses,
    /// Require `dmarc=pass` for the `From` domain.
    pub require_dmarc: bool,
    /// The authserv-id of our own receiving server (`mx.example.com`); `Authentication-Results`
    /// from anyone else are the sender's claims.
    pub authserv_id: Option<String>,
    /// Mails larger than this are skipped.
    pub max_bytes: usize,
}

/// A reply that passed every check: it may be handed to the bridge, and its sender mailed back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailReply {
    /// The question its reply address names.
    pub question: QuestionId,
    /// `email:<address>`, the domain lower-cased.
    pub sender: Identity,
    /// The sender's address, canonical.
    pub address: String,
    /// The display name in `From`, if any.
    pub name: Option<String>,
    /// The reply's own text (above the quote, without the signature).
    pub text: String,
    /// Its `Message-ID`, to reply in its thread.
    pub message_id: Option<String>,
    /// The delivery id the bridge drops duplicates by: `email:<Message-ID>`, or for a mail
    /// without one, `email-sha256:<digest of the mail>` (the same mail twice counts once).
    pub delivery_id: String,
    /// Its `Subject`, for the confirmation's.
    pub subject: Option<String>,
    /// `In-Reply-To`/`References` name a mail we sent about this question.
    pub threaded: bool,
}

/// Why a mail does not count. None of these is ever answered by mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// Larger than the bound.
    TooLarge(usize),
    /// Not a mail at all.
    Unparsable,
    /// Auto-submitted (an out-of-office, a list, a bounce); the header that says so.
    AutoSubmitted(String),
    /// No single `From` address.
    NoSender,
    /// Sent by askbridge itself (a loop).
    FromUs,
    /// Not sent to any reply address of ours.
    NotForUs,
    /// Sent to an address like ours whose tag is wrong: made up, or for another secret.
    ForgedAddress(String),
    /// DMARC is required and did not pass for the `From` domain; the reply as it claims to be
    /// (its question is known: the reply address is signed), for the audit trail.
    DmarcFailed {
        /// The `From` domain.
        domain: String,
        /// What the mail says, its sender unverified.
        reply: Box<MailReply>,
    },
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ignored::TooLarge(n) => write!(f, "larger than the bound ({n} bytes)"),
            Ignored::Unparsable => f.write_str("not a mail"),
            Ignored::AutoSubmitted(why) => write!(f, "auto-submitted ({why})"),
            Ignored::NoSender => f.write_str("no single From address"),
            Ignored::FromUs => f.write_str("sent by askbridge itself"),
            Ignored::NotForUs => f.write_str("not sent to a reply address of a question"),
            Ignored::ForgedAddress(to) => {
                write!(f, "sent to {to}, whose tag is not ours (made up?)")
            }
            Ignored::DmarcFailed { domain, .. } => {
                write!(f, "no DMARC pass for {domain} from our authserv-id")
            }
        }
    }
}

/// Reads `raw` under `policy`.
pub fn read(raw: &[u8], policy: &Policy) -> Result<MailReply, Ignored> {
    if raw.len() > policy.max_bytes {
        return Err(Ignored::TooLarge(raw.len()));
    }
    let message = MessageParser::default()
        .parse(raw)
        .ok_or(Ignored::Unparsable)?;
    let headers: Vec<(String, String)> = message
        .headers_raw()
        .map(|(name, value)| (name.to_owned(), unfold(value)))
        .collect();
    if let Some(why) = auto_submitted(&headers) {
        return Err(Ignored::AutoSubmitted(why));
    }
    let from = message
        .from()
        .and_then(|from| from.as_list())
        .filter(|list| list.len() == 1)
        .and_then(|list| list.first())
        .ok_or(Ignored::NoSender)?;
    let address = from
        .address()
        .and_then(canonical)
        .ok_or(Ignored::NoSender)?;
    let local = address.split('@').next().unwrap_or_default();
    if local.eq_ignore_ascii_case("mailer-daemon") || local.eq_ignore_ascii_case("postmaster") {
        return Err(Ignored::AutoSubmitted(format!("From: {address}")));
    }
    if address.eq_ignore_ascii_case(&policy.addresses.base()) {
        return Err(Ignored::FromUs);
    }
    let question = question_of(&message, &headers, &policy.addresses)?;
    let domain = address.rsplit('@').next().unwrap_or_default().to_owned();
    let threaded = threaded(&message, &question);
    let message_id = message.message_id().map(str::to_owned);
    let delivery_id = match &message_id {
        Some(id) => format!("{SURFACE}:{id}"),
        None => {
            let digest = Sha256::digest(raw);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("{SURFACE}-sha256:{hex}")
        }
    };
    let reply = MailReply {
        sender: Identity::compose(SURFACE, &address),
        name: from.name().map(str::to_owned).filter(|n| !n.is_empty()),
        text: answer_text(&message),
        message_id,
        delivery_id,
        subject: message.subject().map(str::to_owned),
        threaded,
        question,
        address,
    };
    if policy.require_dmarc && !dmarc_pass(&headers, policy.authserv_id.as_deref(), &domain) {
        return Err(Ignored::DmarcFailed {
            domain,
            reply: Box::new(reply),
        });
    }
    Ok(reply)
}

/// Header values as one line (folding removed).
fn unfold(value: &str) -> String {
    value
        .split(['\r', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Why the mail is auto-submitted, if it is.
fn auto_submitted(headers: &[(String, String)]) -> Option<String> {
    if let Some(value) = header(headers, "Auto-Submitted").next() {
        let kind = value.split(';').next().unwrap_or_default().trim();
        if !kind.eq_ignore_ascii_case("no") {
            return Some(format!("Auto-Submitted: {kind}"));
        }
    }
    for name in ["X-Autoreply", "X-Autorespond"] {
        if let Some(value) = header(headers, name).next() {
            return Some(format!("{name}: {value}"));
        }
    }
    if let Some(value) = header(headers, "Precedence").next() {
        let value = value.trim().to_ascii_lowercase();
        if ["bulk", "junk", "list", "auto_reply"].contains(&value.as_str()) {
            return Some(format!("Precedence: {value}"));
        }
    }
    if header(headers, "List-Id").next().is_some() {
        return Some("List-Id".into());
    }
    if let Some(content_type) = header(headers, "Content-Type").next()
        && content_type
            .to_ascii_lowercase()
            .starts_with("multipart/report")
    {
        return Some("a delivery report".into());
    }
    if let Some(path) = header(headers, "Return-Path").next()
        && path.trim() == "<>"
    {
        return Some("Return-Path: <>".into());
    }
    None
}

/// The question named by a signed reply address in the recipients or the delivery headers.
fn question_of(
    message: &mail_parser::Message<'_>,
    headers: &[(String, String)],
    addresses: &ReplyAddresses,
) -> Result<QuestionId, Ignored> {
    let mut forged = None;
    for candidate in &recipients(message, headers) {
        if let Some(id) = addresses.question_of(candidate) {
            return Ok(id);
        }
        if looks_like_ours(candidate, addresses) {
            forged.get_or_insert_with(|| candidate.clone());
        }
    }
    Err(forged.map_or(Ignored::NotForUs, Ignored::ForgedAddress))
}

/// The addresses a mail was sent or delivered to.
fn recipients(message: &mail_parser::Message<'_>, headers: &[(String, String)]) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    for list in [message.to(), message.cc()].into_iter().flatten() {
        candidates.extend(list.iter().filter_map(|a| a.address()).map(str::to_owned));
    }
    for name in ["Delivered-To", "X-Original-To", "Envelope-To"] {
        candidates
            .extend(header(headers, name).map(|v| v.trim().trim_matches(['<', '>']).to_owned()));
    }
    candidates
}

/// True for a mail sent to a reply address (ours, or one made up to look like it) — whatever
/// became of it. The mailbox reader moves only these: in a person's own mailbox the rest is
/// theirs, and stays where it is, unmarked.
pub(crate) fn to_a_reply_address(raw: &[u8], addresses: &ReplyAddresses) -> bool {
    let Some(message) = MessageParser::default().parse(raw) else {
        return false;
    };
    let headers: Vec<(String, String)> = message
        .headers_raw()
        .map(|(name, value)| (name.to_owned(), unfold(value)))
        .collect();
    recipients(&message, &headers)
        .iter()
        .any(|to| addresses.question_of(to).is_some() || looks_like_ours(to, addresses))
}

/// A `+`-tagged address on our base: a reply address, but maybe not one we made.
fn looks_like_ours(address: &str, addresses: &ReplyAddresses) -> bool {
    let base = addresses.base();
    let (local, domain) = base.split_once('@').unwrap_or_default();
    address.rsplit_once('@').is_some_and(|(l, d)| {
        d.eq_ignore_ascii_case(domain)
            && l.split_once('+')
                .is_some_and(|(b, _)| b.eq_ignore_ascii_case(local))
    })
}

/// True when `In-Reply-To` or `References` name a mail we sent about `question`.
fn threaded(message: &mail_parser::Message<'_>, question: &QuestionId) -> bool {
    let ours = crate::compose::message_id_prefix(question);
    [message.in_reply_to(), message.references()]
        .into_iter()
        .any(|value| match value {
            HeaderValue::Text(id) => id.starts_with(&ours),
            HeaderValue::TextList(ids) => ids.iter().any(|id| id.starts_with(&ours)),
            _ => false,
        })
}

/// The topmost `Authentication-Results` from `authserv_id` says `dmarc=pass` for `domain`. Only
/// the topmost one counts: our server adds its own on top, below it is what the sender wrote.
pub fn dmarc_pass(headers: &[(String, String)], authserv_id: Option<&str>, domain: &str) -> bool {
    let Some(authserv_id) = authserv_id else {
        return false;
    };
    let Some(results) = header(headers, "Authentication-Results").next() else {
        return false;
    };
    let mut parts = results.split(';').map(str::trim);
    let id = parts
        .next()
        .and_then(|first| first.split_whitespace().next())
        .unwrap_or_default();
    if !id.eq_ignore_ascii_case(authserv_id) {
        return false;
    }
    parts.any(|result| {
        let mut words = result.split_whitespace();
        let verdict = words.next().unwrap_or_default();
        let header_from = words
            .filter_map(|w| w.split_once('='))
            .find(|(k, _)| k.eq_ignore_ascii_case("header.from"))
            .map(|(_, v)| v.trim_matches('"'));
        verdict.eq_ignore_ascii_case("dmarc=pass")
            && header_from.is_some_and(|d| d.eq_ignore_ascii_case(domain))
    })
}

/// The reply's own words: from the first text/plain body, or from the HTML when there is none.
fn answer_text(message: &mail_parser::Message<'_>) -> String {
    let text = match message.text_part(0).map(|part| &part.body) {
        Some(PartType::Text(text)) => text.to_string(),
        _ => match message.html_part(0).map(|part| &part.body) {
            Some(PartType::Html(html)) => quote::html_to_text(html),
            Some(PartType::Text(text)) => text.to_string(),
            _ => String::new(),
        },
    };
    quote::own_text(&text)
}
