//! The model's one error type, and [`Chain`], which shows an error with its causes. A leaf module:
//! every other module may use it, it uses none of them.
//!
//! # Errors and their causes
//!
//! Each error's `Display` says its own part and `source()` gives the cause (twilight's shape), so
//! a chain of errors never says a cause twice. Whatever shows an error to a person (an HTTP body,
//! a chat reply, the command line, a log line) shows the whole chain, through [`Chain`].
//!
//! # Retrying
//!
//! askbridge has one word for "trying again later may work": every error type that can fail
//! for a passing reason answers `is_retryable()` ([`Error::is_retryable`], the store's
//! `store::Error::is_retryable`, the bridge's `Error::is_retryable`, the Discord adapter's
//! `Error::is_retryable`). Callers ask that method rather than match kinds or variants, so a
//! new way to fail that passes is retried by every caller without changing them, and no reader
//! has to know that "unavailable", "rate limited" and "unreachable" all mean the same thing here.

use std::fmt;

/// Everything that can go wrong in the model: bad requests, answers that do not fit, commands
/// that do not parse, and failed deliveries reported by channels. Each message is written to be
/// shown to the person who caused it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request to create a question has a bad field.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field's name as in the JSON API.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An answer does not fit the question; the question stays pending.
    #[error("{reason}")]
    NotFit {
        /// What is wrong and what would fit.
        reason: String,
    },
    /// Edited arguments do not fit; `field` names the argument (`args.replicas`).
    #[error("{field}: {reason}. Nothing was approved.")]
    Argument {
        /// The argument's path (`args`, `args.env.CI`, `args.jobs[0]`).
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An action of a batch was decided already (`action` 0: every action was); the question
    /// stays as it is.
    #[error("{reason}")]
    AlreadyDecided {
        /// The action's number.
        action: usize,
        /// Which, by whom, and that nothing was decided.
        reason: String,
    },
    /// Text that should be a question id is not one.
    #[error("`{0}` is not a question id.")]
    BadId(String),
    /// A typed id prefix is too short to use.
    #[error("`{prefix}` is too short: type at least {min} characters of the id.")]
    PrefixTooShort {
        /// What was typed.
        prefix: String,
        /// The shortest usable prefix.
        min: usize,
    },
    /// No question the sender may answer has this id or prefix.
    #[error(
        "There is no pending question `{0}` that you can answer here. Send /pending to list them."
    )]
    UnknownId(String),
    /// A prefix matches several questions.
    #[error("`{prefix}` matches several questions ({}); type more of the id.", matches.join(", "))]
    AmbiguousPrefix {
        /// What was typed.
        prefix: String,
        /// The ids it matches.
        matches: Vec<String>,
    },
    /// A command is missing its arguments.
    #[error("Usage: {0}")]
    Usage(&'static str),
    /// A channel could not deliver or edit a message; see [`Delivery`].
    #[error(transparent)]
    Delivery(Delivery),
}

impl Error {
    /// A delivery failure on `surface` worth retrying, caused by `error` (the platform's error,
    /// or a message).
    pub fn retryable(
        surface: impl Into<String>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Delivery(Delivery::new(surface, true, error))
    }

    /// A delivery failure on `surface` that will fail again (a chat that does not exist, a
    /// malformed request), caused by `error` (the platform's error, or a message).
    pub fn permanent(
        surface: impl Into<String>,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Delivery(Delivery::new(surface, false, error))
    }

    /// True when trying again later may work (see the module documentation: the one word for
    /// it). Only a delivery can be worth retrying: the other errors are about what was sent.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Delivery(delivery) if delivery.is_retryable())
    }
}

/// A channel could not deliver or edit a message: the surface, whether retrying may work, and the
/// platform's error, kept whole (downcast [`Delivery::get_ref`] to the adapter's type).
///
/// It reads `<surface>: <the platform's error>` and its `source()` is the platform error's own
/// cause, as `std::io::Error` does for the error it wraps: the platform's error is this error's
/// own words, so a [`Chain`] says them once.
#[derive(Debug)]
pub struct Delivery {
    surface: String,
    retryable: bool,
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl Delivery {
    /// A failure on `surface` caused by `error` (never containing a token).
    pub fn new(
        surface: impl Into<String>,
        retryable: bool,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Delivery {
            surface: surface.into(),
            retryable,
            error: error.into(),
        }
    }

    /// The surface that failed.
    pub fn surface(&self) -> &str {
        &self.surface
    }

    /// True when trying again later may work (network trouble, rate limits, outages).
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// The platform's error (a message alone when the adapter had no error to keep).
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }

    /// The platform's error, taken out.
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.error
    }
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.surface, self.error)
    }
}

impl std::error::Error for Delivery {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// An error followed by its causes, joined with ": ", for showing it to a person or in a log:
/// `tracing::warn!(error = %Chain(&error), ...)`, `Chain(&error).to_string()`.
///
/// A cause whose words the error before it already says is not repeated: many libraries (redis,
/// teloxide) print their cause inside their own message and return it as `source()` too.
#[derive(Clone, Copy, Debug)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let words = error.to_string();
            if !words.is_empty() && !said.contains(&words) {
                said.push_str(": ");
                said.push_str(&words);
            }
            cause = error.source();
        }
        f.write_str(&said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{what}")]
    struct Layer {
        what: &'static str,
        #[source]
        cause: Option<Box<Layer>>,
    }

    fn layer(what: &'static str, cause: Option<Layer>) -> Layer {
        Layer {
            what,
            cause: cause.map(Box::new),
        }
    }

    #[test]
    fn a_chain_says_each_cause_once() {
        let error = layer("store unavailable (claim)", Some(layer("refused", None)));
        assert_eq!(
            Chain(&error).to_string(),
            "store unavailable (claim): refused"
        );
        // A library that prints its cause in its own message, and returns it too.
        let error = layer(
            "store unavailable (claim)",
            Some(layer("io: refused", Some(layer("refused", None)))),
        );
        assert_eq!(
            Chain(&error).to_string(),
            "store unavailable (claim): io: refused"
        );
    }

    #[test]
    fn a_delivery_keeps_the_platform_error_and_reads_as_before() {
        let platform = layer("Discord answered 404", Some(layer("no such message", None)));
        let error = Error::permanent("discord", platform);
        assert!(!error.is_retryable());
        assert_eq!(error.to_string(), "discord: Discord answered 404");
        assert_eq!(
            Chain(&error).to_string(),
            "discord: Discord answered 404: no such message"
        );
        let Error::Delivery(delivery) = error else {
            panic!("a delivery")
        };
        assert_eq!(delivery.surface(), "discord");
        assert!(delivery.get_ref().downcast_ref::<Layer>().is_some());
        let error = Error::retryable("telegram", "platform down");
        assert!(error.is_retryable());
        assert_eq!(error.to_string(), "telegram: platform down");
        assert!(std::error::Error::source(&error).is_none());
    }
}
