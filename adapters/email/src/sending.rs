//! The [`Channel`] side: questions out as mails over SMTP (lettre), and the short replies the
//! bridge's answers become. A mail cannot be unsent, so withdrawing does nothing.

use crate::address::ReplyAddresses;
use crate::compose::Answering;
use crate::links::OneClick;
use crate::{SURFACE, compose};
use askbridge_core::{Channel, Error, Question, Target};
use async_trait::async_trait;
use lettre::message::header::{self, ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Replies (confirmations, refusals) sent to one address per [`REPLY_WINDOW`], at most.
const REPLIES_PER_WINDOW: usize = 5;
const REPLY_WINDOW: Duration = Duration::from_secs(60);

/// `Auto-Submitted: auto-replied` (RFC 3834): other robots must not answer our mail.
#[derive(Clone, Debug)]
struct AutoSubmitted;

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoSubmitted)
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "auto-replied".to_owned())
    }
}

/// Sends mail; shared by the channel and the inbound side's replies.
#[derive(Clone)]
pub(crate) struct Sender {
    pub(crate) transport: AsyncSmtpTransport<Tokio1Executor>,
    pub(crate) from: Mailbox,
    pub(crate) addresses: ReplyAddresses,
    /// Strings never to show (the SMTP and IMAP passwords), replaced in every error text.
    redact: Arc<[String]>,
    recent: Arc<Mutex<HashMap<String, Vec<Instant>>>>,
    /// One-click links instead of `mailto:` ones, with a public URL.
    links: Option<OneClick>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

/// An SMTP failure, its text cleaned of secrets.
#[derive(Debug, thiserror::Error)]
#[error("SMTP: {0}")]
pub(crate) struct SmtpError(String);

impl Sender {
    pub(crate) fn new(
        transport: AsyncSmtpTransport<Tokio1Executor>,
        from: Mailbox,
        addresses: ReplyAddresses,
        redact: Vec<String>,
    ) -> Self {
        Sender {
            transport,
            from,
            addresses,
            redact: redact.into(),
            recent: Arc::default(),
            links: None,
        }
    }

    /// Mails questions with one-click links signed by `links`, when given.
    pub(crate) fn with_links(mut self, links: Option<OneClick>) -> Self {
        self.links = links;
        self
    }

    pub(crate) fn clean(&self, text: &str) -> String {
        self.redact
            .iter()
            .filter(|secret| !secret.is_empty())
            .fold(text.to_owned(), |text, secret| {
                text.replace(secret.as_str(), "***")
            })
    }

    fn mailbox(address: &str) -> Result<Mailbox, Error> {
        address.parse::<Mailbox>().map_err(|error| {
            Error::permanent(
                SURFACE,
                SmtpError(format!("`{address}` is not a mail address: {error}")),
            )
        })
    }

    async fn send(&self, message: Message) -> Result<(), Error> {
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(error) => {
                let text = SmtpError(self.clean(&error.to_string()));
                if error.is_permanent() {
                    Err(Error::permanent(SURFACE, text))
                } else {
                    Err(Error::retryable(SURFACE, text))
                }
            }
        }
    }

    /// Mails `question` to `address`; returns the mail's `Message-ID`.
    pub(crate) async fn question(
        &self,
        question: &Question,
        address: &str,
    ) -> Result<String, Error> {
        let reply_to = self.addresses.for_question(&question.id);
        let recipient = crate::canonical(address).unwrap_or_else(|| address.to_owned());
        let answering = match &self.links {
            Some(links) => Answering::OneClick {
                links,
                recipient: &recipient,
            },
            None => Answering::Mailto(&reply_to),
        };
        let message_id = compose::message_id(&question.id, self.addresses.domain());
        let message = Message::builder()
            .from(self.from.clone())
            .reply_to(Self::mailbox(&reply_to)?)
            .to(Self::mailbox(address)?)
            .subject(compose::subject(question))
            .message_id(Some(format!("<{message_id}>")))
            .header(AutoSubmitted)
            .multipart(MultiPart::alternative_plain_html(
                compose::text_body(question),
                compose::html_body(question, answering),
            ))
            .map_err(|error| Error::permanent(SURFACE, SmtpError(error.to_string())))?;
        self.send(message).await?;
        tracing::info!(question_id = %question.id, to = address, message_id, "question mailed");
        Ok(message_id)
    }

    /// True when `address` may get another reply now (a few a minute at most), counting this one.
    pub(crate) fn may_reply(&self, address: &str) -> bool {
        let now = Instant::now();
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        recent.retain(|_, times| {
            times.retain(|t| now.duration_since(*t) < REPLY_WINDOW);
            !times.is_empty()
        });
        let times = recent.entry(address.to_ascii_lowercase()).or_default();
        if times.len() >= REPLIES_PER_WINDOW {
            return false;
        }
        times.push(now);
        true
    }

