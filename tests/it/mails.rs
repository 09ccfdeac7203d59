//! Mails on the test mail servers (`mail_servers.rs`) as the email tests and the email
//! benchmark (`--only email` of benches/hot_path, which includes this file by path) handle them:
//! the mailboxes' addresses, `askbridge serve`'s settings against the servers, a mail read back
//! from a mailbox, and a reply written as a person's mail client writes one.

use crate::mail_servers::MailServers;
use mail_parser::MessageParser;

pub(crate) const BRIDGE: &str = "askbridge@askbridge.test";
pub(crate) const ALICE: &str = "alice@example.com";
pub(crate) const BOB: &str = "bob@example.org";

/// `askbridge serve`'s email settings against `servers`.
pub(crate) fn serve_env(servers: &MailServers, secret: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "EMAIL_SMTP_URL",
            format!("smtp://127.0.0.1:{}", servers.smtp),
        ),
        (
            "EMAIL_IMAP_URL",
            format!(
                "imap://askbridge%40askbridge.test:bridge-pw@127.0.0.1:{}/INBOX",
                servers.imap
            ),
        ),
        ("EMAIL_REPLY_ADDRESS", BRIDGE.to_owned()),
        ("EMAIL_SECRET", secret.to_owned()),
        ("EMAIL_AUTHSERV_ID", "mx.askbridge.test".to_owned()),
    ]
}

/// A parsed mail as Dovecot holds it, with its Maildir flags.
pub(crate) struct Held {
    pub(crate) raw: Vec<u8>,
    pub(crate) flags: String,
}

impl Held {
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        let message = MessageParser::default().parse(&self.raw[..]).unwrap();
        message
            .headers_raw()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    }
    pub(crate) fn subject(&self) -> String {
        let message = MessageParser::default().parse(&self.raw[..]).unwrap();
        message.subject().unwrap_or_default().to_owned()
    }
    pub(crate) fn text(&self) -> String {
        let message = MessageParser::default().parse(&self.raw[..]).unwrap();
        message.body_text(0).unwrap_or_default().into_owned()
    }
    /// The question's reply address, from its `Reply-To` (without `<>`).
    pub(crate) fn reply_address(&self) -> String {
        self.header("Reply-To")
            .unwrap()
            .trim_matches(['<', '>'])
            .to_owned()
    }
    pub(crate) fn html(&self) -> Option<String> {
        let message = MessageParser::default().parse(&self.raw[..]).unwrap();
        message.html_part(0)?;
        message.body_html(0).map(|h| h.into_owned())
    }
}

/// A reply as a mail client writes one, passed through our MX (which wrote the
/// `Authentication-Results` on top).
pub(crate) fn reply_mail(
    from: &str,
    to: &str,
    message_id: &str,
    in_reply_to: &str,
    dmarc: &str,
    body: &str,
) -> String {
    let domain = from.rsplit('@').next().unwrap();
    format!(
        "Authentication-Results: mx.askbridge.test; spf=pass smtp.mailfrom={domain}; dmarc={dmarc} header.from={domain}\r\n\
         From: Someone <{from}>\r\n\
         To: <{to}>\r\n\
         Subject: Re: Which library?\r\n\
         Message-ID: <{message_id}>\r\n\
         In-Reply-To: <{in_reply_to}>\r\n\
         References: <{in_reply_to}>\r\n\
         MIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\
         \r\n\
         {body}"
    )
}
