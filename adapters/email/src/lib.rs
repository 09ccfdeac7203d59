//! askbridge's email channel: a question is a mail, answered by replying to it.
//!
//! A question targeted at `email:<address>` goes out as one mail over SMTP (text and HTML, a
//! `mailto:` link per choice), answerable at a reply address of its own
//! (`local+<id>.<tag>@domain`, the tag an HMAC under `EMAIL_SECRET`). A reply is read from its raw
//! bytes ([`Email::receive`]): the question from the signed address, the sender from `From`, the
//! answer from the text above what the reply quotes. It goes through the bridge's one [`Inbox`]
//! path as `/answer <id> <text>`, with the mail's `Message-ID` as the delivery id (the same mail
//! twice counts once), and the bridge's reply goes back as a short mail — but only to a sender
//! who passed every check and may answer the question: mailing a refusal to a forged `From` would
//! be backscatter.
//!
//! # Layout
//!
//! - `lib.rs`: [`Email`], settings, and receiving one mail.
//! - `address.rs`: the signed reply addresses.
//! - `inbound.rs`: reading a raw mail: the checks, and the reply's own text (`quote.rs`);
//!   `reply_command.rs`: the command that text stands for.
//! - `compose.rs`: the mails' subjects and bodies.
//! - `sending.rs`: the [`Channel`] side over SMTP.
//! - `links.rs` and `page.rs`: one-click links (with a public URL) and the confirmation page
//!   they open, which answers only on its POST.
//! - `imap.rs`: watching a mailbox for replies (IDLE, or polling a server without it), and
//!   `mailbox.rs`: one read of it (fetch, hand over, flag, move; crash-safe in that order).
//!
//! The SMTP and IMAP URLs may hold passwords: they are [`Secret`]s, and every error text this
//! crate returns or logs has the passwords replaced by `***`.

mod address;
mod compose;
mod imap;
mod inbound;
mod links;
mod mailbox;
mod page;
mod quote;
mod reply_command;
mod sending;

pub use address::{BadReplyAddress, ReplyAddresses, canonical};
pub use compose::{Answering, html_body, message_id_prefix, subject, text_body};
pub use imap::{ImapError, ImapOptions, PROCESSED};
pub use inbound::{Ignored, MailReply, Policy, SURFACE, dmarc_pass, read};
pub use links::{BadPublicUrl, Link, OneClick, PAGE_PATH, Refused};
pub use quote::{html_to_text, own_text};
use reply_command::command_text;
pub use reply_command::{command_for, commands_for};

use askbridge_core::{Channel, Inbound, Inbox, Millis, Question, Secret, Target, Tone};
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use sending::Sender;
use std::sync::Arc;
use std::time::Duration;

