//! The adapter's one error type, and keeping secrets out of error text.
//!
//! Errors are built from what Discord said (status, JSON error code and message), never from
//! serenity's or reqwest's `Display`, which can carry request URLs; webhook and interaction URLs
//! hold interaction tokens. [`Redactor`] is the second line of defence: it removes the bot token
//! (and any token-looking path segment) from whatever text is logged or returned anyway.

use std::time::Duration;

/// Everything that can go wrong talking to Discord. [`Error::is_retryable`] (askbridge's one word
/// for it, see `askbridge_core::error`) tells the bridge whether to try again later (outages,
/// rate limits) or give up (a channel the bot cannot see, a malformed request, a refused token).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A target is not `discord:<channel id>`.
    #[error("`{0}` is not a Discord target like discord:<channel id>")]
    BadTarget(String),
    /// A reference handed back to `withdraw` is not a Discord message id.
    #[error("`{0}` is not a Discord message id")]
    BadReference(String),
    /// A setting is unusable (named by its environment variable).
    #[error("invalid {variable}: {reason}")]
    Config {
        /// The environment variable at fault.
        variable: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Discord refused the bot token (401), over REST or the gateway.
    #[error("Discord refused the bot token: {0}")]
    Unauthorized(String),
    /// Discord answered an error status.
    #[error("Discord answered {status} to {what}: {message} (code {code})")]
    Api {
        /// The operation (`send message`, `edit message`...).
        what: &'static str,
        /// The HTTP status.
        status: u16,
        /// Discord's JSON error code (50035 for an invalid form body, 10008 for an unknown
        /// message...), 0 when it gave none.
        code: i64,
        /// Discord's message.
        message: String,
    },
    /// Still rate limited after waiting as Discord asked, several times.
    #[error(
        "Discord kept rate-limiting {what} ({attempts} attempts; last retry_after {retry_after:?})"
    )]
    RateLimited {
        /// The operation.
        what: &'static str,
        /// How many times it was sent.
        attempts: u32,
        /// The last wait Discord asked for.
        retry_after: Duration,
    },
    /// Discord could not be reached (connection refused, timeout, TLS...).
    #[error("cannot reach Discord for {what}: {message}")]
    Unreachable {
        /// The operation.
        what: &'static str,
        /// What went wrong, without URLs.
        message: String,
    },
    /// Discord answered something this adapter cannot read.
    #[error("unexpected answer from Discord to {what}: {message}")]
    Decode {
        /// The operation.
        what: &'static str,
        /// What could not be read.
        message: String,
    },
    /// The gateway connection failed in a way retrying will not fix.
    #[error("Discord gateway: {0}")]
    Gateway(String),
}

impl Error {
    /// True when trying again later may work: network trouble, rate limits, Discord's own
    /// failures (5xx). A 4xx other than 429 will fail the same way again.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Unreachable { .. } | Error::RateLimited { .. } => true,
            Error::Api { status, .. } => *status >= 500 || *status == 429,
            Error::BadTarget(_)
            | Error::BadReference(_)
            | Error::Config { .. }
            | Error::Unauthorized(_)
            | Error::Decode { .. }
            | Error::Gateway(_) => false,
        }
    }
}

/// A delivery failure that keeps this error whole (its words hold no secret: see the module
/// documentation), for the bridge to downcast.
impl From<Error> for askbridge_core::Error {
    fn from(error: Error) -> Self {
        if error.is_retryable() {
            askbridge_core::Error::retryable(crate::SURFACE, error)
        } else {
            askbridge_core::Error::permanent(crate::SURFACE, error)
        }
    }
}

/// Removes secrets from text before it is logged or returned.
#[derive(Clone)]
pub(crate) struct Redactor {
    token: String,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor(***)")
    }
}

impl Redactor {
    /// A redactor for `token` (with or without serenity's `Bot ` prefix).
    pub(crate) fn new(token: &str) -> Self {
        let token = token.trim();
        let token = token
            .strip_prefix("Bot ")
            .or_else(|| token.strip_prefix("Bearer "))
            .unwrap_or(token);
        Redactor {
            token: token.to_owned(),
        }
    }

    /// `text` without the bot token and without the token segment of interaction and webhook
    /// URLs (`/interactions/<id>/<token>`, `/webhooks/<app>/<token>`).
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut text = if self.token.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.token, "***")
        };
        for marker in ["/interactions/", "/webhooks/"] {
            text = hide_segment_after_id(&text, marker);
        }
        text
    }
}

/// Replaces the path segment following `<marker><id>/` with `***`, everywhere in `text`.
fn hide_segment_after_id(text: &str, marker: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let (before, after_marker) = rest.split_at(at + marker.len());
        out.push_str(before);
        let id_len = after_marker
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after_marker.len());
        let (id, after_id) = after_marker.split_at(id_len);
        out.push_str(id);
        match after_id.strip_prefix('/') {
            Some(tail) if id_len > 0 => {
                let secret_len = tail.find(['/', '?', ' ', ')', '"']).unwrap_or(tail.len());
                out.push_str("/***");
                rest = &tail[secret_len..];
            }
            _ => rest = after_id,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bot_token_and_interaction_tokens_are_removed() {
        let redactor = Redactor::new("Bot MTIz.abc-DEF_456");
        let text = "error sending request for url (http://x/api/v10/interactions/123/aW50ZXJhY3Rpb24/callback) with MTIz.abc-DEF_456";
        let clean = redactor.clean(text);
        assert_eq!(
            clean,
            "error sending request for url (http://x/api/v10/interactions/123/***/callback) with ***"
        );
        assert_eq!(
            redactor.clean("POST /webhooks/42/tok3n"),
            "POST /webhooks/42/***"
        );
        assert_eq!(
            redactor.clean("PATCH /webhooks/42/tok3n/messages/@original"),
            "PATCH /webhooks/42/***/messages/@original"
        );
        assert_eq!(redactor.clean("/webhooks/ nothing"), "/webhooks/ nothing");
    }

    #[test]
    fn retryable_means_worth_trying_later() {
        let api = |status| Error::Api {
            what: "send message",
            status,
            code: 0,
            message: String::new(),
        };
        assert!(api(502).is_retryable());
        assert!(api(429).is_retryable());
        assert!(!api(403).is_retryable());
        assert!(!api(400).is_retryable());
        assert!(
            Error::Unreachable {
                what: "x",
                message: String::new()
            }
            .is_retryable()
        );
        assert!(!Error::BadTarget("discord:x".into()).is_retryable());
        let model: askbridge_core::Error = api(503).into();
        assert!(model.is_retryable());
        let askbridge_core::Error::Delivery(delivery) = model else {
            panic!("a delivery failure");
        };
        assert!(matches!(
            delivery.get_ref().downcast_ref::<Error>(),
            Some(Error::Api { status: 503, .. })
        ));
    }
}
