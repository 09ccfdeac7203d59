//! The model's one error type. A leaf module: every other module may use it, it uses none of them.

/// Everything that can go wrong in the model: bad requests, answers that do not fit, commands
/// that do not parse, and failed deliveries reported by channels. Each message is written to be
/// shown to the person who caused it.
#[derive(Debug, thiserror::Error)]
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
    /// A channel could not deliver or edit a message.
    #[error("{surface}: {message}")]
    Delivery {
        /// The surface that failed.
        surface: String,
        /// True when trying again later may work (network trouble, rate limits, outages).
        retryable: bool,
        /// What the platform said (never containing a token).
        message: String,
    },
}

impl Error {
    /// A delivery failure worth retrying.
    pub fn retryable(surface: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Delivery {
            surface: surface.into(),
            retryable: true,
            message: message.into(),
        }
    }

    /// A delivery failure that will fail again (a chat that does not exist, a malformed request).
    pub fn permanent(surface: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Delivery {
            surface: surface.into(),
            retryable: false,
            message: message.into(),
        }
    }

    /// True for failures worth retrying.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Delivery {
                retryable: true,
                ..
            }
        )
    }
}