    /// A short text mail: to `address`, in reply to `in_reply_to` when given, answered at the
    /// reply address of `question` when given.
    pub(crate) async fn text(
        &self,
        address: &str,
        subject: &str,
        body: &str,
        in_reply_to: Option<&str>,
        question: Option<&askbridge_core::QuestionId>,
    ) -> Result<(), Error> {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(Self::mailbox(address)?)
            .subject(subject)
            .header(AutoSubmitted);
        if let Some(id) = question {
            builder = builder
                .reply_to(Self::mailbox(&self.addresses.for_question(id))?)
                .message_id(Some(format!(
                    "<{}>",
                    compose::message_id(id, self.addresses.domain())
                )));
        }
        if let Some(parent) = in_reply_to {
            let parent = format!("<{}>", parent.trim_matches(['<', '>']));
            builder = builder.in_reply_to(parent.clone()).references(parent);
        }
        let message = builder
            .singlepart(
                SinglePart::builder()
                    .header(ContentType::TEXT_PLAIN)
                    .header(header::ContentTransferEncoding::QuotedPrintable)
                    .body(body.to_owned()),
            )
            .map_err(|error| Error::permanent(SURFACE, SmtpError(error.to_string())))?;
        self.send(message).await
    }
}

/// The email [`Channel`].
#[derive(Debug)]
pub(crate) struct EmailChannel {
    pub(crate) sender: Sender,
    /// Mail "answered by …" in the thread when a question is resolved (`EMAIL_NOTIFY_RESOLVED`).
    pub(crate) notify_resolved: bool,
}

fn address_of(target: &Target) -> Result<&str, Error> {
    target.address().ok_or_else(|| {
        Error::permanent(
            SURFACE,
            SmtpError(format!("`{target}` is not an email:<address> target")),
        )
    })
}

#[async_trait]
impl Channel for EmailChannel {
    fn surface(&self) -> &str {
        SURFACE
    }

    async fn show(&self, question: &Question, target: &Target) -> Result<String, Error> {
        self.sender.question(question, address_of(target)?).await
    }

    /// A mail cannot be unsent: a reply to it after the resolution is told "Already answered".
    /// With `notify_resolved`, the recipient is also told in the question's thread, unless the
    /// answer was their own reply (which got its confirmation already).
    async fn withdraw(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
    ) -> Result<(), Error> {
        let address = address_of(target)?;
        let own_reply = question.resolution.as_ref().is_some_and(|resolution| {
            resolution.via() == SURFACE
                && resolution
                    .by()
                    .as_str()
                    .strip_prefix("email:")
                    .and_then(crate::canonical)
                    == crate::canonical(address)
        });
        if !self.notify_resolved || own_reply {
            return Ok(());
        }
        let subject = compose::reply_subject(Some(&compose::subject(question)));
        let body = format!("{}\n", askbridge_core::render::outcome_line(question));
        self.sender
            .text(address, &subject, &body, Some(shown), Some(&question.id))
            .await
    }

    async fn say(&self, target: &Target, text: &str) -> Result<(), Error> {
        let first = text.lines().next().unwrap_or_default();
        let subject = format!("askbridge: {}", askbridge_core::render::shorten(first, 80));
        self.sender
            .text(address_of(target)?, &subject, text, None, None)
            .await
    }

    async fn remind(
        &self,
        question: &Question,
        target: &Target,
        shown: &str,
        text: &str,
        _: &[askbridge_core::Identity],
    ) -> Result<(), Error> {
        let subject = compose::reply_subject(Some(&compose::subject(question)));
        self.sender
            .text(
                address_of(target)?,
                &subject,
                text,
                Some(shown),
                Some(&question.id),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_replies_a_minute_per_address() {
        let sender = Sender::new(
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("localhost").build(),
            "askbridge@example.com".parse().unwrap(),
            ReplyAddresses::new("askbridge@example.com", askbridge_core::Secret::new("s")).unwrap(),
            vec!["hunter2".into()],
        );
        for _ in 0..REPLIES_PER_WINDOW {
            assert!(sender.may_reply("alice@example.com"));
        }
        assert!(
            !sender.may_reply("Alice@Example.com"),
            "one address, any case"
        );
        assert!(sender.may_reply("bob@example.com"));
        assert_eq!(
            sender.clean("AUTH failed for hunter2"),
            "AUTH failed for ***"
        );
    }
}
