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
//! - `lib.rs`: [`Email`]: setting the channel up, and what it offers (a [`Channel`], routes, a
//!   mailbox to watch).
//! - `settings.rs`: [`EmailOptions`], what can be wrong with them, and passwords kept out of texts.
//! - `receive.rs`: receiving one mail, handing it to the bridge, and mailing the reply back.
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
//! The SMTP and IMAP URLs may hold passwords: they are [`Secret`](askbridge_core::Secret)s, and
//! every error text this crate returns or logs has the passwords replaced by `***`.

mod address;
mod compose;
mod imap;
mod inbound;
mod links;
mod mailbox;
mod page;
mod quote;
mod receive;
mod reply_command;
mod sending;
mod settings;

pub use address::{BadReplyAddress, ReplyAddresses, canonical};
pub use compose::{Answering, html_body, message_id_prefix, subject, text_body};
pub use imap::{ImapError, ImapOptions, PROCESSED};
pub use inbound::{Ignored, MailReply, Policy, SURFACE, dmarc_pass, read};
pub use links::{BadPublicUrl, Link, OneClick, PAGE_PATH, Refused};
pub use quote::{html_to_text, own_text};
pub use receive::Received;
pub(crate) use receive::chat_for;
pub use reply_command::{command_for, commands_for};
pub(crate) use settings::percent_decode;
use settings::url_secrets;
pub use settings::{EmailOptions, Error, masked_url};

use askbridge_core::{Channel, Inbox};
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

#[cfg(test)]
mod tests {
    use super::*;
    use askbridge_core::Secret;

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