/// The surface unverified senders are named on in the audit trail (`email-unverified:<address>`).
pub const UNVERIFIED: &str = "email-unverified";
/// Inbound mails larger than this are skipped (and logged): a reply is a few kilobytes.
pub const MAX_MAIL_BYTES: usize = 2 * 1024 * 1024;
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything that can go wrong setting up the email channel.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `EMAIL_SMTP_URL` is not an SMTP URL (printed without its password).
    #[error("EMAIL_SMTP_URL `{url}` is not usable: {reason}")]
    BadSmtpUrl {
        /// The URL, password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// `EMAIL_FROM` is not a mailbox.
    #[error("EMAIL_FROM `{0}` is not an address like `askbridge <askbridge@example.com>`")]
    BadFrom(String),
    /// `EMAIL_REPLY_ADDRESS` is not a plain address.
    #[error(transparent)]
    BadReplyAddress(#[from] BadReplyAddress),
    /// `ASKBRIDGE_PUBLIC_URL` is not a URL.
    #[error(transparent)]
    BadPublicUrl(#[from] BadPublicUrl),
    /// `EMAIL_IMAP_URL` is not an IMAP URL (printed without its password).
    #[error("EMAIL_IMAP_URL `{url}` is not usable: {reason}")]
    BadImapUrl {
        /// The URL, password replaced by `***`.
        url: String,
        /// What is wrong.
        reason: String,
    },
}

/// The email channel's settings.
#[derive(Clone, Debug)]
pub struct EmailOptions {
    /// `smtp://user:password@host:587?tls=required`, `smtps://…:465`, or `smtp://host:25`.
    pub smtp_url: Secret,
    /// `imaps://user:password@host/INBOX` or `imap://…` (loopback only); no polling when `None`.
    pub imap_url: Option<Secret>,
    /// The sender of every mail (`askbridge <askbridge@example.com>`); the reply address when
    /// `None`.
    pub from: Option<String>,
    /// The base of the per-question reply addresses (`askbridge@example.com`).
    pub reply_address: String,
    /// The key of the reply addresses' tags.
    pub secret: Secret,
    /// Answers count only with `dmarc=pass` for the `From` domain from `authserv_id`.
    pub require_dmarc: bool,
    /// The authserv-id our own receiving server writes in `Authentication-Results`.
    pub authserv_id: Option<String>,
    /// askbridge's public URL: each choice in a mail is then a one-click link to a
    /// confirmation page there (a `mailto:` reply otherwise).
    pub public_url: Option<String>,
    /// Mail a short "answered by …" in a question's thread when it is resolved (other than by
    /// the recipient's own reply).
    pub notify_resolved: bool,
}

/// The URL with its password replaced by `***`, for error messages.
pub fn masked_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "***".to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// The password in a URL, decoded and raw, to keep it out of error texts.
fn url_secrets(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return vec![url.to_owned()];
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return Vec::new();
    };
    let Some((_, password)) = userinfo.split_once(':') else {
        return Vec::new();
    };
    let mut secrets = vec![password.to_owned()];
    let decoded = percent_decode(password);
    if decoded != password {
        secrets.push(decoded);
    }
    secrets.retain(|s| !s.is_empty());
    secrets
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What became of one inbound mail.
#[derive(Clone, Debug, PartialEq)]
pub enum Received {
    /// Not a reply that may count; nothing was handed to the bridge and nobody was mailed.
    Ignored(Ignored),
    /// Handed to the bridge. `reply` is its answer (`None` for a duplicate); `mailed` says
    /// whether it was sent back to the sender.
    Handled {
        /// The question it was about.
        question: askbridge_core::QuestionId,
        /// The bridge's reply.
        reply: Option<Box<askbridge_core::Reply>>,
        /// The reply went back by mail.
        mailed: bool,
    },
}

/// A configured email channel: sending, and reading replies.
#[derive(Clone, Debug)]
pub struct Email {
    sender: Sender,
    policy: Policy,
    imap: Option<ImapOptions>,
    links: Option<OneClick>,
    notify_resolved: bool,
}

impl Email {
    /// Checks the settings and prepares the SMTP transport (connecting only to send).
    pub fn new(options: EmailOptions) -> Result<Self, Error> {
        let smtp_url = options.smtp_url.expose();
        let mut redact = url_secrets(smtp_url);
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(smtp_url)
            .map_err(|error| Error::BadSmtpUrl {
                url: masked_url(smtp_url),
                reason: redact
                    .iter()
                    .fold(error.to_string(), |t, s| t.replace(s.as_str(), "***")),
            })?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        let links = match &options.public_url {
            Some(url) => Some(OneClick::new(url, &options.secret)?),
            None => None,
        };
        let addresses = ReplyAddresses::new(&options.reply_address, options.secret)?;
        let from_text = options.from.unwrap_or_else(|| addresses.base());
        let from = from_text
            .parse::<Mailbox>()
            .map_err(|_| Error::BadFrom(from_text.clone()))?;
        let imap = match &options.imap_url {
            Some(url) => {
                redact.extend(url_secrets(url.expose()));
                Some(ImapOptions::parse(url.expose())?)
            }
            None => None,
        };
        let policy = Policy {
            addresses: addresses.clone(),
            require_dmarc: options.require_dmarc,
            authserv_id: options.authserv_id,
            max_bytes: MAX_MAIL_BYTES,
        };
        Ok(Email {
            sender: Sender::new(transport, from, addresses, redact).with_links(links.clone()),
            policy,
            imap,
            links,
            notify_resolved: options.notify_resolved,
        })
    }

    /// The [`Channel`] that mails questions.
    pub fn channel(&self) -> Arc<dyn Channel> {
        Arc::new(sending::EmailChannel {
            sender: self.sender.clone(),
            notify_resolved: self.notify_resolved,
        })
    }

    /// What decides whether an inbound mail counts.
    /// The confirmation page's routes, when there is a public URL (see `page.rs`): they answer
    /// through `inbox`, and check links, CSRF tokens and origins themselves.
    pub fn routes(&self, inbox: Arc<dyn Inbox>) -> Option<axum::Router> {
        let links = self.links.clone()?;
        Some(page::routes(links, inbox))
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// True when a mailbox is configured to poll ([`Email::run`]).
    pub fn polls(&self) -> bool {
        self.imap.is_some()
    }

    /// Reads one raw mail and, when it is a reply that may count, hands it to `inbox`; mails the
    /// bridge's reply back only to a sender who may answer the question.
    pub async fn receive(&self, raw: &[u8], inbox: &dyn Inbox) -> Received {
        let reply = match read(raw, &self.policy) {
            Ok(reply) => reply,
            Err(Ignored::DmarcFailed { domain, reply }) => {
                self.audit_unverified(&reply, inbox).await;
                return Received::Ignored(Ignored::DmarcFailed { domain, reply });
            }
            Err(ignored) => {
                tracing::info!(reason = %ignored, "inbound mail ignored");
                return Received::Ignored(ignored);
            }
        };
        // The signed address decides the question; a reply outside our thread is still one (a
        // forwarded question, a client that drops In-Reply-To), noted for whoever reads the log.
        tracing::debug!(question_id = %reply.question, sender = %reply.sender, threaded = reply.threaded, "reply read");
        let question = inbox.current(&reply.question).await;
        let chat = chat_for(question.as_ref(), &reply.address);
        let may_answer = question
            .as_ref()
            .is_some_and(|q| q.may_answer(&reply.sender, &chat, Millis::now()));
        let commands = match question.as_ref() {
            Some(q) => commands_for(q, &reply.text),
            None => vec![command_text(&reply.question, &reply.text)],
        };
        let answer = if reply.text.is_empty() {
            Some(askbridge_core::Reply::refused(format!(
                "Your reply had no answer above the quoted text. Reply with the number, the option, or /answer {} <choice>.",
                reply.question
            )))
        } else {
            let mut answers = Vec::with_capacity(commands.len());
            for (k, text) in commands.into_iter().enumerate() {
                // Each line of a reply to a batch is its own delivery, redelivered as a whole.
                let delivery_id = match k {
                    0 => reply.delivery_id.clone(),
                    k => format!("{}#{k}", reply.delivery_id),
                };
                let inbound = Inbound {
                    via: SURFACE.into(),
                    chat: chat.clone(),
                    sender: reply.sender.clone(),
                    sender_name: reply.name.clone(),
                    text: text.clone(),
                    private: true,
                    delivery_id: Some(delivery_id),
                    in_reply_to: None,
                };
                if let Some(answer) = inbox.handle(inbound).await {
                    answers.push((text, answer));
                }
            }
            reply_command::joined(answers)
        };
        let mailed = match &answer {
            Some(answer) if may_answer => self.mail_back(&reply, answer, question.as_ref()).await,
            Some(answer) => {
                tracing::info!(
                    question_id = %reply.question,
                    sender = %reply.sender,
                    tone = ?answer.tone,
                    "reply from someone who may not answer: not mailed back"
                );
                false
            }
            None => false,
        };
        Received::Handled {
            question: reply.question,
            reply: answer.map(Box::new),
            mailed,
        }
    }

    /// A reply to a signed address whose `From` has no DMARC pass: it must not answer, but the
    /// attempt belongs in the question's audit trail like any refusal. It goes to the bridge as
    /// said by `email-unverified:<address>` in the chat of that name, whom no question admits
    /// (checked first: one that would is left alone), so the bridge refuses and records it.
    /// Nobody is mailed: the `From` may be forged.
    async fn audit_unverified(&self, reply: &MailReply, inbox: &dyn Inbox) {
        tracing::warn!(
            question_id = %reply.question,
            sender = %reply.sender,
            "reply without a DMARC pass for its From domain: refused, not mailed back"
        );
        let unverified = format!("{UNVERIFIED}:{}", reply.address);
        let (sender, chat) = (
            askbridge_core::Identity::new(unverified.clone()),
            Target::new(unverified),
        );
        let Some(question) = inbox.current(&reply.question).await else {
            return;
        };
        if question.may_answer(&sender, &chat, Millis::now()) {
            tracing::warn!(question_id = %reply.question, "a question admits unverified email senders: not handed over");
            return;
        }
        let inbound = Inbound {
            via: SURFACE.into(),
            chat,
            sender,
            sender_name: reply.name.clone(),
            text: command_for(&question, &reply.text),
            private: true,
            // Its own delivery ids: a forged mail must not make a genuine one a duplicate.
            delivery_id: Some(format!("{UNVERIFIED}/{}", reply.delivery_id)),
            in_reply_to: None,
        };
        let refused = inbox.handle(inbound).await;
        tracing::debug!(question_id = %reply.question, ?refused, "unverified reply recorded");
    }

    async fn mail_back(
        &self,
        reply: &MailReply,
        answer: &askbridge_core::Reply,
        question: Option<&Question>,
    ) -> bool {
        if !self.sender.may_reply(&reply.address) {
            tracing::warn!(question_id = %reply.question, sender = %reply.sender, "too many replies to this address this minute: not mailed");
            return false;
        }
        let subject = compose::reply_subject(reply.subject.as_deref());
        let mut body = answer.text.clone();
        if answer.tone == Tone::Refused {
            // What would work: for the question at hand, what it takes (an approval's decisions).
            let how = match answer.question.as_ref().or(question) {
                Some(question) => compose::how_to_answer(question),
                None => format!(
                    "Reply to this mail with the number, the option, or /answer {} <choice>.",
                    reply.question
                ),
            };
            body.push_str(&format!("\n\n{how}"));
        }
        body.push('\n');
        match self
            .sender
            .text(
                &reply.address,
                &subject,
                &body,
                reply.message_id.as_deref(),
                Some(&reply.question),
            )
            .await
        {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(question_id = %reply.question, error = %askbridge_core::error::Chain(&error), "cannot mail the reply");
                false
            }
        }
    }

    /// Polls the mailbox for replies until `shutdown` turns true (see `imap.rs`); returns at once
    /// when no mailbox is configured.
    pub async fn run(
        &self,
        inbox: Arc<dyn Inbox>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<(), imap::ImapError> {
        match &self.imap {
            Some(options) => imap::watch(self, options, inbox, shutdown).await,
            None => Ok(()),
        }
    }

    pub(crate) fn clean(&self, text: &str) -> String {
        self.sender.clean(text)
    }
}

/// The chat a reply from `address` is in: the question's target for that address when it has
/// one (written as the asker wrote it), else `email:<address>`.
pub(crate) fn chat_for(question: Option<&Question>, address: &str) -> Target {
    question
        .and_then(|q| {
            q.targets.iter().find(|t| {
                t.surface() == SURFACE
                    && t.address().and_then(canonical).as_deref() == Some(address)
            })
        })
        .cloned()
        .unwrap_or_else(|| Target::compose(SURFACE, address))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_urls_shown() {
        assert_eq!(
            masked_url("smtp://bot%40x.com:p%40ss@smtp.x.com:587?tls=required"),
            "smtp://bot%40x.com:***@smtp.x.com:587?tls=required"
        );
        assert_eq!(masked_url("smtp://localhost:25"), "smtp://localhost:25");
        assert_eq!(
            url_secrets("imaps://u:p%40ss@h/INBOX"),
            vec!["p%40ss".to_owned(), "p@ss".to_owned()]
        );
        let error = Email::new(EmailOptions {
            smtp_url: Secret::new("smtq://u:hunter2@h"),
            imap_url: None,
            from: None,
            reply_address: "a@b.c".into(),
            secret: Secret::new("s"),
            require_dmarc: false,
            authserv_id: None,
            public_url: None,
            notify_resolved: false,
        })
        .unwrap_err()
        .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        assert!(error.contains("EMAIL_SMTP_URL"), "{error}");
    }
}
