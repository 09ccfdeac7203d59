//! The settings: what [`EmailOptions`] holds, what can be wrong with it ([`Error`]), and
//! keeping the passwords in its URLs out of every text shown. Apart from [`Email`](crate::Email)
//! so that the checks on settings read in one place.

use crate::address::BadReplyAddress;
use crate::links::BadPublicUrl;
use askbridge_core::Secret;

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
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
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

pub(crate) fn percent_decode(text: &str) -> String {
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
